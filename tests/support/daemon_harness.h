// SPDX-License-Identifier: MIT
//
// daemon_harness.h - core-timelined, the real binary, started and stopped
// by a test (or bench_daemon), and kernel.core_pipe_limit raised for a
// crash storm.
//
// DaemonHarness runs the daemon in the foreground in a directory of its
// own (root): state/ (--state-dir), out/ (--output-dir, unless the
// timelines are to go next to the cores), daemon.log (its stdout and
// stderr, appended across restarts) and notify (the socket that stands in
// for systemd's NOTIFY_SOCKET; start() returns once the daemon sent
// READY=1).  It finds the daemon's timelines by the crash's pid, as the
// daemon names them (core.COMM.UID.BOOT.PID.USEC.timeline.json).
//
// Plain C++ without gtest: what the daemon did is returned (an exit
// status, an optional timeline) for the caller to judge; what keeps the
// harness from doing its job (the daemon exits or is not ready in time, a
// socket cannot be made) is thrown as std::runtime_error, with the
// daemon's log where it tells why.
#ifndef CORE_TIMELINE_TESTS_SUPPORT_DAEMON_HARNESS_H
#define CORE_TIMELINE_TESTS_SUPPORT_DAEMON_HARNESS_H

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.h"

namespace ct::test {

// This boot's id, as systemd writes it (32 hex digits, no dashes).
std::string boot_id();

// CLOCK_REALTIME in µs, as the journal stamps entries.
std::uint64_t now_usec();

// A whole file's bytes ("" if it cannot be read).
std::string read_text(const std::string &path);

// A timeline the daemon wrote, whole (it parses as JSON).
struct Timeline {
  std::string path;
  nlohmann::json doc;
};

// A stored document in the full shape the tests read (schema 6: events,
// spans and time as core-timeline-read --json has them, and "text"): a
// compact one (schema_version 7, which it keeps) made again from it by the
// reader (core_timeline/reader/compact.h), "text" rendered; any other as
// it is.
// wait_timeline() returns documents so.
nlohmann::json full_document(const nlohmann::json &stored);
nlohmann::ordered_json full_document(const nlohmann::ordered_json &stored);

class DaemonHarness {
 public:
  struct Options {
    std::string binary;  // core-timelined
    std::string root;    // see the header comment; must exist
    // --output-dir ROOT/out; false: none, the timelines go next to the
    // cores (and those of Storage=journal into state/timelines).
    bool output_dir = true;
    std::string first_start = "new";  // --first-start
    std::string log_target;           // --log-target; "": not given (its default)
    std::string log_level;            // --log-level; "": not given
    std::string tlmap_dir;            // --tlmap-dir; "": not given
    std::string config;               // --config; "": not given (the machine's)
    std::chrono::milliseconds ready_timeout = std::chrono::seconds(30);
    // stop(): how long after SIGTERM before SIGKILL.
    std::chrono::milliseconds stop_timeout = std::chrono::seconds(20);
    // Called on every turn of start()'s wait for READY=1; may throw to
    // abandon it (bench_daemon on SIGINT; the daemon is stopped by the
    // destructor).
    std::function<void()> on_wait;
  };

  explicit DaemonHarness(Options opts);
  ~DaemonHarness();  // stop(), if it still runs
  DaemonHarness(const DaemonHarness &) = delete;
  DaemonHarness &operator=(const DaemonHarness &) = delete;

  Options &options() { return opts_; }

  // Starts it with the options plus `extra` arguments and `env` on top of
  // this process's environment (NOTIFY_SOCKET is the harness's; WATCHDOG_*
  // are not inherited); returns once it sent READY=1.  Throws if it exits
  // first or is not ready within ready_timeout, and if one started before
  // still runs (that one is killed: it would take the next crashes).
  void start(const std::vector<std::string> &extra = {}, const std::map<std::string, std::string> &env = {});

  // Runs it with --once instead (it handles the entries there are, then
  // exits), with `env` as start() has it, its stdout and stderr appended to
  // the log; how it ended.
  Ran run_once(const std::vector<std::string> &extra = {}, const std::map<std::string, std::string> &env = {});

