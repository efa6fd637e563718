/* SPDX-License-Identifier: MIT */
/*
 * daemon.h - core-timelined's main loop.
 *
 * One thread.  It follows the journal (journal.h), and for each trusted
 * systemd-coredump entry (entry.h) in journal order:
 *   1. skips it if a timeline for its crash (boot id, pid, timestamp)
 *      already exists - after a restart, also after kill -9 between writing
 *      a timeline and saving the cursor;
 *   2. extracts the core into an unlinked temporary file (extract.h);
 *   3. decodes it in an isolated child (decode.h);
 *   4. writes the document (document.h) atomically with the core's owner,
 *      mode and ACL (files.h);
 *   5. logs (mapping_absent loudly, no_ring quietly) and only then saves
 *      the entry's cursor (files.h, StateDir::save_cursor).
 * It reads the journal as journald announces new entries, and every few
 * milliseconds while a new core in the coredump directory awaits its entry
 * (core_watch.h: journald's announcements lag by 250-500 ms).
 * Between entries and inside long steps it pings the systemd watchdog and
 * checks for SIGTERM/SIGINT; on those it abandons the current entry (its
 * cursor is not saved, so it is redone) and exits 0.  An error that makes
 * an entry impossible to finish (no space for the temporary core or the
 * timeline, an output directory that cannot be opened) stops it with exit
 * status 1, without saving that entry's cursor: systemd's Restart= retries.
 *
 * Thread-safety: a Daemon is used by one thread; it blocks SIGTERM, SIGINT
 * and SIGHUP in that thread and reads them from a signalfd.
 */
#ifndef CORE_TIMELINE_DAEMON_DAEMON_H
#define CORE_TIMELINE_DAEMON_DAEMON_H

#include <cstdint>
#include <optional>
#include <string>

#include "core_watch.h"
#include "entry.h"
#include "files.h"
#include "journal.h"
#include "options.h"
#include "util.h"

namespace ctd {

class Daemon {
 public:
  Daemon(Options options, TrustPolicy policy);
  /** Runs until stopped (or, with --once, until the journal is read).
   *  Returns the process exit status: 0 on a clean stop, 1 if it could
   *  not start (the reason is logged). */
  int run();

 private:
  enum class Handled { kDone, kStop };
  Result<void> start();
  Result<void> position();
  /** Reads and handles entries until none is left or a stop. */
  Result<bool> drain();
  Handled handle(const RawEntry &raw);
  Handled handle_trusted(const CoredumpEntry &e);
  /** Watchdog ping when due; reads pending signals.  False once asked to
   *  stop. */
  bool keep_going();
  void read_signals();

  Options opt_;
  TrustPolicy policy_;
  std::optional<StateDir> state_;
  std::optional<Journal> journal_;
  std::optional<CoreWatch> core_watch_;  /**< not with --once */
  Fd signal_fd_;
  bool stop_ = false;
  bool failed_ = false;  /**< stopping because of an error: exit 1 */
  bool cursor_saved_ = false;
  std::optional<std::string> pending_anchor_;
  std::uint64_t watchdog_usec_ = 0;
  std::uint64_t last_ping_ = 0;
  std::uint64_t handled_ = 0;
};

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_DAEMON_H
