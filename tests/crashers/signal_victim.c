/* SPDX-License-Identifier: MIT */
/*
 * signal_victim - a program with its own SIGSEGV handler, installed after
 * libtimeline's constructor (run under LD_PRELOAD of libtimeline.so.1 and
 * libtimeline-signal.so by signal_chain_test).
 *
 *   signal_victim MODE LOG
 *
 * Appends what it sees to LOG, one line each (write(2): also from its
 * handler), then faults by a store to kFaultAddress:
 *   reraise-nodefer  SA_SIGINFO|SA_NODEFER|SA_RESETHAND handler (redis's
 *                    flags): logs "handler", restores SIG_DFL with sigaction,
 *                    kill(getpid(), SIGSEGV)
 *   reraise-blocked  the same with SA_SIGINFO alone: the kill() stays
 *                    pending until the handler returns
 *   reraise-raise    the same with raise(SIGSEGV) instead of kill()
 *   resethand        SA_RESETHAND handler that logs "handler" and returns:
 *                    the store faults again and kills
 *   ignore           signal(SIGSEGV, SIG_IGN); kill(getpid(), SIGSEGV) is
 *                    ignored ("survived kill"); the store still kills
 *   longjmp          a handler that siglongjmps out ("recovered"), then
 *                    abort()
 *   longjmp-kill     the same, then SIG_DFL and kill(getpid(), SIGSEGV):
 *                    a new crash, not the recovered fault
 *   exit             a handler that logs "handler" and ends the process with
 *                    _exit(7)
 *   abort            a handler that logs "handler" and calls abort()
 *   fault-again      a handler that logs "handler" and faults itself, by a
 *                    store to kSecondFaultAddress
 *   interrupted-stack  an SA_RESETHAND handler without SA_ONSTACK that logs
 *                    "on the interrupted stack" if a local of its lies
 *                    between the main thread's stack end (pthread_getattr_np,
 *                    read before the fault) and the sp the fault interrupted
 *                    (its ucontext), "NOT on the interrupted stack" if not,
 *                    and returns: the store faults again and kills
 *   overflow         an SA_RESETHAND handler without SA_ONSTACK that logs
 *                    "handler"; the program then exhausts its stack by
 *                    recursion: the handler, on the exhausted stack, faults
 *                    before it logs, and the kernel kills
 *   overflow-nodefer the same with SA_NODEFER (redis's flags): the second
 *                    fault goes to libtimeline's handler, which lets it kill
 *   own-altstack     the same with SA_ONSTACK, after sigaltstack() of a
 *                    buffer of its own: logs "on its own alternate stack" if
 *                    its local lies in that buffer, "NOT on its own
 *                    alternate stack" if not
 * Before the fault it logs "old is mine" if sigaction(SIGSEGV, NULL, &old)
 * returns its own handler (or SIG_IGN for ignore), "old is NOT mine" if not.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define kFaultAddress ((volatile int *)0x1230)
#define kSecondFaultAddress ((volatile int *)0x4560)

static uintptr_t g_stack_lo, g_stack_hi; /* the main thread's stack */
static char g_own_altstack[256 * 1024] __attribute__((aligned(16)));

static int g_log = -1;
static sigjmp_buf g_jump;
static int g_use_raise;

static void say(const char *line) {
  (void)!write(g_log, line, strlen(line));
  (void)!write(g_log, "\n", 1);
}

static void reraise_handler(int signo, siginfo_t *info, void *uc) {
  (void)info;
  (void)uc;
  say("handler");
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  dfl.sa_flags = SA_NODEFER | SA_ONSTACK | SA_RESETHAND;
  sigaction(signo, &dfl, NULL);
  if (g_use_raise)
    raise(signo);
  else
    kill(getpid(), signo);
}

static void plain_handler(int signo) {
  (void)signo;
  say("handler");
}

static void exit_handler(int signo) {
  (void)signo;
  say("handler");
  _exit(7);
}

static void abort_handler(int signo) {
  (void)signo;
  say("handler");
  abort();
}

static void fault_again_handler(int signo) {
  (void)signo;
  say("handler");
  *kSecondFaultAddress = 2;
}

static void where_handler(int signo, siginfo_t *info, void *uc_void) {
  (void)signo;
  (void)info;
  volatile char here = 0;
  uintptr_t at = (uintptr_t)&here;
#if defined(__x86_64__)
  uintptr_t interrupted = (uintptr_t)((ucontext_t *)uc_void)->uc_mcontext.gregs[REG_RSP];
#else
  uintptr_t interrupted = g_stack_hi;
  (void)uc_void;
#endif
  if (g_stack_hi == 0) {
    uintptr_t lo = (uintptr_t)g_own_altstack;
    say(at >= lo && at < lo + sizeof g_own_altstack ? "on its own alternate stack"
                                                     : "NOT on its own alternate stack");
  } else {
    say(at >= g_stack_lo && at < interrupted ? "on the interrupted stack" : "NOT on the interrupted stack");
  }
}

