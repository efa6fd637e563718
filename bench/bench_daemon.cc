// SPDX-License-Identifier: MIT
// bench_daemon - core-timelined end to end: a real crash to
// its timeline.json on disk, beside what anyone else does with the same
// stored core, a plain `zstd -d` and `coredumpctl dump`; and a storm of 32
// simultaneous crashes.
//
// Everything is real: the crashes are real processes (crash_demo --path=a,
// big_crasher MIB) that go through the kernel to the real systemd-coredump
// and journald (tests/support/pipeline), and core-timelined is the real
// binary, started here with its own configuration, state and output
// directories (--first-start new) and stopped with SIGTERM at the end.
//
// For each crash:
//   (a)  death -> timeline: from the crasher's death (its pidfd wakes, then
//        waitpid) to the timeline's name appearing (inotify IN_CREATE or
//        IN_MOVED_TO on the output directory; the clock is read on wakeup)
//   (b)  entry -> timeline: from the systemd-coredump journal entry's
//        __REALTIME_TIMESTAMP (read with sd-journal) to the same appearance
//   crash -> timeline: from the CRASH event's time_ns (the crash handler's
//        own CLOCK_REALTIME, through the ring's clock anchor) to it
//   (c1) `zstd -d -c STORED > /dev/null`, (c2) `zstd -d STORED -o FILE` in
//        the same filesystem, (c3) `coredumpctl dump PID -o FILE`, on the
//        same stored core, each after a sync(2) that is not timed.
//
// These machines are shared and noisy: quote medians and ratios of one run
// (docs/performance.md).  Needs root and the pipeline.  Machine-wide state
// it changes (kernel.core_pipe_limit, for the storm) is restored by RAII, and
// by the signal handler on SIGINT/SIGTERM/SIGHUP.
//
//   build/bin/bench_daemon [--small-reps 5] [--mid-reps 5] [--big-reps 3]
//                          [--mid-mib 100] [--big-mib 1024] [--storm 32]
//                          [--json FILE]
#include <fcntl.h>
#include <poll.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_stats.h"
#include "daemon_harness.h"
#include "process.h"

#ifndef CT_PIPELINE_SCRIPT
#define CT_PIPELINE_SCRIPT ""
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif


namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using ct::test::boot_id;
using ct::test::read_text;

constexpr const char kCoredumpMessageId[] = "fc2e22bc6ee647b6b90729ab34a250b1";
constexpr const char kPipeLimitPath[] = "/proc/sys/kernel/core_pipe_limit";
constexpr const char kCoredumpDir[] = "/var/lib/systemd/coredump";

// ---- signals: stop cleanly, restore the machine first --------------------

volatile sig_atomic_t g_stop = 0;

extern "C" void on_signal(int) {
  g_stop = 1;
  ct::test::CorePipeLimit::restore_from_signal_handler();
}

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted by a signal") {}
};

void check_stop() {
  if (g_stop) throw Interrupted();
}

void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits return EINTR
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
}

// ---- small helpers --------------------------------------------------------

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

std::int64_t clock_us(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}
std::int64_t mono_us() { return clock_us(CLOCK_MONOTONIC); }
std::int64_t real_us() { return clock_us(CLOCK_REALTIME); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

using ct::bench::median;
std::string fmt(int decimals, double v) { return ct::bench::fixed(decimals, v); }
std::string ms(double v) { return fmt(1, v); }
std::string ratio(double num, double den) { return den > 0 ? fmt(2, num / den) : "n/a"; }
std::string mib(double bytes) { return fmt(1, bytes / 1048576.0); }

void remove_quietly(const std::string &p) {
  std::error_code ec;
  fs::remove(p, ec);
}

// ---- external processes -----------------------------------------------------

struct Timed {
  int status = -1;  // waitpid status
  double ms = 0;
};

bool exited_ok(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

// Runs argv ($PATH lookup) with stdout to `out` and stderr to `err`, timed
// from just before fork to waitpid's return; a signal to us kills it and
// throws.
Timed run_timed(const std::vector<std::string> &argv, const std::string &out, const std::string &err) {
  ct::test::ProcessOptions po;
  po.in = ct::test::Stream::null();
  po.out = ct::test::Stream::file(out, 0600);
  po.err = ct::test::Stream::file(err, 0600);
  po.search_path = true;
  po.on_interrupt = check_stop;
  const std::int64_t t0 = mono_us();
  const ct::test::Ran r = ct::test::run(argv, po);
  Timed t;
  t.status = r.wait_status;
  t.ms = static_cast<double>(mono_us() - t0) / 1000.0;
  return t;
}

// ---- the stored core and its plain tools ----------------------------------

struct Tool {
  std::vector<std::string> to_null;  // decompress to stdout
  std::vector<std::string> to_file;  // decompress to FILE (last argument appended)
  bool file_via_stdout = false;
};

Tool tool_for(const std::string &stored) {
  if (stored.ends_with(".zst")) return {{"zstd", "-d", "-c", "-q", stored}, {"zstd", "-d", "-q", "-f", stored, "-o"}, false};
  if (stored.ends_with(".lz4")) return {{"lz4", "-d", "-c", "-q", stored}, {"lz4", "-d", "-q", "-f", stored}, false};
  if (stored.ends_with(".xz")) return {{"xz", "-d", "-c", "-q", stored}, {"xz", "-d", "-c", "-q", stored}, true};
  return {{"cat", stored}, {"cp", stored}, false};
}

std::string tool_name(const std::string &stored) {
  if (stored.ends_with(".zst")) return "zstd";
  if (stored.ends_with(".lz4")) return "lz4";
  if (stored.ends_with(".xz")) return "xz";
  return "cat";
}

struct Plain {
  double c1 = 0, c2 = 0, c3 = 0;
};

// ---- crashers, deaths and timelines ------------------------------------

struct Crasher {
  pid_t pid = -1;
  int pidfd = -1;
  int status = 0;
  bool dead = false;
  std::int64_t death_mono = 0, death_real = 0;
};

struct Arrival {
  std::int64_t mono = 0, real = 0;
  std::string path;
  // When the daemon next saved its journal cursor (0: not yet): it fsyncs
  // the timelines written since its last save, then their directories,
  // then renames the cursor into place, so from then on this timeline is
  // durable (daemon.h, step 5).
  std::int64_t durable_mono = 0, durable_real = 0;
};

// Forks n children of argv that wait on a barrier, then releases them all
// at once; each gets default dispositions for the core signals, and runs
// as `uid` (no groups) when given.
std::vector<Crasher> spawn_crashers(const std::vector<std::string> &argv, int n, std::optional<uid_t> uid = {}) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) fail("pipe2");
  std::vector<char *> a;
  for (const auto &s : argv) a.push_back(const_cast<char *>(s.c_str()));
  a.push_back(nullptr);
  std::vector<Crasher> out;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
      close(p[1]);
      char c;
      while (read(p[0], &c, 1) < 0 && errno == EINTR) {
      }
      for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      if (uid && (setgroups(0, nullptr) < 0 || setresgid(*uid, *uid, *uid) < 0 || setresuid(*uid, *uid, *uid) < 0))
        _exit(126);
      execv(a[0], a.data());
      _exit(127);
    }
    Crasher c;
    c.pid = pid;
    c.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (c.pidfd < 0) fail("pidfd_open: " + std::string(std::strerror(errno)));
    out.push_back(c);
  }
  close(p[0]);
  close(p[1]);  // EOF: all go
  return out;
}

