// SPDX-License-Identifier: MIT
//
// fleet_test - timelines travel to a central host on the journal's own
// transport (docs/fleet.md), on this machine, loopback
// only, with every part real:
//
//   real crashes -> the kernel -> systemd-coredump -> journald (the
//   pipeline, tests/support/pipeline) -> core-timelined (the binary, its own
//   state directory: tests/support/daemon_harness.h), which logs each
//   crash's timeline entry (MESSAGE_ID 9d72af47...,
//   core_timeline/document/journal_entry.h) -> systemd-journal-upload ->
//   HTTP on 127.0.0.1 -> systemd-journal-remote -> journal files in a
//   temporary directory -> ctl-query -D DIR, and sd-journal to count.
//
// The central host is systemd-journal-remote --listen-http=-3: the test
// binds 127.0.0.1 port 0 itself (the kernel picks a free port, so two runs
// cannot collide and nothing can take the port between the pick and the
// listen) and hands the listening socket over as fd 3 by socket activation
// (LISTEN_FDS=1; systemd-journal-remote(8): "--listen-http=-FD").  Each
// systemd-journal-upload gets its own --save-state file in the test's
// directory; the first start begins at an entry the test logs just before
// (--after-cursor=CURSOR), so the test sends seconds of journal, not the
// machine's history.  A restart gives --save-state alone: a cursor given
// on the command line wins over the saved one (systemd 252,
// src/journal-remote/journal-upload.c: `arg_cursor ?: u.last_cursor`).
//
// Measured facts of systemd 252 (Debian 12's 252.39) the tests rely on or
// prove:
//  - journal-upload reads with sd_journal_set_data_threshold(j, 0)
//    (journal-upload-journal.c, open_journal_for_upload), so fields are
//    not cut at sd-journal's default 64 KiB: BigDocumentArrivesWhole
//    checks a document of several hundred KiB byte for byte;
//  - it saves its state (LAST_CURSOR) after each upload request, and a
//    restart sends the entry at the saved cursor once more (the cursor's
//    own entry, as --after-cursor does too): UploadResendsTheSavedCursorsEntry
//    shows it with a timeline entry and checks that ctl-query still lists
//    the crash once; the live restarts stop the uploader when the last
//    entry it sent is a marker of the test's, so that the only entries
//    allowed twice are those markers.
//
// Everything the test starts (journal-remote, journal-upload, the daemon)
// is a process group of its own, stopped by an RAII guard on every way out
// of a test (SIGTERM, then SIGKILL to the group), and dies with the test
// process too (PR_SET_PDEATHSIG).  After each test no socket listens on its
// port.  Needs root (the pipeline, the cores).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"
#include "crash_harness.h"
#include "daemon_harness.h"
#include "process.h"
#include "test_files.h"

namespace fs = std::filesystem;
namespace tj = core_timeline::document::journal;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kTimelineId(tj::kTimelineMessageId);
const std::string kCoredumpId = ct::test::kCoredumpMessageId;
constexpr const char kPeerHost[] = "ct-fleet-peer";

bool contains(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

std::vector<std::string> words_of(const std::string &line) {
  std::vector<std::string> v;
  std::istringstream in(line);
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

using ct::test::slurp;

// Until `done` holds, or `timeout` (which bounds a hang) passes.
bool poll_until(const std::function<bool()> &done, std::chrono::milliseconds timeout) {
  return ct::test::wait_until(done, timeout);
}

std::string local_hostname() {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

// A directory for one test, removed at its end unless the test failed.
struct TestDir {
  std::string path;
  TestDir() {
    char tmpl[] = "/tmp/ct-fleet-XXXXXX";
    if (mkdtemp(tmpl)) path = tmpl;
  }
  ~TestDir() {
    if (path.empty()) return;
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "fleet_test: test directory kept: %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// ---- processes --------------------------------------------------------------

// RAII: a child that leads a process group of its own.  stop() sends
// SIGTERM to the group and waits up to `grace`, then SIGKILLs the group;
// kill_now() SIGKILLs it at once; both reap the leader and make sure no
// process of the group is left.  The destructor stops it if it runs.
class Group {
 public:
  Group() = default;
  explicit Group(pid_t pid) : pid_(pid) {}
  Group(Group &&o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }
  Group &operator=(Group &&o) noexcept {
    if (this != &o) {
      stop();
      pid_ = o.pid_;
      status_ = o.status_;
      o.pid_ = -1;
    }
    return *this;
  }
  Group(const Group &) = delete;
  Group &operator=(const Group &) = delete;
  ~Group() { stop(); }

  pid_t pid() const { return pid_; }
  bool running() {
    if (pid_ < 0) return false;
    int st = 0;
    const pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      reap_group(SIGKILL);
      pid_ = -1;
      return false;
    }
    return true;
  }
  // Its wait status once it ended (-1 while it runs or never ran).
  int status() const { return status_; }

  int stop(std::chrono::milliseconds grace = 5s) { return end(SIGTERM, grace); }
  int kill_now() { return end(SIGKILL, 0ms); }

 private:
  int end(int sig, std::chrono::milliseconds grace) {
    if (pid_ < 0) return status_;
    kill(-pid_, sig);
    int st = 0;
    const bool exited = poll_until(
        [&] {
          const pid_t r = waitpid(pid_, &st, WNOHANG);
          return r == pid_ || (r < 0 && errno == ECHILD);
        },
        grace);
    if (!exited) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &st, 0);
    }
    status_ = st;
    reap_group(SIGKILL);
    pid_ = -1;
    return status_;
  }
  // What the leader forked is killed too, and waited for (bounded).
  void reap_group(int sig) {
    if (kill(-pid_, 0) != 0) return;
    kill(-pid_, sig);
    poll_until([&] { return kill(-pid_, 0) != 0; }, 5s);
  }
  pid_t pid_ = -1;
  int status_ = -1;
};

// Options for a child that is a group of its own, dies with the test, and
// writes its output to `log`.
ct::test::ProcessOptions group_options(const std::string &log) {
  ct::test::ProcessOptions po;
  po.in = ct::test::Stream::null();
  po.out = ct::test::Stream::append(log);
  po.err = ct::test::Stream::to_stdout();
  po.own_process_group = true;
  po.in_child = [] {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) ct::test::child_failed("cannot set PR_SET_PDEATHSIG");
  };
  return po;
}

// Is a TCP socket listening on 127.0.0.1:port (/proc/net/tcp, state 0A)?
bool listening_on(unsigned port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);
  char want[32];
  std::snprintf(want, sizeof want, "0100007F:%04X", port);
  while (std::getline(in, line)) {
    const auto w = words_of(line);
    if (w.size() > 3 && w[1] == want && w[3] == "0A") return true;
  }
  return false;
}

