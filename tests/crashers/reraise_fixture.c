/* SPDX-License-Identifier: MIT */
/*
 * reraise_fixture.c MODE - a program whose own SIGSEGV handler, installed
 * after tl_init (so it replaces libtimeline's), catches a fault and
 * re-raises it, as servers and runtimes do after their own crash report.
 *
 *   raise  the handler (SA_SIGINFO | SA_NODEFER | SA_RESETHAND) calls
 *          raise(SIGSEGV): the fatal signal is SI_TKILL from the process
 *   kill   the same with kill(getpid(), SIGSEGV): SI_USER
 *   defer  the handler (SA_SIGINFO | SA_RESETHAND, no SA_NODEFER) calls
 *          raise(SIGSEGV) and returns: the signal stays blocked in the
 *          handler and is taken after sigreturn, at the faulting
 *          instruction, with no signal frame on the stack
 *   thread the raise mode in a second thread while main waits in
 *          pthread_join (for --all-threads)
 *
 * The fault: fault_here (called from f1, from main) writes to
 * kFaultAddress, in a read-only page mapped at kFaultPage: SIGSEGV
 * (SEGV_ACCERR) at a known address.  SA_NODEFER leaves the signal
 * unblocked in the handler, so the re-raised one is taken inside it, on
 * the stack that holds the kernel's signal frame of the first.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <core_timeline/timeline.h>

#define NOIPA __attribute__((noipa))
enum { BEFORE_FAULT = 0x5101 };
TL_NAME(BEFORE_FAULT, "BEFORE_FAULT x");

static const uintptr_t kFaultPage = 0x10000000;
static const uintptr_t kFaultAddress = 0x10000040;
static const char *g_mode = "raise";
static volatile int g_sink;

NOIPA static void on_segv(int sig, siginfo_t *info, void *uc) {
  (void)info;
  (void)uc;
  g_sink += sig; /* the program's own crash report would be here */
  if (strcmp(g_mode, "kill") == 0) kill(getpid(), sig);
  else raise(sig);
  g_sink += 1;
}

NOIPA static void fault_here(int x) {
  tl_mark(BEFORE_FAULT, (uint64_t)x);
  *(volatile int *)kFaultAddress = x;
  g_sink += x;
}

NOIPA static void f1(int x) {
  fault_here(x + 1);
  g_sink += x;
}

/* Whether the main thread is blocked in futex(2) (pthread_join): its
 * /proc/self/task/PID/syscall starts with the system call's number. */
static int main_thread_waits(void) {
  char path[64], buf[32] = {0};
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)getpid());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 && strncmp(buf, "202 ", 4) == 0; /* SYS_futex on x86-64 */
}

NOIPA static void *thread_main(void *arg) {
  /* Fault only once main waits in pthread_join, so its registers in the
   * core are there and not in the middle of clone3. */
  while (!main_thread_waits()) sched_yield();
  f1((int)(long)arg);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) g_mode = argv[1];
  struct tl_options o = {.size = sizeof o};
  tl_init(&o);
  if (mmap((void *)kFaultPage, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
      (void *)kFaultPage)
    return 3;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | (strcmp(g_mode, "defer") == 0 ? 0 : SA_NODEFER);
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  if (strcmp(g_mode, "thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, (void *)(long)argc) != 0) return 4;
    pthread_join(t, NULL);
    return 0;
  }
  f1(argc);
  return 0;
}