class TimelineWatch {
 public:
  explicit TimelineWatch(std::string dir) : dir_(std::move(dir)), needle_("." + boot_id() + ".") {
    fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd_ < 0 || inotify_add_watch(fd_, dir_.c_str(), IN_CREATE | IN_MOVED_TO) < 0)
      fail("inotify on " + dir_ + ": " + std::strerror(errno));
  }
  ~TimelineWatch() { close(fd_); }
  // Also watch the daemon's state directory for its cursor saves
  // (Arrival::durable_*).  The two watches share one queue, so a save's
  // event comes after the events of the timelines it made durable.
  void watch_cursor(const std::string &state_dir) {
    cursor_wd_ = inotify_add_watch(fd_, state_dir.c_str(), IN_MOVED_TO);
    if (cursor_wd_ < 0) fail("inotify on " + state_dir + ": " + std::strerror(errno));
  }
  TimelineWatch(const TimelineWatch &) = delete;
  TimelineWatch &operator=(const TimelineWatch &) = delete;
  int fd() const { return fd_; }

  // The pid a timeline's name is for (this boot), or -1.
  pid_t pid_of(const std::string &name) const {
    if (!name.ends_with(".timeline.json")) return -1;
    auto at = name.find(needle_);
    if (at == std::string::npos) return -1;
    at += needle_.size();
    auto end = name.find('.', at);
    if (end == std::string::npos) return -1;
    try {
      return static_cast<pid_t>(std::stol(name.substr(at, end - at)));
    } catch (...) {
      return -1;
    }
  }

  // Drains the events; records the first arrival of each wanted pid.
  void drain(const std::set<pid_t> &want, std::map<pid_t, Arrival> &got, std::int64_t mono, std::int64_t real) {
    alignas(inotify_event) char buf[65536];
    bool overflow = false;
    for (;;) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (char *p = buf; p < buf + n;) {
        auto *ev = reinterpret_cast<inotify_event *>(p);
        if (ev->mask & IN_Q_OVERFLOW) overflow = true;
        if (ev->wd == cursor_wd_) {
          if (ev->len && std::strcmp(ev->name, "cursor") == 0)
            for (auto &[pid, a] : got)
              if (!a.durable_mono) a.durable_mono = mono, a.durable_real = real;
        } else if (ev->len) {
          note(ev->name, want, got, mono, real);
        }
        p += sizeof(inotify_event) + ev->len;
      }
    }
    if (overflow) {  // lost events: whatever is there now arrived by now
      std::error_code ec;
      for (const auto &e : fs::directory_iterator(dir_, ec)) note(e.path().filename(), want, got, mono, real);
    }
  }

 private:
  void note(const std::string &name, const std::set<pid_t> &want, std::map<pid_t, Arrival> &got, std::int64_t mono,
            std::int64_t real) {
    pid_t pid = pid_of(name);
    if (pid > 0 && want.count(pid) && !got.count(pid)) got[pid] = Arrival{mono, real, dir_ + "/" + name};
  }
  std::string dir_, needle_;
  int fd_ = -1, cursor_wd_ = -1;
};

// ---- the journal --------------------------------------------------------

struct Entry {
  std::int64_t realtime = 0;
  std::map<std::string, std::string> f;
  std::string get(const std::string &k) const {
    auto it = f.find(k);
    return it == f.end() ? "" : it->second;
  }
};

// The non-system uid crash_demo runs as for the "as a user" case (no
// passwd entry is needed: systemd-coredump and journald go by the number).
constexpr uid_t kBenchUid = 47099;

bool trusted_uid(const std::string &uid) {
  if (uid == "0") return true;
  const passwd *pw = getpwnam("systemd-coredump");
  return pw && uid == std::to_string(pw->pw_uid);
}

// The systemd-coredump entries of `pids` written at or after not_before.
std::map<pid_t, Entry> find_entries(const std::set<pid_t> &pids, std::int64_t not_before, int timeout_s) {
  sd_journal *j = nullptr;
  int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
  if (r < 0) fail("sd_journal_open: " + std::string(std::strerror(-r)));
  std::unique_ptr<sd_journal, decltype(&sd_journal_close)> guard(j, sd_journal_close);
  const std::string m = std::string("MESSAGE_ID=") + kCoredumpMessageId;
  sd_journal_add_match(j, m.data(), m.size());
  sd_journal_seek_realtime_usec(j, static_cast<std::uint64_t>(not_before));
  std::map<pid_t, Entry> out;
  const std::int64_t deadline = mono_us() + static_cast<std::int64_t>(timeout_s) * 1000000;
  while (out.size() < pids.size()) {
    while (sd_journal_next(j) > 0) {
      std::uint64_t t = 0;
      sd_journal_get_realtime_usec(j, &t);
      if (static_cast<std::int64_t>(t) < not_before) continue;
      Entry e;
      e.realtime = static_cast<std::int64_t>(t);
      const void *data;
      size_t len;
      SD_JOURNAL_FOREACH_DATA(j, data, len) {
        std::string kv(static_cast<const char *>(data), std::min<size_t>(len, 4096));
        auto eq = kv.find('=');
        if (eq != std::string::npos && kv.compare(0, eq, "COREDUMP") != 0) e.f.emplace(kv.substr(0, eq), kv.substr(eq + 1));
      }
      // systemd-coredump logs a non-system user's crash as that user.
      if (!trusted_uid(e.get("_UID")) && !(e.get("_UID") == std::to_string(kBenchUid) && e.get("COREDUMP_UID") == e.get("_UID")))
        continue;
      pid_t pid = -1;
      try {
        pid = static_cast<pid_t>(std::stol(e.get("COREDUMP_PID")));
      } catch (...) {
        continue;
      }
      if (pids.count(pid) && !out.count(pid)) out.emplace(pid, std::move(e));
    }
    if (out.size() == pids.size()) break;
    check_stop();
    if (mono_us() > deadline) fail("systemd-coredump journal entries missing after " + std::to_string(timeout_s) + " s");
    sd_journal_wait(j, 100000);
  }
  return out;
}

// The bench's own journal reader, polled beside the daemon: when does any
// sd-journal reader learn of a new systemd-coredump entry?  (journald posts
// changes to readers on a coalescing timer, not per entry.)
class JournalWatch {
 public:
  JournalWatch() {
    int r = sd_journal_open(&j_, SD_JOURNAL_LOCAL_ONLY);
    if (r < 0) fail("sd_journal_open: " + std::string(std::strerror(-r)));
    const std::string m = std::string("MESSAGE_ID=") + kCoredumpMessageId;
    sd_journal_add_match(j_, m.data(), m.size());
    sd_journal_seek_tail(j_);
    sd_journal_previous(j_);
    fd_ = sd_journal_get_fd(j_);
    if (fd_ < 0) fail("sd_journal_get_fd: " + std::string(std::strerror(-fd_)));
  }
  ~JournalWatch() { sd_journal_close(j_); }
  JournalWatch(const JournalWatch &) = delete;
  JournalWatch &operator=(const JournalWatch &) = delete;
  pollfd pfd() const { return {fd_, static_cast<short>(sd_journal_get_events(j_)), 0}; }
  // After a wakeup: records `real` for each new entry of a wanted pid.
  void drain(const std::set<pid_t> &want, std::map<pid_t, std::int64_t> &woke, std::int64_t real) {
    sd_journal_process(j_);
    while (sd_journal_next(j_) > 0) {
      const void *d;
      size_t len;
      if (sd_journal_get_data(j_, "COREDUMP_PID", &d, &len) < 0) continue;
      pid_t pid = static_cast<pid_t>(std::atol(std::string(static_cast<const char *>(d) + 13, len - 13).c_str()));
      if (want.count(pid) && !woke.count(pid)) woke[pid] = real;
    }
  }

 private:
  sd_journal *j_ = nullptr;
  int fd_ = -1;
};