// ---- the central host -------------------------------------------------------

// systemd-journal-remote on 127.0.0.1, writing DIR/remote-127.0.0.1.journal
// (--split-mode=host names the file after the sender's address).
class CentralHost {
 public:
  explicit CentralHost(const std::string &dir) : dir_(dir + "/remote"), log_(dir + "/journal-remote.log") {
    fs::create_directories(dir_);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 || listen(s, 64) < 0 ||
        getsockname(s, reinterpret_cast<sockaddr *>(&a), &len) < 0) {
      const int e = errno;
      close(s);
      throw std::runtime_error("cannot listen on 127.0.0.1: " + std::string(strerror(e)));
    }
    port_ = ntohs(a.sin_port);
    // Socket activation wants the socket at fd 3 (SD_LISTEN_FDS_START).
    // With fd 3 taken in this process (by the socket itself, or by
    // whatever holds it), the spawn's own descriptors are never 3, so the
    // child's dup2 onto 3 cannot clobber them.
    if (fcntl(3, F_GETFD) < 0 && dup3(s, 3, O_CLOEXEC) == 3) {
      close(s);
      s = 3;
    }
    auto po = group_options(log_);
    po.env["LISTEN_FDS"] = "1";
    po.env["SYSTEMD_LOG_LEVEL"] = "info";
    po.in_child = [s] {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) ct::test::child_failed("cannot set PR_SET_PDEATHSIG");
      if (s == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(s, 3) < 0) ct::test::child_failed("cannot pass the socket as fd 3");
    };
    // LISTEN_PID must be the pid of journal-remote itself: sh's $$ is
    // kept by its exec.
    try {
      proc_ = Group(ct::test::spawn({"/bin/sh", "-c", "LISTEN_PID=$$ exec \"$@\"", "sh", CT_JOURNAL_REMOTE,
                                     "--listen-http=-3", "--output=" + dir_ + "/"},
                                    po));
    } catch (...) {
      close(s);
      throw;
    }
    close(s);  // the child has it; no copy stays here
  }
  ~CentralHost() { stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  unsigned port() const { return port_; }
  const std::string &dir() const { return dir_; }
  std::string log() const { return slurp(log_); }
  bool running() { return proc_.running(); }
  void stop() { proc_.stop(); }

 private:
  std::string dir_, log_;
  unsigned port_ = 0;
  Group proc_;
};

// systemd-journal-upload of the local journal to `url`, with its state
// file; `after_cursor` only on the first start.
class Uploader {
 public:
  Uploader(std::string url, std::string state, std::string log)
      : url_(std::move(url)), state_(std::move(state)), log_(std::move(log)) {}
  void start(const std::optional<std::string> &after_cursor = {}) {
    std::vector<std::string> argv{CT_JOURNAL_UPLOAD, "--url=" + url_, "--save-state=" + state_};
    if (after_cursor) argv.push_back("--after-cursor=" + *after_cursor);
    auto po = group_options(log_);
    po.env["SYSTEMD_LOG_LEVEL"] = "info";
    proc_ = Group(ct::test::spawn(argv, po));
  }
  int stop() { return proc_.stop(); }
  int kill_now() { return proc_.kill_now(); }
  bool running() { return proc_.running(); }
  // LAST_CURSOR of its state file ("" if none yet).  The file is
  // "private data" (journal-upload writes "Do not parse" in it): read here
  // only to know when the uploader is idle, never given back to it.
  std::string saved_cursor() const {
    std::istringstream in(slurp(state_));
    for (std::string l; std::getline(in, l);)
      if (l.starts_with("LAST_CURSOR=")) return l.substr(12);
    return {};
  }
  std::string log() const { return slurp(log_); }

 private:
  std::string url_, state_, log_;
  Group proc_;
};

// ---- journal entries --------------------------------------------------------

// One journal entry, whole (data threshold 0).
struct Entry {
  std::string cursor;
  std::string boot_id;
  std::uint64_t realtime = 0, monotonic = 0;
  std::multimap<std::string, std::string> fields;

