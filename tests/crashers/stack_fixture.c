/* SPDX-License-Identifier: MIT */
/*
 * stack_fixture.c MODE - records a stack at a known depth, then crashes.
 *
 *   mark    main -> f1 -> f2 -> f3 -> f4: f4 calls tl_mark_stack(MARK, 4, 8)
 *           and then writes through a null pointer (SIGSEGV in f4)
 *   thread  the same chain in a second thread (thread_main -> f1 ...)
 *   signal  f4 sends itself SIGUSR1 with a raw tgkill system call; the
 *           handler calls tl_mark_stack(MARK_SIGNAL, 5, 8), so the stack
 *           runs through the signal frame into f4; then f4 crashes
 *   shlib   f2 calls f3 through libstack_fixture_lib.so
 *           (stack_fixture_lib_call -> lib_inner -> f3)
 *   leaf    f4 calls leaf_fault, a leaf that sets up no frame of its own
 *           (gcc leaves it none even with -fno-omit-frame-pointer), and
 *           the crash is there: rbp still holds f4's frame, and f4's
 *           return address is at the stack pointer
 *   deep    main -> deep x 31 -> f1 -> f2 -> f3 -> f4, and the crash in
 *           f4: a CRASH stack of 38 frames beyond the pc, deeper than one
 *           STACK slot's 8 (the ring's stack chain holds 64)
 *   depth   tl_init with stack_depth 8 (what TL_STACK_DEPTH sets for the
 *           shared library); f4 begins the span IN_F4 and records a MALLOC
 *           and a REALLOC with tl_record, as the allocation wrappers do:
 *           each gets a stack without asking (REALLOC's in the STACK slot
 *           after it, its inline bytes being its own)
 *
 * Built three ways (tests/crashers/CMakeLists.txt): with .sframe
 * (-Wa,--gsframe -fomit-frame-pointer), with frame pointers, and with
 * neither.  Every function is noipa and does work after its call, so each
 * keeps its frame and its return address.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <core_timeline/timeline.h>

#define NOIPA __attribute__((noipa))
enum { MARK = 0x5001, MARK_SIGNAL = 0x5002, IN_F4 = 0x5003 };
TL_NAME(MARK, "MARK depth");
TL_NAME(MARK_SIGNAL, "MARK_SIGNAL depth");
TL_NAME(IN_F4, "IN_F4 x");

int stack_fixture_lib_call(int (*cb)(int), int x);

static const char *g_mode = "mark";
static volatile int g_sink;

NOIPA static void on_usr1(int sig) {
  tl_mark_stack(MARK_SIGNAL, 5, 8);
  g_sink += sig;
}

NOIPA static void leaf_fault(int x) { *(volatile int *)(long)g_sink = x; }

NOIPA static int f4(int x) {
  if (strcmp(g_mode, "leaf") == 0) {
    leaf_fault(x);
  } else if (strcmp(g_mode, "signal") == 0) {
    long ret;
    /* tgkill(getpid(), gettid(), SIGUSR1) without libc: the signal arrives
     * as the system call returns, so the interrupted pc is in f4. */
    long pid = getpid(), tid = syscall(SYS_gettid);
    __asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"((long)SIGUSR1)
                     : "rcx", "r11", "memory");
    (void)ret;
  } else if (strcmp(g_mode, "deep") == 0) {
    /* nothing recorded: the CRASH event's own stack is the point */
  } else if (strcmp(g_mode, "depth") == 0) {
    tl_span_begin(IN_F4, (uintptr_t)x);
    tl_record(TL_KIND_MALLOC, 0, 0x1000, 32);
    tl_record(TL_KIND_REALLOC, 0, 0x2000, 0x1000);
  } else {
    tl_mark_stack(MARK, 4, 8);
  }
  *(volatile int *)(long)g_sink = x; /* g_sink is 0 or small: SIGSEGV here */
  return x + 1;
}
NOIPA static int f3(int x) { return f4(x + 1) + 1; }
NOIPA static int f2(int x) {
  if (strcmp(g_mode, "shlib") == 0) return stack_fixture_lib_call(f3, x) + 1;
  return f3(x + 1) + 1;
}
NOIPA static int f1(int x) { return f2(x + 1) + 1; }
/* `n` more frames of itself, then f1 (the volatile store after the call
 * keeps each frame: no tail recursion). */
NOIPA static int deep(int n, int x) {
  const int r = n == 0 ? f1(x) : deep(n - 1, x + 1);
  g_sink += r;
  return r + 1;
}
enum { DEEP_FRAMES = 31 };

NOIPA static void *thread_main(void *arg) {
  tl_thread_name("stack-worker");
  g_sink += f1((int)(long)arg);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) g_mode = argv[1];
  struct tl_options o = {.size = sizeof o};
  if (strcmp(g_mode, "depth") == 0) o.stack_depth = 8;
  tl_init(&o);
  signal(SIGUSR1, on_usr1);
  if (strcmp(g_mode, "thread") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, thread_main, (void *)1L);
    pthread_join(t, NULL);
    return 0;
  }
  if (strcmp(g_mode, "deep") == 0) g_sink += deep(DEEP_FRAMES - 1, argc);
  else g_sink += f1(argc);
  return 0;
}
