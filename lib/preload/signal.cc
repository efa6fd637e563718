// SPDX-License-Identifier: MIT
/*
 * signal.cc - libtimeline-signal.so: the program's fatal-signal handlers run
 * after libtimeline's crash handler instead of replacing it.
 *
 * sigaction, signal, bsd_signal, sysv_signal and __sysv_signal, for a signal
 * whose kernel disposition is still libtimeline's crash handler (SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGABRT after tl_init), store the program's
 * disposition in libtimeline (tl_internal_sigaction, lib/src/internal.h) and
 * return the program's previous one, leaving the kernel's alone; the crash
 * handler writes its CRASH event and calls the program's handler with the
 * flags and mask it asked for (lib/src/crash_handler.cc).  Every other call
 * goes to the next definition (libc's).
 *
 * SIGNAL CONTEXT: a program's handler may call sigaction (redis restores
 * SIG_DFL from its SIGSEGV handler).  A call for one of libtimeline's five
 * signals takes no lock and allocates nothing (tl_internal_sigaction is
 * async-signal-safe).  A call forwarded to libc is as safe as libc's, except
 * the first one, which looks up the next definition with dlsym
 * (resolve_next, preload_common.h), as the other wrappers do.  Keeps errno
 * on success.
 */
#include <signal.h>
#include <string.h>

#include "preload_common.h"

extern "C" int tl_internal_sigaction(int signo, const struct sigaction *act,
                                     struct sigaction *oldact);
/* libc's sigaction under a name nobody interposes: the fallback while the
 * next definition cannot be looked up (resolve_next). */
extern "C" int __sigaction(int, const struct sigaction *, struct sigaction *);

namespace core_timeline::preload {
namespace {

enum { kSigaction, kSignal, kSysvSignal };
NextSymbol g_next[] = {{"sigaction"}, {"signal"}, {"sysv_signal"}};

using SigactionFn = int (*)(int, const struct sigaction *, struct sigaction *);
using SignalFn = sighandler_t (*)(int, sighandler_t);

int do_sigaction(int signo, const struct sigaction *act, struct sigaction *oldact) {
  int saved_errno = errno;
  if (tl_internal_sigaction(signo, act, oldact) == 1) {
    errno = saved_errno;
    return 0;
  }
  errno = saved_errno;
  SigactionFn fn = next<SigactionFn>(g_next, kSigaction);
  return (fn != nullptr ? fn : __sigaction)(signo, act, oldact);
}

/* signal() as glibc implements it on top of sigaction: `flags`, and the
 * signal itself in the mask unless SA_NODEFER. */
sighandler_t do_signal(int signo, sighandler_t handler, int flags, int next_index) {
  if (tl_internal_sigaction(signo, nullptr, nullptr) != 1) {
    SignalFn fn = next<SignalFn>(g_next, next_index);
    if (fn != nullptr) return fn(signo, handler);
  }
  if (handler == SIG_ERR || signo <= 0 || signo >= NSIG) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  memset(&old, 0, sizeof old);
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (!(flags & SA_NODEFER)) sigaddset(&act.sa_mask, signo);
  act.sa_flags = flags;
  if (do_sigaction(signo, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

}  // namespace
}  // namespace core_timeline::preload

using namespace core_timeline::preload;

CT_PRELOAD_EXPORT int sigaction(int signo, const struct sigaction *act, struct sigaction *oldact) {
  return do_sigaction(signo, act, oldact);
}

/* glibc's signal() and bsd_signal() are one function: BSD semantics. */
CT_PRELOAD_EXPORT sighandler_t signal(int signo, sighandler_t handler) {
  return do_signal(signo, handler, SA_RESTART, kSignal);
}

CT_PRELOAD_EXPORT sighandler_t bsd_signal(int signo, sighandler_t handler) {
  return do_signal(signo, handler, SA_RESTART, kSignal);
}

/* System V semantics: reset on delivery, not blocked in its handler. */
CT_PRELOAD_EXPORT sighandler_t sysv_signal(int signo, sighandler_t handler) {
  return do_signal(signo, handler, SA_RESETHAND | SA_NODEFER, kSysvSignal);
}

CT_PRELOAD_EXPORT sighandler_t __sysv_signal(int signo, sighandler_t handler) {
  return do_signal(signo, handler, SA_RESETHAND | SA_NODEFER, kSysvSignal);
}