  std::string get(const std::string &k) const {
    auto it = fields.find(k);
    return it == fields.end() ? std::string() : it->second;
  }
  bool has(const std::string &k) const { return fields.count(k) != 0; }
  // What stays the same when journal-upload sends it to journal-remote:
  // the timestamps, the boot, and every field but _BOOT_ID (sent apart).
  std::string identity() const {
    std::string k = boot_id + "/" + std::to_string(realtime) + "/" + std::to_string(monotonic);
    for (const auto &[f, v] : fields) {
      if (f == "_BOOT_ID") continue;
      k += "\n" + f + "=" + std::to_string(v.size()) + ":" + v;
    }
    return k;
  }
};

Entry current_entry(sd_journal *j) {
  Entry e;
  char *c = nullptr;
  if (sd_journal_get_cursor(j, &c) >= 0) e.cursor = c;
  free(c);
  sd_journal_get_realtime_usec(j, &e.realtime);
  sd_id128_t boot;
  if (sd_journal_get_monotonic_usec(j, &e.monotonic, &boot) >= 0) {
    char s[SD_ID128_STRING_MAX];
    e.boot_id = sd_id128_to_string(boot, s);
  }
  const void *data;
  size_t len;
  SD_JOURNAL_FOREACH_DATA(j, data, len) {
    std::string kv(static_cast<const char *>(data), len);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) e.fields.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return e;
}

// Every entry of the journal files in `dir` that has all `matches`.
std::vector<Entry> read_dir(const std::string &dir, const std::vector<std::string> &matches = {}) {
  std::vector<Entry> out;
  sd_journal *j = nullptr;
  if (sd_journal_open_directory(&j, dir.c_str(), 0) < 0) return out;
  sd_journal_set_data_threshold(j, 0);
  for (const auto &m : matches) sd_journal_add_match(j, m.data(), m.size());
  while (sd_journal_next(j) > 0) out.push_back(current_entry(j));
  sd_journal_close(j);
  return out;
}

// The local journal (as journal-upload opens it: SD_JOURNAL_LOCAL_ONLY).
struct LocalJournal {
  sd_journal *j = nullptr;
  LocalJournal() {
    if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY) < 0) j = nullptr;
    if (j) sd_journal_set_data_threshold(j, 0);
  }
  ~LocalJournal() {
    if (j) sd_journal_close(j);
  }
  LocalJournal(const LocalJournal &) = delete;
  LocalJournal &operator=(const LocalJournal &) = delete;
};

// The cursor of the newest entry of the local journal.
std::string local_tail_cursor() {
  LocalJournal lj;
  if (!lj.j || sd_journal_seek_tail(lj.j) < 0 || sd_journal_previous(lj.j) <= 0) return {};
  char *c = nullptr;
  if (sd_journal_get_cursor(lj.j, &c) < 0) return {};
  std::string s = c;
  free(c);
  return s;
}

// The first local entry with all `matches`, waited for up to `timeout`.
std::optional<Entry> wait_local(const std::vector<std::string> &matches, std::chrono::milliseconds timeout) {
  std::optional<Entry> found;
  poll_until(
      [&] {
        LocalJournal lj;
        if (!lj.j) return false;
        for (const auto &m : matches) sd_journal_add_match(lj.j, m.data(), m.size());
        if (sd_journal_next(lj.j) > 0) found = current_entry(lj.j);
        return found.has_value();
      },
      timeout);
  return found;
}

// Every local entry with all `matches`.
std::vector<Entry> local_all(const std::vector<std::string> &matches) {
  std::vector<Entry> out;
  LocalJournal lj;
  if (!lj.j) return out;
  for (const auto &m : matches) sd_journal_add_match(lj.j, m.data(), m.size());
  while (sd_journal_next(lj.j) > 0) out.push_back(current_entry(lj.j));
  return out;
}

// Every local entry after `from` (a cursor) up to and including `to`.
std::vector<Entry> local_range(const std::string &from, const std::string &to) {
  std::vector<Entry> out;
  LocalJournal lj;
  if (!lj.j || sd_journal_seek_cursor(lj.j, from.c_str()) < 0) return out;
  if (sd_journal_next(lj.j) <= 0 || sd_journal_test_cursor(lj.j, from.c_str()) <= 0) return out;
  while (sd_journal_next(lj.j) > 0) {
    out.push_back(current_entry(lj.j));
    if (sd_journal_test_cursor(lj.j, to.c_str()) > 0) break;
  }
  return out;
}

// Logs an entry of the test's own (CT_FLEET_RUN=run, CT_FLEET_MARK=name)
// and returns it as the local journal holds it.
std::optional<Entry> mark(const std::string &run, const std::string &name) {
  sd_journal_send("MESSAGE=fleet_test mark %s", name.c_str(), "CT_FLEET_RUN=%s", run.c_str(), "CT_FLEET_MARK=%s",
                  name.c_str(), "SYSLOG_IDENTIFIER=fleet_test", nullptr);
  return wait_local({"CT_FLEET_RUN=" + run, "CT_FLEET_MARK=" + name}, 10s);
}

// The sequence number of a cursor ("i=" in hex) when its seqnum id ("s=")
// is `seqnum_id`'s; nullopt otherwise.
std::optional<std::uint64_t> cursor_seqnum(const std::string &cursor, std::string *seqnum_id = nullptr) {
  std::string s, i;
  std::istringstream in(cursor);
  for (std::string part; std::getline(in, part, ';');) {
    if (part.starts_with("s=")) s = part.substr(2);
    if (part.starts_with("i=")) i = part.substr(2);
  }
  if (s.empty() || i.empty()) return std::nullopt;
  if (seqnum_id) *seqnum_id = s;
  return std::stoull(i, nullptr, 16);
}

