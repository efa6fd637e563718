/* SPDX-License-Identifier: MIT */
/*
 * sigbus.h - surviving a journal file truncated under sd-journal's mmap,
 * for core-timelined and ctl-query alike.
 *
 * sd-journal reads journal files through mmap(2).  journald of systemd 252
 * (Debian 12) truncates a journal file to its used size when it archives
 * it at rotation (systemd PR 21372), and a reader that touches a page of
 * its mapping past the new end gets SIGBUS (BUS_ADRERR, mmap(2)): a
 * privileged daemon killed by `journalctl --rotate` (systemd issue 24320,
 * fixed upstream after 252; journalctl and coredumpctl survive it with a
 * handler of their own, systemd src/basic/sigbus.c, which libsystemd does
 * not export).  So we do what that handler does: a SIGBUS for an address
 * of a mapping (BUS_ADRERR) maps a page of zeros there and returns, so the
 * read goes on and sees zeros, and the count of such pages goes up.  The
 * reader checks the count around each read and, when it moved, throws the
 * read away: core-timelined's Journal opens the journal again and reads on
 * after the last entry it read; ctl-query's reports the query cut short.
 * Any other SIGBUS kills the process as before.
 *
 * Two ways to install it: install() for the life of the process (the
 * daemon, whose journal reads never stop), or a Scope around the journal
 * reads only (ctl-query, which also maps cores: a core truncated under it
 * must still be a SIGBUS, never zeros taken for data).
 */
#ifndef CORE_TIMELINE_COMMON_SIGBUS_H
#define CORE_TIMELINE_COMMON_SIGBUS_H

#include <signal.h>

#include <cstdint>

namespace core_timeline::sigbus {

/** Installs the handler (sigaction(2), SA_SIGINFO | SA_NODEFER) for the
 *  life of the process, once; later calls do nothing.  Call before the
 *  journal is opened, while single-threaded.  Returns false (errno set) if
 *  sigaction failed. */
bool install();

/** Pages mapped with zeros by the handler so far (monotonic).  Any thread;
 *  async-signal-safe. */
std::uint64_t zeroed_pages();

/** The handler for the life of the object: the constructor installs it
 *  unless install() already did, the destructor puts back the action it
 *  replaced.  moved() tells whether it mapped a page of zeros since the
 *  constructor (whatever was read since may be zeros).  Scopes nest on one
 *  thread; they are not for several threads at once (sigaction is the
 *  process's).  If sigaction fails the handler is simply not installed
 *  (a truncated file is then a SIGBUS, as without it). */
class Scope {
 public:
  Scope();
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;
  bool moved() const { return zeroed_pages() != start_; }

 private:
  struct sigaction old_ {};
  bool restore_ = false;
  std::uint64_t start_ = 0;
};

}  // namespace core_timeline::sigbus

#endif  // CORE_TIMELINE_COMMON_SIGBUS_H
