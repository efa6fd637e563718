// SPDX-License-Identifier: MIT
//
// unwind_unit_test - libtimeline's stack walker (lib/src/unwind.cc) on
// frame-pointer chains made by hand on this thread's stack: how each walk
// ends (ring_format.h, StackEnd) when the chain is whole, cut by the depth
// asked for, or broken by a frame pointer that holds no frame.  This
// program has no .sframe section, so every frame takes the frame-pointer
// rule, but for an interrupted one (an exact pc), whose rule comes from
// .eh_frame (two functions in assembly below, with their CFI).  Then
// hostile chains, each walked in a forked child that must reach its own
// end (exit 0), never a fault: code of an object unloaded since the walker
// indexed it, a PROT_NONE page on the chain, a thread's guard page,
// another thread's stack, signal frames that cycle or fake an end, words
// rewritten under the walk.  The walks on real code and real cores are
// tests/stacks.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "core_timeline/ring_format.h"
#include "core_timeline/timeline.h"
#include "unwind.h"

namespace {

namespace fmt = core_timeline::format;
namespace lib = core_timeline::lib;

// Two code addresses of this program, as return addresses (the walker
// looks each up at address - 1).
__attribute__((noinline)) void code_a() { __asm__ volatile(""); }
__attribute__((noinline)) void code_b() { __asm__ volatile(""); }
std::uint64_t ra_of(void (*f)()) { return reinterpret_cast<std::uint64_t>(f) + 1; }
std::uint64_t addr(const void *p) { return reinterpret_cast<std::uint64_t>(p); }

#if defined(__x86_64__)
// Where a signal could stop three functions, as their .eh_frame says (the
// assembler's .cfi_* directives): ct_unwind_leaf at its first instruction
// (nothing pushed: CFA = rsp + 8, the return address at rsp),
// ct_unwind_pushed_body after a push of rbp (CFA = rsp + 16, the caller's
// rbp at CFA - 16), and ct_unwind_outermost, whose return address is
// undefined (as _start's is).  None is ever called.
__asm__(
    ".text\n"
    ".globl ct_unwind_leaf\n"
    ".type ct_unwind_leaf, @function\n"
    "ct_unwind_leaf:\n"
    ".cfi_startproc\n"
    "  nop\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_unwind_leaf, .-ct_unwind_leaf\n"
    ".globl ct_unwind_pushed\n"
    ".globl ct_unwind_pushed_body\n"
    ".type ct_unwind_pushed, @function\n"
    "ct_unwind_pushed:\n"
    ".cfi_startproc\n"
    "  push %rbp\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset %rbp, -16\n"
    "ct_unwind_pushed_body:\n"
    "  nop\n"
    "  pop %rbp\n"
    ".cfi_def_cfa_offset 8\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_unwind_pushed, .-ct_unwind_pushed\n"
    ".globl ct_unwind_outermost\n"
    ".type ct_unwind_outermost, @function\n"
    "ct_unwind_outermost:\n"
    ".cfi_startproc\n"
    ".cfi_undefined %rip\n"
    "  nop\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size ct_unwind_outermost, .-ct_unwind_outermost\n");
extern "C" void ct_unwind_leaf();
extern "C" void ct_unwind_outermost();
extern "C" char ct_unwind_pushed_body[];
#endif

struct Walk {
  std::uint32_t depth, end;
  std::uint64_t out[fmt::kMaxStackDepth + 1];
};

// The walk from a frame whose code is code_a and whose frame pointer is
// `fp`, with `sp` its stack pointer.
Walk walk(std::uint64_t sp, std::uint64_t fp, std::uint32_t max) {
  Walk w{};
  const lib::WalkResult st = lib::walk_stack({ra_of(code_a), sp, fp}, false, w.out, max, false);
  w.depth = st.depth;
  w.end = st.end;
  return w;
}

class Walker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tl_init(nullptr), 0); }
};