// ---- crashes ----------------------------------------------------------------

struct Crash {
  pid_t pid = -1;
  ct::test::Timeline timeline;  // the daemon's file, whole
  std::string coredump_timestamp;
  std::string text() const { return timeline.doc.value("text", ""); }
};

// Runs argv to its crash (default dispositions, no output) and waits for
// the daemon's timeline file and its timeline entry in the local journal.
Crash crash(const ct::test::DaemonHarness &daemon, const std::vector<std::string> &argv) {
  Crash c;
  const std::uint64_t t0 = ct::test::now_usec();
  ct::test::ProcessOptions po;
  po.out = ct::test::Stream::null();
  po.err = ct::test::Stream::null();
  po.in_child = [] {
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
  };
  c.pid = ct::test::spawn(argv, po);
  int status = 0;
  waitpid(c.pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WCOREDUMP(status)) << argv[0] << " did not die with a core: " << status;
  // COREDUMP_TIMESTAMP, which the name ends with, is the kernel's crash
  // time in whole seconds: up to a second before t0.
  auto t = daemon.wait_timeline(c.pid, 20s, t0 - 2000000);
  if (!t) {
    ADD_FAILURE() << "no timeline for pid " << c.pid << " within 20 s; daemon log:\n" << daemon.log_tail();
    return c;
  }
  c.timeline = *t;
  c.coredump_timestamp = t->doc["coredump"]["fields"].value("COREDUMP_TIMESTAMP", "");
  EXPECT_FALSE(c.coredump_timestamp.empty()) << t->path;
  const auto e = wait_local({"MESSAGE_ID=" + kTimelineId, "COREDUMP_PID=" + std::to_string(c.pid),
                             "COREDUMP_TIMESTAMP=" + c.coredump_timestamp},
                            10s);
  EXPECT_TRUE(e.has_value()) << "no timeline entry (MESSAGE_ID=" << kTimelineId << ") in the local journal for pid "
                             << c.pid << "; daemon log:\n"
                             << daemon.log_tail();
  return c;
}

// The document entries (document_entry.h) at `dir` that timeline entry `t`
// names and its sender sent (the same _PID and _UID).
std::vector<Entry> document_entries(const std::string &dir, const Entry &t) {
  std::vector<Entry> out;
  if (!t.has(std::string(tj::kDocumentId))) return out;
  for (auto &d : read_dir(dir, {"MESSAGE_ID=" + std::string(tj::kDocumentMessageId),
                                std::string(tj::kDocumentId) + "=" + t.get(std::string(tj::kDocumentId))}))
    if (d.get("_PID") == t.get("_PID") && d.get("_UID") == t.get("_UID")) out.push_back(std::move(d));
  return out;
}

std::vector<std::string> crash_matches(const std::string &message_id, const Crash &c) {
  return {"MESSAGE_ID=" + message_id, "COREDUMP_PID=" + std::to_string(c.pid),
          "COREDUMP_TIMESTAMP=" + c.coredump_timestamp};
}

// Waits until the central host holds the crash's coredump entry and its
// timeline entry.
bool wait_remote_crash(const CentralHost &host, const Crash &c, std::chrono::milliseconds timeout = 20s) {
  return poll_until(
      [&] {
        return !read_dir(host.dir(), crash_matches(kCoredumpId, c)).empty() &&
               !read_dir(host.dir(), crash_matches(kTimelineId, c)).empty();
      },
      timeout);
}

ct::test::DaemonHarness::Options daemon_options(const std::string &root) {
  ct::test::DaemonHarness::Options o;
  o.binary = CT_DAEMON_BIN;
  o.root = root;
  o.log_target = "both";
  o.log_level = "info";
  o.tlmap_dir = CT_TLMAP_DIR;
  return o;
}

ct::test::Ran ctl_query(const std::vector<std::string> &args) {
  std::vector<std::string> argv{CT_CTL_QUERY};
  argv.insert(argv.end(), args.begin(), args.end());
  ct::test::ProcessOptions po;
  po.timeout = 60s;
  return ct::test::run(argv, po);
}

// The rows of `ctl-query list` output (after its heading) whose PID column
// is `pid`.
std::vector<std::string> rows_of(const std::string &list_out, pid_t pid) {
  std::vector<std::string> rows;
  const auto lines = lines_of(list_out);
  if (lines.empty()) return rows;
  const auto head = words_of(lines[0]);
  // TIME is four words (Mon 2026-11-30 06:48:46 UTC) and one heading word.
  std::size_t pid_col = 0;
  for (std::size_t i = 0; i < head.size(); ++i)
    if (head[i] == "PID") pid_col = i + 3;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto w = words_of(lines[i]);
    if (w.size() > pid_col && w[pid_col] == std::to_string(pid)) rows.push_back(lines[i]);
  }
  return rows;
}

