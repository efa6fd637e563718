/* SPDX-License-Identifier: MIT */
/*
 * crash_handler.cc - the crash path: one final CRASH event, then death by the
 * original signal.
 *
 * ASYNC-SIGNAL-SAFE FILE.  crash_signal_handler() and everything it calls run
 * on the crashing thread's alternate stack (run_program_here() on the
 * interrupted stack), possibly with a corrupt heap and with locks held by
 * the interrupted code.
 *
 * Contract of the handler:
 *  - may call: raw system calls (gettid, getpid, tgkill, rt_tgsigqueueinfo,
 *    pwrite), sigaction and clock_gettime (both async-signal-safe per
 *    signal-safety(7)), lock-free __atomic builtins, record() (record.cc,
 *    itself async-signal-safe), the previously installed handler;
 *  - may not call: malloc/free, locks, stdio, dladdr, backtrace, open,
 *    msync, anything that formats, or anything from libstdc++ (none of
 *    which is linked);
 *  - preserves errno.
 *
 * clock_gettime is used once per process, for the crash clock anchor: the
 * slot clock, CLOCK_MONOTONIC and CLOCK_REALTIME read at the same instant
 * at the crash, which with the init anchor gives the reader the slot
 * clock's rate, and so every event's time, from the core alone, also when
 * the process died before the helper thread's first anchor (version 2).
 * POSIX lists it as async-signal-safe; glibc's goes through the vDSO and
 * takes no lock; at worst it is a system call.
 *
 * Order of events for a handled signal:
 *  1. If the program (or a runtime) installed a handler before tl_init, or
 *     after it through libtimeline-signal.so, write the CRASH slot (step 2,
 *     flags kCrashChained | kCrashHanded), then call that handler (see "The
 *     program's handlers") and, if it returns, step 3 only where the signal
 *     must still kill: it left its re-raise pending, or abort()'s SIGABRT.
 *     A fault returns: if the handler fixed the cause, execution goes on
 *     (the reader then calls the CRASH event a handled fault once the
 *     thread records a later one: docs/timeline-json.md); if not, the same
 *     instruction faults again at once, at the same pc (LastFault, armed
 *     for that one next signal), and that kills with no second CRASH slot.
 *  2. Write the CRASH slot: signo, si_code, si_errno, sender pid/uid, fault
 *     address (si_addr), pc and sp from the ucontext, the tid; then (ring
 *     format 4) the crashing thread's stack, walked from the ucontext's pc,
 *     sp and rbp by walk_stack() (unwind.cc, async-signal-safe; the
 *     interrupted frame's rule from .eh_frame where no .sframe covers it,
 *     since the faulting function may have no frame of its own) with every
 *     stack read through process_vm_readv(2), so a corrupt stack ends the
 *     walk instead of faulting again, in the chain of kKindStack slots
 *     after it (ring format 5): up to 64 frames, 8 a slot, as many as a
 *     quarter of the lane's slots hold (fmt::crash_stack_room), so in a
 *     lane of its own the chain never overwrites its CRASH slot and the
 *     lane keeps most of its events.  The first handler to get here in
 *     the process also writes the crash clock anchor into the header.  Bring the sidecar up to date with pwrite(2),
 *     so its copy has both.
 *  3. Die of the original signal with the kernel's own siginfo: restore
 *     SIG_DFL; for a fault raised by an instruction (si_code > 0 and SIGSEGV,
 *     SIGBUS, SIGILL or SIGFPE) simply return, so the instruction faults
 *     again and the kernel delivers a fresh siginfo; for a signal sent by a
 *     process (kill, abort's raise: si_code <= 0) queue the same siginfo to
 *     this thread with rt_tgsigqueueinfo(2), which is delivered, with its
 *     default action, as soon as the handler returns.
 *
 * The program's handlers.  The dispositions the program sees are kept here
 * (program_disposition): at install time, the one found; later, the ones it
 * sets through tl_internal_sigaction(), which libtimeline-signal.so calls
 * from its sigaction, signal, bsd_signal, sysv_signal and __sysv_signal
 * while our handler is still the kernel's (lib/preload/signal.cc).  The
 * kernel keeps ours, so ours runs first and calls the program's handler
 * (step 1) as the kernel would: with the interrupted thread's mask plus the
 * handler's sa_mask, and its own signal too unless SA_NODEFER; SA_RESETHAND
 * restores the program's disposition to SIG_DFL before the call; on the
 * stack it asked for (program_stack_top: the interrupted stack below the
 * red zone without SA_ONSTACK, switched to by tl_call_on_stack,
 * call_on_stack.S, x86-64 only; the thread's alternate stack as
 * sigaltstack(2) shows it with SA_ONSTACK), the alternate stack shortened
 * meanwhile below our frames (run_program_here).  Without
 * that library (libtimeline.so.1 alone, the static library, a raw
 * rt_sigaction system call) a handler installed after tl_init replaces ours
 * (sigaction semantics) and works as the program expects; if it chains to
 * ours, ours runs as above.
 *
 * A signal from inside the program's handler (t_pending: the stack it runs
 * on and a canary word there; see interrupted_inside) writes no CRASH slot:
 * its re-raise (redis: sigaction SIG_DFL, then kill(getpid(), SIGSEGV)),
 * nested (SA_NODEFER, or a signal it did not block) or found pending when
 * it returns, its abort(), a fault of its own under SA_NODEFER.  The
 * process dies of that signal as it would without libtimeline, and the
 * ring's CRASH event is the original fault's.  A handler that faults with
 * its signal blocked, or calls _exit(), never comes back to us: the CRASH
 * event written before the call stands (after _exit() in the sidecar).
 *
 * Limits: on architectures other than x86-64 the program's handler runs
 * on the stack ours runs on, whatever it asked; a fatal signal after a
 * siglongjmp out of the program's handler, before the code there makes a
 * call as deep as the handler ran, can be taken for one from inside the
 * handler, and then gets no CRASH slot of its own (the handed one stands);
 * after a siglongjmp the thread's alternate stack stays shortened until the
 * next signal handed to a program's handler.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "unwind.h"

/* libc's own sigaction, under a name libtimeline-signal.so does not
 * interpose: libtimeline changes the kernel's dispositions through it. */
