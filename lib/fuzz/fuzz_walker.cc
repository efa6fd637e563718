// SPDX-License-Identifier: MIT
//
// fuzz_walker - libFuzzer target over libtimeline's stack walker
// (lib/src/unwind.cc, walk_stack) with hostile frame chains: the walker
// reads memory the chain points at, so a wrong bound or an unsafe read is
// a fault, and libFuzzer's deadly-signal handler keeps the input that made
// it (a finding).  The walker must never fault, whatever the registers and
// the stack hold (docs/fuzzing.md, "fuzz_walker").
//
// Each input runs in a thread of its own (its stack bounds are probed
// afresh, as a new thread's are) and lays a chain of 48 words on that
// thread's stack.  The input:
//   byte 0: the walk: bit 0 exact start pc, bit 1 the crash handler's
//           reads (process_vm_readv), bit 2 .eh_frame for every frame,
//           bit 3 the walk starts on the alternate signal stack (a region
//           with a PROT_NONE page, installed with sigaltstack), bits 4-7
//           the depth asked for (1..16, at most the walker's maximum + 1);
//   byte 1: the start pc, bytes 2-3 the start sp and rbp (each a value
//           below);
//   then two bytes a word: a value, then an argument.
// A value's byte picks one of kValues: 0, code of this program (a plain
// function, an interrupted leaf, the outermost function), a signal
// trampoline, code of an object unloaded since the walker indexed it, a
// PROT_NONE page, the thread's guard page, another thread's live stack,
// libc's code, the chain's own words (the argument picks which), the
// alternate stack, a raw value (the argument's bits spread).  The
// argument also adds a small offset (0..7 words) to pointers.
// Oracles beyond "no fault": the walk's depth is at most what was asked,
// its end one of complete, depth_limit, no_unwind_info, bad_frame, and
// errno is as it was.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core_timeline/ring_format.h"
#include "core_timeline/timeline.h"
#include "unwind.h"