// journal export format (systemd's JOURNAL_EXPORT_FORMATS) of `entries`,
// every field in its binary-safe form; `rewrite` replaces field values.
std::string export_format(const std::vector<Entry> &entries, const std::map<std::string, std::string> &rewrite) {
  std::string out;
  for (const auto &e : entries) {
    out += "__REALTIME_TIMESTAMP=" + std::to_string(e.realtime) + "\n";
    out += "__MONOTONIC_TIMESTAMP=" + std::to_string(e.monotonic) + "\n";
    for (const auto &[k, v0] : e.fields) {
      const auto r = rewrite.find(k);
      const std::string &v = r == rewrite.end() ? v0 : r->second;
      out += k + "\n";
      std::uint64_t n = v.size();
      char le[8];
      for (int i = 0; i < 8; ++i) le[i] = static_cast<char>((n >> (8 * i)) & 0xff);
      out.append(le, 8);
      out += v + "\n";
    }
    out += "\n";
  }
  return out;
}

// Sends export-format `data` to the central host as another machine's
// journal-upload would: systemd-journal-upload reading it from stdin.
void upload_export(const CentralHost &host, const std::string &dir, const std::string &data) {
  const std::string file = dir + "/peer.export";
  {
    std::ofstream f(file, std::ios::binary);
    f << data;
  }
  ct::test::ProcessOptions po;
  po.in = ct::test::Stream::file(file);
  po.timeout = 30s;
  const auto r = ct::test::run({CT_JOURNAL_UPLOAD, "--url=" + host.url(), "-"}, po);
  ASSERT_TRUE(r.ok()) << "systemd-journal-upload - : " << r.out << r.err;
}

// Fails unless the programs the test runs are here (a missing one is a
// failure, never a skip: packaging/install-build-deps installs them).
void require_tools() {
  for (const char *p : {CT_JOURNAL_REMOTE, CT_JOURNAL_UPLOAD})
    ASSERT_EQ(access(p, X_OK), 0) << p << " is missing: run packaging/install-build-deps (package systemd-journal-remote)";
}

class Fleet : public ::testing::Test {
 protected:
  void SetUp() override {
    require_tools();
    ASSERT_FALSE(dir.path.empty());
    chmod(dir.path.c_str(), 0755);
    run_id = fs::path(dir.path).filename().string();
    fs::create_directories(dir.path + "/daemon");
    host.emplace(dir.path);
    port = host->port();
  }
  void TearDown() override {
    // Everything stopped, whatever happened: the uploaders first (they
    // would fail against a stopped server), the daemon, then the server.
    for (auto &u : uploaders) u->stop();
    daemon.reset();
    if (host) host->stop();
    EXPECT_FALSE(listening_on(port)) << "something still listens on 127.0.0.1:" << port;
  }

  ct::test::DaemonHarness &start_daemon(const std::vector<std::string> &extra = {}) {
    daemon.emplace(daemon_options(dir.path + "/daemon"));
    daemon->start(extra);
    return *daemon;
  }
  // Where a first upload starts: a mark of the test's, logged now.  Not
  // the journal's tail: journal-upload 252 sends the entry at
  // --after-cursor too, and the tail may be an entry of a crash the test
  // keeps from the central host.
  std::string start_cursor() {
    const auto m = mark(run_id, "start");
    return m ? m->cursor : std::string();
  }
  Uploader &uploader(const std::string &name) {
    uploaders.push_back(std::make_unique<Uploader>(host->url(), dir.path + "/" + name + ".state",
                                                   dir.path + "/" + name + ".log"));
    return *uploaders.back();
  }

  // Waits until `u` is idle with `m` as the last entry it sent: the
  // central host has m, the saved cursor is m's, and no local entry came
  // after m.  If other entries came after it, logs another mark and tries
  // again (a few times).  Returns the mark the uploader stopped at.
  std::optional<Entry> settle(Uploader &u, const std::string &name) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      const std::string m_name = name + "." + std::to_string(attempt);
      auto m = mark(run_id, m_name);
      if (!m) return std::nullopt;
      const bool idle = poll_until(
          [&] {
            std::string sid, msid;
            const auto saved = cursor_seqnum(u.saved_cursor(), &sid);
            const auto mine = cursor_seqnum(m->cursor, &msid);
            return saved && mine && sid == msid && *saved >= *mine &&
                   !read_dir(host->dir(), {"CT_FLEET_MARK=" + m_name, "CT_FLEET_RUN=" + run_id}).empty();
          },
          20s);
      if (!idle) {
        ADD_FAILURE() << "journal-upload did not send mark " << m_name << " within 20 s; its log:\n" << u.log();
        return std::nullopt;
      }
      if (u.saved_cursor() == m->cursor && local_tail_cursor() == m->cursor) return m;
    }
    ADD_FAILURE() << "the local journal kept growing after every mark; cannot stop the uploader at a mark";
    return std::nullopt;
  }

  TestDir dir;
  std::string run_id;
  unsigned port = 0;
  std::optional<CentralHost> host;
  std::optional<ct::test::DaemonHarness> daemon;
  std::vector<std::unique_ptr<Uploader>> uploaders;
};

}  // namespace

