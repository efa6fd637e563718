/* SPDX-License-Identifier: MIT */
/*
 * core_watch.h - new cores in the coredump directory, noticed before
 * journald announces their entries.
 *
 * journald wakes journal readers (inotify on the journal files) only from a
 * coalescing timer (systemd 252 src/journal/journald-server.c,
 * POST_CHANGE_TIMER_INTERVAL_USEC, 250 ms): a follower that sleeps until
 * then sees an entry 250-500 ms after it was written, although
 * sd_journal_next() returns it within about 2 ms of the write (measured
 * here; docs/performance.md, bench_daemon).  systemd-coredump links the
 * core into its directory before it sends the entry (coredump.c,
 * save_external_coredump, then submit_coredump), so a new name there says
 * an entry is on its way.  While one is expected, the daemon reads the
 * journal every kEagerPollMs instead of waiting for the notice, until that
 * core's entry is handled or kEagerMaxMs have passed.
 *
 * Cores kept only in the journal (Storage=journal) have no file: their
 * entries are seen at journald's pace.  A directory that does not exist or
 * cannot be watched makes the watch inactive (fd() is -1) until retry()
 * succeeds; nothing else depends on it.
 *
 * Thread-safety: one thread.  Not async-signal-safe.
 */
#ifndef CORE_TIMELINE_DAEMON_CORE_WATCH_H
#define CORE_TIMELINE_DAEMON_CORE_WATCH_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util.h"

namespace core_timeline::daemon {

class CoreWatch {
 public:
  /** Poll period while an entry is expected, and how long one is waited for
   *  (systemd-coredump may analyze a big core for a while after linking it). */
  static constexpr int kEagerPollMs = 5;
  static constexpr std::uint64_t kEagerMaxMs = 5000;
  /** At most this many names are remembered; the oldest go first. */
  static constexpr std::size_t kMaxExpected = 256;

  /** Watches `dir` (IN_CREATE, IN_MOVED_TO), if it can. */
  explicit CoreWatch(std::string dir);

  /** The inotify descriptor to poll for POLLIN, or -1 when inactive. */
  int fd() const noexcept { return fd_.get(); }
  /** Tries again to watch the directory if the watch is inactive. */
  void retry();
  /** Reads the pending events; each new core name ("core.*", not a
   *  ".#" temporary nor a "*.timeline.json" this daemon wrote) is expected
   *  from `now_usec` (CLOCK_MONOTONIC) on, and queued for take_new(). */
  void read_events(std::uint64_t now_usec);
  /** The names that became expected since the last call, in the order
   *  their events came (prepared.h: the daemon prepares them). */
  std::vector<std::string> take_new();
  /** Whether `name` is expected (appeared, its entry not handled yet, and
   *  not for longer than kEagerMaxMs). */
  bool is_expected(std::string_view name) const { return expected_.find(name) != expected_.end(); }
  /** The entry of the core named `name` is being handled: it is no longer
   *  expected.  Returns when the name appeared (`now_usec` of read_events),
   *  or nothing if it was not expected. */
  std::optional<std::uint64_t> handled(std::string_view name);
  /** kEagerPollMs while a core's entry is expected, else -1 (no limit).
   *  Forgets names expected for longer than kEagerMaxMs. */
  int timeout_ms(std::uint64_t now_usec);
  /** Since when (usec) the longest-expected name has been expected. */
  std::optional<std::uint64_t> oldest_expected() const;
  /** How many names are expected (for the tests and the debug log). */
  std::size_t expected() const noexcept { return expected_.size(); }

 private:
  std::string dir_;
  Fd fd_;
  std::map<std::string, std::uint64_t, std::less<>> expected_;  /* name -> since (usec) */
  std::vector<std::string> new_;  /* bounded by kMaxExpected */
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_CORE_WATCH_H