// Until every crasher is dead and every one that dumped a core has its
// timeline, made durable; throws after `timeout_s`.
void wait_deaths_and_timelines(std::vector<Crasher> &cs, TimelineWatch &w, std::map<pid_t, Arrival> &got,
                               JournalWatch &jw, std::map<pid_t, std::int64_t> &woke, int timeout_s,
                               const std::string &daemon_log) {
  std::set<pid_t> want;
  for (const auto &c : cs) want.insert(c.pid);
  const std::int64_t deadline = mono_us() + static_cast<std::int64_t>(timeout_s) * 1000000;
  for (;;) {
    bool done = true;
    for (const auto &c : cs)
      if (!c.dead || (WCOREDUMP(c.status) && (!got.count(c.pid) || !got.at(c.pid).durable_mono))) done = false;
    if (done) return;
    check_stop();
    if (mono_us() > deadline) {
      std::string missing;
      for (const auto &c : cs)
        if (!c.dead || !got.count(c.pid) || !got.at(c.pid).durable_mono)
          missing += " " + std::to_string(c.pid) + (!c.dead ? "(alive)" : got.count(c.pid) ? "(not synced)" : "");
      std::string log = read_text(daemon_log);
      if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
      fail("no timeline within " + std::to_string(timeout_s) + " s for pid(s)" + missing + "; daemon log:\n" + log);
    }
    std::vector<pollfd> pf{{w.fd(), POLLIN, 0}, jw.pfd()};
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (!cs[i].dead) {
        pf.push_back({cs[i].pidfd, POLLIN, 0});
        idx.push_back(i);
      }
    int r = poll(pf.data(), pf.size(), 50);
    const std::int64_t mono = mono_us(), real = real_us();
    if (r <= 0) continue;
    for (std::size_t k = 2; k < pf.size(); ++k) {
      if (!(pf[k].revents & (POLLIN | POLLHUP))) continue;
      Crasher &c = cs[idx[k - 2]];
      if (waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.dead = true;
        c.death_mono = mono;
        c.death_real = real;
        close(c.pidfd);
        c.pidfd = -1;
      }
    }
    if (pf[0].revents & POLLIN) w.drain(want, got, mono, real);
    if (pf[1].revents) jw.drain(want, woke, real);
  }
}

// ---- one crash, measured -------------------------------------------------

struct Sample {
  pid_t pid = -1;
  std::string stored, timeline, status, compression;
  bool truncated = false;  // COREDUMP_TRUNCATED=1
  double stored_bytes = 0, core_bytes = 0, kept_bytes = 0;
  bool sparse = false;
  double a = 0, b = 0;             // death -> timeline, entry -> timeline
  double b_durable = 0;            // entry -> the cursor save that made the timeline durable
  std::optional<double> crash;     // CRASH event -> timeline
  double crash_to_entry = 0;       // CRASH event -> entry (systemd-coredump)
  double entry_to_death = 0;       // entry -> death (signed)
  std::optional<double> reader_wake;  // entry -> the bench's own sd-journal reader wakes with it
  double duration_ms = 0, latency_ms = 0, decoder_ms = 0, decoder_rss_kb = 0;
  Plain plain;
};

// The CRASH event's moment on CLOCK_MONOTONIC, in µs.  Its slot timestamp
// is a raw TSC read by the crash handler in the crashing process; this
// process reads the same TSC (invariant and shared on this VM), so it is
// converted with our own calibration against CLOCK_MONOTONIC, taken from the
// start of the run to now (hundreds of ms at least: error well under 1 µs
// per second).  The ring's own time_ns is null for short-lived processes
// (only the init anchor, no ticks_per_second).  Only for the tsc clock.
struct TscCalibration {
  std::uint64_t tsc0 = 0;
  std::int64_t mono0 = 0;
  void start() {
#if defined(__x86_64__)
    mono0 = mono_us();
    tsc0 = __rdtsc();
#endif
  }
  std::optional<std::int64_t> mono_of(std::uint64_t ticks) const {
#if defined(__x86_64__)
    const std::int64_t mono1 = mono_us();
    const std::uint64_t tsc1 = __rdtsc();
    if (mono1 - mono0 < 100000 || tsc1 <= tsc0) return std::nullopt;
    const double per_us = static_cast<double>(tsc1 - tsc0) / static_cast<double>(mono1 - mono0);
    return mono0 + static_cast<std::int64_t>((static_cast<double>(ticks) - static_cast<double>(tsc0)) / per_us);
#else
    (void)ticks;
    return std::nullopt;
#endif
  }
};
TscCalibration g_tsc;

std::optional<std::int64_t> crash_mono_us(const json &doc) {
  if (!doc.contains("rings") || !doc["rings"].is_array() || doc["rings"].empty()) return std::nullopt;
  const json &h = doc["rings"][0].value("header", json::object());
  if (h.value("clock", "") != "tsc") return std::nullopt;
  if (!doc.contains("events") || !doc["events"].is_array()) return std::nullopt;
  for (const auto &e : doc["events"])
    if (e.value("kind", "") == "CRASH" && e.contains("timestamp") && e["timestamp"].is_number_unsigned())
      return g_tsc.mono_of(e["timestamp"].get<std::uint64_t>());
  return std::nullopt;
}

Sample make_sample(const Crasher &c, const Arrival &arr, const Entry &e, const std::map<pid_t, std::int64_t> &woke) {
  Sample s;
  s.pid = c.pid;
  s.timeline = arr.path;
  s.stored = e.get("COREDUMP_FILENAME");
  s.truncated = e.get("COREDUMP_TRUNCATED") == "1";
  s.a = static_cast<double>(arr.mono - c.death_mono) / 1000.0;
  s.b = static_cast<double>(arr.real - e.realtime) / 1000.0;
  s.b_durable = static_cast<double>(arr.durable_real - e.realtime) / 1000.0;
  s.entry_to_death = static_cast<double>(c.death_real - e.realtime) / 1000.0;
  if (auto w = woke.find(c.pid); w != woke.end()) s.reader_wake = static_cast<double>(w->second - e.realtime) / 1000.0;
  // A compact stored document in the full shape (events as objects).
  json doc = ct::test::full_document(json::parse(read_text(arr.path), nullptr, false));
  if (doc.is_discarded()) fail("timeline " + arr.path + " is not JSON");
  s.status = doc.value("status", "?");
  if (auto t = crash_mono_us(doc)) {
    s.crash = static_cast<double>(arr.mono - *t) / 1000.0;
    // The entry's realtime, moved to CLOCK_MONOTONIC through the arrival.
    s.crash_to_entry = static_cast<double>((e.realtime - arr.real + arr.mono) - *t) / 1000.0;
  }
  const json &d = doc["daemon"];
  s.duration_ms = d.value("duration_ms", 0.0);
  s.latency_ms = d.value("latency_ms", 0.0);
  if (d.contains("extraction")) {
    const json &x = d["extraction"];
    s.compression = x.value("compression", "");
    s.core_bytes = x.value("core_bytes", 0.0);
    s.kept_bytes = x.value("kept_bytes", 0.0);
    s.sparse = x.value("sparse", false);
  }
  if (d.contains("decoder")) {
    s.decoder_ms = d["decoder"].value("duration_ms", 0.0);
    s.decoder_rss_kb = d["decoder"].value("max_rss_kb", 0.0);
  }
  if (doc.contains("coredump") && doc["coredump"].value("realtime_usec", std::int64_t{0}) != e.realtime)
    std::fprintf(stderr, "bench_daemon: warning: pid %d: the timeline's entry time differs from the journal's\n",
                 static_cast<int>(c.pid));
  struct stat st {};
  if (!s.stored.empty() && stat(s.stored.c_str(), &st) == 0) s.stored_bytes = static_cast<double>(st.st_size);
  return s;
}

// ---- the run --------------------------------------------------------------


// tests/support/pipeline: started here (and stopped at the end) only if its
// status says it is not running; this process is its holder.
class Pipeline {
 public:
  explicit Pipeline(std::string script) : script_(std::move(script)) {
    if (script_.empty() || access(script_.c_str(), X_OK) != 0) return;
    setenv("CT_PIPELINE_HOLDER", std::to_string(getpid()).c_str(), 1);
    if (std::system((script_ + " status >/dev/null 2>&1").c_str()) == 0) return;
    std::fprintf(stderr, "bench_daemon: the pipeline is not running; %s start\n", script_.c_str());
    if (std::system((script_ + " start >&2").c_str()) != 0) fail(script_ + " start failed");
    started_ = true;
  }
  ~Pipeline() {
    if (started_ && std::system((script_ + " stop >&2").c_str()) != 0)
      std::fprintf(stderr, "bench_daemon: %s stop failed\n", script_.c_str());
  }
  Pipeline(const Pipeline &) = delete;
  Pipeline &operator=(const Pipeline &) = delete;

 private:
  std::string script_;
  bool started_ = false;
};

