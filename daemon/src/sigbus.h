/* SPDX-License-Identifier: MIT */
/*
 * sigbus.h - surviving a journal file truncated under sd-journal's mmap.
 *
 * sd-journal reads journal files through mmap(2).  journald of systemd 252
 * (Debian 12) truncates a journal file to its used size when it archives
 * it at rotation (systemd PR 21372), and a reader that touches a page of
 * its mapping past the new end gets SIGBUS (BUS_ADRERR, mmap(2)): a
 * privileged daemon killed by `journalctl --rotate` (systemd issue 24320,
 * fixed upstream after 252; journalctl and coredumpctl survive it with a
 * handler of their own, systemd src/basic/sigbus.c, which libsystemd does
 * not export).  So core-timelined does what that handler does: a SIGBUS
 * for an address of a mapping (BUS_ADRERR) maps a page of zeros there and
 * returns, so the read goes on and sees zeros, and the count of such
 * pages goes up; the Journal (journal.h) checks the count around each read
 * and, when it moved, throws the read away, opens the journal again and
 * reads on after the last entry it read.  Any other SIGBUS kills the
 * process as before.
 */
#ifndef CORE_TIMELINE_DAEMON_SIGBUS_H
#define CORE_TIMELINE_DAEMON_SIGBUS_H

#include <cstdint>

namespace ctd {

/** Installs the handler (sigaction(2), SA_SIGINFO | SA_NODEFER), once per
 *  process; later calls do nothing.  Call before the journal is opened,
 *  while single-threaded.  Returns false (errno set) if sigaction failed. */
bool install_sigbus_handler();

/** Pages mapped with zeros by the handler so far (monotonic).  Any thread;
 *  async-signal-safe. */
std::uint64_t sigbus_pages();

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_SIGBUS_H