// A real crash's timeline reaches the central host and ctl-query -D lists
// and shows it there with its host; a second host's crash (its entries
// sent through journal-upload's own input, with another _HOSTNAME) makes
// the HOST column appear and names each crash's host.
TEST_F(Fleet, CrashTimelineIsListedAndShownAtTheCentralHostWithItsHost) {
  auto &d = start_daemon();
  // The "peer" crash happens before the uploader's start point, so that
  // the only copy the central host gets is the peer's.
  const Crash peer = crash(d, {CT_CRASH_DEMO, "--path=b"});
  ASSERT_FALSE(peer.timeline.path.empty());
  std::vector<Entry> peer_entries = local_all(crash_matches(kCoredumpId, peer));
  ASSERT_EQ(peer_entries.size(), 1u) << "the peer crash's coredump entry, once in the local journal";
  {
    const auto de = local_all(crash_matches(std::string(tj::kDocumentMessageId), peer));
    ASSERT_EQ(de.size(), 1u) << "the peer crash's document entry, once in the local journal";
    peer_entries.push_back(de[0]);
    const auto t = local_all(crash_matches(kTimelineId, peer));
    ASSERT_EQ(t.size(), 1u) << "the peer crash's timeline entry, once in the local journal";
    peer_entries.push_back(t[0]);
  }

  const std::string tail = start_cursor();
  ASSERT_FALSE(tail.empty());
  auto &up = uploader("upload");
  up.start(tail);
  const Crash local = crash(d, {CT_CRASH_DEMO, "--path=a"});
  ASSERT_FALSE(local.timeline.path.empty());
  ASSERT_TRUE(wait_remote_crash(*host, local)) << "journal-upload log:\n"
                                               << up.log() << "\njournal-remote log:\n"
                                               << host->log();

  // One host: ctl-query -D lists the crash, without a HOST column.
  const auto one = ctl_query({"-D", host->dir(), "list"});
  ASSERT_EQ(one.exit_code(), 0) << one.out << one.err;
  EXPECT_EQ(rows_of(one.out, local.pid).size(), 1u) << one.out;
  EXPECT_TRUE(rows_of(one.out, peer.pid).empty()) << one.out;
  ASSERT_FALSE(lines_of(one.out).empty());
  EXPECT_FALSE(contains(lines_of(one.out)[0], "HOST")) << "one host, yet a HOST column:\n" << one.out;
  const auto shown = ctl_query({"-D", host->dir(), "--all", "show", std::to_string(local.pid)});
  ASSERT_EQ(shown.exit_code(), 0) << shown.err;
  EXPECT_EQ(shown.out, local.text());

  // The peer's entries, as its own journal-upload would send them.
  upload_export(*host, dir.path,
                export_format(peer_entries, {{"_HOSTNAME", kPeerHost}, {"_MACHINE_ID", "0123456789abcdef0123456789abcdef"}}));
  ASSERT_TRUE(wait_remote_crash(*host, peer)) << host->log();

  const std::string me = local_hostname();
  const auto two = ctl_query({"-D", host->dir(), "list"});
  ASSERT_EQ(two.exit_code(), 0) << two.out << two.err;
  ASSERT_FALSE(lines_of(two.out).empty());
  EXPECT_TRUE(contains(lines_of(two.out)[0], "HOST")) << "two hosts, no HOST column:\n" << two.out;
  const auto lrow = rows_of(two.out, local.pid), prow = rows_of(two.out, peer.pid);
  ASSERT_EQ(lrow.size(), 1u) << two.out;
  ASSERT_EQ(prow.size(), 1u) << two.out;
  auto has_word = [](const std::string &row, const std::string &w) {
    for (const auto &x : words_of(row))
      if (x == w) return true;
    return false;
  };
  EXPECT_TRUE(has_word(lrow[0], me)) << "the local crash's row lacks host " << me << ":\n" << two.out;
  EXPECT_FALSE(has_word(lrow[0], kPeerHost)) << two.out;
  EXPECT_TRUE(has_word(prow[0], kPeerHost)) << "the peer crash's row lacks host " << kPeerHost << ":\n" << two.out;
  EXPECT_FALSE(has_word(prow[0], me)) << two.out;

  // Each shown by its host: the match _HOSTNAME=.
  const auto by_peer = ctl_query({"-D", host->dir(), "--all", "show", std::string("_HOSTNAME=") + kPeerHost});
  ASSERT_EQ(by_peer.exit_code(), 0) << by_peer.err;
  EXPECT_EQ(by_peer.out, peer.text());
  const auto by_me = ctl_query({"-D", host->dir(), "--all", "show", "_HOSTNAME=" + me, std::to_string(local.pid)});
  ASSERT_EQ(by_me.exit_code(), 0) << by_me.err;
  EXPECT_EQ(by_me.out, local.text());
  const auto peer_list = ctl_query({"-D", host->dir(), "list", std::string("_HOSTNAME=") + kPeerHost});
  ASSERT_EQ(peer_list.exit_code(), 0) << peer_list.err;
  EXPECT_EQ(rows_of(peer_list.out, peer.pid).size(), 1u) << peer_list.out;
  EXPECT_TRUE(rows_of(peer_list.out, local.pid).empty()) << peer_list.out;

  // The peer's bug on this host too: ctl-query group makes the two hosts'
  // crashes one group and names both hosts (docs/grouping.md).
  const Crash again = crash(d, {CT_CRASH_DEMO, "--path=b"});
  ASSERT_FALSE(again.timeline.path.empty());
  ASSERT_TRUE(wait_remote_crash(*host, again)) << host->log();
  const auto grouped = ctl_query({"-D", host->dir(), "--json", "group", CT_CRASH_DEMO});
  ASSERT_EQ(grouped.exit_code(), 0) << grouped.err;
  const auto groups = lines_of(grouped.out);
  ASSERT_EQ(groups.size(), 2u) << grouped.out;
  const auto first = nlohmann::json::parse(groups[0]), second = nlohmann::json::parse(groups[1]);
  EXPECT_EQ(first["count"], 2) << first;
  EXPECT_EQ(first["hosts"].get<std::set<std::string>>(), (std::set<std::string>{me, kPeerHost})) << first;
  EXPECT_EQ(first["words"], "SIGSEGV in die() <- path_b() <- main() inside RELOAD, after CONFIG_RELOAD, BEFORE_DIE");
  EXPECT_EQ(first["id"], again.timeline.doc["group"]["id"]);
  EXPECT_EQ(first["id"], peer.timeline.doc["group"]["id"]);
  EXPECT_EQ(second["count"], 1) << second;
  EXPECT_EQ(second["hosts"], nlohmann::json::array({me})) << second;
}