struct Config {
  int small_reps = 5, mid_reps = 5, big_reps = 3, storm = 32, timeout_s = 300;
  int user_reps = 5;           // crash_demo as kBenchUid: its entry sent as that user
  int big_ring_reps = 3;       // big_ring_crasher 1 4096 5000: a document bigger than the entry's bound
  unsigned mid_mib = 100, big_mib = 1024;
  std::string json_out, bin_dir, work_parent = "/var/tmp", pipeline = CT_PIPELINE_SCRIPT;
  bool keep_cores = false, keep_work = false, next_to_core = false;
};

class Workspace {
 public:
  Workspace(const std::string &parent, bool keep) : keep_(keep) {
    std::string t = parent + "/ct-bench-daemon-XXXXXX";
    if (!mkdtemp(t.data())) fail("mkdtemp in " + parent + ": " + std::strerror(errno));
    path = t;
    chmod(path.c_str(), 0755);
  }
  ~Workspace() {
    std::error_code ec;
    if (keep_)
      std::fprintf(stderr, "bench_daemon: kept %s\n", path.c_str());
    else
      fs::remove_all(path, ec);
  }
  Workspace(const Workspace &) = delete;
  Workspace &operator=(const Workspace &) = delete;
  std::string path;

 private:
  bool keep_ = false;
};

struct CaseResult {
  std::string name;
  std::vector<Sample> samples;
};

class Bench {
 public:
  Bench(const Config &cfg, Workspace &ws, TimelineWatch &watch, ct::test::DaemonHarness &daemon)
      : cfg_(cfg), ws_(ws), watch_(watch), daemon_(daemon) {}

  Plain plain_tools(const std::string &stored, pid_t pid) {
    Plain p;
    const Tool t = tool_for(stored);
    const std::string err = ws_.path + "/tool.err", file = ws_.path + "/plain.core";
    sync();
    Timed r = run_timed(t.to_null, "/dev/null", err);
    if (!exited_ok(r.status)) fail(t.to_null[0] + " -d " + stored + " failed: " + read_text(err));
    p.c1 = r.ms;
    sync();
    std::vector<std::string> to_file = t.to_file;
    if (!t.file_via_stdout) to_file.push_back(file);
    r = run_timed(to_file, t.file_via_stdout ? file : "/dev/null", err);
    if (!exited_ok(r.status)) fail(to_file[0] + " to a file failed: " + read_text(err));
    p.c2 = r.ms;
    remove_quietly(file);
    sync();
    r = run_timed({"coredumpctl", "--no-pager", "-q", "dump", std::to_string(pid), "-o", file}, "/dev/null", err);
    if (!exited_ok(r.status)) fail("coredumpctl dump " + std::to_string(pid) + " failed: " + read_text(err));
    p.c3 = r.ms;
    remove_quietly(file);
    sync();
    return p;
  }

  CaseResult single(const std::string &name, const std::vector<std::string> &argv, int reps,
                    std::optional<uid_t> uid = {}) {
    CaseResult cr{name, {}};
    for (int i = 0; i < reps; ++i) {
      sync();
      const std::int64_t not_before = real_us();
      JournalWatch jw;
      auto cs = spawn_crashers(argv, 1, uid);
      std::map<pid_t, Arrival> got;
      std::map<pid_t, std::int64_t> woke;
      wait_deaths_and_timelines(cs, watch_, got, jw, woke, cfg_.timeout_s, daemon_.log_path());
      const Crasher &c = cs[0];
      if (!WIFSIGNALED(c.status) || !WCOREDUMP(c.status))
        fail(name + ": pid " + std::to_string(c.pid) + " did not die with a core (wait status " +
             std::to_string(c.status) + ")");
      auto entries = find_entries({c.pid}, not_before, 60);
      Sample s = make_sample(c, got.at(c.pid), entries.at(c.pid), woke);
      note_files(s);
      if (s.stored.empty() || s.stored_bytes == 0)
        fail(name + ": pid " + std::to_string(c.pid) + " has no stored core file (Storage=?)");
      s.plain = plain_tools(s.stored, c.pid);
      std::fprintf(stderr, "  %s #%d pid %d: a %.1f b %.1f ms | zstd -d -c %.1f, -o %.1f, coredumpctl %.1f ms\n",
                   name.c_str(), i + 1, static_cast<int>(c.pid), s.a, s.b, s.plain.c1, s.plain.c2, s.plain.c3);
      cr.samples.push_back(std::move(s));
    }
    return cr;
  }

  struct Storm {
    int n = 0, no_core = 0, limit_before = 0, limit_used = 0;
    double spread = 0, last_death_to_all = 0, first_entry_to_all = 0, first_death_to_all = 0, spawn_to_all = 0;
    double per_crash_a_median = 0, per_crash_a_max = 0, sum_duration = 0, last_entry_to_all = 0;
    double per_crash_b_median = 0, per_crash_b_p95 = 0, per_crash_b_max = 0;  // entry -> its timeline
    double per_crash_durable_median = 0, per_crash_durable_max = 0;         // entry -> it is durable
    std::optional<double> first_wake;  // first entry -> the bench's reader first wakes
    double c1 = 0, c2 = 0, c3 = 0;
    std::vector<Sample> samples;
  };

  Storm storm(const std::vector<std::string> &argv, int n) {
    Storm st;
    st.n = n;
    // Room for the n and for a crash elsewhere meanwhile (systemd's 16
    // would make the kernel drop cores); put back as it was, also on SIGINT.
    ct::test::CorePipeLimit limit(std::max(n, 64));
    st.limit_before = limit.before();
    st.limit_used = limit.now();
    sync();
    const std::int64_t not_before = real_us(), spawn_mono = mono_us();
    JournalWatch jw;
    auto cs = spawn_crashers(argv, n);
    std::map<pid_t, Arrival> got;
    std::map<pid_t, std::int64_t> woke;
    wait_deaths_and_timelines(cs, watch_, got, jw, woke, cfg_.timeout_s, daemon_.log_path());
    std::set<pid_t> pids;
    for (const auto &c : cs) {
      if (!WCOREDUMP(c.status)) {
        ++st.no_core;
        continue;
      }
      pids.insert(c.pid);
    }
    auto entries = find_entries(pids, not_before, 60);
    std::int64_t first_death = INT64_MAX, last_death = 0, last_tl_mono = 0, last_tl_real = 0, first_entry = INT64_MAX,
                 last_entry = 0, first_woke = INT64_MAX;
    for (const auto &[p, t] : woke) first_woke = std::min(first_woke, t);
    std::vector<double> a, b, durable;
    for (const auto &c : cs) {
      first_death = std::min(first_death, c.death_mono);
      last_death = std::max(last_death, c.death_mono);
      if (!pids.count(c.pid)) continue;
      const Arrival &arr = got.at(c.pid);
      last_tl_mono = std::max(last_tl_mono, arr.mono);
      last_tl_real = std::max(last_tl_real, arr.real);
      first_entry = std::min(first_entry, entries.at(c.pid).realtime);
      last_entry = std::max(last_entry, entries.at(c.pid).realtime);
      Sample s = make_sample(c, arr, entries.at(c.pid), woke);
      note_files(s);
      a.push_back(s.a);
      b.push_back(s.b);
      durable.push_back(s.b_durable);
      st.sum_duration += s.duration_ms;
      st.samples.push_back(std::move(s));
    }
    st.spread = static_cast<double>(last_death - first_death) / 1000.0;
    st.last_death_to_all = static_cast<double>(last_tl_mono - last_death) / 1000.0;
    st.first_death_to_all = static_cast<double>(last_tl_mono - first_death) / 1000.0;
    st.spawn_to_all = static_cast<double>(last_tl_mono - spawn_mono) / 1000.0;
    st.first_entry_to_all = static_cast<double>(last_tl_real - first_entry) / 1000.0;
    st.last_entry_to_all = static_cast<double>(last_tl_real - last_entry) / 1000.0;
    if (first_woke != INT64_MAX) st.first_wake = static_cast<double>(first_woke - first_entry) / 1000.0;
    st.per_crash_a_median = median(a);
    st.per_crash_a_max = a.empty() ? 0 : *std::max_element(a.begin(), a.end());
    if (!b.empty()) {
      std::sort(b.begin(), b.end());
      st.per_crash_b_median = median(b);
      st.per_crash_b_p95 = b[std::min(b.size() - 1, (b.size() * 95 + 99) / 100 - 1)];
      st.per_crash_b_max = b.back();
      st.per_crash_durable_median = median(durable);
      st.per_crash_durable_max = *std::max_element(durable.begin(), durable.end());
    }
    // The same cores, one after the other, by the plain tools.
    const std::string err = ws_.path + "/tool.err", file = ws_.path + "/plain.core";
    sync();
    std::int64_t t0 = mono_us();
    for (const auto &s : st.samples) {
      Timed r = run_timed(tool_for(s.stored).to_null, "/dev/null", err);
      if (!exited_ok(r.status)) fail("decompressing " + s.stored + " failed: " + read_text(err));
    }
    st.c1 = static_cast<double>(mono_us() - t0) / 1000.0;
    sync();
    t0 = mono_us();
    for (const auto &s : st.samples) {
      const Tool t = tool_for(s.stored);
      std::vector<std::string> to_file = t.to_file;
      if (!t.file_via_stdout) to_file.push_back(file);
      Timed r = run_timed(to_file, t.file_via_stdout ? file : "/dev/null", err);
      if (!exited_ok(r.status)) fail("decompressing " + s.stored + " to a file failed: " + read_text(err));
      remove_quietly(file);
    }
    st.c2 = static_cast<double>(mono_us() - t0) / 1000.0;
    sync();
    t0 = mono_us();
    for (const auto &s : st.samples) {
      Timed r = run_timed({"coredumpctl", "--no-pager", "-q", "dump", std::to_string(s.pid), "-o", file}, "/dev/null",
                          err);
      if (!exited_ok(r.status)) fail("coredumpctl dump " + std::to_string(s.pid) + " failed: " + read_text(err));
      remove_quietly(file);
    }
    st.c3 = static_cast<double>(mono_us() - t0) / 1000.0;
    sync();
    return st;
  }