  // SIGTERM, then its exit status: WEXITSTATUS; -1 if a signal ended it
  // or it had to be killed after stop_timeout; -2 if it was not running.
  int stop();
  // SIGKILL, reaped.
  void kill_now();
  // Its exit status (as stop()'s) once it exits by itself within
  // `timeout`; -3 while it still runs, -2 if it was not running.
  int wait_exit(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

  // The next message it sent to the notify socket, or "" after `timeout`.
  // A thread reads the socket all the time, as PID 1 does, and keeps what
  // it read for this: the daemon's sd_notify() is a blocking sendmsg() on a
  // datagram socket (sd_notify(3)), which waits while the socket's queue
  // holds net.unix.max_dgram_qlen datagrams (10 unless systemd raised it),
  // so a test that left its WATCHDOG=1 pings unread for a few seconds
  // stopped the daemon in the middle of its loop.
  std::string next_notification(std::chrono::milliseconds timeout);
  // How many messages the reader thread holds that next_notification()
  // has not returned yet.
  std::size_t pending_notifications();

  const std::string &state_dir() const { return state_; }
  // --output-dir (empty when the timelines go next to the cores).
  const std::string &output_dir() const { return out_; }
  const std::string &log_path() const { return log_; }
  std::string log() const;
  // Its last `max` bytes, for failure messages.
  std::string log_tail(std::size_t max = 6000) const;
  // Until the log holds `needle`; false after `timeout`.
  bool wait_log(const std::string &needle, std::chrono::milliseconds timeout) const;

  // Where it writes timelines: the output directory, state/timelines.
  std::vector<std::string> timeline_dirs() const;
  // A whole timeline for `pid` (this boot) in one of them; with
  // not_before_usec, only of a crash at or after then (by the
  // COREDUMP_TIMESTAMP its name ends with): pids are reused within a boot.
  std::optional<Timeline> find_timeline(pid_t pid, std::uint64_t not_before_usec = 0) const;
  // The same, waited for up to `timeout`.
  std::optional<Timeline> wait_timeline(pid_t pid, std::chrono::milliseconds timeout,
                                        std::uint64_t not_before_usec = 0) const;
  // How many files in the timeline directories have `pid` of this boot in
  // their name (whole timelines or not).
  std::size_t files_of(pid_t pid) const;

 private:
  std::vector<std::string> arguments(const std::vector<std::string> &extra) const;
  // stdin /dev/null, stdout and stderr appended to the log, `env` on top of
  // this environment without NOTIFY_SOCKET and WATCHDOG_*.
  ProcessOptions process_options(const std::map<std::string, std::string> &env) const;
  // The notify socket's reader (next_notification()); ends when wake_fd_
  // (an eventfd) is written.
  void read_notifications();
  Options opts_;
  std::string state_, out_, log_, notify_path_;
  int notify_fd_ = -1;
  int wake_fd_ = -1;
  std::mutex notify_mu_;
  std::condition_variable notify_cv_;
  std::deque<std::string> notifications_;
  std::thread notify_reader_;
  pid_t pid_ = -1;
};

// RAII: a directory of a test's own for a DaemonHarness, so that the
// daemon reads neither the machine's configuration nor its tlmaps:
// /tmp/STEM-XXXXXX, mode 0755 (the daemon's unprivileged decoder and
// ctl-query run as another user read below it), holding an empty
// configuration file (config()) and an empty tlmap directory (tlmap_dir(),
// where the test puts the tlmaps it wants).  The destructor removes it with
// everything in it.  Throws std::runtime_error when it cannot be made.
class DaemonRoot {
 public:
  explicit DaemonRoot(const std::string &stem);
  ~DaemonRoot();
  DaemonRoot(const DaemonRoot &) = delete;
  DaemonRoot &operator=(const DaemonRoot &) = delete;

  const std::string &root() const { return root_; }
  const std::string &tlmap_dir() const { return tlmap_dir_; }
  const std::string &config() const { return config_; }
  // DaemonHarness's options for the daemon `binary` here: this root, the
  // empty configuration, the tlmap directory, its log to stderr (so to
  // DaemonHarness's log file); the rest as Options has them.
  DaemonHarness::Options options(const std::string &binary) const;

 private:
  std::string root_, tlmap_dir_, config_;
};

// RAII: kernel.core_pipe_limit raised to at least `at_least` for a crash
// storm (systemd's 16 makes the kernel drop the cores beyond it), and put
// back as it was on every way out: the destructor, restore(), and - for a
// program that catches SIGINT and the like - restore_from_signal_handler().
// A limit of 0 (none) is left as it is.  One at a time.
class CorePipeLimit {
 public:
  explicit CorePipeLimit(int at_least);
  ~CorePipeLimit() { restore(); }
  CorePipeLimit(const CorePipeLimit &) = delete;
  CorePipeLimit &operator=(const CorePipeLimit &) = delete;

  int before() const { return before_; }
  int now() const { return now_; }
  // Writes the old value back if it was changed (once); async-signal-safe.
  void restore() noexcept;
  // restore() of the one that is in effect, if any; async-signal-safe.
  static void restore_from_signal_handler() noexcept;

 private:
  int before_ = 0, now_ = 0;
  char saved_[32] = {};
  std::size_t saved_len_ = 0;
};

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_SUPPORT_DAEMON_HARNESS_H