static volatile int g_stop;

static int deep(int n) {
  volatile char buf[1024];
  buf[0] = (char)n;
  if (g_stop) return 0;
  return deep(n + 1) + buf[0];
}

static void longjmp_handler(int signo) {
  (void)signo;
  siglongjmp(g_jump, 1);
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  const char *mode = argv[1];
  g_log = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (g_log < 0) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  void *mine = NULL;
  g_use_raise = strcmp(mode, "reraise-raise") == 0;
  if (strcmp(mode, "reraise-nodefer") == 0 || strcmp(mode, "reraise-blocked") == 0 || g_use_raise) {
    sa.sa_sigaction = reraise_handler;
    sa.sa_flags = SA_SIGINFO;
    if (strcmp(mode, "reraise-nodefer") == 0) sa.sa_flags |= SA_NODEFER | SA_RESETHAND;
    mine = (void *)reraise_handler;
  } else if (strcmp(mode, "resethand") == 0) {
    sa.sa_handler = plain_handler;
    sa.sa_flags = SA_RESETHAND;
    mine = (void *)plain_handler;
  } else if (strcmp(mode, "ignore") == 0) {
    sa.sa_handler = SIG_IGN;
    mine = (void *)SIG_IGN;
  } else if (strncmp(mode, "longjmp", 7) == 0) {
    sa.sa_handler = longjmp_handler;
    mine = (void *)longjmp_handler;
  } else if (strcmp(mode, "exit") == 0 || strcmp(mode, "abort") == 0 || strcmp(mode, "fault-again") == 0) {
    sa.sa_handler = mode[0] == 'e' ? exit_handler : mode[0] == 'a' ? abort_handler : fault_again_handler;
    mine = (void *)sa.sa_handler;
  } else if (strncmp(mode, "overflow", 8) == 0) {
    sa.sa_handler = plain_handler;
    sa.sa_flags = SA_RESETHAND | (strcmp(mode, "overflow-nodefer") == 0 ? SA_NODEFER : 0);
    mine = (void *)plain_handler;
  } else if (strcmp(mode, "interrupted-stack") == 0 || strcmp(mode, "own-altstack") == 0) {
    sa.sa_sigaction = where_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    mine = (void *)where_handler;
    if (mode[0] == 'o') {
      stack_t ss;
      ss.ss_sp = g_own_altstack;
      ss.ss_size = sizeof g_own_altstack;
      ss.ss_flags = 0;
      if (sigaltstack(&ss, NULL) != 0) return 4;
      sa.sa_flags |= SA_ONSTACK;
    } else {
      pthread_attr_t attr;
      void *lo;
      size_t size;
      if (pthread_getattr_np(pthread_self(), &attr) != 0 || pthread_attr_getstack(&attr, &lo, &size) != 0)
        return 4;
      g_stack_lo = (uintptr_t)lo;
      g_stack_hi = (uintptr_t)lo + size;
    }
  } else {
    return 2;
  }
  if (strcmp(mode, "ignore") == 0) {
    if (signal(SIGSEGV, SIG_IGN) == SIG_ERR) return 3;
  } else if (sigaction(SIGSEGV, &sa, NULL) != 0) {
    return 3;
  }
  struct sigaction old;
  memset(&old, 0, sizeof old);
  sigaction(SIGSEGV, NULL, &old);
  void *seen = (old.sa_flags & SA_SIGINFO) ? (void *)old.sa_sigaction : (void *)old.sa_handler;
  say(seen == mine ? "old is mine" : "old is NOT mine");

  if (strcmp(mode, "ignore") == 0) {
    kill(getpid(), SIGSEGV);
    say("survived kill");
  }
  if (strncmp(mode, "longjmp", 7) == 0) {
    if (sigsetjmp(g_jump, 1) == 0) {
      *kFaultAddress = 1;
      say("not reached");
    }
    say("recovered");
    if (strcmp(mode, "longjmp-kill") == 0) {
      signal(SIGSEGV, SIG_DFL);
      kill(getpid(), SIGSEGV);
    }
    abort();
  }
  if (strncmp(mode, "overflow", 8) == 0) {
    deep(0);
    say("survived the recursion");
    return 1;
  }
  *kFaultAddress = 1;
  say("survived the fault");
  return 1;
}