extern "C" int __sigaction(int, const struct sigaction *, struct sigaction *);

#if defined(__x86_64__)
/* call_on_stack.S: fn(arg, old_sp) on the stack below `stack_top`. */
extern "C" void tl_call_on_stack(void *stack_top, void (*fn)(void *, void *), void *arg) TL_HIDDEN;
#endif

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51 /* include/uapi/linux/auxvec.h */
#endif

namespace core_timeline::lib {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr int kMaxSignal = 65;

/* The program's dispositions, indexed by signal number: two copies each,
 * the current one g_program_index[signo].  A writer (install time,
 * tl_internal_sigaction, SA_RESETHAND in the handler) fills the other copy
 * under g_program_lock, then publishes it with a release store, so the
 * handler, which only reads, never sees a torn one.  The lock is a spin
 * lock that a thread already holding it (a handler interrupting its own
 * sigaction call) passes through. */
struct sigaction g_program[kMaxSignal][2];
int g_program_index[kMaxSignal];
bool g_installed[kMaxSignal];
pid_t g_program_lock_owner; /* tid, 0 when free */

void program_disposition(int signo, struct sigaction *out) {
  *out = g_program[signo][__atomic_load_n(&g_program_index[signo], __ATOMIC_ACQUIRE)];
}

void set_program_disposition(int signo, const struct sigaction &sa) {
  const pid_t me = raw_gettid();
  bool nested = __atomic_load_n(&g_program_lock_owner, __ATOMIC_RELAXED) == me;
  if (!nested) {
    pid_t expected = 0;
    while (!__atomic_compare_exchange_n(&g_program_lock_owner, &expected, me, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
      expected = 0;
  }
  const int next = 1 - __atomic_load_n(&g_program_index[signo], __ATOMIC_RELAXED);
  g_program[signo][next] = sa;
  __atomic_store_n(&g_program_index[signo], next, __ATOMIC_RELEASE);
  if (!nested) __atomic_store_n(&g_program_lock_owner, 0, __ATOMIC_RELEASE);
}

/* SIG_DFL, no flags, an empty mask. */
struct sigaction default_action() {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  return dfl;
}

/* The kernel's disposition of `signo` back to SIG_DFL, through libc's own
 * sigaction (async-signal-safe, signal-safety(7)). */
void kernel_default(int signo) {
  const struct sigaction dfl = default_action();
  __sigaction(signo, &dfl, nullptr);
}

bool is_handler(const struct sigaction &sa) {
  return (sa.sa_flags & SA_SIGINFO) ? sa.sa_sigaction != nullptr
                                    : (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
}

/* The fault this thread handed to the program's handler, while it runs:
 * `top` is the highest address of the stack that handler runs on (the
 * interrupted stack below its red zone, or where our handler was), and
 * `canary` a word between it and the handler's frames that holds
 * canary_value() while the handler runs. */
struct PendingFault {
  int active;
  int signo;
  uint64_t top;
  volatile uint64_t *canary;
};
__thread PendingFault t_pending TL_TLS;

uint64_t canary_value(const volatile uint64_t *at) {
  return reinterpret_cast<uint64_t>(at) ^ 0x7c3a5e91d2b4f608u;
}

/* Whether a signal that interrupted the code at `sp` interrupted the
 * program's handler that `pending` was handed to, which runs below the
 * canary on its stack.  Not code after a siglongjmp out of that handler,
 * which left `active` set: that code runs above the canary, on another
 * stack, or (when it jumped back into the frame that faulted, on the same
 * stack) over the canary's word, which its calls overwrite.  A stack word
 * is not proof: if the code after a siglongjmp never reaches that depth
 * before its next fatal signal, that signal is taken for one from inside
 * the handler, and no CRASH event of its own is written (the handed one
 * stands).  The canary lies between `sp` and `top` on one stack, so it is
 * mapped.  Before run_program_here() has set its canary (a fault in the
 * stack switch itself: the interrupted stack exhausted), any signal below
 * `top` is from inside: nothing can have left the handler yet. */
bool interrupted_inside(const PendingFault &pending, uint64_t sp) {
  if (!__atomic_load_n(&pending.active, __ATOMIC_RELAXED)) return false;
  if (sp == 0 || sp > pending.top || pending.top - sp >= (uint64_t(1) << 20)) return false;
  const volatile uint64_t *canary = pending.canary;
  if (canary == nullptr) return true;
  const uint64_t at = reinterpret_cast<uint64_t>(canary);
  return sp < at && at < pending.top && *canary == canary_value(canary);
}

/* Sent by this process (kill, raise, sigqueue, tgkill), not by the CPU. */
bool sent_by_self(const siginfo_t *info) {
  return info != nullptr && info->si_code <= 0 && info->si_pid == raw_getpid();
}

/* The fault handed to the program's handler, which returned: its
 * instruction runs again at once, so the next handled signal on this
 * thread, if it is the same fault at the same pc, is that instruction
 * faulting again (the handler did not fix the cause): a crash, whose CRASH
 * event was written before the call.  One-shot: every entry to the handler
 * takes it (a siglongjmp out of the handler never arms it, so a later
 * fault at the same pc is a new one). */
struct LastFault {
  int armed;
  int signo;
  uint64_t pc;
  uint64_t addr;
};
__thread LastFault t_last_fault TL_TLS;

/* Take (and disarm) this thread's LastFault. */
LastFault take_last_fault() {
  LastFault &t = t_last_fault;
  const LastFault last = t;
  __atomic_store_n(&t.armed, 0, __ATOMIC_RELAXED);
  return last;
}

/* Whether `signo`/`info` at `pc` is the armed fault faulting again. */
bool faulted_again(const LastFault &last, int signo, const siginfo_t *info, uint64_t pc);

bool is_fault_signal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE;
}

/* A signal raised by the CPU executing an instruction (si_code > 0: the
 * kernel's SEGV_MAPERR, BUS_ADRERR, ILL_ILLOPN, FPE_INTDIV...; siginfo(2)),
 * as opposed to one sent with kill/tgkill/sigqueue (si_code <= 0). */
bool raised_by_instruction(int signo, const siginfo_t *info) {
  return is_fault_signal(signo) && info != nullptr && info->si_code > 0;
}

uint64_t ucontext_fp(const void *uc_void) {
  if (uc_void == nullptr) return 0;
#if defined(__x86_64__)
  return static_cast<uint64_t>(static_cast<const ucontext_t *>(uc_void)->uc_mcontext.gregs[REG_RBP]);
#elif defined(__aarch64__)
  return static_cast<const ucontext_t *>(uc_void)->uc_mcontext.regs[29];
#else
  return 0;
#endif
}

void ucontext_pc_sp(const void *uc_void, uint64_t *pc, uint64_t *sp) {
  *pc = 0;
  *sp = 0;
  if (uc_void == nullptr) return;
  const auto *uc = static_cast<const ucontext_t *>(uc_void);
#if defined(__x86_64__)
  *pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  *sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  *pc = uc->uc_mcontext.pc;
  *sp = uc->uc_mcontext.sp;
#else
  (void)uc;
#endif
}

uint64_t timespec_ns(const struct timespec &ts) {
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

/* The crash clock anchor (ring_format.h): written once, by the first
 * crash handler to claim it (kAnchorNone -> kAnchorWriting); the values,
 * then kAnchorComplete with release.  crash_ticks is the midpoint of two
 * slot-clock reads around both clock_gettime calls, crash_spread_ticks
 * their distance.  A second crashing thread finds it claimed and leaves
 * it. */
void write_crash_anchor() {
  fmt::RingHeader *h = g_ring.header;
  if (h == nullptr) return;
  uint64_t expected = fmt::kAnchorNone;
  if (!__atomic_compare_exchange_n(&h->crash_anchor_state, &expected, fmt::kAnchorWriting, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return;
  struct timespec mono = {0, 0}, real = {0, 0};
  const uint64_t t0 = read_ticks();
  const bool mono_ok = clock_gettime(CLOCK_MONOTONIC, &mono) == 0;
  const bool real_ok = clock_gettime(CLOCK_REALTIME, &real) == 0;
  const uint64_t t1 = read_ticks();
  const uint64_t spread = t1 - t0;
  h->crash_ticks = t0 + spread / 2;
  h->crash_monotonic_ns = mono_ok ? timespec_ns(mono) : 0;
  h->crash_realtime_ns = real_ok ? timespec_ns(real) : 0;
  h->crash_spread_ticks = spread > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(spread);
  __atomic_store_n(&h->crash_anchor_state, fmt::kAnchorComplete, __ATOMIC_RELEASE);
}

void write_crash_slot(int signo, const siginfo_t *info, void *uc, uint32_t flags) {
  if ((__atomic_load_n(&g_enabled, __ATOMIC_RELAXED) & TL_SOURCE_CRASH) == 0 ||
      (t_lanes[fmt::kSourceUser].lane == nullptr && claim_lane(fmt::kSourceUser, true) == nullptr)) {
    /* No CRASH event, but the clock anchor still dates the other events. */
    write_crash_anchor();
    sidecar_sync();
    return;
  }
  uint64_t pc, sp;
  ucontext_pc_sp(uc, &pc, &sp);
  fmt::CrashInfo ci;
  memset(&ci, 0, sizeof ci);
  uint64_t addr = 0;
  if (info != nullptr) {
    ci.code = info->si_code;
    ci.error = info->si_errno;
    if (info->si_code <= 0) { /* sent by a process: sender's pid and uid */
      ci.sender_pid = info->si_pid;
      ci.sender_uid = info->si_uid;
    } else {
      addr = reinterpret_cast<uint64_t>(info->si_addr);
    }
  }
  ci.handler_flags = flags;
  /* As many frames as the lane has room for (ring_format.h, "the stack
   * chain"): its slots now, of which the chain takes at most a quarter. */
  uint64_t frames[fmt::kMaxChainedStackDepth];
  const ThreadLane *tl = &t_lanes[fmt::kSourceUser];
  const uint32_t room = fmt::crash_stack_room(tl->lane != nullptr ? tl->mask + 1 : 0);
  if (pc != 0) {
    const WalkResult w = walk_stack({pc, sp, ucontext_fp(uc)}, true, frames, room, true, true);
    record_chained(fmt::kSourceUser, fmt::kKindCrash, static_cast<uint32_t>(signo), addr, sp, pc, &ci, sizeof ci, false,
                   frames, w.depth, w.end);
  } else {
    record(fmt::kSourceUser, fmt::kKindCrash, static_cast<uint32_t>(signo), addr, sp, pc, &ci, sizeof ci, false);
  }
  write_crash_anchor();
  /* Bring the sidecar up to date (the lanes that changed, the name table,
   * then the header with the anchor, and the lane table): pwrite(2) only. */
  sidecar_sync();
}

/* Restore the default action and arrange to die of `signo` with `info`. */
void die_of(int signo, siginfo_t *info) {
  kernel_default(signo);
  if (raised_by_instruction(signo, info)) return; /* the instruction faults again */
  /* Sent by a process (or abort): queue the same siginfo to ourselves; the
   * kernel allows any si_code when a thread signals its own process.  It is
   * blocked until this handler returns, then kills with the default action
   * and a core. */
  if (info != nullptr &&
      syscall(SYS_rt_tgsigqueueinfo, raw_getpid(), raw_gettid(), signo, info) == 0)
    return;
  syscall(SYS_tgkill, raw_getpid(), raw_gettid(), signo);
}

/* The x86-64 System V red zone: the 128 bytes below %rsp that a leaf
 * function may use without moving %rsp; the kernel leaves them alone when
 * it builds a signal frame on the interrupted stack (arch/x86/kernel/
 * signal.c, get_sigframe). */
constexpr uint64_t kRedZone = 128;

/* The stack the kernel would have run the program's handler `prog` on,
 * when that is not the one we run on: the interrupted stack, below its red
 * zone, 16-byte aligned.  0 when the program's handler should run where we
 * are:
 *  - it asked SA_ONSTACK: the kernel delivered ours (SA_ONSTACK too) on the
 *    thread's alternate stack as sigaltstack(2) reports it, the program's
 *    own or, if it set none, the one libtimeline installed for the thread
 *    (which the program sees and may have relied on, as Rust's runtime
 *    does when it finds one set); or on the interrupted stack if the thread
 *    has none or the signal came while already on it: so would the
 *    program's;
 *  - we run on the interrupted stack ourselves (no alternate stack, or the
 *    signal interrupted code already on it): the program's handler runs
 *    below us, as the kernel would have put it below the interrupted sp. */
uint64_t program_stack_top(const struct sigaction &prog, const void *uc, const stack_t &alt) {
  if ((prog.sa_flags & SA_ONSTACK) || uc == nullptr || !(alt.ss_flags & SS_ONSTACK)) return 0;
  uint64_t pc, sp;
  ucontext_pc_sp(uc, &pc, &sp);
  const uint64_t lo = reinterpret_cast<uint64_t>(alt.ss_sp);
  if (sp <= kRedZone + 256 || (sp >= lo && sp - lo < alt.ss_size)) return 0;
  return (sp - kRedZone) & ~uint64_t(15);
}

/* One call of the program's handler, for run_program_here(). */
struct ProgramCall {
  const struct sigaction *prog;
  int signo;
  siginfo_t *info;
  void *uc;
  const stack_t *alt;  /* the alternate stack we were delivered on */
  bool nested;         /* inside the program's handler for an earlier one */
};

void invoke_program(const ProgramCall &c) {
  if (c.prog->sa_flags & SA_SIGINFO)
    c.prog->sa_sigaction(c.signo, c.info, c.uc);
  else
    c.prog->sa_handler(c.signo);
}

/* Runs on the interrupted stack (tl_call_on_stack), the alternate stack we
 * came from holding our handler's frames and the kernel's signal frame
 * (the siginfo and ucontext the program's handler reads) above `old_sp`.
 * Another signal delivered with SA_ONSTACK while the program's handler runs
 * (a fault in it under SA_NODEFER, its own raise(), any other handler of
 * the program) would start at the top of the alternate stack and overwrite
 * them; so, meanwhile, the thread's alternate stack ends below `old_sp`
 * (disabled if what is left is below the kernel's minimum).  sigaltstack(2)
 * refuses to change the stack a thread runs on, so this is done here, off
 * it.  Restored when the handler returns; after a siglongjmp out of the
 * handler the thread keeps the shortened stack (the program sees it so
 * from sigaltstack(2)) until the next handed signal, which restores it
 * (t_alt_full). */
struct FullAltStack {
  int shortened;
  stack_t ss;
};
__thread FullAltStack t_alt_full TL_TLS;

void run_program_here(void *arg, void *old_sp) {
  const ProgramCall &c = *static_cast<const ProgramCall *>(arg);
  FullAltStack &full = t_alt_full;
  stack_t before; /* as it is now: whole, or shortened by an outer call */
  if (sigaltstack(nullptr, &before) != 0) before = *c.alt;
  before.ss_flags &= ~SS_ONSTACK;
  const int was_shortened = __atomic_load_n(&full.shortened, __ATOMIC_RELAXED);
  /* Shortened and not nested: left so by a siglongjmp; full.ss is whole. */
  if (!was_shortened) full.ss = before;
  stack_t shorter = full.ss;
  const uint64_t lo = reinterpret_cast<uint64_t>(shorter.ss_sp);
  const uint64_t end = (reinterpret_cast<uint64_t>(old_sp) - 256) & ~uint64_t(15);
  /* The kernel's minimum (getauxval(3), AT_MINSIGSTKSZ; not MINSIGSTKSZ,
   * which glibc may define as a sysconf() call); 2048 is x86's and the
   * generic MINSIGSTKSZ (include/uapi/asm-generic/signal.h). */
  unsigned long min = getauxval(AT_MINSIGSTKSZ);
  if (min < 2048) min = 2048;
  if (end > lo && end - lo >= min && !(shorter.ss_flags & SS_DISABLE))
    shorter.ss_size = end - lo;
  else
    shorter.ss_flags = SS_DISABLE;
  __atomic_store_n(&full.shortened, 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (sigaltstack(&shorter, nullptr) != 0) {
    shorter.ss_flags = SS_DISABLE;
    sigaltstack(&shorter, nullptr);
  }
  volatile uint64_t canary = 0;
  canary = canary_value(&canary);
  t_pending.canary = &canary;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  invoke_program(c);
  canary = 0;
  /* Back as before the call: the whole stack, or for a nested call the
   * outer call's shortened one. */
  stack_t back = c.nested ? before : full.ss;
  sigaltstack(&back, nullptr);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&full.shortened, c.nested ? was_shortened : 0, __ATOMIC_RELAXED);
}

/* Call the program's handler `prog` as the kernel would have (see the
 * file's comment), with t_pending holding the fault meanwhile: with its
 * mask, on the stack it asked for (program_stack_top). */
void call_program(const struct sigaction &prog, int signo, siginfo_t *info, void *uc, bool nested) {
  sigset_t mask;
  if (uc != nullptr)
    mask = static_cast<ucontext_t *>(uc)->uc_sigmask;
  else
    sigprocmask(SIG_BLOCK, nullptr, &mask);
  for (int s = 1; s < kMaxSignal; ++s)
    if (sigismember(&prog.sa_mask, s) == 1) sigaddset(&mask, s);
  if (prog.sa_flags & SA_NODEFER)
    sigdelset(&mask, signo);
  else
    sigaddset(&mask, signo);
  if (prog.sa_flags & SA_RESETHAND) {
    set_program_disposition(signo, default_action());
  }
  stack_t alt;
  if (sigaltstack(nullptr, &alt) != 0) alt.ss_flags = SS_DISABLE;
  uint64_t top = 0;
#if defined(__x86_64__)
  top = program_stack_top(prog, uc, alt);
#endif
  const ProgramCall call = {&prog, signo, info, uc, &alt, nested};
  PendingFault &pending = t_pending;
  PendingFault outer; /* a nested call's: restored after */
  outer.signo = pending.signo;
  outer.top = pending.top;
  outer.canary = pending.canary;
  volatile uint64_t canary = 0;
  pending.signo = signo;
  if (top != 0) {
    pending.top = top;
    pending.canary = nullptr; /* run_program_here's, on that stack */
  } else {
    canary = canary_value(&canary);
    pending.top = reinterpret_cast<uint64_t>(__builtin_frame_address(0)) + 16;
    pending.canary = &canary;
  }
  __atomic_store_n(&pending.active, 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  sigprocmask(SIG_SETMASK, &mask, nullptr); /* async-signal-safe */
#if defined(__x86_64__)
  if (top != 0)
    tl_call_on_stack(reinterpret_cast<void *>(top), run_program_here, const_cast<ProgramCall *>(&call));
  else
    invoke_program(call);
#else
  invoke_program(call);
#endif
  canary = 0;
  /* Our handler's own mask again (all the handled signals blocked). */
  sigset_t ours;
  sigemptyset(&ours);
  for (int other : kSignals) sigaddset(&ours, other);
  sigprocmask(SIG_BLOCK, &ours, nullptr);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (nested) {
    pending.signo = outer.signo;
    pending.top = outer.top;
    pending.canary = outer.canary;
  } else {
    __atomic_store_n(&pending.active, 0, __ATOMIC_RELAXED);
  }
}

/* The program's handler returned with `signo` pending for this process and
 * its disposition SIG_DFL: it re-raised the fault (redis).  The CRASH event
 * was written before the call: hand the kernel SIG_DFL and let the pending
 * signal kill the process when this handler returns.  False if that is not
 * the case. */
bool reraised_pending(int signo) {
  struct sigaction now;
  program_disposition(signo, &now);
  if (now.sa_handler != SIG_DFL || (now.sa_flags & SA_SIGINFO)) return false;
  sigset_t pending;
  if (sigpending(&pending) != 0 || sigismember(&pending, signo) != 1) return false;
  kernel_default(signo);
  return true;
}

/* Hand `signo` to the program's handler `prog`: the CRASH event first
 * (unless this signal came from inside the program's handler for an
 * earlier one, whose CRASH event stands), then the call, then what its
 * return means (see the file's comment). */
bool faulted_again(const LastFault &last, int signo, const siginfo_t *info, uint64_t pc) {
  return last.armed && raised_by_instruction(signo, info) && last.signo == signo && last.pc == pc &&
         last.addr == reinterpret_cast<uint64_t>(info->si_addr);
}

void hand_to_program(const struct sigaction &prog, int signo, siginfo_t *info, void *uc,
                     const LastFault &last) {
  uint64_t pc, sp;
  ucontext_pc_sp(uc, &pc, &sp);
  if (faulted_again(last, signo, info, pc)) {
    /* Returned and the same instruction faulted again: a crash, recorded
     * before the first call.  (The kernel would call the handler forever.) */
    die_of(signo, info);
    return;
  }
  const bool nested = interrupted_inside(t_pending, sp);
  if (!nested) write_crash_slot(signo, info, uc, fmt::kCrashChained | fmt::kCrashHanded);
  call_program(prog, signo, info, uc, nested);
  /* It returned.  Did it re-raise the signal to die of it? */
  if (reraised_pending(signo)) return;
  /* A fault re-executes its instruction: if the program's handler fixed
   * the cause, execution goes on; if not, we come back here with the same
   * pc (above). */
  if (raised_by_instruction(signo, info)) {
    LastFault &next = t_last_fault;
    next.signo = signo;
    next.pc = pc;
    next.addr = reinterpret_cast<uint64_t>(info->si_addr);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&next.armed, 1, __ATOMIC_RELAXED);
    return;
  }
  /* abort() and raise(SIGABRT): glibc's abort() kills the process with
   * SIG_DFL once a handler returns. */
  if (signo == SIGABRT && sent_by_self(info)) die_of(signo, info);
  /* Else a signal from a process, which the program handled. */
}

void crash_signal_handler(int signo, siginfo_t *info, void *uc) {
  int saved_errno = errno;
  const LastFault last = take_last_fault();
  struct sigaction prev;
  program_disposition(signo, &prev);
  if (is_handler(prev)) {
    hand_to_program(prev, signo, info, uc, last);
    errno = saved_errno;
    return;
  }
  if (prev.sa_handler == SIG_IGN && !(prev.sa_flags & SA_SIGINFO) && !raised_by_instruction(signo, info)) {
    /* The program ignores this signal when sent by a process: keep it so. */
    errno = saved_errno;
    return;
  }
  uint64_t here_pc, here_sp;
  ucontext_pc_sp(uc, &here_pc, &here_sp);
  /* From inside the program's handler for a signal handed to it (its
   * re-raise after restoring SIG_DFL, its abort(), a fault of its own
   * under SA_NODEFER): that signal's CRASH event, written before the call,
   * is the crash; the process dies of this one. */
  /* Or the fault handed to the program's handler, which returned after
   * SA_RESETHAND (or restoring SIG_DFL) without fixing its cause: the
   * instruction faulted again, and that CRASH event is this fault's. */
  if (!faulted_again(last, signo, info, here_pc) && !interrupted_inside(t_pending, here_sp)) write_crash_slot(signo, info, uc, 0);
  die_of(signo, info);
  errno = saved_errno;
}

}  // namespace

int install_crash_handlers() {
  for (int signo : kSignals) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = crash_signal_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int other : kSignals) sigaddset(&sa.sa_mask, other);
    struct sigaction found;
    if (__sigaction(signo, nullptr, &found) != 0) return -errno;
    if ((found.sa_flags & SA_SIGINFO) && found.sa_sigaction == crash_signal_handler) continue; /* already ours */
    set_program_disposition(signo, found);
    if (__sigaction(signo, &sa, nullptr) != 0) return -errno;
    __atomic_store_n(&g_installed[signo], true, __ATOMIC_RELEASE);
  }
  return 0;
}

}  // namespace core_timeline::lib

/* See internal.h. */
extern "C" TL_EXPORT int tl_internal_sigaction(int signo, const struct sigaction *act,
                                               struct sigaction *oldact) {
  using namespace core_timeline::lib;
  if (signo <= 0 || signo >= kMaxSignal || !__atomic_load_n(&g_installed[signo], __ATOMIC_ACQUIRE)) return 0;
  struct sigaction current;
  if (__sigaction(signo, nullptr, &current) != 0) return 0;
  /* Ours no longer (replaced by a raw rt_sigaction, or SIG_DFL on the way
   * to dying): the kernel's disposition is the program's. */
  if (!(current.sa_flags & SA_SIGINFO) || current.sa_sigaction != crash_signal_handler) return 0;
  if (oldact != nullptr) program_disposition(signo, oldact);
  if (act != nullptr) set_program_disposition(signo, *act);
  return 1;
}