  // Files this run made in the coredump directory, removed at the end.
  std::vector<std::string> made;

 private:
  void note_files(const Sample &s) {
    if (!s.stored.empty()) made.push_back(s.stored);
    if (cfg_.next_to_core) made.push_back(s.timeline);
  }
  const Config &cfg_;
  Workspace &ws_;
  TimelineWatch &watch_;
  ct::test::DaemonHarness &daemon_;
};

std::string loadavg() { return trim(read_text("/proc/loadavg")); }

json sample_json(const Sample &s) {
  json j = {{"pid", s.pid},
            {"stored", s.stored},
            {"timeline", s.timeline},
            {"status", s.status},
            {"compression", s.compression},
            {"truncated", s.truncated},
            {"stored_bytes", s.stored_bytes},
            {"core_bytes", s.core_bytes},
            {"kept_bytes", s.kept_bytes},
            {"sparse", s.sparse},
            {"a_death_to_timeline_ms", s.a},
            {"b_entry_to_timeline_ms", s.b},
            {"b_entry_to_durable_ms", s.b_durable},
            {"crash_to_entry_ms", s.crash_to_entry},
            {"entry_to_death_ms", s.entry_to_death},
            {"daemon_duration_ms", s.duration_ms},
            {"daemon_latency_ms", s.latency_ms},
            {"decoder_ms", s.decoder_ms},
            {"decoder_max_rss_kb", s.decoder_rss_kb},
            {"c1_decompress_to_null_ms", s.plain.c1},
            {"c2_decompress_to_file_ms", s.plain.c2},
            {"c3_coredumpctl_dump_ms", s.plain.c3}};
  j["crash_to_timeline_ms"] = s.crash ? json(*s.crash) : json(nullptr);
  j["entry_to_bench_reader_wakeup_ms"] = s.reader_wake ? json(*s.reader_wake) : json(nullptr);
  return j;
}

template <class F>
std::vector<double> col(const std::vector<Sample> &v, F f) {
  std::vector<double> out;
  for (const auto &s : v) out.push_back(f(s));
  return out;
}