// journal-upload stopped midway (SIGTERM once, SIGKILL once) and started
// again: crashes before, while it is stopped, and after each reach the
// central host exactly once, entry by entry, and ctl-query lists each once.
TEST_F(Fleet, UploadStoppedAndRestartedMidwayLosesNoEntryAndDuplicatesNone) {
  auto &d = start_daemon();
  const std::string start = start_cursor();
  ASSERT_FALSE(start.empty());
  auto &up = uploader("upload");
  up.start(start);

  std::vector<Crash> crashes;
  std::vector<std::string> stop_marks;  // identities of the entries sent last before a stop
  auto crash_a = [&] {
    crashes.push_back(crash(d, {CT_CRASH_DEMO, "--path=a"}));
    ASSERT_FALSE(crashes.back().timeline.path.empty());
  };

  crash_a();  // before the first stop
  ASSERT_FALSE(HasFailure());
  auto m1 = settle(up, "before-sigterm");
  ASSERT_TRUE(m1.has_value());
  stop_marks.push_back(m1->identity());
  const int st = up.stop();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "journal-upload on SIGTERM: wait status " << st << "\n"
                                                     << up.log();
  crash_a();  // while it is stopped
  ASSERT_FALSE(HasFailure());
  up.start();  // from its saved state
  crash_a();   // after the restart
  ASSERT_FALSE(HasFailure());
  for (const auto &c : crashes) ASSERT_TRUE(wait_remote_crash(*host, c)) << up.log();

  auto m2 = settle(up, "before-sigkill");
  ASSERT_TRUE(m2.has_value());
  stop_marks.push_back(m2->identity());
  up.kill_now();
  crash_a();  // while it is dead
  ASSERT_FALSE(HasFailure());
  up.start();
  crash_a();  // after the second restart
  ASSERT_FALSE(HasFailure());
  for (const auto &c : crashes) ASSERT_TRUE(wait_remote_crash(*host, c)) << up.log();
  auto end = settle(up, "end");
  ASSERT_TRUE(end.has_value());

  // Each crash's three entries (the coredump entry, the timeline entry and
  // its document entry), exactly once at the central host.
  for (const auto &c : crashes) {
    EXPECT_EQ(read_dir(host->dir(), crash_matches(kCoredumpId, c)).size(), 1u) << "coredump entry of pid " << c.pid;
    const auto t = read_dir(host->dir(), crash_matches(kTimelineId, c));
    ASSERT_EQ(t.size(), 1u) << "timeline entry of pid " << c.pid;
    const auto de = document_entries(host->dir(), t[0]);
    ASSERT_EQ(de.size(), 1u) << "document entry of pid " << c.pid;
    EXPECT_EQ(de[0].get(std::string(tj::kDocument)), slurp(c.timeline.path)) << "pid " << c.pid;
  }

  // Entry by entry: every local entry from the start to the end mark is
  // at the central host, and no entry is there twice but the marks the
  // uploader was stopped at (journal-upload 252 sends the entry at its
  // saved cursor again when it starts: see the file's header).
  std::multiset<std::string> remote;
  for (const auto &e : read_dir(host->dir())) remote.insert(e.identity());
  const auto local = local_range(start, end->cursor);
  ASSERT_FALSE(local.empty());
  EXPECT_EQ(local.back().cursor, end->cursor);
  std::size_t missing = 0;
  for (const auto &e : local) {
    if (!remote.count(e.identity())) {
      if (++missing <= 5)
        ADD_FAILURE() << "local entry " << e.cursor << " (" << e.get("SYSLOG_IDENTIFIER") << ": "
                      << e.get("MESSAGE").substr(0, 200) << ") is not at the central host";
    }
  }
  EXPECT_EQ(missing, 0u) << "of " << local.size() << " local entries";
  std::set<std::string> allowed(stop_marks.begin(), stop_marks.end());
  std::size_t resent = 0;
  for (auto it = remote.begin(); it != remote.end(); it = remote.upper_bound(*it)) {
    const auto n = remote.count(*it);
    if (n == 1) continue;
    if (allowed.count(*it) && n == 2) {
      ++resent;
      continue;
    }
    ADD_FAILURE() << n << " copies at the central host of: " << it->substr(0, 400);
  }
  RecordProperty("stop_marks_sent_twice", static_cast<int>(resent));
  std::fprintf(stderr, "fleet_test: %zu of the %zu marks at a stop were sent again on restart\n", resent,
               stop_marks.size());

  // ctl-query lists each crash once.
  const auto l = ctl_query({"-D", host->dir(), "list"});
  ASSERT_EQ(l.exit_code(), 0) << l.out << l.err;
  for (const auto &c : crashes) EXPECT_EQ(rows_of(l.out, c.pid).size(), 1u) << "pid " << c.pid << ":\n" << l.out;
}