namespace {

namespace fmt = core_timeline::format;
namespace lib = core_timeline::lib;

__attribute__((noinline)) void code_a() { __asm__ volatile(""); }
__attribute__((noinline)) void code_b() { __asm__ volatile(""); }

#if defined(__x86_64__)
// An interrupted leaf (nothing pushed) and an outermost function (return
// address undefined), with their CFI; never called.
__asm__(
    ".text\n"
    ".type ct_fuzz_leaf, @function\n"
    "ct_fuzz_leaf:\n"
    ".cfi_startproc\n"
    "  nop\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_fuzz_leaf, .-ct_fuzz_leaf\n"
    ".type ct_fuzz_outermost, @function\n"
    "ct_fuzz_outermost:\n"
    ".cfi_startproc\n"
    ".cfi_undefined %rip\n"
    "  nop\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_fuzz_outermost, .-ct_fuzz_outermost\n");
extern "C" void ct_fuzz_leaf();
extern "C" void ct_fuzz_outermost();
#endif

constexpr std::uint32_t kWords = 48;
constexpr std::size_t kAltSize = 4 * 4096;

struct World {
  std::uint64_t trampoline;  // glibc's __restore_rt (a handler's sa_restorer)
  std::uint64_t victim;      // code of an object unloaded since the index
  std::uint64_t prot_none;   // a PROT_NONE page
  std::uint64_t other_stack; // a word on another (parked) thread's stack
  std::uint8_t *alt;         // the alternate stack: 4 pages, the third PROT_NONE
};
World g_world;

void on_usr2(int) {}

void *park(void *p) {
  volatile std::uint64_t frame[8] = {};
  __atomic_store_n(static_cast<std::uint64_t *>(p), reinterpret_cast<std::uint64_t>(&frame[4]), __ATOMIC_RELEASE);
  for (;;) pause();
  return nullptr;
}

struct Input {
  const std::uint8_t *data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
};

// One value of the chain (or a start register).
std::uint64_t value(std::uint8_t pick, std::uint8_t arg, const std::uint64_t *words, std::uint64_t guard) {
  const std::uint64_t off = 8 * (arg & 7);
  switch (pick % 16) {
    case 0: return 0;
    case 1: return reinterpret_cast<std::uint64_t>(&code_a) + 1;
    case 2: return reinterpret_cast<std::uint64_t>(&code_b) + 1;
    case 3: return reinterpret_cast<std::uint64_t>(&ct_fuzz_leaf);
    case 4: return reinterpret_cast<std::uint64_t>(&ct_fuzz_outermost) + (arg & 1);
    case 5: return g_world.trampoline;
    case 6: return g_world.victim + (arg & 3);
    case 7: return g_world.prot_none + off;
    case 8: return guard + off;
    case 9: return g_world.other_stack + off;
    case 10: return reinterpret_cast<std::uint64_t>(&write) + (arg & 15);
    case 11:
    case 12: return reinterpret_cast<std::uint64_t>(&words[arg % kWords]);
    case 13: return reinterpret_cast<std::uint64_t>(g_world.alt) + 8 * static_cast<std::uint64_t>(arg) * 8;
    case 14: return reinterpret_cast<std::uint64_t>(&words[arg % kWords]) + (arg >> 6);  // misaligned
    default: return static_cast<std::uint64_t>(arg) * 0x0101010101010101ull;
  }
}

struct Job {
  Input in;
};

void *run(void *p) {
  Job *job = static_cast<Job *>(p);
  Input &in = job->in;
  pthread_attr_t attr;
  void *stack_lo = nullptr;
  std::size_t stack_size = 0, guard_size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &stack_lo, &stack_size);
    pthread_attr_getguardsize(&attr, &guard_size);
    pthread_attr_destroy(&attr);
  }
  const std::uint64_t guard = reinterpret_cast<std::uint64_t>(stack_lo) - guard_size;
  const std::uint8_t how = in.byte();
  const std::uint8_t pc_pick = in.byte(), sp_pick = in.byte(), fp_pick = in.byte();
  alignas(16) std::uint64_t words[kWords] = {};
  std::uint64_t *chain = words;
  if (how & 8) {
    stack_t ss = {g_world.alt, 0, kAltSize};
    if (sigaltstack(&ss, nullptr) != 0) std::abort();
    chain = reinterpret_cast<std::uint64_t *>(g_world.alt);
    std::memset(chain, 0, 2 * 4096);
  }
  for (std::uint32_t i = 0; i < kWords; ++i) {
    const std::uint8_t pick = in.byte(), arg = in.byte();
    chain[i] = value(pick, arg, chain, guard);
  }
  const std::uint64_t pc = value(pc_pick, static_cast<std::uint8_t>(pc_pick >> 4), chain, guard);
  std::uint64_t sp = reinterpret_cast<std::uint64_t>(&chain[sp_pick % kWords]);
  if (sp_pick >= 0xf0) sp = value(sp_pick, 0, chain, guard);
  const std::uint64_t fp = value(fp_pick, static_cast<std::uint8_t>(fp_pick >> 4), chain, guard);
  const std::uint32_t max = 1 + (how >> 4) % (fmt::kMaxStackDepth + 1);
  std::uint64_t out[fmt::kMaxStackDepth + 1];
  errno = 4242;
  const lib::WalkResult st = lib::walk_stack({pc, sp, fp}, (how & 1) != 0, out, max, (how & 2) != 0, (how & 4) != 0);
  if (errno != 4242) {
    std::fprintf(stderr, "fuzz_walker: the walk changed errno\n");
    std::abort();
  }
  const std::uint32_t end = st.end;
  if (st.depth > max || end < fmt::kStackComplete || end > fmt::kStackBadFrame) {
    std::fprintf(stderr, "fuzz_walker: depth %u of %u, end %u\n", st.depth, max, end);
    std::abort();
  }
  if (how & 8) {
    stack_t off = {};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  }
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  tl_options o{};
  o.size = sizeof o;
  o.no_handlers = 1;       // libFuzzer's own handler must see a fault
  o.no_helper_thread = 1;  // the table changes only when this says
  o.sidecar_dir = "";
  if (tl_init(&o) != 0) std::abort();
  // glibc's trampoline: the sa_restorer of a handler installed through it.
  struct sigaction sa = {};
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, nullptr);
  struct {
    std::uint64_t handler, flags, restorer, mask;
  } k{};
  syscall(SYS_rt_sigaction, SIGUSR2, nullptr, &k, 8);
  g_world.trampoline = k.restorer;
  void *none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *alt = mmap(nullptr, kAltSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (none == MAP_FAILED || alt == MAP_FAILED || mprotect(static_cast<char *>(alt) + 2 * 4096, 4096, PROT_NONE) != 0)
    std::abort();
  g_world.prot_none = reinterpret_cast<std::uint64_t>(none);
  g_world.alt = static_cast<std::uint8_t *>(alt);
  pthread_t parked;
  std::uint64_t other = 0;
  pthread_create(&parked, nullptr, park, &other);
  while (__atomic_load_n(&other, __ATOMIC_ACQUIRE) == 0) sched_yield();
  g_world.other_stack = other;
  // Last, so that no mapping made here takes its place: an object indexed,
  // then unloaded.
  const char *victim = std::getenv("CT_UNWIND_VICTIM");
  void *h = dlopen(victim != nullptr ? victim : CT_UNWIND_VICTIM, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "fuzz_walker: %s\n", dlerror());
    std::abort();
  }
  g_world.victim = reinterpret_cast<std::uint64_t>(dlsym(h, "ct_victim"));
  lib::unwind_refresh(0x5eed0001);
  dlclose(h);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  Job job{{data, size}};
  pthread_t t;
  if (pthread_create(&t, nullptr, run, &job) != 0) return 0;
  pthread_join(t, nullptr);
  return 0;
}
