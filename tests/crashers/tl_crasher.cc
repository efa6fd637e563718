// SPDX-License-Identifier: MIT
// tl_crasher MODE - dies (or recovers) in one of the ways libtimeline's crash
// path claims to handle.  lib_crash_test runs it through the real
// systemd-coredump pipeline and checks its core.
//
// Every mode first records MARK_START (0xC0DE, arg = mode number) so a test
// can tell the ring is there, then does what its name says:
//   segv-null         write through a NULL pointer (SIGSEGV, SEGV_MAPERR)
//   abort             abort() (SIGABRT, SI_TKILL)
//   wait-for-kill     print "ready" and wait to be killed by another process
//   bus-mmap          read an mmap'd file past its end (SIGBUS, BUS_ADRERR)
//   ill               execute ud2 (SIGILL, ILL_ILLOPN)
//   fpe               integer division by zero (SIGFPE, FPE_INTDIV)
//   overflow-thread   a second thread overflows its stack (SIGSEGV)
//   handler-before    install a SIGSEGV handler, then tl_init; the handler
//                     records HANDLER_RAN and returns without fixing: crash
//   recover-before    a SIGSEGV handler installed before tl_init recovers
//                     with siglongjmp; then abort()
//   recover-after     the same handler installed after tl_init; then abort()
//   exec              record EXEC_BEFORE, then exec itself as after-exec
//   after-exec        record AFTER_EXEC, then segv-null
//   hammer            8 threads mark without pause; once each has written
//                     1000 events, thread 0 writes through NULL
//   no-handlers       tl_init without handlers, then segv-null
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "core_timeline/timeline.h"
#include "crasher_ids.h"

namespace {

sigjmp_buf g_recover;

__attribute__((noinline, noipa)) void segv_null() { *(volatile int *)nullptr = 1; }

void handler_returns(int) { tl_mark(kHandlerRan, 0); }

void handler_recovers(int) { siglongjmp(g_recover, 1); }

void install(void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
}

int init(bool handlers) {
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.no_handlers = handlers ? 0 : 1;
  o.slots_per_lane = 1024;
  o.sidecar_dir = "";
  int rc = tl_init(&o);
  if (rc != 0) {
    fprintf(stderr, "tl_crasher: tl_init: %s\n", strerror(-rc));
    exit(70);
  }
  return rc;
}

// Unbounded recursion, on purpose (the stack-overflow mode).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
__attribute__((noinline, noipa)) int recurse(int depth) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(depth);
  return recurse(depth + 1) + pad[0];
}
#pragma GCC diagnostic pop

void *overflow_thread(void *) {
  tl_mark(kThreadStarted, static_cast<uintptr_t>(syscall(SYS_gettid)));
  recurse(0);
  return nullptr;
}

std::atomic<bool> g_go{false};
std::atomic<uint64_t> g_progress[kHammerThreads];

// Thread 0 crashes once every writer has written at least 1000 events, while
// they all keep writing.
bool all_writers_busy() {
  for (auto &p : g_progress)
    if (p.load(std::memory_order_relaxed) < 1000) return false;
  return true;
}

void *hammer_thread(void *arg) {
  uintptr_t index = reinterpret_cast<uintptr_t>(arg);
  while (!g_go.load()) {
  }
  for (uint64_t i = 0;; ++i) {
    tl_mark2(kHammer + static_cast<uint32_t>(index), i, hammer_check(index, i));
    g_progress[index].store(i + 1, std::memory_order_relaxed);
    if (index == 0 && i > 20000 && all_writers_busy()) segv_null();
  }
  return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: tl_crasher MODE\n");
    return 64;
  }
  std::string mode = argv[1];
  int number = mode_number(mode.c_str());
  if (number < 0) {
    fprintf(stderr, "tl_crasher: unknown mode %s\n", mode.c_str());
    return 64;
  }
  if (mode == "handler-before") install(handler_returns);
  if (mode == "recover-before") install(handler_recovers);
  init(mode != "no-handlers");
  tl_mark(kMarkStart, static_cast<uintptr_t>(number));

  if (mode == "segv-null" || mode == "no-handlers" || mode == "handler-before") {
    segv_null();
  } else if (mode == "abort") {
    abort();
  } else if (mode == "wait-for-kill") {
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  } else if (mode == "bus-mmap") {
    char path[] = "/tmp/tl-crasher-bus-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 4096) != 0) return 71;
    auto *p = static_cast<volatile char *>(mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0));
    unlink(path);
    if (p == MAP_FAILED) return 71;
    return p[4096];  // past the end of the file: SIGBUS
  } else if (mode == "ill") {
    __builtin_trap();
  } else if (mode == "fpe") {
    volatile int zero = 0, numerator = 12345;  // volatile: a real idiv
    return numerator / zero;
  } else if (mode == "overflow-thread") {
    pthread_t t;
    pthread_create(&t, nullptr, overflow_thread, nullptr);
    pthread_join(t, nullptr);
  } else if (mode == "recover-before" || mode == "recover-after") {
    if (mode == "recover-after") install(handler_recovers);
    if (sigsetjmp(g_recover, 1) == 0) segv_null();
    tl_mark(kRecovered, 0);
    abort();
  } else if (mode == "exec") {
    tl_mark(kExecBefore, 0);
    execl("/proc/self/exe", argv[0], "after-exec", static_cast<char *>(nullptr));
    return 72;
  } else if (mode == "after-exec") {
    tl_mark(kAfterExec, 0);
    segv_null();
  } else if (mode == "hammer") {
    pthread_t threads[kHammerThreads];
    for (uintptr_t i = 0; i < kHammerThreads; ++i)
      pthread_create(&threads[i], nullptr, hammer_thread, reinterpret_cast<void *>(i));
    g_go = true;
    for (auto &t : threads) pthread_join(t, nullptr);
  }
  return 73;  // not reached in any mode
}