// A timeline entry that an uploader sent last before it stopped is sent
// again when it starts from its saved state (systemd 252: the saved
// cursor's entry is sent once more); the central host then holds it twice,
// and ctl-query still lists that crash once.  Shown deterministically:
// the crash's two entries as a journal file, the timeline entry last,
// uploaded with --follow=no twice with one state file.
TEST_F(Fleet, UploadResendsTheSavedCursorsEntryAndCtlQueryListsTheCrashOnce) {
  auto &d = start_daemon();
  const Crash c = crash(d, {CT_CRASH_DEMO, "--path=a"});
  ASSERT_FALSE(c.timeline.path.empty());
  std::vector<Entry> entries;
  for (const auto &id : {kCoredumpId, std::string(tj::kDocumentMessageId), kTimelineId}) {
    const auto e = wait_local(crash_matches(id, c), 5s);
    ASSERT_TRUE(e.has_value()) << id;
    entries.push_back(*e);
  }
  // As a journal file of the crashed machine (systemd-journal-remote -o).
  const std::string file = dir.path + "/machine.journal";
  {
    ct::test::ProcessOptions po;
    const std::string exp = dir.path + "/machine.export";
    std::ofstream(exp, std::ios::binary) << export_format(entries, {});
    po.in = ct::test::Stream::file(exp);
    po.timeout = 30s;
    const auto r = ct::test::run({CT_JOURNAL_REMOTE, "-o", file, "-"}, po);
    ASSERT_TRUE(r.ok()) << r.out << r.err;
  }
  const std::string state = dir.path + "/file.state";
  for (int round = 0; round < 2; ++round) {
    ct::test::ProcessOptions po;
    po.timeout = 30s;
    const auto r = ct::test::run(
        {CT_JOURNAL_UPLOAD, "--url=" + host->url(), "--save-state=" + state, "--file=" + file, "--follow=no"}, po);
    ASSERT_TRUE(r.ok()) << "round " << round << ": " << r.out << r.err;
  }
  std::size_t timeline_copies = 0;
  ASSERT_TRUE(poll_until(
      [&] {
        timeline_copies = read_dir(host->dir(), crash_matches(kTimelineId, c)).size();
        return timeline_copies >= 1 && !read_dir(host->dir(), crash_matches(kCoredumpId, c)).empty();
      },
      10s));
  // Settle: the second round's request is complete when its process
  // exited, and journal-remote writes what it received before answering.
  timeline_copies = read_dir(host->dir(), crash_matches(kTimelineId, c)).size();
  EXPECT_EQ(read_dir(host->dir(), crash_matches(kCoredumpId, c)).size(), 1u);
  RecordProperty("timeline_entry_copies", static_cast<int>(timeline_copies));
  std::fprintf(stderr, "fleet_test: after two uploads with one state file the central host holds %zu copies of the "
               "timeline entry\n", timeline_copies);
  EXPECT_LE(timeline_copies, 2u);

  const auto l = ctl_query({"-D", host->dir(), "list"});
  ASSERT_EQ(l.exit_code(), 0) << l.out << l.err;
  EXPECT_EQ(rows_of(l.out, c.pid).size(), 1u) << timeline_copies << " copies of the timeline entry; ctl-query -D list:\n"
                                              << l.out;
  const auto s = ctl_query({"-D", host->dir(), "--all", "show", std::to_string(c.pid)});
  ASSERT_EQ(s.exit_code(), 0) << s.err;
  EXPECT_EQ(s.out, c.text());
}

// A big document (several hundred KiB: a crash with some 12,000 events, under the
// daemon's default --journal-document-max of 1 MiB)
// arrives whole: journal-upload does not cut fields at sd-journal's
// default 64 KiB threshold.
TEST_F(Fleet, BigDocumentArrivesWhole) {
  auto &d = start_daemon();
  const std::string tail = start_cursor();
  ASSERT_FALSE(tail.empty());
  auto &up = uploader("upload");
  up.start(tail);
  const Crash c = crash(d, {CT_BIG_RING_CRASHER, "3", "4096", "5000"});
  ASSERT_FALSE(c.timeline.path.empty());
  const std::string file = slurp(c.timeline.path);
  ASSERT_GT(file.size(), 300u * 1024) << "the fixture's document is too small to prove anything";
  ASSERT_LT(file.size(), 1u << 20) << "the fixture's document is over the daemon's default --journal-document-max";

  ASSERT_TRUE(wait_remote_crash(*host, c)) << up.log() << host->log();
  const auto t = read_dir(host->dir(), crash_matches(kTimelineId, c));
  ASSERT_EQ(t.size(), 1u);
  const auto de = document_entries(host->dir(), t[0]);
  ASSERT_EQ(de.size(), 1u);
  const std::string doc = de[0].get(std::string(tj::kDocument));
  EXPECT_FALSE(t[0].has(std::string(tj::kDocumentCut))) << "the daemon cut the document (" << file.size() << " bytes)";
  EXPECT_EQ(t[0].get(std::string(tj::kDocumentBytes)), std::to_string(file.size()));
  EXPECT_EQ(doc.size(), file.size());
  EXPECT_TRUE(doc == file) << "the document at the central host differs from the timeline file";

  const auto s = ctl_query({"-D", host->dir(), "--all", "show", std::to_string(c.pid)});
  ASSERT_EQ(s.exit_code(), 0) << s.err;
  EXPECT_EQ(s.out.size(), c.text().size());
  EXPECT_TRUE(s.out == c.text()) << "ctl-query -D show differs from the stored text";
}