// A psABI chain, on this thread's stack (the walker reads nothing else,
// and a gtest fixture lives on the heap, hence a macro for locals):
// c[0] = saved rbp (-> c[2]), c[1] = return address code_b, c[2] = saved
// rbp (-> c[4]), c[3] = code_a, c[4..5] = 0, 0: a zeroed frame.
#define CHAIN(c)                  \
  alignas(16) std::uint64_t c[8] = {}; \
  c[0] = addr(&c[2]);             \
  c[1] = ra_of(code_b);           \
  c[2] = addr(&c[4]);             \
  c[3] = ra_of(code_a)

// A zeroed frame (return address 0) ends the chain by convention only:
// the stack's own bytes can fake it, so it is not "complete" (only a
// frame .eh_frame marks outermost is), but the end of what frame
// pointers tell.
TEST_F(Walker, AZeroReturnAddressEndsTheChainButNotComplete) {
  CHAIN(chain);
  const Walk w = walk(addr(chain), addr(chain), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  ASSERT_EQ(w.depth, 2u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
  EXPECT_EQ(w.out[1], ra_of(code_a));
}

TEST_F(Walker, TheDepthAskedForEndsItWithDepthLimit) {
  CHAIN(chain);
  const Walk w = walk(addr(chain), addr(chain), 1);
  EXPECT_EQ(w.end, fmt::kStackDepthLimit);
  ASSERT_EQ(w.depth, 1u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
}

// A "return address" that is no code: rbp held no frame, so what it read
// is no frame either, wherever the walk finds out (the next frame's lookup,
// or, for the last place, at once).
TEST_F(Walker, AReturnAddressThatIsNoCodeEndsItWithNoUnwindInformationAndIsDropped) {
  CHAIN(chain);
  chain[1] = 0x1234;
  for (const std::uint32_t max : {1u, 2u, 8u}) {
    const Walk w = walk(addr(chain), addr(chain), max);
    EXPECT_EQ(w.end, fmt::kStackNoUnwind) << max;
    EXPECT_EQ(w.depth, 0u) << max;
  }
  chain[1] = ra_of(code_b);
  chain[3] = 0x1234;
  const Walk w = walk(addr(chain), addr(chain), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  ASSERT_EQ(w.depth, 1u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
}

TEST_F(Walker, AFramePointerBelowTheStackPointerOrOffTheStackHoldsNoFrame) {
  CHAIN(chain);
  EXPECT_EQ(walk(addr(&chain[2]), addr(&chain[0]), 8).end, fmt::kStackNoUnwind);
  static std::uint64_t off_stack[4];
  const Walk w = walk(addr(chain), addr(off_stack), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  EXPECT_EQ(w.depth, 0u);
  EXPECT_EQ(walk(addr(chain), addr(chain) + 4, 8).end, fmt::kStackNoUnwind) << "misaligned";
}

// The chain must go up the stack: a saved rbp that points back down ends
// it after the frames before it (here the second frame's saved rbp points
// at the first frame, below the second's CFA).
TEST_F(Walker, AChainThatTurnsBackEndsWhereItTurns) {
  CHAIN(chain);
  chain[2] = addr(&chain[0]);
  const Walk w = walk(addr(chain), addr(chain), 8);
  EXPECT_EQ(w.end, fmt::kStackNoUnwind);
  ASSERT_EQ(w.depth, 2u);
  EXPECT_EQ(w.out[0], ra_of(code_b));
  EXPECT_EQ(w.out[1], ra_of(code_a));
}

// The crash handler's walk goes past the 15 frames a Slot.stack byte could
// count (ring format 5's chain holds 64): the depth comes back whole.
TEST_F(Walker, ALongChainIsWalkedToItsEndAndToTheDepthAskedFor) {
  constexpr std::uint32_t kFrames = 40;
  alignas(16) std::uint64_t c[2 * kFrames + 2] = {};
  for (std::uint32_t i = 0; i < kFrames; ++i) {
    c[2 * i] = addr(&c[2 * i + 2]);
    c[2 * i + 1] = i % 2 == 0 ? ra_of(code_a) : ra_of(code_b);
  }
  std::uint64_t out[fmt::kMaxChainedStackDepth];
  const lib::WalkResult whole = lib::walk_stack({ra_of(code_a), addr(c), addr(c)}, false, out,
                                                fmt::kMaxChainedStackDepth, false);
  // (The zeroed frame after the last is no end mark: no_unwind.)
  EXPECT_EQ(whole.end, fmt::kStackNoUnwind);
  ASSERT_EQ(whole.depth, kFrames);
  for (std::uint32_t i = 0; i < kFrames; ++i) EXPECT_EQ(out[i], c[2 * i + 1]) << i;
  const lib::WalkResult cut = lib::walk_stack({ra_of(code_a), addr(c), addr(c)}, false, out, 20, false);
  EXPECT_EQ(cut.end, fmt::kStackDepthLimit);
  EXPECT_EQ(cut.depth, 20u);
}

TEST_F(Walker, AStartInNoObjectsCodeIsABadFrame) {
  CHAIN(chain);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st = lib::walk_stack({0x10, addr(chain), addr(chain)}, false, out, 8, false);
  EXPECT_EQ(st.end, fmt::kStackBadFrame);
  EXPECT_EQ(st.depth, 0u);
}

#if defined(__x86_64__)
// An interrupted leaf: rbp still holds its caller's frame, and the
// frame-pointer rule would give the caller's caller (code_a) first.  Its
// .eh_frame rule gives its own return address (code_b), then the caller's
// frame follows by frame pointer; with plain reads and with the crash
// handler's process_vm_readv(2) reads alike.
TEST_F(Walker, AnInterruptedLeafTakesItsRuleFromEhFrame) {
  // s[0]: the leaf's return address, at its stack pointer; s[2..3]: its
  // caller's psABI frame (saved rbp -> s[4], return address code_a).
  alignas(16) std::uint64_t s[8] = {};
  s[0] = ra_of(code_b);
  s[2] = addr(&s[4]);
  s[3] = ra_of(code_a);
  for (const bool safe : {false, true}) {
    std::uint64_t out[fmt::kMaxStackDepth];
    const lib::WalkResult st =
        lib::walk_stack({reinterpret_cast<std::uint64_t>(&ct_unwind_leaf), addr(&s[0]), addr(&s[2])}, true, out, 8, safe);
    EXPECT_EQ(st.end, fmt::kStackNoUnwind) << safe;
    ASSERT_EQ(st.depth, 2u) << safe;
    EXPECT_EQ(out[0], ra_of(code_b)) << safe;
    EXPECT_EQ(out[1], ra_of(code_a)) << safe;
  }
}

// Interrupted after `push %rbp`: the CFA is rsp + 16 and the caller's rbp
// is read back from CFA - 16, whatever rbp holds (here no frame at all).
TEST_F(Walker, AnInterruptedFunctionBeforeItsFrameGetsTheCallersFramePointerFromEhFrame) {
  alignas(16) std::uint64_t s[8] = {};
  s[0] = addr(&s[2]);  // the pushed rbp: the caller's frame
  s[1] = ra_of(code_b);
  s[2] = addr(&s[4]);
  s[3] = ra_of(code_a);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st =
      lib::walk_stack({reinterpret_cast<std::uint64_t>(ct_unwind_pushed_body), addr(&s[0]), 8}, true, out, 8, false);
  EXPECT_EQ(st.end, fmt::kStackNoUnwind);
  ASSERT_EQ(st.depth, 2u);
  EXPECT_EQ(out[0], ra_of(code_b));
  EXPECT_EQ(out[1], ra_of(code_a));
}

// A frame .eh_frame marks outermost: nothing called it, the walk is
// complete there (whatever rbp and the stack hold).
TEST_F(Walker, TheFrameEhFrameMarksOutermostEndsTheWalkComplete) {
  CHAIN(chain);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st = lib::walk_stack({reinterpret_cast<std::uint64_t>(&ct_unwind_outermost), addr(chain),
                                           addr(chain)}, true, out, 8, false);
  EXPECT_EQ(st.end, fmt::kStackComplete);
  EXPECT_EQ(st.depth, 0u);
}

// ---- Hostile chains ----
//
// Each runs in a forked child (its own copy of the walker's table, no
// helper thread to rebuild it) that exits 0 when the walk ended as it
// should; a fault inside the walker kills it with the signal instead.

// Runs `body` in a forked child: "" when it exited 0, else how it ended.
std::string in_child(const std::function<bool()> &body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return "fork or waitpid failed";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFSIGNALED(status)) return std::string("the child died of ") + strsignal(WTERMSIG(status)) + " (a fault in the walk)";
  return "the child's walk did not end as expected (exit " + std::to_string(WEXITSTATUS(status)) + ", stderr above)";
}

// In a child: the walk's end and frames against the expected ones.
bool expect_walk(const char *what, lib::WalkResult st, const std::uint64_t *out, std::uint32_t end,
                 std::initializer_list<std::uint64_t> frames) {
  bool ok = st.end == end && st.depth == frames.size();
  std::uint32_t i = 0;
  for (const std::uint64_t f : frames) ok = ok && i < st.depth && out[i++] == f;
  if (!ok) {
    std::fprintf(stderr, "%s: end %s depth %u, expected %s depth %zu; frames:", what,
                 fmt::stack_end_name(st.end), st.depth, fmt::stack_end_name(end), frames.size());
    for (std::uint32_t j = 0; j < st.depth; ++j) std::fprintf(stderr, " %#llx", (unsigned long long)out[j]);
    std::fprintf(stderr, "\n");
  }
  return ok;
}

// The sa_restorer of libtimeline's SIGSEGV handler (glibc's __restore_rt):
// a return address there is a signal frame.
std::uint64_t trampoline() {
  struct {
    std::uint64_t handler, flags, restorer, mask;
  } k{};
  syscall(SYS_rt_sigaction, SIGSEGV, nullptr, &k, 8);
  return k.restorer;
}

// A signal frame as the kernel lays it out (arch/x86/kernel/signal_64.c),
// made by hand in s[]: s[0..1] a psABI frame whose return address is the
// trampoline, then from s[2] the ucontext (uc_flags, uc_link, uc_stack:
// five words) whose mcontext gregs (REG_RBP 10, REG_RSP 15, REG_RIP 16)
// hold the interrupted registers.  The walk starts at code_a with rbp and
// rsp at s[0].
#define SIGFRAME(s, rip, rsp, rbp)           \
  alignas(16) std::uint64_t s[64] = {};      \
  s[0] = addr(&s[40]);                       \
  s[1] = trampoline();                       \
  s[7 + 10] = (rbp);                         \
  s[7 + 15] = (rsp);                         \
  s[7 + 16] = (rip)

lib::WalkResult walk_from_frame(const std::uint64_t *s, std::uint64_t *out, std::uint32_t max, bool safe = false) {
  return lib::walk_stack({ra_of(code_a), addr(s), addr(s)}, false, out, max, safe);
}

// The unwind_victim object, loaded, indexed by the walker, then unloaded:
// the address of its function, which no mapping holds any more.
std::uint64_t unloaded_victim_code() {
  void *h = dlopen(CT_UNWIND_VICTIM, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return 0;
  const std::uint64_t f = reinterpret_cast<std::uint64_t>(dlsym(h, "ct_victim"));
  lib::unwind_refresh(0x5eed0001); /* a generation of its own: a new table */
  dlclose(h);
  return f;
}

// A frame pointer's return address in code the walker's table still lists
// but which was unloaded since: its frame is kept (it was code when the
// table was built; the walker reads no code to tell), and the walk goes
// on by frame pointer.
TEST_F(Walker, AReturnAddressInAnObjectUnloadedSinceTheIndexDoesNotFault) {
  EXPECT_EQ(in_child([] {
              const std::uint64_t victim = unloaded_victim_code();
              if (victim == 0) return false;
              CHAIN(chain);
              chain[1] = victim + 1;
              std::uint64_t out[fmt::kMaxStackDepth];
              const lib::WalkResult st = walk_from_frame(chain, out, 8);
              return expect_walk("unloaded", st, out, fmt::kStackNoUnwind, {victim + 1, ra_of(code_a)});
            }),
            "");
}

// A signal frame whose interrupted pc is in the unloaded object: an exact
// pc takes its rule from the object's .eh_frame, which is gone; its reads
// fail instead of faulting and the frame-pointer rule applies.
TEST_F(Walker, AnInterruptedPcInAnObjectUnloadedSinceTheIndexDoesNotFault) {
  EXPECT_EQ(in_child([] {
              const std::uint64_t victim = unloaded_victim_code();
              if (victim == 0) return false;
              SIGFRAME(s, victim, addr(&s[30]), addr(&s[40]));
              s[40] = addr(&s[44]);
              s[41] = ra_of(code_b);
              std::uint64_t out[fmt::kMaxStackDepth];
              const lib::WalkResult st = walk_from_frame(s, out, 8);
              return expect_walk("unloaded exact", st, out, fmt::kStackNoUnwind,
                                 {s[1] + 1, victim + 1, ra_of(code_b)});
            }),
            "");
}

// A fake signal frame's interrupted pc of 0: no end mark, a bad frame.
TEST_F(Walker, ASignalFrameWhoseInterruptedPcIsZeroIsABadFrameNotAnEnd) {
  SIGFRAME(s, 0, addr(&s[30]), addr(&s[40]));
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st = walk_from_frame(s, out, 8);
  EXPECT_EQ(st.end, fmt::kStackBadFrame);
  ASSERT_EQ(st.depth, 1u);
  EXPECT_EQ(out[0], s[1]);
}

// Signal frames whose interrupted stack pointer leads back down the same
// stack, to the frame that returns into the trampoline again: a cycle.
// The interrupted code ran above its signal frame, so the walk ends at the
// first such frame, bad, instead of filling every place with the cycle.
TEST_F(Walker, ASignalFrameCycleEndsAtTheFirstTurnAsABadFrame) {
  SIGFRAME(s, reinterpret_cast<std::uint64_t>(&ct_unwind_leaf), 0, addr(&s[0]));
  s[7 + 15] = addr(&s[1]); /* the leaf's return address: the trampoline again */
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st = walk_from_frame(s, out, 8);
  EXPECT_EQ(st.end, fmt::kStackBadFrame);
  EXPECT_EQ(st.depth, 1u);
}

// An alternate signal stack with a PROT_NONE page in it, a frame pointer
// pointing there: the page is probed, found unreadable, and read with
// process_vm_readv(2), which fails.  The region is mapped far (> 1 GiB)
// from the main thread's stack so the walker takes it for the alternate
// stack it is.
TEST_F(Walker, AFramePointerOntoAProtNonePageOfTheAlternateStackDoesNotFault) {
  EXPECT_EQ(in_child([] {
              void *region = MAP_FAILED;
              for (std::uint64_t hint = 0x100000000000; region == MAP_FAILED && hint < 0x200000000000; hint += 0x1000000000)
                region = mmap(reinterpret_cast<void *>(hint), 4 * 4096, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
              if (region == MAP_FAILED) return false;
              auto *page = static_cast<std::uint64_t *>(region);
              if (mprotect(page + 2 * 512, 4096, PROT_NONE) != 0) return false;
              stack_t ss = {region, 0, 4 * 4096};
              if (sigaltstack(&ss, nullptr) != 0) return false;
              page[0] = addr(page + 2 * 512 + 4); /* -> the PROT_NONE page */
              page[1] = ra_of(code_b);
              std::uint64_t out[fmt::kMaxStackDepth];
              const lib::WalkResult st = walk_from_frame(page, out, 8);
              return expect_walk("PROT_NONE on the alternate stack", st, out, fmt::kStackNoUnwind, {ra_of(code_b)});
            }),
            "");
}

// In a thread of its own, `body` with the thread's stack: [lo, hi) its
// usable part (pthread_getattr_np), glibc's guard page below lo.
bool in_thread(const std::function<bool(std::uint64_t lo, std::uint64_t guard)> &body) {
  struct Arg {
    const std::function<bool(std::uint64_t, std::uint64_t)> *body;
    bool ok;
  } arg{&body, false};
  pthread_t t;
  if (pthread_create(&t, nullptr, [](void *p) -> void * {
        auto *a = static_cast<Arg *>(p);
        pthread_attr_t attr;
        void *stack = nullptr;
        size_t size = 0, guard = 0;
        if (pthread_getattr_np(pthread_self(), &attr) != 0) return nullptr;
        pthread_attr_getstack(&attr, &stack, &size);
        pthread_attr_getguardsize(&attr, &guard);
        pthread_attr_destroy(&attr);
        a->ok = (*a->body)(reinterpret_cast<std::uint64_t>(stack), guard);
        return nullptr;
      }, &arg) != 0)
    return false;
  pthread_join(t, nullptr);
  return arg.ok;
}

// A signal frame whose interrupted stack pointer is the thread's guard
// page (mincore(2) says it is mapped; it is PROT_NONE): that is no stack
// the thread knows, the walk ends there.
TEST_F(Walker, ASignalFrameOntoTheThreadsGuardPageEndsThereWithoutFault) {
  EXPECT_EQ(in_child([] {
              return in_thread([](std::uint64_t lo, std::uint64_t guard) {
                if (guard == 0) return false;
                SIGFRAME(s, reinterpret_cast<std::uint64_t>(&ct_unwind_leaf), lo - guard + 64, addr(&s[40]));
                std::uint64_t out[fmt::kMaxStackDepth];
                const lib::WalkResult st = walk_from_frame(s, out, 8);
                return expect_walk("guard page", st, out, fmt::kStackBadFrame, {s[1]});
              });
            }),
            "");
}

// Two threads on stacks given with pthread_attr_setstack from one mapping,
// a PROT_NONE page between them; the upper one's signal frame sends the
// walk to the lower one's stack, where a frame waits (a return address
// code_b where the leaf's would be): that stack is not the walking
// thread's, the walk ends there and reads nothing of it.
TEST_F(Walker, ASignalFrameOntoAnotherThreadsStackEndsThere) {
  EXPECT_EQ(in_child([] {
              constexpr std::size_t kStack = 256 * 1024;
              char *m = static_cast<char *>(mmap(nullptr, 2 * kStack + 4096, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
              if (m == MAP_FAILED || mprotect(m + kStack, 4096, PROT_NONE) != 0) return false;
              struct Shared {
                std::atomic<int> stage{0};
                std::uint64_t planted = 0;
                bool ok = false;
              } sh;
              pthread_attr_t a;
              pthread_t lower, upper;
              pthread_attr_init(&a);
              pthread_attr_setstack(&a, m, kStack);
              pthread_create(&lower, &a, [](void *p) -> void * {
                auto *x = static_cast<Shared *>(p);
                alignas(16) volatile std::uint64_t frame[4] = {ra_of(code_b), 0, 0, 0};
                x->planted = addr(const_cast<std::uint64_t *>(frame));
                x->stage = 1;
                while (x->stage != 2) sched_yield();
                return nullptr;
              }, &sh);
              while (sh.stage != 1) sched_yield();
              pthread_attr_setstack(&a, m + kStack + 4096, kStack);
              pthread_create(&upper, &a, [](void *p) -> void * {
                auto *x = static_cast<Shared *>(p);
                SIGFRAME(s, reinterpret_cast<std::uint64_t>(&ct_unwind_leaf), x->planted, addr(&s[40]));
                std::uint64_t out[fmt::kMaxStackDepth];
                const lib::WalkResult st = walk_from_frame(s, out, 8);
                x->ok = expect_walk("another thread's stack", st, out, fmt::kStackBadFrame, {s[1]});
                return nullptr;
              }, &sh);
              pthread_join(upper, nullptr);
              sh.stage = 2;
              pthread_join(lower, nullptr);
              return sh.ok;
            }),
            "");
}

// Code of libtimeline itself carries .eh_frame: a walk interrupted at the
// first instruction of tl_mark_stack (nothing pushed: the return address at
// rsp) leaves it through its CFI, not by a frame pointer that is not its.
TEST_F(Walker, AnInterruptedFrameInsideLibtimelineLeavesItByItsEhFrame) {
  alignas(16) std::uint64_t s[8] = {};
  s[0] = ra_of(code_b);
  s[2] = addr(&s[4]);
  s[3] = ra_of(code_a);
  std::uint64_t out[fmt::kMaxStackDepth];
  const lib::WalkResult st =
      lib::walk_stack({reinterpret_cast<std::uint64_t>(&tl_mark_stack), addr(&s[0]), addr(&s[2])}, true, out, 8, false);
  ASSERT_GE(st.depth, 2u) << fmt::stack_end_name(st.end);
  EXPECT_EQ(out[0], ra_of(code_b));
  EXPECT_EQ(out[1], ra_of(code_a));
}

// Words rewritten under the walk: one thread rewrites a chain on the
// walking thread's stack with hostile values (code of the unloaded object,
// the trampoline, PROT_NONE and guard pages, the chain's own slots, 0)
// while that thread walks it, plain and with the crash handler's reads,
// again and again.  Every walk must end (the child exits 0).
TEST_F(Walker, AChainRewrittenUnderTheWalkNeverFaults) {
  EXPECT_EQ(in_child([] {
              const std::uint64_t victim = unloaded_victim_code();
              void *none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
              if (victim == 0 || none == MAP_FAILED) return false;
              static std::atomic<std::uint64_t *> chain{nullptr};
              static std::atomic<bool> done{false};
              static std::uint64_t palette[12];
              pthread_t writer;
              pthread_create(&writer, nullptr, [](void *) -> void * {
                std::uint64_t x = 88172645463325252ull;
                while (!done) {
                  std::uint64_t *c = chain.load();
                  if (c == nullptr) continue;
                  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                  const std::uint64_t v = palette[x % 12];
                  __atomic_store_n(&c[(x >> 8) % 32], (x >> 16) % 3 == 0 ? v + 8 * ((x >> 20) % 8) : v, __ATOMIC_RELAXED);
                }
                return nullptr;
              }, nullptr);
              return in_thread([&](std::uint64_t lo, std::uint64_t guard) {
                alignas(16) std::uint64_t s[32] = {};
                const std::uint64_t p[12] = {victim, victim + 1, trampoline(), ra_of(code_a), ra_of(code_b),
                                             addr(none), lo - guard, addr(&s[0]), addr(&s[2]), addr(&s[9]), 0,
                                             reinterpret_cast<std::uint64_t>(&ct_unwind_leaf)};
                std::memcpy(palette, p, sizeof p);
                chain = s;
                std::uint64_t out[fmt::kMaxStackDepth + 1];
                for (int i = 0; i < 20000; ++i) {
                  const std::uint64_t pc = palette[i % 12];
                  (void)lib::walk_stack({pc, addr(&s[i % 4]), palette[(i / 12) % 12]}, i % 3 == 0, out,
                                        fmt::kMaxStackDepth, i % 7 == 0, i % 5 == 0);
                }
                done = true;
                chain = nullptr;
                pthread_join(writer, nullptr);
                return true;
              });
            }),
            "");
}
#endif

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