int run(const Config &cfg) {
  if (geteuid() != 0) fail("must run as root (it reads every stored core and starts core-timelined)");
  const std::string bin = cfg.bin_dir.empty() ? fs::read_symlink("/proc/self/exe").parent_path().string() : cfg.bin_dir;
  const std::string daemon_bin = bin + "/core-timelined", crash_demo = bin + "/crash_demo",
                    big_crasher = bin + "/big_crasher", big_ring_crasher = bin + "/big_ring_crasher";
  for (const auto &p : {daemon_bin, crash_demo})
    if (access(p.c_str(), X_OK) != 0) fail(p + " not found; build it (cmake --build BUILD --target bench_daemon)");
  const bool have_big = access(big_crasher.c_str(), X_OK) == 0;
  const bool have_big_ring = access(big_ring_crasher.c_str(), X_OK) == 0;
  if (!have_big_ring) std::fprintf(stderr, "bench_daemon: %s not found; the cut document's case skipped\n", big_ring_crasher.c_str());
  if (!have_big) std::fprintf(stderr, "bench_daemon: %s not found (CT_BUILD_TESTS=OFF?); big cores skipped\n", big_crasher.c_str());
  Pipeline pipeline(cfg.pipeline);
  const std::string pattern = trim(read_text("/proc/sys/kernel/core_pattern"));
  if (!pattern.starts_with("|/lib/systemd/systemd-coredump") && !pattern.starts_with("|/usr/lib/systemd/systemd-coredump"))
    fail("kernel.core_pattern does not pipe to systemd-coredump ('" + pattern +
         "'); run tests/support/pipeline start first");

  Workspace ws(cfg.work_parent, cfg.keep_work);
  const std::string out = cfg.next_to_core ? std::string(kCoredumpDir) : ws.path + "/out";
  fs::create_directories(ws.path + "/out");
  chmod((ws.path + "/out").c_str(), 0755);
  struct stat s1 {}, s2 {};
  stat(kCoredumpDir, &s1);
  stat(ws.path.c_str(), &s2);
  const bool same_fs = s1.st_dev == s2.st_dev;
  std::ofstream(ws.path + "/core-timelined.conf") << "# bench_daemon: defaults only\n";

  TimelineWatch watch(out);
  ct::test::DaemonHarness::Options dopts;
  dopts.binary = daemon_bin;
  dopts.root = ws.path;
  dopts.output_dir = !cfg.next_to_core;
  dopts.first_start = "new";
  dopts.config = ws.path + "/core-timelined.conf";
  dopts.tlmap_dir = bin;
  dopts.stop_timeout = std::chrono::seconds(10);
  dopts.on_wait = check_stop;
  ct::test::DaemonHarness daemon(dopts);
  if (!cfg.next_to_core && daemon.output_dir() != out) fail("the daemon's output directory is not " + out);
  daemon.start();
  watch.watch_cursor(ws.path + "/state");
  const std::string load_start = loadavg();

  Bench bench(cfg, ws, watch, daemon);
  std::vector<CaseResult> cases;
  std::optional<Bench::Storm> storm;
  std::exception_ptr failure;
  try {
    if (cfg.small_reps > 0) cases.push_back(bench.single("crash_demo", {crash_demo, "--path=a"}, cfg.small_reps));
    if (cfg.user_reps > 0) {
      // A copy that uid kBenchUid may run; its timeline has the core's ACL
      // for that uid, so the daemon sends its entry as that user (a child).
      const std::string user_demo = ws.path + "/crash_demo";
      fs::copy_file(crash_demo, user_demo, fs::copy_options::overwrite_existing);
      chmod(user_demo.c_str(), 0755);
      chmod(ws.path.c_str(), 0755);
      cases.push_back(bench.single("crash_demo as uid " + std::to_string(kBenchUid), {user_demo, "--path=a"},
                                   cfg.user_reps, kBenchUid));
    }
    if (have_big_ring && cfg.big_ring_reps > 0)
      cases.push_back(bench.single("big_ring_crasher 1 4096 5000", {big_ring_crasher, "1", "4096", "5000"},
                                   cfg.big_ring_reps));
    if (have_big && cfg.mid_reps > 0)
      cases.push_back(bench.single("big_crasher " + std::to_string(cfg.mid_mib),
                                   {big_crasher, std::to_string(cfg.mid_mib)}, cfg.mid_reps));
    if (have_big && cfg.big_reps > 0)
      cases.push_back(bench.single("big_crasher " + std::to_string(cfg.big_mib),
                                   {big_crasher, std::to_string(cfg.big_mib)}, cfg.big_reps));
    if (cfg.storm > 0) storm = bench.storm({crash_demo, "--path=a"}, cfg.storm);
  } catch (...) {
    failure = std::current_exception();
  }
  const std::string load_end = loadavg();
  const int daemon_exit = daemon.stop();
  if (!cfg.keep_cores)
    for (const auto &f : bench.made) remove_quietly(f);
  if (failure) std::rethrow_exception(failure);

  // ---- the report ----
  utsname u{};
  uname(&u);
  std::string comp = !cases.empty()                       ? tool_name(cases[0].samples.at(0).stored)
                     : storm && !storm->samples.empty() ? tool_name(storm->samples[0].stored)
                                                         : "zstd";
  std::printf("# bench_daemon: crash to timeline.json on disk, beside %s -d and coredumpctl dump\n\n", comp.c_str());
  std::printf("kernel %s, %ld CPUs; load average at start %s, at end %s\n", u.release, sysconf(_SC_NPROCESSORS_ONLN),
              load_start.c_str(), load_end.c_str());
  std::printf("core-timelined %s (defaults; --first-start new, own state dir%s), exit %d after SIGTERM\n",
              daemon_bin.c_str(), cfg.next_to_core ? ", timelines next to the cores" : ", --output-dir", daemon_exit);
  std::printf("work dir %s the coredump directory's filesystem; core_pipe_limit %s\n",
              same_fs ? "on" : "NOT on", trim(read_text(kPipeLimitPath)).c_str());
  std::printf("clocks: deaths = pidfd wakeup + waitpid, timelines = inotify IN_CREATE/IN_MOVED_TO wakeup (both\n"
              "read on poll wakeup, µs); entry = __REALTIME_TIMESTAMP (µs); crash = the CRASH event's TSC timestamp,\n"
              "converted with this process's own TSC calibration against CLOCK_MONOTONIC\n\n");

  // Medians of each column (ratios are ratios of medians).
  auto med = [](const std::vector<Sample> &v, auto f) { return median(col(v, f)); };
  auto med_crash = [](const std::vector<Sample> &v) -> std::optional<double> {
    std::vector<double> x;
    for (const auto &s : v)
      if (s.crash) x.push_back(*s.crash);
    if (x.empty()) return std::nullopt;
    return median(x);
  };
  auto opt_ms = [](std::optional<double> v) { return v ? ms(*v) : std::string("n/a"); };

  std::printf("## Where the time goes (medians, wall ms)\n\n");
  std::printf("| case | n | core MiB | stored KiB | crash→entry | entry→death | entry→bench's reader wakes | "
              "entry→daemon starts | daemon extract+decode | write+link | **(b) entry→TL** | entry→TL durable | "
              "(a) death→TL | crash→TL |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  json jcases = json::array();
  for (const auto &c : cases) {
    const auto &v = c.samples;
    std::vector<double> wake;
    for (const auto &x : v)
      if (x.reader_wake) wake.push_back(*x.reader_wake);
    std::printf("| %s | %zu | %s | %s | %s | %s | %s | %s | %s | %s | **%s** | %s | %s | %s |\n", c.name.c_str(), v.size(),
                mib(med(v, [](const Sample &s) { return s.core_bytes; })).c_str(),
                fmt(1, med(v, [](const Sample &s) { return s.stored_bytes; }) / 1024).c_str(),
                ms(med(v, [](const Sample &s) { return s.crash_to_entry; })).c_str(),
                ms(med(v, [](const Sample &s) { return s.entry_to_death; })).c_str(),
                wake.empty() ? "n/a" : ms(median(wake)).c_str(),
                ms(med(v, [](const Sample &s) { return s.latency_ms - s.duration_ms; })).c_str(),
                ms(med(v, [](const Sample &s) { return s.duration_ms; })).c_str(),
                ms(med(v, [](const Sample &s) { return s.b - s.latency_ms; })).c_str(),
                ms(med(v, [](const Sample &s) { return s.b; })).c_str(),
                ms(med(v, [](const Sample &s) { return s.b_durable; })).c_str(),
                ms(med(v, [](const Sample &s) { return s.a; })).c_str(), opt_ms(med_crash(v)).c_str());
  }

  std::printf("\n## Beside the plain tools on the same stored core (medians, wall ms; ratios of medians)\n\n");
  std::printf("TARGET \"crash to timeline within 1.2 x plain decompression\": **(b)/(c1) <= 1.2**\n\n");
  std::printf("| case | (c1) %s -d -c >/dev/null | (c2) %s -d -o FILE | (c3) coredumpctl dump -o FILE | **(b)/(c1)** "
              "| (a)/(c1) | crash→TL/(c1) | daemon work/(c1) | (b)/(c2) | (b)/(c3) | (a)/(c3) | target |\n",
              comp.c_str(), comp.c_str());
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto &c : cases) {
    const auto &v = c.samples;
    const double a = med(v, [](const Sample &s) { return s.a; });
    const double b = med(v, [](const Sample &s) { return s.b; });
    const double work = med(v, [](const Sample &s) { return s.b - (s.latency_ms - s.duration_ms); });
    const double c1 = med(v, [](const Sample &s) { return s.plain.c1; });
    const double c2 = med(v, [](const Sample &s) { return s.plain.c2; });
    const double c3 = med(v, [](const Sample &s) { return s.plain.c3; });
    const auto crash = med_crash(v);
    const double tr = c1 > 0 ? b / c1 : 0;
    std::string verdict = tr <= 1.2 ? "met" : "missed: " + fmt(1, tr / 1.2) + " x the limit";
    std::printf("| %s | %s | %s | %s | **%s** | %s | %s | %s | %s | %s | %s | %s |\n", c.name.c_str(), ms(c1).c_str(),
                ms(c2).c_str(), ms(c3).c_str(), ratio(b, c1).c_str(), ratio(a, c1).c_str(),
                crash ? ratio(*crash, c1).c_str() : "n/a", ratio(work, c1).c_str(), ratio(b, c2).c_str(),
                ratio(b, c3).c_str(), ratio(a, c3).c_str(), verdict.c_str());
    json jc = {{"case", c.name},
               {"median_a_ms", a},
               {"median_b_ms", b},
               {"median_daemon_work_ms", work},
               {"median_c1_ms", c1},
               {"median_c2_ms", c2},
               {"median_c3_ms", c3},
               {"target_ratio_b_over_c1", tr},
               {"target_met", tr <= 1.2},
               {"samples", json::array()}};
    jc["median_crash_to_timeline_ms"] = crash ? json(*crash) : json(nullptr);
    for (const auto &x : v) jc["samples"].push_back(sample_json(x));
    jcases.push_back(std::move(jc));
  }
  /* The other reading of the target: a user without the daemon waits for
   * systemd-coredump to store the core and then decompresses it; compare
   * the daemon's whole path from the crash with that one. */
  std::printf("\nEnd to end beside the same path without the daemon (crash -> core stored -> plain decompression):\n\n"
              "| case | crash→TL | crash→entry + (c1) | crash→TL / (crash→entry + (c1)) |\n|---|---|---|---|\n");
  for (const auto &c : cases) {
    const auto &v = c.samples;
    std::vector<double> end_to_end, peer;
    for (const auto &x : v)
      if (x.crash) end_to_end.push_back(*x.crash), peer.push_back(x.crash_to_entry + x.plain.c1);
    if (end_to_end.empty()) {
      std::printf("| %s | n/a | n/a | n/a |\n", c.name.c_str());
      continue;
    }
    std::printf("| %s | %s | %s | %s |\n", c.name.c_str(), ms(median(end_to_end)).c_str(), ms(median(peer)).c_str(),
                ratio(median(end_to_end), median(peer)).c_str());
  }
  std::printf("\n(b) is the daemon's whole share: from systemd-coredump's entry (the core is stored) to the timeline.\n"
              "daemon work = its duration_ms (extract+decode, done before the entry when the core was prepared)\n"
              "plus writing the timeline; entry→daemon starts is negative when the core was prepared before its entry.\n"
              "The kernel reaps the crasher only when systemd-coredump is done with the core pipe\n"
              "(core_pipe_limit > 0): for a small core about when the entry is written, for a big one later\n"
              "(entry→death), so (a) death→TL is shorter than (b), and negative when the timeline is on disk\n"
              "before the crasher is reaped. crash→TL starts at the CRASH event (the crash handler's TSC).\n");

  // ---- the timeline entry's cost ----
  // The daemon's stderr line for each entry says what sending it took
  // (fields built, the document bounded, sd_journal_sendv, and the fork of
  // the child that sends it as the crashed user, when it does):
  // "pid N (...): ... [journal entry: F fields, document D bytes[ (cut)], sent as WHO in X ms]".
  struct EntryCost {
    double ms = 0, bytes = 0;
    bool cut = false;
  };
  std::map<pid_t, EntryCost> entry_cost;
  {
    const std::string log = daemon.log();
    std::size_t at = 0;
    while ((at = log.find("[journal entry: ", at)) != std::string::npos) {
      const std::size_t bol = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
      const std::size_t eol = log.find('\n', at);
      const std::string line = log.substr(bol, eol == std::string::npos ? std::string::npos : eol - bol);
      at = eol == std::string::npos ? log.size() : eol;
      const auto p = line.find("pid ");
      static constexpr char kDoc[] = " fields, document ";
      const auto doc = line.rfind(kDoc);
      const auto in = line.rfind(" in ");
      if (p == std::string::npos || doc == std::string::npos || in == std::string::npos) continue;
      EntryCost c;
      c.ms = std::strtod(line.c_str() + in + 4, nullptr);
      c.bytes = std::strtod(line.c_str() + doc + sizeof kDoc - 1, nullptr);
      c.cut = line.find("bytes (cut)") != std::string::npos;
      entry_cost[static_cast<pid_t>(std::strtol(line.c_str() + p + 4, nullptr, 10))] = c;
    }
  }
  json jentry = json::array();
  std::printf("\n## The timeline entry in the journal: the daemon's added cost per crash (medians)\n\n");
  std::printf("TARGET \"the daemon's added cost per crash for the journal entry <= 10%% of its per-crash "
              "time\": **entry / daemon work <= 0.10**\n\n");
  std::printf("| case | n | document in the entry, bytes | cut | entry ms | daemon work ms (duration_ms) | "
              "**entry / daemon work** |\n|---|---|---|---|---|---|---|\n");
  auto entry_row = [&](const std::string &name, const std::vector<Sample> &v) {
    std::vector<double> e, w, b, r;
    std::size_t cut = 0;
    for (const auto &s : v) {
      const auto it = entry_cost.find(s.pid);
      if (it == entry_cost.end()) continue;
      e.push_back(it->second.ms);
      b.push_back(it->second.bytes);
      w.push_back(s.duration_ms);
      if (s.duration_ms > 0) r.push_back(it->second.ms / s.duration_ms);
      cut += it->second.cut;
    }
    if (e.empty()) {
      std::printf("| %s | 0 | n/a (no \"journal entry\" line in the daemon's log) | | | | |\n", name.c_str());
      return;
    }
    const double ratio_of_medians = median(w) > 0 ? median(e) / median(w) : 0;
    std::printf("| %s | %zu | %.0f | %zu | %s | %s | **%.3f** (median of per-crash ratios %.3f) |\n", name.c_str(),
                e.size(), median(b), cut, fmt(3, median(e)).c_str(), ms(median(w)).c_str(), ratio_of_medians,
                r.empty() ? 0.0 : median(r));
    jentry.push_back({{"case", name},
                      {"n", e.size()},
                      {"document_bytes_median", median(b)},
                      {"cut", cut},
                      {"entry_ms_median", median(e)},
                      {"daemon_duration_ms_median", median(w)},
                      {"entry_over_work", ratio_of_medians}});
  };
  for (const auto &c : cases) entry_row(c.name, c.samples);
  if (storm) entry_row("storm of " + std::to_string(storm->n), storm->samples);
  std::printf("\nentry ms: from building the entry's fields (the document bounded to --journal-document-max) to\n"
              "sd_journal_sendv's return, including the clone and wait of the child that sends a non-system user's\n"
              "entry as that user; measured by the daemon (CLOCK_MONOTONIC) and printed on its stderr.  daemon work:\n"
              "the timeline's daemon.duration_ms (extraction and decoding, before the entry is sent).  journald's\n"
              "own work on the entry is not in it.\n");

  std::printf("\n## Extraction and decoding, from the timelines (medians)\n\n");
  std::printf("| case | status | compression | sparse | truncated | core bytes | kept bytes | kept %% | decoder ms "
              "| decoder max RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto &c : cases) {
    const auto &v = c.samples;
    std::set<std::string> statuses;
    bool sparse = false, trunc = false;
    for (const auto &s : v) {
      statuses.insert(s.status);
      sparse = sparse || s.sparse;
      trunc = trunc || s.truncated;
    }
    std::string st;
    for (const auto &x : statuses) st += (st.empty() ? "" : ",") + x;
    const double core = median(col(v, [](const Sample &s) { return s.core_bytes; }));
    const double kept = median(col(v, [](const Sample &s) { return s.kept_bytes; }));
    std::printf("| %s | %s | %s | %s | %s | %.0f | %.0f | %s | %s | %s |\n", c.name.c_str(), st.c_str(),
                v.empty() ? "" : v[0].compression.c_str(), sparse ? "yes" : "no", trunc ? "YES" : "no", core, kept,
                core > 0 ? fmt(2, 100.0 * kept / core).c_str() : "n/a",
                ms(median(col(v, [](const Sample &s) { return s.decoder_ms; }))).c_str(),
                mib(1024.0 * median(col(v, [](const Sample &s) { return s.decoder_rss_kb; }))).c_str());
  }

  json jstorm = nullptr;
  if (storm) {
    const auto &s = *storm;
    std::set<std::string> statuses;
    for (const auto &x : s.samples) statuses.insert(x.status);
    std::string st;
    for (const auto &x : statuses) st += (st.empty() ? "" : ",") + x;
    std::printf("\n## Storm: %d x crash_demo --path=a at once (core_pipe_limit %d -> %d, restored)\n\n", s.n,
                s.limit_before, s.limit_used);
    std::printf("timelines: %zu of %d crashes (%d died without a core), statuses: %s\n\n", s.samples.size(), s.n,
                s.no_core, st.c_str());
    std::printf("| | wall ms |\n|---|---|\n");
    std::printf("| first death → last death (spread) | %s |\n", ms(s.spread).c_str());
    std::printf("| **all deaths → all timelines** (last death → last timeline) | **%s** |\n",
                ms(s.last_death_to_all).c_str());
    std::printf("| first entry → last timeline (daemon's share) | %s |\n", ms(s.first_entry_to_all).c_str());
    std::printf("| first entry → bench's own sd-journal reader first wakes | %s |\n",
                s.first_wake ? ms(*s.first_wake).c_str() : "n/a");
    std::printf("| last entry → last timeline | %s |\n", ms(s.last_entry_to_all).c_str());
    std::printf("| first death → last timeline | %s |\n", ms(s.first_death_to_all).c_str());
    std::printf("| release of the crashers → last timeline | %s |\n", ms(s.spawn_to_all).c_str());
    std::printf("| per crash death → timeline, median / max | %s / %s |\n", ms(s.per_crash_a_median).c_str(),
                ms(s.per_crash_a_max).c_str());
    std::printf("| sum of the daemon's duration_ms | %s |\n", ms(s.sum_duration).c_str());
    std::printf("| (c1) %zu x %s -d -c >/dev/null, one after another | %s |\n", s.samples.size(), comp.c_str(),
                ms(s.c1).c_str());
    std::printf("| (c2) %zu x %s -d -o FILE, one after another | %s |\n", s.samples.size(), comp.c_str(), ms(s.c2).c_str());
    std::printf("| (c3) %zu x coredumpctl dump -o FILE, one after another | %s |\n", s.samples.size(), ms(s.c3).c_str());
    /* Without the daemon: systemd-coredump stores the 32 cores, then they
     * are decompressed one after another. */
    const double peer = s.first_death_to_all - s.last_entry_to_all + s.c1;
    std::printf("| without the daemon: first death → last entry, then (c1) | %s |\n", ms(peer).c_str());
    std::printf("\nend to end: first death → last timeline / (first death → last entry + (c1)) = %s\n",
                ratio(s.first_death_to_all, peer).c_str());
    /* The target, as for one crash: each crash's (b), entry -> its
     * timeline, beside decompressing one of these cores (c1 over n); and
     * the storm as a whole: from the last entry (every core stored) to the
     * last timeline, beside decompressing all n cores one after another. */
    const double c1_one = s.samples.empty() ? 0 : s.c1 / static_cast<double>(s.samples.size());
    const double t_median = c1_one > 0 ? s.per_crash_b_median / c1_one : 0;
    const double t_all = s.c1 > 0 ? s.last_entry_to_all / s.c1 : 0;
    const double t_worst = std::max(t_median, t_all);
    std::printf("\nper crash (b) entry → its timeline: median %s, p95 %s, max %s ms; one core's (c1): %s ms\n",
                ms(s.per_crash_b_median).c_str(), ms(s.per_crash_b_p95).c_str(), ms(s.per_crash_b_max).c_str(),
                fmt(2, c1_one).c_str());
    std::printf("per crash entry → its timeline durable (the daemon's next cursor save): median %s, max %s ms\n",
                ms(s.per_crash_durable_median).c_str(), ms(s.per_crash_durable_max).c_str());
    std::printf("\nTARGET \"crash to timeline within 1.2 x plain decompression\", for the storm: **median (b) / one "
                "core's (c1) = %s** (p95 %s, max %s); **last entry → last timeline / (c1) = %s**: %s\n",
                fmt(2, t_median).c_str(), ratio(s.per_crash_b_p95, c1_one).c_str(),
                ratio(s.per_crash_b_max, c1_one).c_str(), fmt(2, t_all).c_str(),
                t_worst <= 1.2 ? "met" : ("missed: " + fmt(1, t_worst / 1.2) + " x the limit").c_str());
    std::printf("\nother ratios: first entry → last timeline / (c1) = %s (bounded below by how systemd-coredump "
                "spreads the entries: first → last entry / (c1) = %s); all deaths → all timelines / (c1) = %s; / (c2) "
                "= %s; / (c3) = %s; sum of the daemon's work / (c1) = %s\n",
                ratio(s.first_entry_to_all, s.c1).c_str(),
                ratio(s.first_entry_to_all - s.last_entry_to_all, s.c1).c_str(),
                ratio(s.last_death_to_all, s.c1).c_str(), ratio(s.last_death_to_all, s.c2).c_str(),
                ratio(s.last_death_to_all, s.c3).c_str(), ratio(s.sum_duration, s.c1).c_str());
    jstorm = {{"n", s.n},
              {"timelines", s.samples.size()},
              {"no_core", s.no_core},
              {"core_pipe_limit_before", s.limit_before},
              {"core_pipe_limit_used", s.limit_used},
              {"death_spread_ms", s.spread},
              {"all_deaths_to_all_timelines_ms", s.last_death_to_all},
              {"first_entry_to_all_timelines_ms", s.first_entry_to_all},
              {"first_death_to_all_timelines_ms", s.first_death_to_all},
              {"last_entry_to_all_timelines_ms", s.last_entry_to_all},
              {"first_entry_to_bench_reader_wakeup_ms", s.first_wake ? json(*s.first_wake) : json(nullptr)},
              {"release_to_all_timelines_ms", s.spawn_to_all},
              {"per_crash_a_median_ms", s.per_crash_a_median},
              {"per_crash_a_max_ms", s.per_crash_a_max},
              {"sum_daemon_duration_ms", s.sum_duration},
              {"c1_sequential_ms", s.c1},
              {"c2_sequential_ms", s.c2},
              {"c3_sequential_ms", s.c3},
              {"per_crash_b_median_ms", s.per_crash_b_median},
              {"per_crash_b_p95_ms", s.per_crash_b_p95},
              {"per_crash_b_max_ms", s.per_crash_b_max},
              {"per_crash_durable_median_ms", s.per_crash_durable_median},
              {"per_crash_durable_max_ms", s.per_crash_durable_max},
              {"target_ratio_median_b_over_one_c1", t_median},
              {"target_ratio_last_entry_to_all_over_c1", t_all},
              {"first_entry_to_all_over_c1", s.c1 > 0 ? s.first_entry_to_all / s.c1 : 0},
              {"samples", json::array()}};
    for (const auto &x : s.samples) jstorm["samples"].push_back(sample_json(x));
  }
  std::fflush(stdout);

  if (!cfg.json_out.empty()) {
    json j = {{"kernel", u.release},
              {"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
              {"loadavg_start", load_start},
              {"loadavg_end", load_end},
              {"decompressor", comp},
              {"same_filesystem", same_fs},
              {"daemon_exit", daemon_exit},
              {"cases", jcases},
              {"storm", jstorm},
              {"journal_entry", jentry}};
    std::ofstream(cfg.json_out) << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  Config cfg;
  CLI::App app{"bench_daemon: core-timelined, a real crash to its timeline.json on disk, beside a plain zstd -d\n"
               "and coredumpctl dump of the same stored core; and a storm of simultaneous crashes.\n"
               "Needs root and the crash pipeline (tests/support/pipeline start).",
               "bench_daemon"};
  app.add_option("--small-reps", cfg.small_reps, "Crashes of crash_demo --path=a (0: skip)")->capture_default_str();
  app.add_option("--user-reps", cfg.user_reps, "Crashes of crash_demo --path=a as a non-system uid (0: skip)")
      ->capture_default_str();
  app.add_option("--big-ring-reps", cfg.big_ring_reps,
                 "Crashes of big_ring_crasher 1 4096 5000 (a document over the journal entry's bound; 0: skip)")
      ->capture_default_str();
  app.add_option("--mid-reps", cfg.mid_reps, "Crashes of big_crasher --mid-mib (0: skip)")->capture_default_str();
  app.add_option("--big-reps", cfg.big_reps, "Crashes of big_crasher --big-mib (0: skip)")->capture_default_str();
  app.add_option("--mid-mib", cfg.mid_mib, "MiB of the middle core")->capture_default_str();
  app.add_option("--big-mib", cfg.big_mib, "MiB of the big core")->capture_default_str();
  app.add_option("--storm", cfg.storm, "Simultaneous crash_demo crashes (0: skip)")->capture_default_str();
  app.add_option("--timeout", cfg.timeout_s, "Seconds to wait for a crash's (or the storm's) timelines")
      ->capture_default_str();
  app.add_option("--json", cfg.json_out, "Also write every sample and the medians as JSON to FILE");
  app.add_option("--bin-dir", cfg.bin_dir, "Where core-timelined, crash_demo, big_crasher are (default: next to this)");
  app.add_option("--work-dir", cfg.work_parent,
                 "Parent of the temporary directory (state, output, FILE); same filesystem as the cores")
      ->capture_default_str();
  app.add_option("--pipeline", cfg.pipeline,
                 "tests/support/pipeline, run with 'start' (and 'stop' at the end) if 'status' fails; '' never")
      ->capture_default_str();
  app.add_flag("--next-to-core", cfg.next_to_core,
               "Let the daemon write timelines next to the cores (default: its own --output-dir)");
  app.add_flag("--keep-work", cfg.keep_work, "Keep the temporary directory (timelines, daemon log)");
  app.add_flag("--keep-cores", cfg.keep_cores, "Keep the stored cores of the crashes this run made");
  CLI11_PARSE(app, argc, argv);
  install_signals();
  g_tsc.start();
  try {
    return run(cfg);
  } catch (const Interrupted &) {
    std::fprintf(stderr, "bench_daemon: interrupted; daemon stopped, core_pipe_limit restored\n");
    return 130;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_daemon: error: %s\n", e.what());
    return 1;
  }
}
