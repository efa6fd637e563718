// SPDX-License-Identifier: MIT
//
// daemon_pipeline_test - core-timelined, the real binary, on the real
// pipeline: real crashes of real programs go through the kernel to the real
// systemd-coredump and journald (tests/support/pipeline); each test starts
// the daemon with its own state and output directories, crashes things,
// reads what the daemon wrote (files, and its journal entries through
// sd-journal), and stops it (tests/support/daemon_harness.h).
// daemon_journal_test covers what needs no kernel crash (each compression,
// Storage=journal, a missing core, forged and malformed entries, the saved
// cursor) from real journal files; the tests here are end to end.
//
// The machine-wide settings a test changes (kernel.core_pipe_limit, a
// drop-in in /etc/systemd/coredump.conf.d, empty files in the coredump
// directory for the vacuum) are restored by RAII guards, also when the test
// fails; the test holds RESOURCE_LOCK ct_coredump_pipeline
// (ct_add_pipeline_test).  Needs root.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "daemon_harness.h"
#include "schema_check.h"
#include "process.h"
#include "test_user.h"
#include "daemon.h"
#include "message_ids.h"
#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"

namespace ctd = core_timeline::daemon;

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// ---- small helpers ----------------------------------------------------------

using ct::test::boot_id;
using ct::test::now_usec;
using ct::test::read_text;
using ct::test::Timeline;

// A directory for one test; readable by everyone (the unprivileged-user
// test reads its timelines as another uid).
struct TestDir {
  std::string path;
  TestDir() {
    char tmpl[] = "/tmp/ctd-pipeline-XXXXXX";
    path = mkdtemp(tmpl);
    chmod(path.c_str(), 0755);
  }
  ~TestDir() {
    if (!::testing::Test::HasFailure()) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

// core-timelined, started by the test, in the test's directory.
ct::test::DaemonHarness::Options daemon_options(const std::string &root) {
  ct::test::DaemonHarness::Options o;
  o.binary = CT_DAEMON_BIN;
  o.root = root;
  o.log_target = "both";
  o.log_level = "debug";
  o.tlmap_dir = CT_TLMAP_DIR;
  return o;
}

struct Crash {
  pid_t pid = -1;
  int status = 0;
  std::uint64_t not_before_usec = 0;
};

// Forks and execs argv with default signal dispositions, optionally a
// coredump_filter and another uid; does not wait.
pid_t spawn_crasher(const std::vector<std::string> &argv, std::optional<unsigned> filter = {},
                    std::optional<uid_t> uid = {}) {
  char f[32] = "";
  if (filter) std::snprintf(f, sizeof f, "0x%x", *filter);
  ct::test::ProcessOptions po;
  po.out = ct::test::Stream::null();
  po.err = ct::test::Stream::null();
  po.in_child = [&f, uid] {
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (f[0]) {
      int fd = open("/proc/self/coredump_filter", O_WRONLY);
      if (fd < 0 || write(fd, f, strlen(f)) < 0) ct::test::child_failed("cannot write /proc/self/coredump_filter");
      close(fd);
    }
    if (uid && (setgroups(0, nullptr) < 0 || setresgid(*uid, *uid, *uid) < 0 || setresuid(*uid, *uid, *uid) < 0))
      ct::test::child_failed("cannot change its uid");
  };
  return ct::test::spawn(argv, po);
}

Crash wait_crash(pid_t pid, std::uint64_t not_before) {
  Crash c;
  c.pid = pid;
  c.not_before_usec = not_before;
  waitpid(pid, &c.status, 0);
  return c;
}

Crash crash(const std::vector<std::string> &argv, std::optional<unsigned> filter = {},
            std::optional<uid_t> uid = {}) {
  const std::uint64_t t = now_usec();
  Crash c = wait_crash(spawn_crasher(argv, filter, uid), t);
  EXPECT_TRUE(WIFSIGNALED(c.status) && WCOREDUMP(c.status))
      << argv[0] << " (pid " << c.pid << ") did not die with a core: wait status " << c.status;
  return c;
}

// The timeline of `pid`, waited for; a failure (with the daemon's log) and
// an empty one if it does not come within `timeout`.
Timeline wait_timeline(const ct::test::DaemonHarness &d, pid_t pid, std::chrono::milliseconds timeout = 10s,
                       std::uint64_t not_before_usec = 0) {
  if (auto t = d.wait_timeline(pid, timeout, not_before_usec)) return *t;
  ADD_FAILURE() << "no timeline for pid " << pid << " within " << timeout.count() << " ms; daemon log:\n"
                << d.log_tail();
  return {};
}

std::size_t count_timelines(const ct::test::DaemonHarness &d, const std::vector<Crash> &crashes) {
  std::size_t n = 0;
  for (const auto &c : crashes) n += d.find_timeline(c.pid).has_value();
  return n;
}

// The fields of the journal entry `j` is at, as FIELD -> first value.
std::map<std::string, std::string> entry_fields(sd_journal *j) {
  std::map<std::string, std::string> f;
  const void *data;
  size_t len;
  SD_JOURNAL_FOREACH_DATA(j, data, len) {
    std::string kv(static_cast<const char *>(data), len);
    auto eq = kv.find('=');
    if (eq != std::string::npos) f.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return f;
}

// The first journal entry written after `since_usec` that has all
// `matches` (FIELD=VALUE), as a field map; waits up to `timeout`.
std::optional<std::map<std::string, std::string>> wait_journal(const std::vector<std::string> &matches,
                                                               std::uint64_t since_usec,
                                                               std::chrono::milliseconds timeout) {
  sd_journal *j = nullptr;
  if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY) < 0) return std::nullopt;
  for (const auto &m : matches) sd_journal_add_match(j, m.data(), m.size());
  sd_journal_seek_realtime_usec(j, since_usec);
  const auto deadline = Clock::now() + timeout;
  std::optional<std::map<std::string, std::string>> found;
  while (!found) {
    while (sd_journal_next(j) > 0) {
      std::uint64_t t = 0;
      sd_journal_get_realtime_usec(j, &t);
      if (t < since_usec) continue;
      found = entry_fields(j);
      break;
    }
    if (found || Clock::now() >= deadline) break;
    sd_journal_wait(j, 100000);
  }
  sd_journal_close(j);
  return found;
}

std::vector<std::pair<std::string, std::uint64_t>> event_ids(const json &doc) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  if (!doc.contains("events")) return out;
  for (const auto &e : doc["events"]) {
    std::string kind = e.value("kind", "");
    std::uint64_t arg = e.contains("args") && e["args"].is_array() && !e["args"].empty() ? e["args"][0].get<std::uint64_t>() : 0;
    if (kind == "USER") out.emplace_back("id=" + std::to_string(e.value("id", 0u)), arg);
    else if (kind == "SPAN_BEGIN") out.emplace_back("span=" + std::to_string(e.value("id", 0u)), arg);
    else out.emplace_back(kind, arg);
  }
  return out;
}

// The a-path of crash_demo, as docs/design.md states it: REQ_PARSE(41), FREE,
// BEFORE_DIE(1001), CRASH; inside its REQUEST(41) span (0x1004).
void expect_a_path(const json &doc) {
  auto ev = event_ids(doc);
  std::vector<std::string> kinds;
  for (auto &[k, a] : ev)
    if (k != "LANE_CLAIM") kinds.push_back(k);
  const std::vector<std::string> want{"span=4100", "id=4097", "FREE", "id=4099", "CRASH"};
  EXPECT_EQ(kinds, want) << doc.dump(1).substr(0, 3000);
  bool req41 = false, die1001 = false;
  for (auto &[k, a] : ev) {
    req41 = req41 || (k == "id=4097" && a == 41);
    die1001 = die1001 || (k == "id=4099" && a == 1001);
  }
  EXPECT_TRUE(req41 && die1001);
}

// What the descriptors of `pid` point to (readlink of /proc/PID/fd/*).
std::vector<std::string> fd_targets(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec); it != fs::directory_iterator();
       ++it) {
    std::error_code e2;
    out.push_back(fs::read_symlink(it->path(), e2).string());
  }
  return out;
}

bool is_journal(const std::string &target) { return target.find(".journal") != std::string::npos; }

// Journal files on disk, as sd-journal counts them: "*.journal" and the
// "*.journal~" that journald leaves after an unclean stop or on finding a
// file corrupt; sd-journal opens both (systemd src/libsystemd/sd-journal).
std::size_t journal_files() {
  std::size_t n = 0;
  for (const char *root : {"/run/log/journal", "/var/log/journal"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); ++it) {
      const std::string ext = it->path().extension();
      n += ext == ".journal" || ext == ".journal~";
    }
  }
  return n;
}

// A timeline has its core's owner, group and permission bits.
void expect_owner_and_mode_of(const std::string &timeline, const std::string &core) {
  struct stat cs, ts;
  ASSERT_EQ(stat(core.c_str(), &cs), 0) << core;
  ASSERT_EQ(stat(timeline.c_str(), &ts), 0) << timeline;
  EXPECT_EQ(ts.st_uid, cs.st_uid) << timeline;
  EXPECT_EQ(ts.st_gid, cs.st_gid) << timeline;
  EXPECT_EQ(ts.st_mode & 07777, cs.st_mode & 07777) << timeline;
}

// journald's pid: the pipeline's own (tests/support/pipeline), else the
// system's (comm "systemd-journal"); -1 if none.
pid_t journald_pid() {
  auto is_journald = [](long pid) {
    return pid > 0 && read_text("/proc/" + std::to_string(pid) + "/comm") == "systemd-journal\n";
  };
  std::ifstream f("/run/core-timeline-tests/journald.pid");
  long pid = -1;
  if (f >> pid && is_journald(pid)) return static_cast<pid_t>(pid);  // not a pid reused since
  std::error_code ec;
  for (const auto &d : fs::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (is_journald(std::stol(name))) return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

// RAII: journald stopped (SIGSTOP) for the scope, continued at its end,
// also when the test fails.  Entries sent meanwhile wait in its socket
// (net.unix.max_dgram_qlen of them; senders block beyond), so nothing is
// lost; they are written when it continues.
class JournaldPaused {
 public:
  JournaldPaused() : pid_(journald_pid()) {
    if (pid_ > 0 && kill(pid_, SIGSTOP) != 0) pid_ = -1;
    // Paused once the kernel shows it stopped, not when the signal is sent.
    if (pid_ > 0 && !ct::test::wait_until([this] { return stopped(); }, 30s)) resume();
    // A hang while it is held (a crash whose systemd-coredump blocks on
    // journald's full socket) must not hold the machine's journal for ever:
    // after two minutes it is resumed, and stopped() says so.
    if (pid_ > 0)
      guard_ = std::thread([this, pid = pid_] {
        std::unique_lock lock(mu_);
        if (!cv_.wait_for(lock, 120s, [this] { return done_; })) kill(pid, SIGCONT);
      });
  }
  ~JournaldPaused() { resume(); }
  bool paused() const { return pid_ > 0; }
  // The kernel shows it stopped (state T in /proc/PID/stat): it writes no
  // entry until resumed.
  bool stopped() const {
    const std::string stat = read_text("/proc/" + std::to_string(pid_) + "/stat");
    const auto paren = stat.rfind(')');
    return pid_ > 0 && paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'T';
  }
  void resume() {
    if (pid_ > 0) kill(pid_, SIGCONT);
    if (guard_.joinable()) {
      {
        std::lock_guard lock(mu_);
        done_ = true;
      }
      cv_.notify_all();
      guard_.join();
    }
    pid_ = -1;
  }

 private:
  pid_t pid_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread guard_;
};

// The stored core of crash `c` in systemd-coredump's directory: its pid
// and this boot in the name, and the newest such (pids are reused within a
// boot), stored after the crash began.
std::optional<std::string> stored_core(const Crash &c) {
  const std::string needle = "." + boot_id() + "." + std::to_string(c.pid) + ".";
  std::optional<std::string> best;
  struct timespec best_time {};
  std::error_code ec;
  for (const auto &e : fs::directory_iterator("/var/lib/systemd/coredump", ec)) {
    const std::string name = e.path().filename();
    if (!name.starts_with("core.") || name.find(needle) == std::string::npos || name.ends_with(".timeline.json"))
      continue;
    struct stat st;
    if (stat(e.path().c_str(), &st) != 0) continue;
    const std::uint64_t mtime_usec = static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000;
    if (mtime_usec + 1000000 < c.not_before_usec) continue;  // an earlier crash of a reused pid
    if (!best || std::tie(st.st_mtim.tv_sec, st.st_mtim.tv_nsec) > std::tie(best_time.tv_sec, best_time.tv_nsec)) {
      best = e.path().string();
      best_time = st.st_mtim;
    }
  }
  return best;
}

// A script in `dir` that runs core-timelined in a mount namespace of its
// own where journald's sockets are not (a tmpfs over /run/systemd/journal):
// it reads the journal files and writes timelines, but nothing it sends
// reaches journald, as when it is killed before its entry is sent.
std::string without_journald_socket(const std::string &dir) {
  const std::string path = dir + "/core-timelined-without-journald";
  std::ofstream(path) << "#!/bin/sh\n"
                         "exec unshare --mount --propagation private -- /bin/sh -c "
                         "'mount -t tmpfs -o mode=0755 ct-no-journald /run/systemd/journal && exec \"$0\" \"$@\"' "
                      << CT_DAEMON_BIN << " \"$@\"\n";
  chmod(path.c_str(), 0755);
  return path;
}

class DaemonPipeline : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "test directory kept: %s\n", dir.path.c_str());
  }
  TestDir dir;
  ct::test::DaemonHarness daemon{daemon_options(dir.path)};
};

}  // namespace

// ---- the main job -------------------------------------------------------

// How soon the timeline is there after its entry is bench_daemon's to
// measure (docs/performance.md), not this test's: the wait below only
// bounds a hang.
TEST_F(DaemonPipeline, PathATimelineNextToItsCoreAsTheReaderPrintsIt) {
  daemon.start();
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  Timeline t = wait_timeline(daemon, c.pid, 60s);
  ASSERT_FALSE(t.path.empty());
  const json &doc = t.doc;
  EXPECT_EQ(doc["status"], "ok");
  expect_a_path(doc);

  // The contract keys.
  const json &cd = doc["coredump"];
  EXPECT_EQ(cd["storage"], "external");
  ASSERT_TRUE(cd["core_file"].is_string());
  const std::string core = cd["core_file"];
  EXPECT_EQ(fs::path(t.path).filename().string(),
            fs::path(core).filename().replace_extension("").string() + ".timeline.json");
  EXPECT_EQ(cd["boot_id"], boot_id());
  EXPECT_FALSE(cd["journal_cursor"].get<std::string>().empty());
  EXPECT_GT(cd["realtime_usec"].get<std::uint64_t>(), c.not_before_usec);
  EXPECT_EQ(cd["fields"]["COREDUMP_PID"], std::to_string(c.pid));
  EXPECT_EQ(cd["fields"]["_BOOT_ID"], boot_id());
  EXPECT_FALSE(cd["fields"].contains("COREDUMP"));
  EXPECT_TRUE(doc["daemon"]["version"].is_string());
  EXPECT_TRUE(doc["daemon"]["duration_ms"].is_number());
  EXPECT_EQ(doc["daemon"]["decoder"]["via_server"], true) << "decoded by fork and exec: " << daemon.log_tail();
  // It confined itself (daemon/src/sandbox.h; this machine kind has ABI 7).
  EXPECT_GE(doc["daemon"]["decoder"]["landlock_abi"].get<int>(), 1);
  EXPECT_EQ(doc["daemon"]["decoder"]["seccomp"], true);
  EXPECT_EQ(daemon.log().find("decoders run without"), std::string::npos) << daemon.log_tail();
  // Made after systemd-coredump's entry was written, and says how long
  // after (how soon is bench_daemon's "entry -> timeline").
  EXPECT_GE(doc["daemon"]["decoded_usec"].get<std::uint64_t>(), cd["realtime_usec"].get<std::uint64_t>());
  EXPECT_DOUBLE_EQ(doc["daemon"]["latency_ms"].get<double>(),
                   static_cast<double>(doc["daemon"]["decoded_usec"].get<std::uint64_t>() -
                                       cd["realtime_usec"].get<std::uint64_t>()) / 1000.0)
      << doc["daemon"].dump();
  // It saw the core appear before the entry, and so read the journal
  // eagerly rather than at journald's announcement (core_watch.h).
  EXPECT_NE(daemon.log().find("its core " + fs::path(core).filename().string() +
                                       " appeared in the coredump directory"),
            std::string::npos)
      << daemon.log_tail();

  // Owner, mode and ACL are the core's.
  expect_owner_and_mode_of(t.path, core);

  // "text" and the reader keys are exactly what core-timeline-read says
  // about the same core (with the event names of crash_demo.tlmap, found
  // in --tlmap-dir as the executable's name).
  const std::string plain = dir.path + "/core.a";
  ct::test::decompress_core_file(core, plain);
  const auto text = ct::test::run({CT_READER_BIN, "--tlmap", std::string(CT_TLMAP_DIR) + "/crash_demo.tlmap", plain});
  EXPECT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_EQ(doc["text"], text.out);
  const auto js =
      ct::test::run({CT_READER_BIN, "--json", "--tlmap", std::string(CT_TLMAP_DIR) + "/crash_demo.tlmap", plain});
  EXPECT_EQ(js.exit_code(), 0) << js.err;
  json reader = json::parse(js.out);
  json mine = doc;
  for (const char *k : {"coredump", "pids", "daemon", "text"}) mine.erase(k);
  reader["core"]["path"] = core;
  // Stored as the compact document (schema_version 7), the same in the
  // full shape but for its version.
  EXPECT_EQ(mine["schema_version"], 7);
  mine["schema_version"] = reader["schema_version"];
  EXPECT_EQ(mine, reader);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, PathBIsToldApartFromPathA) {
  daemon.start();
  const auto a = crash({CT_CRASH_DEMO, "--path=a"});
  const auto b = crash({CT_CRASH_DEMO, "--path=b"});
  Timeline ta = wait_timeline(daemon, a.pid), tb = wait_timeline(daemon, b.pid);
  expect_a_path(ta.doc);
  std::vector<std::string> kinds;
  for (auto &[k, arg] : event_ids(tb.doc))
    if (k != "LANE_CLAIM") kinds.push_back(k + "/" + std::to_string(arg));
  ASSERT_GE(kinds.size(), 5u);
  EXPECT_EQ(kinds[0], "span=4101/7");  // the RELOAD(7) span
  EXPECT_EQ(kinds[1], "id=4098/7");    // CONFIG_RELOAD(7)
  EXPECT_EQ(kinds[2].substr(0, 7), "MALLOC/");
  EXPECT_EQ(kinds[3], "id=4099/2002");  // BEFORE_DIE(2002)
  EXPECT_EQ(daemon.stop(), 0);
}

// prepared.h: the daemon extracts and decodes a core as soon as it appears
// in the coredump directory, and uses that when the core's entry comes -
// only if the entry's file is still the one it prepared.  journald is held
// (SIGSTOP) so that the entry certainly comes after the preparation.
TEST_F(DaemonPipeline, CorePreparedBeforeItsEntryIsUsedOnlyIfTheFileIsUnchanged) {
  daemon.options().log_target = "stderr";  // its own log must not wait for journald
  daemon.start();
  const auto b = crash({CT_CRASH_DEMO, "--path=b"});
  const Timeline tb = wait_timeline(daemon, b.pid);
  ASSERT_EQ(tb.doc["status"], "ok");
  const std::string b_core = tb.doc["coredump"]["core_file"];

  // 1. Prepared, unchanged: used, and the same timeline as ever.
  Crash a;
  {
    JournaldPaused paused;
    ASSERT_TRUE(paused.paused()) << "no journald to hold";
    a = crash({CT_CRASH_DEMO, "--path=a"});
    const auto core = stored_core(a);
    ASSERT_TRUE(core) << "no stored core for pid " << a.pid;
    ASSERT_TRUE(daemon.wait_log("prepared " + fs::path(*core).filename().string() + " before its entry", 10s))
        << daemon.log_tail();
    // Without journald the entry cannot come, and journald is still
    // stopped (the kernel says so): the preparation certainly came first,
    // and a timeline here would be one made without its entry.
    ASSERT_TRUE(paused.stopped()) << "journald was resumed before the test looked (its guard, after two minutes, or another process)";
    EXPECT_FALSE(daemon.find_timeline(a.pid)) << "a timeline while journald is held";
  }
  const Timeline ta = wait_timeline(daemon, a.pid);
  EXPECT_EQ(ta.doc["status"], "ok");
  EXPECT_EQ(ta.doc["daemon"]["prepared_before_entry"], true);
  expect_a_path(ta.doc);

  // 2. Prepared, then another core renamed over its name: not used; the
  // timeline is that of the file the entry names now (path b's events).
  Crash a2;
  {
    JournaldPaused paused;
    a2 = crash({CT_CRASH_DEMO, "--path=a"});
    const auto core = stored_core(a2);
    ASSERT_TRUE(core) << "no stored core for pid " << a2.pid;
    ASSERT_TRUE(daemon.wait_log("prepared " + fs::path(*core).filename().string() + " before its entry", 10s))
        << daemon.log_tail();
    const std::string tmp = fs::path(*core).parent_path().string() + "/.#ct-test-" + std::to_string(getpid());
    fs::copy_file(b_core, tmp);
    fs::rename(tmp, *core);
  }
  const Timeline t2 = wait_timeline(daemon, a2.pid);
  EXPECT_EQ(t2.doc["daemon"]["prepared_before_entry"], false);
  std::vector<std::string> kinds;
  for (auto &[k, arg] : event_ids(t2.doc))
    if (k != "LANE_CLAIM") kinds.push_back(k + "/" + std::to_string(arg));
  ASSERT_GE(kinds.size(), 2u) << t2.doc.dump(1).substr(0, 2000);
  EXPECT_EQ(kinds[1], "id=4098/7") << "not the events of the file the entry names";
  EXPECT_NE(daemon.log().find("not using the preparation of"), std::string::npos) << daemon.log_tail();
  EXPECT_EQ(daemon.stop(), 0);
}

// An entry that has not come kReseekAfterMs after its core appeared makes
// the daemon seek the journal again after the last entry it read (a reader
// once missed an entry for 5 s in CI).  Held back longer than that, the
// entry is still read, once, and the crash gets one timeline.
TEST_F(DaemonPipeline, EntryLateByMoreThanTheReseekPeriodIsReadOnce) {
  daemon.options().log_target = "stderr";  // its own log must not wait for journald
  daemon.start();
  const auto first = crash({CT_CRASH_DEMO, "--path=b"});
  ASSERT_EQ(wait_timeline(daemon, first.pid).doc["status"], "ok");
  Crash c;
  {
    JournaldPaused paused;
    ASSERT_TRUE(paused.paused()) << "no journald to hold";
    c = crash({CT_CRASH_DEMO, "--path=a"});
    ASSERT_TRUE(daemon.wait_log("seeking the journal again after the last entry read", 10s)) << daemon.log_tail();
  }
  const Timeline t = wait_timeline(daemon, c.pid);
  EXPECT_EQ(t.doc["status"], "ok");
  expect_a_path(t.doc);
  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_EQ(daemon.files_of(c.pid), 1u);
  const std::string log = daemon.log();
  EXPECT_EQ(log.find("its timeline already exists"), std::string::npos) << "an entry was read twice:\n" << log;
}

// ---- failing loudly, and quietly ---------------------------------------------

TEST_F(DaemonPipeline, MappingAbsentGivesItsStatusAndAnErrorEntryNamingThePid) {
  daemon.start();
  const std::uint64_t since = now_usec();
  const auto c = crash({CT_CRASH_DEMO, "--path=a"}, 0x31u);
  Timeline t = wait_timeline(daemon, c.pid);
  EXPECT_EQ(t.doc["status"], "mapping_absent");
  auto e = wait_journal({"MESSAGE_ID=" + std::string(ctd::kMsgMappingAbsent),
                         "CORE_TIMELINE_PID=" + std::to_string(c.pid)},
                        since, 5s);
  ASSERT_TRUE(e) << "no journal entry with MESSAGE_ID=" << ctd::kMsgMappingAbsent << " for pid " << c.pid;
  EXPECT_EQ((*e)["PRIORITY"], "3");
  EXPECT_EQ((*e)["SYSLOG_IDENTIFIER"], "core-timelined");
  EXPECT_EQ((*e)["CORE_TIMELINE_EXE"], CT_CRASH_DEMO);
  EXPECT_FALSE((*e)["CORE_TIMELINE_REASON"].empty());
  EXPECT_NE((*e)["MESSAGE"].find("pid " + std::to_string(c.pid)), std::string::npos) << (*e)["MESSAGE"];
  EXPECT_EQ((*e)["CORE_TIMELINE_TIMELINE"], t.path);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, NoRingIsAQuietInfoLineNotAnError) {
  daemon.start();
  const std::uint64_t since = now_usec();
  const auto c = crash({CT_CRASH_DEMO_NOLIB, "--path=a"});
  Timeline t = wait_timeline(daemon, c.pid);
  EXPECT_EQ(t.doc["status"], "no_ring");
  auto e = wait_journal({"MESSAGE_ID=" + std::string(ctd::kMsgTimelineWritten),
                         "CORE_TIMELINE_PID=" + std::to_string(c.pid)},
                        since, 5s);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["PRIORITY"], "6");
  EXPECT_EQ((*e)["CORE_TIMELINE_STATUS"], "no_ring");
  // A mapping_absent error would have been sent before the timeline's entry
  // (Daemon::report), to the same socket: with that entry in the journal,
  // it would be too.  Looked for once, not waited for.
  EXPECT_FALSE(wait_journal({"MESSAGE_ID=" + std::string(ctd::kMsgMappingAbsent),
                             "CORE_TIMELINE_PID=" + std::to_string(c.pid)},
                            since, 0ms));
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, DecoderThatCannotRunMakesUndecodableAndTheDaemonGoesOn) {
  // 4 MiB of address space is too little for the decoder to even load
  // libc: the child dies, the daemon writes "undecodable" and keeps going.
  // The decoder's RLIMIT_AS is the limit plus the core's size, so the core
  // must be small: crash_demo_nolib's (no ring; it would say no_ring if
  // the decoder ran).  crash_demo's holds its default ring (ring format 3:
  // 17 MiB with the 16 MiB budget), room enough for the decoder to start;
  // then its mmap of the core is what fails (core_unreadable).
  daemon.start({"--memory-limit", "4M"});
  const auto c1 = crash({CT_CRASH_DEMO_NOLIB, "--path=a"});
  Timeline t1 = wait_timeline(daemon, c1.pid);
  EXPECT_EQ(t1.doc["status"], "undecodable") << t1.doc.value("reason", "");
  EXPECT_FALSE(t1.doc["reason"].get<std::string>().empty());
  EXPECT_TRUE(t1.doc.contains("coredump") && t1.doc.contains("daemon") && t1.doc.contains("text"));
  const auto c2 = crash({CT_CRASH_DEMO_NOLIB, "--path=b"});
  Timeline t2 = wait_timeline(daemon, c2.pid);
  EXPECT_EQ(t2.doc["status"], "undecodable");
  EXPECT_EQ(kill(daemon.pid(), 0), 0) << "the daemon died";
  EXPECT_EQ(daemon.stop(), 0);
}

// ---- where the core is ---------------------------------------------------------
//
// Storage=journal and a core gone before its extraction are
// daemon_journal_test's (real journal files, without the pipeline).

// The daemon names a timeline as soon as it is written and fsyncs it before
// it saves the journal cursor past its entry (daemon.h, step 5).  A power
// cut in between can leave the name with an empty or short file (files.h);
// the entry is after the saved cursor, so a restart redoes it and must
// write the timeline again.  A whole document at the name is left as it is.
// (The power cut itself cannot be made here: its result is planted.)
TEST_F(DaemonPipeline, TimelineCutShortByAPowerCutIsWrittenAgainAfterARestart) {
  daemon.start();
  EXPECT_EQ(daemon.stop(), 0);
  ASSERT_TRUE(fs::exists(daemon.state_dir() + "/cursor"));
  const auto empty = crash({CT_CRASH_DEMO, "--path=a"});
  const auto cut = crash({CT_CRASH_DEMO, "--path=a"});
  const auto whole = crash({CT_CRASH_DEMO, "--path=a"});
  auto timeline_name = [](const Crash &c) {
    auto e = ct::test::wait_for_coredump_entry(
        c.pid, std::chrono::system_clock::time_point(std::chrono::microseconds(c.not_before_usec)));
    std::string core = fs::path(e["COREDUMP_FILENAME"]).filename();
    for (const char *suffix : {".zst", ".lz4", ".xz"})
      if (core.ends_with(suffix)) core.resize(core.size() - std::strlen(suffix));
    return core + ".timeline.json";
  };
  const std::string a = daemon.output_dir() + "/" + timeline_name(empty), b = daemon.output_dir() + "/" + timeline_name(cut),
                    c = daemon.output_dir() + "/" + timeline_name(whole);
  std::ofstream(a).flush();
  std::ofstream(b) << R"({"status": "ok", "coredump": {"fields": {"COREDUMP_PID": ")";
  std::ofstream(c) << R"({"planted": true})" << "\n";
  daemon.start();
  for (const auto &x : {empty, cut}) {
    Timeline t = wait_timeline(daemon, x.pid, 10s, x.not_before_usec);
    EXPECT_EQ(t.doc["status"], "ok") << t.path;
    EXPECT_EQ(t.doc["coredump"]["fields"]["COREDUMP_PID"], std::to_string(x.pid));
    expect_a_path(t.doc);
  }
  // Entries are handled in journal order: once the last is done, the
  // whole one has been seen and left.
  const auto after = crash({CT_CRASH_DEMO, "--path=a"});
  wait_timeline(daemon, after.pid, 10s, after.not_before_usec);
  EXPECT_EQ(read_text(c), "{\"planted\": true}\n");
  const std::string log = daemon.log();
  EXPECT_NE(log.find(a + " is empty or cut short"), std::string::npos) << daemon.log_tail();
  EXPECT_NE(log.find(b + " is empty or cut short"), std::string::npos) << daemon.log_tail();
  EXPECT_EQ(log.find(c + " is empty or cut short"), std::string::npos) << daemon.log_tail();
  EXPECT_EQ(daemon.stop(), 0);
}

// A timeline the file system cannot make durable (its fsync fails with EIO,
// as after a writeback error; fail_fsync.c) is removed, and the daemon
// stops with status 1 without saving the cursor past its entry; the
// restart writes it.
TEST_F(DaemonPipeline, TimelineThatCannotBeSyncedIsRemovedAndRedoneAfterTheRestart) {
  // A saved cursor, so that nothing is fsynced before the first entry.
  daemon.start();
  EXPECT_EQ(daemon.stop(), 0);
  const std::string cursor = read_text(daemon.state_dir() + "/cursor");
  ASSERT_FALSE(cursor.empty());
  daemon.start({}, {{"LD_PRELOAD", CT_FAIL_FSYNC}, {"CT_FAIL_FSYNC_CONTAINS", daemon.output_dir() + "/#"}});
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  EXPECT_EQ(daemon.wait_exit(20s), 1) << daemon.log_tail();
  EXPECT_FALSE(daemon.find_timeline(c.pid, c.not_before_usec)) << "a timeline that is not durable stayed";
  EXPECT_EQ(read_text(daemon.state_dir() + "/cursor"), cursor) << "the cursor went past an entry whose timeline was lost";
  EXPECT_NE(daemon.log().find("cannot fsync the timeline"), std::string::npos) << daemon.log_tail();
  daemon.start();
  Timeline t = wait_timeline(daemon, c.pid, 10s, c.not_before_usec);
  EXPECT_EQ(t.doc["status"], "ok");
  expect_a_path(t.doc);
  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_NE(read_text(daemon.state_dir() + "/cursor"), cursor);
}

// Copies systemd-coredump entries of this boot from the system journal into
// the journal directory `dir`, as one more journal file `name` (journalctl
// -o export piped to systemd-journal-remote, as a journal-remote host holds
// them): the last `n` of them, or with COREDUMP_PID=`pid`, the last of that
// pid.
void copy_coredump_entries(const std::string &dir, const std::string &name, std::size_t n,
                           std::optional<pid_t> pid = std::nullopt) {
  std::vector<std::string> argv = {"/usr/bin/journalctl", "-o",   "export", "--no-pager",
                                   "-n",                  std::to_string(n), "MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1",
                                   "_BOOT_ID=" + boot_id()};
  if (pid) argv.push_back("COREDUMP_PID=" + std::to_string(*pid));
  fs::create_directories(dir);
  const std::string exp = dir + "/" + name + ".export";
  ct::test::ProcessOptions o;
  o.out = ct::test::Stream::file(exp);
  const auto got = ct::test::run(argv, o);
  ASSERT_EQ(got.exit_code(), 0) << got.err;
  ASSERT_GT(fs::file_size(exp), 0u) << "journalctl exported no entry";
  ct::test::ProcessOptions r;
  r.in = ct::test::Stream::file(exp);
  const auto wrote = ct::test::run({"/lib/systemd/systemd-journal-remote", "-o", dir + "/" + name + ".journal", "-"}, r);
  ASSERT_EQ(wrote.exit_code(), 0) << "systemd-journal-remote: " << wrote.err;
  fs::remove(exp);
}

// --first-start boot (the default): a crash of this boot from before the
// daemon's first start gets its timeline; a second start resumes after the
// saved cursor and does not go through the boot again.  The boot of a
// machine up for long holds thousands of crashes (each CI run adds some
// hundreds): the daemon reads the last few of them, copied from the system
// journal into a journal directory of the test's (--journal-directory),
// and the entries of the later crashes are added to it as they come.
TEST_F(DaemonPipeline, FirstStartBootTakesThisBootsEarlierCrashesOnce) {
  const auto early = crash({CT_CRASH_DEMO, "--path=a"});
  ct::test::wait_for_coredump_entry(
      early.pid, std::chrono::system_clock::time_point(std::chrono::microseconds(early.not_before_usec)));
  const std::string journal = dir.path + "/journal";
  constexpr std::size_t kBacklog = 8;  // `early` and the 7 crashes before it
  ASSERT_NO_FATAL_FAILURE(copy_coredump_entries(journal, "boot", kBacklog));
  const std::vector<std::string> from = {"--journal-directory", journal};
  auto count = [&] {
    std::size_t n = 0;
    for (const auto &d : daemon.timeline_dirs()) {
      std::error_code ec;
      for (const auto &e : fs::directory_iterator(d, ec)) n += e.path().string().ends_with(".timeline.json");
    }
    return n;
  };
  daemon.options().first_start = "boot";
  daemon.start(from);
  // The daemon takes them in journal order, `early` last; this boot may
  // hold earlier crashes with the same pid: by pid and time.  Each costs
  // what its core does (50 ms for crash_demo's, seconds for
  // big_ring_crasher's).
  Timeline t = wait_timeline(daemon, early.pid, 120s, early.not_before_usec);
  EXPECT_EQ(t.doc["status"], "ok");
  expect_a_path(t.doc);
  EXPECT_EQ(count(), kBacklog) << daemon.log_tail();
  EXPECT_NE(daemon.log().find("first start: handling the crashes of this boot"), std::string::npos)
      << daemon.log_tail();
  // A crash after the start, then a stop.
  const auto c1 = crash({CT_CRASH_DEMO, "--path=b"});
  ct::test::wait_for_coredump_entry(c1.pid,
                                    std::chrono::system_clock::time_point(std::chrono::microseconds(c1.not_before_usec)));
  ASSERT_NO_FATAL_FAILURE(copy_coredump_entries(journal, "c1", 1, c1.pid));
  wait_timeline(daemon, c1.pid, 60s, c1.not_before_usec);
  EXPECT_EQ(daemon.stop(), 0);
  const std::size_t before = count();
  EXPECT_EQ(before, kBacklog + 1);
  // A crash while it is stopped: the second start takes it, and only it.
  const auto c2 = crash({CT_CRASH_DEMO, "--path=a"});
  ct::test::wait_for_coredump_entry(c2.pid,
                                    std::chrono::system_clock::time_point(std::chrono::microseconds(c2.not_before_usec)));
  ASSERT_NO_FATAL_FAILURE(copy_coredump_entries(journal, "c2", 1, c2.pid));
  daemon.start(from);
  EXPECT_EQ(wait_timeline(daemon, c2.pid, 10s, c2.not_before_usec).doc["status"], "ok");
  EXPECT_EQ(count(), before + 1) << "the second start went through the boot again";
  EXPECT_NE(daemon.log().find("resuming after the saved journal cursor"), std::string::npos)
      << daemon.log_tail();
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, UsersReadTheirOwnTimelinesAndNotOthers) {
  // crash_demo copied where uid 1234 may run it.
  const std::string exe = dir.path + "/crash_demo";
  fs::copy_file(CT_CRASH_DEMO, exe);
  chmod(exe.c_str(), 0755);
  daemon.start();
  const auto c = crash({exe, "--path=a"}, std::nullopt, 1234);
  Timeline t = wait_timeline(daemon, c.pid);
  EXPECT_EQ(t.doc["status"], "ok");
  EXPECT_EQ(t.doc["coredump"]["fields"]["COREDUMP_UID"], "1234");
  const std::string core = t.doc["coredump"]["core_file"];
  expect_owner_and_mode_of(t.path, core);
  char a[256], b[256];
  ssize_t na = getxattr(core.c_str(), "system.posix_acl_access", a, sizeof a);
  ssize_t nb = getxattr(t.path.c_str(), "system.posix_acl_access", b, sizeof b);
  ASSERT_GT(na, 0) << "systemd-coredump gave the core no ACL";
  EXPECT_EQ(std::string(a, static_cast<std::size_t>(na)), std::string(b, static_cast<std::size_t>(std::max<ssize_t>(nb, 0))));
  // Open it as 1234 (allowed) and as 1235 (refused).
  auto open_as = [&](uid_t uid) {
    pid_t p = fork();
    if (p == 0) {
      if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) _exit(3);
      int fd = open(t.path.c_str(), O_RDONLY);
      _exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 2);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WEXITSTATUS(st);
  };
  EXPECT_EQ(open_as(1234), 0);
  EXPECT_EQ(open_as(1235), 1);
  EXPECT_EQ(daemon.stop(), 0);
}

// ---- the timeline entry in the journal ----------------------------------------

namespace {

namespace jn = core_timeline::document::journal;

using Entry = std::multimap<std::string, std::string>;

std::string one(const Entry &e, std::string_view k) {
  const auto it = e.find(std::string(k));
  return it == e.end() ? std::string("<absent>") : it->second;
}
std::vector<std::string> all(const Entry &e, std::string_view k) {
  std::vector<std::string> v;
  for (auto [a, b] = e.equal_range(std::string(k)); a != b; ++a) v.push_back(a->second);
  return v;
}

// Every entry of `j` that meets `matches`, every field whole.
// When this test program started: the journal of a machine that runs the
// suite again and again holds earlier runs' entries, and a crash's pid may
// be an earlier run's crash's (pids wrap).
const std::uint64_t g_started_usec = ct::test::now_usec();

// The entries matching all of `matches`, logged at `since_usec` or later.
std::vector<Entry> entries_matching(sd_journal *j, const std::vector<std::string> &matches,
                                    std::uint64_t since_usec = 0) {
  std::vector<Entry> out;
  sd_journal_flush_matches(j);
  for (const std::string &m : matches) sd_journal_add_match(j, m.data(), m.size());
  sd_journal_seek_head(j);
  while (sd_journal_next(j) > 0) {
    std::uint64_t t = 0;
    if (since_usec && (sd_journal_get_realtime_usec(j, &t) < 0 || t < since_usec)) continue;
    Entry f;
    const void *data;
    size_t len;
    SD_JOURNAL_FOREACH_DATA(j, data, len) {
      std::string kv(static_cast<const char *>(data), len);
      auto eq = kv.find('=');
      if (eq != std::string::npos) f.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    out.push_back(std::move(f));
  }
  return out;
}

// Every timeline entry (MESSAGE_ID 9d72af47...) of crash `pid` of this boot
// logged since this test program started, in the local journal, every field
// whole (data threshold 0).  An entry
// that names its document entry (document_entry.h) gets that entry's
// CORE_TIMELINE_DOCUMENT, and "document entries" the number of entries
// with its id from its sender (_PID, _UID): the reader's rule.
std::vector<Entry> timeline_entries(pid_t pid, const std::string &path = "") {
  sd_journal *j = nullptr;
  if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY) < 0) return {};
  sd_journal_set_data_threshold(j, 0);
  std::vector<std::string> m{"MESSAGE_ID=" + std::string(jn::kTimelineMessageId), "COREDUMP_PID=" + std::to_string(pid),
                             std::string(jn::kBootId) + "=" + boot_id()};
  if (!path.empty()) m.push_back(std::string(jn::kTimelinePath) + "=" + path);
  std::vector<Entry> out = entries_matching(j, m, g_started_usec);
  for (Entry &e : out) {
    const auto id = e.find(std::string(jn::kDocumentId));
    if (id == e.end()) continue;
    EXPECT_EQ(e.count(std::string(jn::kDocument)), 0u) << "the timeline entry carries its document itself";
    std::size_t n = 0;
    for (const Entry &d : entries_matching(j, {"MESSAGE_ID=" + std::string(jn::kDocumentMessageId),
                                                std::string(jn::kDocumentId) + "=" + id->second})) {
      if (one(d, "_PID") != one(e, "_PID") || one(d, "_UID") != one(e, "_UID")) continue;
      if (n++ == 0)
        for (auto [a, b] = d.equal_range(std::string(jn::kDocument)); a != b; ++a) e.emplace(a->first, a->second);
    }
    e.emplace("document entries", std::to_string(n));
  }
  sd_journal_close(j);
  return out;
}

// The entries of `pid` once there are at least `n` (or what there is
// after `timeout`); with `path`, only those for that timeline file (this
// test's daemon's: a daemon of another test following the same journal, or
// an earlier crash of a reused pid, names another).
std::vector<Entry> wait_timeline_entries(pid_t pid, std::size_t n = 1, std::chrono::milliseconds timeout = 60s,
                                         const std::string &path = "") {
  std::vector<Entry> e;
  ct::test::wait_until([&] { return (e = timeline_entries(pid, path)).size() >= n; }, timeout);
  return e;
}

bool trusted(const Entry &e) {
  jn::Sender s;
  const std::string uid = one(e, "_UID"), transport = one(e, "_TRANSPORT"), cuid = one(e, "COREDUMP_UID");
  if (uid != "<absent>") s.uid = uid;
  if (transport != "<absent>") s.transport = transport;
  if (cuid != "<absent>") s.coredump_uid = cuid;
  const std::string cgroup = one(e, "_SYSTEMD_CGROUP");
  if (cgroup != "<absent>") s.cgroup = cgroup;
  return jn::sender_trust(s) != jn::Trust::kNone;
}

// Whether uid `uid` (no groups) finds crash `pid`'s timeline entry in the
// journal files it may open: 0 yes, 1 no, 2 it could open none.
int reads_entry_as(uid_t uid, pid_t pid) {
  const pid_t p = fork();
  if (p == 0) {
    if (setgroups(0, nullptr) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) _exit(3);
    sd_journal *j = nullptr;
    if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY) < 0) _exit(2);
    const std::string m1 = "MESSAGE_ID=" + std::string(jn::kTimelineMessageId), m2 = "COREDUMP_PID=" + std::to_string(pid);
    sd_journal_add_match(j, m1.data(), m1.size());
    sd_journal_add_match(j, m2.data(), m2.size());
    _exit(sd_journal_next(j) > 0 ? 0 : 1);
  }
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

// A user (uid > 999) with its own group of the same id, for the whole test.
struct TestUser : ct::test::TestUser {
  TestUser() : ct::test::TestUser(47100, "ct-je") {}
};

// journald on the persistent journal (/var/log/journal), as a booted
// system has it after systemd-journal-flush.service: only there does it
// split entries by uid (SplitMode=uid; while it has the volatile journal in
// /run open, it writes everything there, systemd 252
// src/journal/journald-server.c find_journal()).  A journald started with
// /run/systemd/journal/flushed present opens both, so the flush is asked
// for whatever that flag says.  Back to the volatile journal at the end if
// it was there.
struct PersistentJournal {
  bool was_flushed = fs::exists("/run/systemd/journal/flushed");
  bool ok = ct::test::run({"/usr/bin/journalctl", "--flush"}).ok();
  ~PersistentJournal() {
    if (!was_flushed) ct::test::run({"/usr/bin/journalctl", "--relinquish-var"});
  }
};

// The entry's summary and join keys, as journal_entry.h defines them, for
// crash_demo --path=a's timeline `t` (docs/design.md: REQ_PARSE 41, FREE,
// BEFORE_DIE 1001 inside the span REQUEST).
void expect_path_a_entry(const Entry &e, const Timeline &t, pid_t pid) {
  const json &f = t.doc["coredump"]["fields"];
  for (const std::string_view k : jn::kJoinKeys)
    if (f.contains(std::string(k))) {
      EXPECT_EQ(one(e, k), f[std::string(k)]) << k;
    }
  EXPECT_EQ(one(e, "COREDUMP_PID"), std::to_string(pid));
  EXPECT_EQ(one(e, jn::kBootId), boot_id());
  EXPECT_EQ(one(e, jn::kStatus), "ok");
  EXPECT_EQ(one(e, jn::kSignal), "SIGSEGV");
  EXPECT_EQ(one(e, jn::kEvents), std::to_string(t.doc["events"].size()));
  EXPECT_EQ(one(e, jn::kLastEvent), "BEFORE_DIE");
  EXPECT_EQ(one(e, jn::kOpenSpans), "1");
  EXPECT_EQ(all(e, jn::kOpenSpan), std::vector<std::string>{"REQUEST"});
  const auto names = all(e, jn::kEventName);
  for (const char *n : {"REQ_PARSE", "FREE", "BEFORE_DIE", "CRASH", "REQUEST"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_EQ(one(e, jn::kEventNamesComplete), "1");
  EXPECT_EQ(one(e, jn::kSchemaVersion), std::to_string(t.doc["schema_version"].get<int>()));
  EXPECT_EQ(one(e, jn::kTimelinePath), t.path);
  EXPECT_EQ(one(e, "PRIORITY"), "6");
  EXPECT_EQ(one(e, "SYSLOG_IDENTIFIER"), "core-timelined");
  EXPECT_EQ(one(e, "CORE_TIMELINE_PID"), std::to_string(pid));
  EXPECT_TRUE(trusted(e)) << "_UID " << one(e, "_UID") << " _TRANSPORT " << one(e, "_TRANSPORT");
}

// docs/timeline.schema.json (python3-jsonschema) on document `bytes`.
void expect_schema_valid(const std::string &bytes, const std::string &dir) {
  const std::string path = dir + "/validate.json";
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(ct::test::schema_errors_of_file(path, CT_SCHEMA_PATH), "") << "does not match docs/timeline.schema.json";
}

}  // namespace

TEST_F(DaemonPipeline, TimelineEntryCarriesTheWholeDocumentAndTheCrashedUserReadsIt) {
  PersistentJournal persistent;
  ASSERT_TRUE(persistent.ok) << "journalctl --flush failed";
  TestUser user;
  ASSERT_TRUE(user.made) << "could not make a test user with groupadd/useradd";
  const std::string exe = dir.path + "/crash_demo";
  fs::copy_file(CT_CRASH_DEMO, exe);
  chmod(exe.c_str(), 0755);
  daemon.start();
  const auto c = crash({exe, "--path=a"}, std::nullopt, user.uid);
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(t.doc["status"], "ok");
  const auto entries = wait_timeline_entries(c.pid);
  ASSERT_EQ(entries.size(), 1u) << "one entry per crash";
  const Entry &e = entries[0];
  expect_path_a_entry(e, t, c.pid);
  EXPECT_EQ(one(e, "COREDUMP_UID"), std::to_string(user.uid));
  // Sent as the crashed user, so journald put it where that user reads it.
  EXPECT_EQ(one(e, "_UID"), std::to_string(user.uid));
  // The document is the file, byte for byte, in its document entry, sent
  // by the same process just before.
  const std::string file = read_text(t.path);
  EXPECT_EQ(one(e, "document entries"), "1");
  EXPECT_EQ(one(e, jn::kDocument), file);
  EXPECT_EQ(one(e, jn::kDocumentBytes), std::to_string(file.size()));
  EXPECT_EQ(one(e, jn::kDocumentCut), "<absent>");
  // The user reads it; another user does not (nor this user a root crash's).
  EXPECT_EQ(reads_entry_as(user.uid, c.pid), 0)
      << "journal files: " << ct::test::run({"/bin/sh", "-c", "ls -l /var/log/journal/*/ /run/log/journal/*/ 2>&1 | tail -20"}).out;
  EXPECT_NE(reads_entry_as(user.uid + 1, c.pid), 0);
  const auto r = crash({CT_CRASH_DEMO, "--path=b"});
  ASSERT_EQ(wait_timeline(daemon, r.pid).doc["status"], "ok");
  const auto root_entries = wait_timeline_entries(r.pid);
  ASSERT_EQ(root_entries.size(), 1u);
  EXPECT_EQ(one(root_entries[0], "_UID"), "0");
  EXPECT_TRUE(trusted(root_entries[0]));
  EXPECT_NE(reads_entry_as(user.uid, r.pid), 0) << "a root crash's entry must be in the system journal";
  EXPECT_EQ(daemon.stop(), 0);
}

// The RECV and SEND events of a document, in order.
std::vector<json> payload_events(const json &doc) {
  std::vector<json> v;
  for (const auto &ev : doc.value("events", json::array()))
    if (ev.value("kind", "") == "RECV" || ev.value("kind", "") == "SEND") v.push_back(ev);
  return v;
}

// "AUTH hunter2-payload\n" as the reader's inline_bytes hex.
constexpr const char kRequestHex[] = "415554482068756e746572322d7061796c6f61640a";

// Guards against: the payload bytes of I/O events (what a process read,
// received, wrote or sent) reaching the journal, which journal-upload
// carries to a central host, unless the admin asked for them; and against
// the timeline file losing them.
TEST_F(DaemonPipeline, PayloadBytesStayInTheFileAndLeaveTheEntryUnlessKept) {
  daemon.start();
  const auto c = crash({CT_PAYLOAD_CRASHER});
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(t.doc["status"], "ok") << t.doc.dump(2).substr(0, 2000);
  const auto in_file = payload_events(t.doc);
  ASSERT_EQ(in_file.size(), 2u) << t.doc["text"];
  EXPECT_EQ(in_file[0]["inline_bytes"], kRequestHex) << "the file keeps the payload";
  const auto entries = wait_timeline_entries(c.pid);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(one(entries[0], jn::kPayload), "omitted");
  EXPECT_EQ(one(entries[0], jn::kPayloadOmitted), "2");
  EXPECT_EQ(one(entries[0], jn::kDocumentBytes), std::to_string(read_text(t.path).size()));
  const std::string sent = one(entries[0], jn::kDocument);
  EXPECT_EQ(sent.find("68756e74657232"), std::string::npos) << "the payload's hex is in the entry";
  EXPECT_EQ(sent.find("hunter2"), std::string::npos) << "the payload is in the entry";
  // The entry's compact document, in the full shape (its text rendered
  // from it by the reader).
  const json doc = ct::test::full_document(json::parse(sent));
  for (const auto &ev : payload_events(doc)) EXPECT_TRUE(ev["inline_bytes"].is_null()) << ev.dump();
  bool open_path = false;
  for (const auto &ev : doc["events"])
    open_path = open_path || (ev.value("kind", "") == "OPEN" && ev.value("inline_text", "") == "/etc/hostname");
  EXPECT_TRUE(open_path) << "an OPEN's path is not payload";
  EXPECT_EQ(doc["text"].get<std::string>().find("hunter2"), std::string::npos) << doc["text"];
  expect_schema_valid(sent, dir.path);
  EXPECT_EQ(daemon.stop(), 0);

  // --journal-payload=yes: the entry's document is the file's.
  daemon.start({"--journal-payload=yes"});
  const auto c2 = crash({CT_PAYLOAD_CRASHER});
  const Timeline t2 = wait_timeline(daemon, c2.pid);
  ASSERT_EQ(t2.doc["status"], "ok");
  const auto kept = wait_timeline_entries(c2.pid);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(one(kept[0], jn::kPayload), "kept");
  EXPECT_EQ(one(kept[0], jn::kDocument), read_text(t2.path));
  const auto kept_payload = payload_events(ct::test::full_document(json::parse(one(kept[0], jn::kDocument))));
  ASSERT_EQ(kept_payload.size(), 2u);
  EXPECT_EQ(kept_payload[0]["inline_bytes"], kRequestHex) << "the entry keeps the payload";
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, BigDocumentIsCutToTheBoundInTheEntryAndWholeInTheFile) {
  // 2 lanes x 4096 slots, full: about 8,000 events, a compact document
  // of some 170 KB, cut to the smallest bound the daemon takes.
  daemon.start({"--journal-document-max", "64K"});
  const auto c = crash({CT_BIG_RING_CRASHER, "1", "4096", "5000"});
  const Timeline t = wait_timeline(daemon, c.pid, 30s);
  ASSERT_EQ(t.doc["status"], "ok");
  const std::string file = read_text(t.path);
  ASSERT_GT(file.size(), 128u << 10) << "the document is not big enough to test the cut";
  const auto entries = wait_timeline_entries(c.pid);
  ASSERT_EQ(entries.size(), 1u);
  const Entry &e = entries[0];
  EXPECT_EQ(one(e, jn::kDocumentCut), "1");
  EXPECT_EQ(one(e, jn::kDocumentBytes), std::to_string(file.size()));
  EXPECT_EQ(one(e, jn::kEvents), std::to_string(t.doc["events"].size())) << "the summary is the whole document's";
  const std::string cut_bytes = one(e, jn::kDocument);
  EXPECT_LE(cut_bytes.size(), 64u << 10);
  EXPECT_GT(cut_bytes.size(), 48u << 10) << "most of the bound is used";
  const json cut = json::parse(cut_bytes);
  ASSERT_TRUE(cut.contains("cut"));
  EXPECT_EQ(cut["cut"]["limit"], 64u << 10);
  EXPECT_EQ(cut["cut"]["document_bytes"], file.size());
  EXPECT_EQ(cut["cut"]["events_total"], t.doc["events"].size());
  const std::size_t kept = cut["cut"]["events_kept"];
  ASSERT_EQ(cut["events"].size(), kept);
  ASSERT_GT(kept, 0u);
  EXPECT_LT(kept, t.doc["events"].size());
  // The newest events, as the file has them (compared in the full shape:
  // the cut copy's first event carries its whole timestamp).
  const json cut_full = ct::test::full_document(cut);
  ASSERT_EQ(cut_full["events"].size(), kept);
  const json &all_events = t.doc["events"];
  for (std::size_t i = 0; i < kept; ++i)
    ASSERT_EQ(cut_full["events"][i], all_events[all_events.size() - kept + i]) << i;
  // Every other member whole: spans still refer to the whole document's
  // event indices.
  const json stored = json::parse(file);
  EXPECT_EQ(cut["crash"], stored["crash"]);
  EXPECT_EQ(cut["spans"], stored["spans"]);
  EXPECT_EQ(cut["tables"], stored["tables"]);
  EXPECT_FALSE(t.doc.contains("cut")) << "the file stays whole";
  expect_schema_valid(cut_bytes, dir.path);
  // ctl-query reads the cut document as a stored one: show and export.
  const std::string cdir = dir.path + "/cut";
  fs::create_directories(cdir);
  std::ofstream(cdir + "/" + fs::path(t.path).filename().string(), std::ios::binary) << cut_bytes;
  const auto show = ct::test::run({CT_CTL_QUERY_BIN, "-D", cdir, "show", std::to_string(c.pid)});
  EXPECT_TRUE(show.ok()) << show.err;
  EXPECT_NE(show.err.find("this timeline was cut to fit its journal entry: " + std::to_string(kept) + " of "),
            std::string::npos)
      << show.err;
  const auto exported = ct::test::run({CT_CTL_QUERY_BIN, "-D", cdir, "export", "--format", "chrome-trace", "--output",
                                       dir.path + "/cut.trace.json", std::to_string(c.pid)});
  EXPECT_TRUE(exported.ok()) << exported.err;
  EXPECT_TRUE(json::accept(read_text(dir.path + "/cut.trace.json")));
  EXPECT_EQ(daemon.stop(), 0);

  // A bound above the document: a document of over 1 MiB (some 32,000
  // events) arrives whole (sd_journal_sendv passes it in a sealed memfd).
  daemon.start({"--journal-document-max", "64M"});
  const auto c2 = crash({CT_BIG_RING_CRASHER, "8", "4096", "5000"});
  const Timeline t2 = wait_timeline(daemon, c2.pid, 30s);
  ASSERT_EQ(t2.doc["status"], "ok");
  const auto e2 = wait_timeline_entries(c2.pid);
  ASSERT_EQ(e2.size(), 1u);
  const std::string file2 = read_text(t2.path);
  EXPECT_GT(file2.size(), 1u << 20);
  EXPECT_EQ(one(e2[0], jn::kDocument), file2) << "the document is not the file's bytes";
  EXPECT_EQ(one(e2[0], jn::kDocumentCut), "<absent>");
  EXPECT_EQ(daemon.stop(), 0);
}

// The timeline entry is data, not a log line: a daemon that logs to stderr
// only (as fixtures/demo.sh runs it) sends it all the same, and ctl-query
// finds the crash in the journal alone (no -D, no --files).
TEST_F(DaemonPipeline, TimelineEntryIsSentWhateverTheLogTarget) {
  daemon.options().log_target = "stderr";
  daemon.start();
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(t.doc["status"], "ok");
  const auto entries = wait_timeline_entries(c.pid);
  ASSERT_EQ(entries.size(), 1u) << "no timeline entry from a daemon logging to stderr:\n" << daemon.log_tail();
  expect_path_a_entry(entries[0], t, c.pid);
  EXPECT_EQ(one(entries[0], jn::kDocument), read_text(t.path));
  EXPECT_TRUE(trusted(entries[0]));
  EXPECT_EQ(daemon.stop(), 0);
  const std::string since = "--since=@" + std::to_string(c.not_before_usec / 1000000 - 1);
  const auto listed = ct::test::run({CT_CTL_QUERY_BIN, since, "list", std::to_string(c.pid)});
  EXPECT_EQ(listed.exit_code(), 0) << listed.err;
  EXPECT_NE(listed.out.find(" " + std::to_string(c.pid) + " "), std::string::npos) << listed.out << listed.err;
  EXPECT_NE(listed.out.find(" ok "), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("BEFORE_DIE"), std::string::npos) << listed.out;
}

TEST_F(DaemonPipeline, TimelineEntryIsSentOnceAcrossARestart) {
  const std::string cursor = daemon.state_dir() + "/cursor";
  // Case 1: file and entry both there before the restart: no second entry.
  daemon.start();
  // The first start's cursor (its anchor), saved once the backlog is done.
  ASSERT_TRUE(ct::test::wait_until([&] { return fs::exists(cursor); }, 60s)) << daemon.log_tail();
  const std::string before = read_text(cursor);
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(wait_timeline_entries(c.pid, 1, 60s, t.path).size(), 1u);
  EXPECT_EQ(daemon.stop(), 0);
  // The restart redoes the entry (a kill before the cursor was saved).
  std::ofstream(cursor, std::ios::trunc) << before;
  daemon.start();
  ASSERT_TRUE(daemon.wait_log("pid " + std::to_string(c.pid) + ": its timeline already exists", 10s))
      << daemon.log_tail();
  // It logs that after it decided on the entry (and sent it, if it did):
  // once journald has everything sent before now, a second entry is there.
  ct::test::journal_barrier();
  EXPECT_EQ(timeline_entries(c.pid, t.path).size(), 1u) << "a second entry for the same crash";
  EXPECT_EQ(daemon.stop(), 0);

  // Case 2: the file written, its entry not sent (here: a run whose
  // journald socket is hidden, so its entry reaches no journald), then a
  // restart: the entry comes from the file.
  const std::string before2 = read_text(cursor);
  daemon.options().binary = without_journald_socket(dir.path);
  daemon.options().log_target = "stderr";
  daemon.start();
  const auto c2 = crash({CT_CRASH_DEMO, "--path=b"});
  const Timeline t2 = wait_timeline(daemon, c2.pid);
  ASSERT_EQ(t2.doc["status"], "ok");
  // Its line for the timeline comes where the entry would have been sent;
  // once journald has everything sent before now, an entry would be there.
  ASSERT_TRUE(daemon.wait_log("events written to " + t2.path, 60s)) << daemon.log_tail();
  ct::test::journal_barrier();
  ASSERT_EQ(timeline_entries(c2.pid, t2.path).size(), 0u);
  EXPECT_EQ(daemon.stop(), 0);
  std::ofstream(cursor, std::ios::trunc) << before2;
  daemon.options().binary = CT_DAEMON_BIN;
  daemon.options().log_target = "both";
  daemon.start();
  // Sent by this run, from the file: the first run's never reached the journal.
  ASSERT_TRUE(daemon.wait_log("pid " + std::to_string(c2.pid) + ": its timeline " + t2.path +
                                  " was written before its journal entry was sent (a restart); sending it",
                              60s))
      << daemon.log_tail();
  const auto e2 = wait_timeline_entries(c2.pid, 1, 60s, t2.path);
  ASSERT_EQ(e2.size(), 1u) << daemon.log_tail();
  EXPECT_EQ(one(e2[0], jn::kDocument), read_text(t2.path));
  EXPECT_EQ(one(e2[0], jn::kStatus), "ok");
  EXPECT_EQ(one(e2[0], jn::kLastEvent), "BEFORE_DIE");
  EXPECT_TRUE(trusted(e2[0]));
  // ...and the crash of case 1, redone once more, still has one: its
  // entry comes before c2's in the journal, so the daemon handled it before
  // it sent c2's entry; and journald has everything sent before now.
  ct::test::journal_barrier();
  EXPECT_EQ(timeline_entries(c.pid, t.path).size(), 1u);
  EXPECT_EQ(timeline_entries(c2.pid, t2.path).size(), 1u);
  EXPECT_EQ(daemon.stop(), 0);
}

// ---- never lose or repeat a crash ---------------------------------------------

TEST_F(DaemonPipeline, ThirtyTwoSimultaneousCrashesGiveThirtyTwoTimelines) {
  ct::test::CorePipeLimit limit(64);  // systemd's 16 would make the kernel drop cores
  daemon.start();
  const std::uint64_t t = now_usec();
  std::vector<pid_t> pids;
  for (int i = 0; i < 32; ++i) pids.push_back(spawn_crasher({CT_CRASH_DEMO, "--path=a"}));
  std::vector<Crash> crashes;
  for (pid_t p : pids) crashes.push_back(wait_crash(p, t));
  for (const auto &c : crashes) ASSERT_TRUE(WCOREDUMP(c.status)) << "pid " << c.pid << " got no core";
  std::set<std::string> cursors, paths;
  for (const auto &c : crashes) {
    Timeline tl = wait_timeline(daemon, c.pid, 30s);
    EXPECT_EQ(tl.doc["status"], "ok") << tl.path;
    EXPECT_EQ(tl.doc["coredump"]["fields"]["COREDUMP_PID"], std::to_string(c.pid));
    cursors.insert(tl.doc["coredump"]["journal_cursor"].get<std::string>());
    paths.insert(tl.path);
  }
  EXPECT_EQ(cursors.size(), 32u);
  EXPECT_EQ(paths.size(), 32u);
  // Each crash has exactly one timeline among everything written.
  for (const auto &c : crashes) EXPECT_EQ(daemon.files_of(c.pid), 1u) << "pid " << c.pid;
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, KillNineDuringAStormThenRestartGivesExactlyOneEach) {
  ct::test::CorePipeLimit limit(64);
  daemon.start();
  const std::uint64_t t = now_usec();
  std::vector<pid_t> pids;
  for (int i = 0; i < 32; ++i) pids.push_back(spawn_crasher({CT_CRASH_DEMO, "--path=a"}));
  std::vector<Crash> crashes;
  for (pid_t p : pids) crashes.push_back(Crash{p, 0, t});
  // Kill the daemon as soon as its first timeline of the storm is there,
  // while the storm goes on: it writes each timeline about 1 ms after its
  // entry (prepared.h), so waiting for the crashers first would be too late.
  std::size_t at_kill = 0;
  const auto deadline = Clock::now() + 120s;  // bounds a hang only
  while (Clock::now() < deadline && (at_kill = count_timelines(daemon, crashes)) == 0)
    std::this_thread::sleep_for(1ms);  // the poll's period
  daemon.kill_now();
  for (auto &c : crashes) c = wait_crash(c.pid, t);
  ASSERT_GT(at_kill, 0u) << "no timeline within 120 s:\n" << daemon.log_tail();
  at_kill = count_timelines(daemon, crashes);
  ASSERT_LT(at_kill, 32u) << "the storm was over before the kill; the test proves nothing";
  // Nothing may remain of the killed run but whole timelines.
  std::map<std::string, ino_t> before;
  for (const auto &d : daemon.timeline_dirs())
    for (const auto &e : fs::directory_iterator(d)) {
      EXPECT_TRUE(e.path().filename().string().ends_with(".timeline.json")) << e.path();
      EXPECT_FALSE(json::parse(read_text(e.path()), nullptr, false).is_discarded()) << e.path();
      struct stat st;
      stat(e.path().c_str(), &st);
      before[e.path()] = st.st_ino;
    }
  // The decoder of the killed daemon dies with it (PR_SET_PDEATHSIG).
  daemon.start();
  for (const auto &c : crashes) {
    Timeline tl = wait_timeline(daemon, c.pid, 30s);
    EXPECT_EQ(tl.doc["status"], "ok") << tl.path;
  }
  for (const auto &c : crashes) EXPECT_EQ(daemon.files_of(c.pid), 1u) << "pid " << c.pid;
  // What was written before the kill was not written again.
  for (const auto &[path, ino] : before) {
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_ino, ino) << path << " was rewritten";
  }
  EXPECT_TRUE(fs::is_empty(daemon.state_dir() + "/tmp"));
  std::fprintf(stderr, "timelines at the kill: %zu of 32\n", at_kill);
  EXPECT_EQ(daemon.stop(), 0);
}

namespace {

// Whether process `pid` is stopped (state T in /proc/PID/stat).
bool process_stopped(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'T';
}

// A crasher (`argv`, as `uid` if given) that writes its own pid into
// `pid_file` before it execs, so that the daemon's test seam
// (CT_TEST_STOP_AFTER_ENTRY_OF) knows the crash before its entry exists.
pid_t spawn_naming_itself(const std::string &pid_file, const std::vector<std::string> &argv,
                          std::optional<uid_t> uid = {}) {
  ct::test::ProcessOptions po;
  po.out = ct::test::Stream::null();
  po.err = ct::test::Stream::null();
  po.in_child = [&pid_file, uid] {
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int fd = open(pid_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const std::string pid = std::to_string(getpid());
    if (fd < 0 || write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size()))
      ct::test::child_failed("cannot write the pid file");
    close(fd);
    if (uid && (setgroups(0, nullptr) < 0 || setresgid(*uid, *uid, *uid) < 0 || setresuid(*uid, *uid, *uid) < 0))
      ct::test::child_failed("cannot change its uid");
  };
  return ct::test::spawn(argv, po);
}

Crash crash_naming_itself(const std::string &pid_file) {
  const std::uint64_t t = now_usec();
  Crash c = wait_crash(spawn_naming_itself(pid_file, {CT_CRASH_DEMO, "--path=a"}), t);
  EXPECT_TRUE(WIFSIGNALED(c.status) && WCOREDUMP(c.status)) << "wait status " << c.status;
  return c;
}

// RAII: a coredump.conf drop-in of the test's in /etc/systemd/coredump.conf.d
// (made if missing), which systemd-coredump reads at every crash; removed on
// every way out, with the directory if the test made it.  One at a time;
// the test holds RESOURCE_LOCK ct_coredump_pipeline (ct_add_pipeline_test).
class CoredumpDropIn {
 public:
  explicit CoredumpDropIn(const std::string &settings) {
    made_dir_ = mkdir(kDir, 0755) == 0;
    std::ofstream(kPath) << "# core-timeline daemon_pipeline_test; removed when the test ends\n[Coredump]\n" << settings;
  }
  ~CoredumpDropIn() { remove(); }
  void remove() {
    unlink(kPath);
    if (made_dir_) rmdir(kDir);  // leave the machine as found
    made_dir_ = false;
  }
  static constexpr const char *kDir = "/etc/systemd/coredump.conf.d";
  static constexpr const char *kPath = "/etc/systemd/coredump.conf.d/zz-ct-daemon-pipeline-test.conf";

 private:
  bool made_dir_ = false;
};

// What systemd-coredump's vacuum counts in its directory (systemd 252
// src/coredump/coredump-vacuum.c): every regular file named core.COMM.UID.…,
// timelines included, its st_blocks * 512 bytes, and how many each uid has.
// The vacuum removes the oldest file (by mtime) of the uid with the most
// files, again and again, while their sum is above MaxUse= (page-aligned).
struct VacuumView {
  std::uint64_t sum = 0;
  std::map<std::uint64_t, std::size_t> files;  // uid -> count
};
VacuumView vacuum_view() {
  VacuumView v;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator("/var/lib/systemd/coredump", ec)) {
    const std::string name = e.path().filename();
    if (!name.starts_with("core.")) continue;
    const auto dot = name.find('.', 5);
    const auto end = dot == std::string::npos ? dot : name.find('.', dot + 1);
    if (end == std::string::npos) continue;
    std::uint64_t uid = 0;
    const auto [p, err] = std::from_chars(name.data() + dot + 1, name.data() + end, uid);
    if (err != std::errc() || p != name.data() + end) continue;
    struct stat st;
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    v.sum += static_cast<std::uint64_t>(st.st_blocks) * 512;
    ++v.files[uid];
  }
  return v;
}

std::uint64_t disk_bytes(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_blocks) * 512 : 0;
}

// RAII: `n` empty files of uid `uid` in the coredump directory, named as
// systemd-coredump names cores (so its vacuum counts them: no bytes, one
// file each), removed on every way out.  They make `uid` the user with the
// most files, whose oldest files the vacuum removes first.
struct VacuumPlaceholders {
  std::vector<std::string> paths;
  VacuumPlaceholders(std::uint64_t uid, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::string p = "/var/lib/systemd/coredump/core.ct-vacuum-placeholder." + std::to_string(uid) + "." +
                            boot_id() + "." + std::to_string(i) + "." + std::to_string(now_usec());
      const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) continue;
      close(fd);
      paths.push_back(p);
    }
  }
  ~VacuumPlaceholders() {
    for (const auto &p : paths) unlink(p.c_str());
  }
};

}  // namespace

// A daemon stopped after it linked a timeline next to its core and sent its
// entry, before it saved its cursor; meanwhile systemd-coredump's vacuum,
// made to run by a MaxUse= drop-in and the next crash, removes the core and
// the timeline.  The restart must not do that entry again as core_missing:
// the journal holds one entry for the crash, ok, and ctl-query list and
// show, over exactly this daemon's entries, give it.
//
// The vacuum is real (systemd-coredump's own, through
// /etc/systemd/coredump.conf.d, removed at once) and takes exactly that
// crash's core and timeline.  It removes the oldest file of the uid with the
// most files while the directory holds more than MaxUse=: the crash's two
// files are made root's oldest (their mtime set back to 1970), root is given
// more (empty) files than any other uid has, and MaxUse= is what the
// directory holds less those two files, so the vacuum stops after them.
// Other tests' cores on the machine are left alone (unless one stores a core
// in that second).
TEST_F(DaemonPipeline, ATimelineVacuumedBeforeTheCursorSaveIsNotRedoneAsCoreMissing) {
  // Timelines next to the cores, as the packaged daemon writes them: where
  // the vacuum counts and removes them.
  auto opts = daemon_options(dir.path);
  opts.output_dir = false;
  ct::test::DaemonHarness first{opts};
  const std::string pid_file = dir.path + "/stop-after-entry-of";
  first.start({}, {{"CT_TEST_STOP_AFTER_ENTRY_OF", pid_file}});
  // The first start's cursor (its anchor), saved once the backlog is done:
  // the start of a daemon below that has lost what this one knows.
  const std::string cursor = first.state_dir() + "/cursor";
  ASSERT_TRUE(ct::test::wait_until([&] { return fs::exists(cursor); }, 60s)) << first.log_tail();
  const std::string anchor = read_text(cursor);
  const auto c = crash_naming_itself(pid_file);
  ASSERT_TRUE(ct::test::wait_until([&] { return process_stopped(first.pid()); }, 60s))
      << "the daemon did not stop after the entry of pid " << c.pid << ":\n" << first.log_tail();
  const auto core = stored_core(c);
  ASSERT_TRUE(core) << "no stored core of pid " << c.pid;
  const std::string core_name = fs::path(*core).filename();
  const std::string timeline = "/var/lib/systemd/coredump/" + core_timeline::document::timeline_name_for_core(core_name);
  ASSERT_TRUE(fs::exists(timeline)) << timeline << "\n" << first.log_tail();
  ASSERT_EQ(json::parse(read_text(timeline))["status"], "ok");
  ct::test::journal_barrier();
  ASSERT_EQ(timeline_entries(c.pid, timeline).size(), 1u) << "its entry was sent before the stop";
  first.kill_now();

  {
    const struct timespec core_time[2] = {{1, 0}, {1, 0}}, timeline_time[2] = {{2, 0}, {2, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, core->c_str(), core_time, AT_SYMLINK_NOFOLLOW), 0) << *core;
    ASSERT_EQ(utimensat(AT_FDCWD, timeline.c_str(), timeline_time, AT_SYMLINK_NOFOLLOW), 0) << timeline;
    std::size_t most = 0;
    for (const auto &[u, n] : vacuum_view().files) most = std::max(most, n);
    VacuumPlaceholders placeholders(0, most + 32);
    ASSERT_EQ(placeholders.paths.size(), most + 32);
    const std::uint64_t core_bytes = disk_bytes(*core), timeline_bytes = disk_bytes(timeline);
    // The vacuum compares with MaxUse= rounded up to a page: it goes on
    // after the core only while the timeline is at least a page.
    ASSERT_GE(timeline_bytes, 4096u);
    const VacuumView now = vacuum_view();
    ASSERT_GT(now.sum, core_bytes + timeline_bytes);
    const std::uint64_t max_use = now.sum - core_bytes - timeline_bytes;
    const std::uint64_t since = now_usec();
    CoredumpDropIn drop_in("MaxUse=" + std::to_string(max_use) + "\n");
    // The next crash's systemd-coredump vacuums before it stores its core.
    const auto trigger = crash({CT_CRASH_DEMO, "--path=b"});
    EXPECT_TRUE(ct::test::wait_until([&] { return !fs::exists(*core) && !fs::exists(timeline); }, 30s))
        << "the vacuum (MaxUse=" << max_use << ") left " << (fs::exists(*core) ? *core : timeline);
    drop_in.remove();
    ASSERT_FALSE(fs::exists(*core));
    ASSERT_FALSE(fs::exists(timeline));
    // systemd-coredump says so in the journal.
    EXPECT_TRUE(wait_journal({"MESSAGE=Removed old coredump " + core_name + "."}, since, 30s))
        << "no 'Removed old coredump " << core_name << ".' in the journal";
    EXPECT_TRUE(stored_core(trigger)) << "the crash that ran the vacuum lost its own core";
  }

  first.start();
  const std::string state_path = first.state_dir() + "/timelines/" + fs::path(timeline).filename().string();
  // Done with the entry: either it says it was sent before, or (a daemon
  // that redoes it) a core_missing timeline appears.
  ASSERT_TRUE(ct::test::wait_until(
      [&] {
        return first.log().find("pid " + std::to_string(c.pid) + ": its timeline entry was sent by an earlier run") !=
                   std::string::npos ||
               fs::exists(state_path) || fs::exists(timeline);
      },
      60s))
      << first.log_tail();
  ct::test::journal_barrier();
  EXPECT_FALSE(fs::exists(state_path)) << "the crash was stored again: " << read_text(state_path).substr(0, 300);
  EXPECT_FALSE(fs::exists(timeline)) << "the crash was stored again: " << read_text(timeline).substr(0, 300);
  const auto redone = timeline_entries(c.pid, state_path);
  EXPECT_EQ(redone.size(), 0u) << "a second entry for the crash, status "
                               << (redone.empty() ? "" : one(redone[0], jn::kStatus));
  const auto entries = timeline_entries(c.pid);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(one(entries[0], jn::kStatus), "ok");
  EXPECT_EQ(one(entries[0], jn::kTimelinePath), timeline);
  EXPECT_EQ(first.stop(), 0);

  // A daemon that has lost what the first one knew (its state directory:
  // a cursor that could not be saved, a new state directory) does the entry
  // again and can only say that the core is gone: core_missing, logged
  // after the ok entry.
  const std::string second_root = dir.path + "/second";
  fs::create_directories(second_root + "/state");
  std::ofstream(second_root + "/state/cursor") << anchor;
  ct::test::DaemonHarness second{daemon_options(second_root)};
  const auto once = second.run_once();
  ASSERT_EQ(once.exit_code(), 0) << second.log_tail();
  const std::string second_path = second.state_dir() + "/timelines/" + fs::path(timeline).filename().string();
  ASSERT_TRUE(fs::exists(second_path)) << second.log_tail();
  ASSERT_EQ(json::parse(read_text(second_path))["status"], "core_missing");
  ct::test::journal_barrier();

  // ctl-query over these daemons' entries of the crash only (other tests'
  // daemons follow the same journal), with their document entries: a
  // journal file of them.
  const std::string jdir = dir.path + "/journal";
  fs::create_directories(jdir);
  const std::string tp(jn::kTimelinePath);
  const auto copied = ct::test::run(
      {"/bin/sh", "-c",
       "journalctl --no-pager -o export MESSAGE_ID=" + std::string(jn::kTimelineMessageId) +
           " MESSAGE_ID=" + std::string(jn::kDocumentMessageId) + " " + tp + "=\"$1\" " +
           tp + "=\"$2\" " + tp + "=\"$3\" | /lib/systemd/systemd-journal-remote -o \"$4\"/remote.journal -",
       "sh", timeline, state_path, second_path, jdir});
  ASSERT_TRUE(copied.ok()) << copied.err;
  // The journal holds the ok entry and the later core_missing one; the
  // second directory the core_missing file.  Each way, the ok one is shown.
  for (const std::vector<std::string> &sources :
       {std::vector<std::string>{"-D", jdir}, std::vector<std::string>{"-D", jdir, "-D", second.state_dir() + "/timelines"}}) {
    std::vector<std::string> argv{CT_CTL_QUERY_BIN};
    argv.insert(argv.end(), sources.begin(), sources.end());
    auto with = [&](std::vector<std::string> rest) {
      std::vector<std::string> a = argv;
      a.insert(a.end(), rest.begin(), rest.end());
      return ct::test::run(a);
    };
    const auto listed = with({"--json", "list", std::to_string(c.pid)});
    ASSERT_TRUE(listed.ok()) << listed.err;
    std::vector<json> rows;
    std::istringstream lines(listed.out);
    for (std::string line; std::getline(lines, line);) rows.push_back(json::parse(line));
    ASSERT_EQ(rows.size(), 1u) << listed.out;
    EXPECT_EQ(rows[0]["status"], "ok") << sources.size() << " sources: " << listed.out;
    const auto shown = with({"show", std::to_string(c.pid)});
    ASSERT_TRUE(shown.ok()) << shown.err;
    EXPECT_NE(shown.out.find("BEFORE_DIE"), std::string::npos) << shown.out.substr(0, 2000);
    // It says it chose, and why.
    EXPECT_NE(shown.err.find("documents of this crash; this one (ok, "), std::string::npos) << shown.err;
    EXPECT_NE(shown.err.find("the core_missing one only says the core was gone"), std::string::npos) << shown.err;
  }
}

// The daemon run by hand (not under the packaged unit: its child sends a
// user's entry from the test's cgroup, as that user), a storm of two
// users' crashes, and a kill -9 in the middle: right after the entry of
// one of them was sent and before the cursor was saved past it (the test
// seam stops the daemon there, so the moment is certain).  After the
// restart every crash has exactly one timeline and one timeline entry.
TEST_F(DaemonPipeline, KillNineInAStormOfTwoUsersCrashesByHandGivesEachCrashOnce) {
  ct::test::CorePipeLimit limit(64);
  const std::string exe = dir.path + "/crash_demo";
  fs::copy_file(CT_CRASH_DEMO, exe);
  chmod(exe.c_str(), 0755);
  const std::string pid_file = dir.path + "/stop-after-entry-of";
  daemon.start({}, {{"CT_TEST_STOP_AFTER_ENTRY_OF", pid_file}});
  const std::uint64_t t = now_usec();
  std::vector<pid_t> pids{spawn_naming_itself(pid_file, {exe, "--path=a"}, 1234)};
  for (int i = 1; i < 24; ++i)
    pids.push_back(spawn_crasher({exe, i % 2 ? "--path=b" : "--path=a"}, std::nullopt, i % 2 ? 1235 : 1234));
  std::vector<Crash> crashes;
  for (pid_t p : pids) crashes.push_back(wait_crash(p, t));
  for (const auto &c : crashes) ASSERT_TRUE(WCOREDUMP(c.status)) << "pid " << c.pid << " got no core";
  ASSERT_TRUE(ct::test::wait_until([&] { return process_stopped(daemon.pid()); }, 120s))
      << "the daemon did not stop after the entry of pid " << pids[0] << ":\n" << daemon.log_tail();
  ct::test::journal_barrier();
  ASSERT_EQ(timeline_entries(pids[0], dir.path + "/out/" + fs::path(daemon.find_timeline(pids[0], t)->path).filename().string()).size(), 1u);
  daemon.kill_now();
  daemon.start();
  std::map<pid_t, std::string> paths;
  for (const auto &c : crashes) {
    const Timeline tl = wait_timeline(daemon, c.pid, 60s, t);
    EXPECT_EQ(tl.doc["status"], "ok") << tl.path;
    paths[c.pid] = tl.path;
  }
  // Every entry of the restart is sent by now (its log line follows the
  // send): the last timeline's line, then a barrier.
  for (const auto &c : crashes)
    ASSERT_TRUE(ct::test::wait_until([&] { return !timeline_entries(c.pid, paths[c.pid]).empty(); }, 60s))
        << "no entry for pid " << c.pid << ":\n" << daemon.log_tail();
  EXPECT_EQ(daemon.stop(), 0);
  ct::test::journal_barrier();
  for (const auto &c : crashes) {
    EXPECT_EQ(daemon.files_of(c.pid), 1u) << "pid " << c.pid;
    const auto entries = timeline_entries(c.pid, paths[c.pid]);
    EXPECT_EQ(entries.size(), 1u) << "pid " << c.pid << (c.pid == pids[0] ? " (the one the kill followed)" : "");
  }
}

namespace {

// RAII: a tmpfs of `size` (mount(8)'s size=) on `dir`, made if missing,
// unmounted on every way out (lazily: a daemon still running may hold it).
struct SmallTmpfs {
  std::string dir;
  bool mounted = false;
  SmallTmpfs(std::string d, const std::string &size) : dir(std::move(d)) {
    fs::create_directories(dir);
    mounted = mount("tmpfs", dir.c_str(), "tmpfs", 0, ("mode=0755,size=" + size).c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted) umount2(dir.c_str(), MNT_DETACH);
  }
  bool resize(const std::string &size) {
    return mount("tmpfs", dir.c_str(), "tmpfs", MS_REMOUNT, ("mode=0755,size=" + size).c_str()) == 0;
  }
};

}  // namespace

// The state directory (where cores are extracted) on a tmpfs smaller than
// one core: the crash's extraction fails with ENOSPC.  The daemon says at
// start that the space is short, tries the entry kResourceAttempts times,
// stores it as core_unreadable saying why, logs that at error priority with
// its MESSAGE_ID, and goes on: once there is space, the next crash is ok,
// without a restart.
TEST_F(DaemonPipeline, AStateDirectorySmallerThanACoreStoresTheCrashAsFailedAndGoesOn) {
  SmallTmpfs small(daemon.state_dir(), "1m");
  ASSERT_TRUE(small.mounted) << "cannot mount a tmpfs on " << daemon.state_dir() << ": " << std::strerror(errno);
  {
    // The largest core systemd-coredump may store, as the daemon reads it
    // at start from coredump.conf and its drop-ins: 512 MiB, less than
    // --max-kept (1 GiB), is what an extraction may need.
    CoredumpDropIn drop_in("ProcessSizeMax=512M\nExternalSizeMax=512M\n");
    daemon.start();
  }
  EXPECT_TRUE(daemon.wait_log("less than the 512.0 MiB a core's extraction may need there: systemd-coredump hands on "
                              "cores of up to 512.0 MiB (Storage=external, ProcessSizeMax=512M, ExternalSizeMax=512M, "
                              "from ",
                              10s))
      << daemon.log_tail();
  EXPECT_NE(daemon.log().find(std::string(CoredumpDropIn::kPath) + ")"), std::string::npos) << daemon.log_tail();
  const pid_t first_daemon = daemon.pid();
  const std::uint64_t since = now_usec();
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  const Timeline t = wait_timeline(daemon, c.pid, 60s, c.not_before_usec);
  ASSERT_FALSE(t.path.empty());
  EXPECT_EQ(t.doc["status"], "core_unreadable") << t.path;
  const std::string reason = t.doc.value("reason", "");
  EXPECT_NE(reason.find("not processed for want of a resource after 4 attempts"), std::string::npos) << reason;
  EXPECT_NE(reason.find("No space left on device"), std::string::npos) << reason;
  EXPECT_EQ(daemon.wait_exit(0ms), -3) << "the daemon stopped:\n" << daemon.log_tail();
  const auto err = wait_journal({"MESSAGE_ID=99703ef76b5949a28bbeea41cbd27980", "CORE_TIMELINE_PID=" + std::to_string(c.pid)},
                                since, 60s);
  ASSERT_TRUE(err) << "no error entry for pid " << c.pid;
  EXPECT_EQ(err->at("PRIORITY"), "3");
  EXPECT_NE(err->at("MESSAGE").find("going on with the later entries"), std::string::npos) << err->at("MESSAGE");

  // An uncompressed core (Compress=no) the decoder maps as stored: no
  // space in the state directory needed, so it is ok on the full tmpfs.
  {
    CoredumpDropIn drop_in("Compress=no\n");
    const auto plain = crash({CT_CRASH_DEMO, "--path=a"});
    drop_in.remove();
    const auto core = stored_core(plain);
    ASSERT_TRUE(core) << "no stored core of pid " << plain.pid;
    ASSERT_FALSE(core->ends_with(".zst") || core->ends_with(".lz4") || core->ends_with(".xz")) << *core;
    const Timeline t3 = wait_timeline(daemon, plain.pid, 60s, plain.not_before_usec);
    EXPECT_EQ(t3.doc["status"], "ok") << t3.path << "\n" << daemon.log_tail();
    EXPECT_EQ(t3.doc["daemon"]["extraction"]["compression"], "none") << t3.path;
    EXPECT_EQ(t3.doc["daemon"]["extraction"]["kept_bytes"], t3.doc["daemon"]["extraction"]["core_bytes"]) << t3.path;
  }

  ASSERT_TRUE(small.resize("256m"));
  const auto c2 = crash({CT_CRASH_DEMO, "--path=b"});
  const Timeline t2 = wait_timeline(daemon, c2.pid, 60s, c2.not_before_usec);
  EXPECT_EQ(t2.doc["status"], "ok") << t2.path;
  EXPECT_EQ(daemon.pid(), first_daemon);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, JournalRotationBetweenCrashesMissesNothingAndLeaksNoDescriptors) {
  daemon.start();
  std::vector<Crash> crashes;
  std::size_t others0 = 0;
  std::string others0_list;
  // A deadline for an entry that never comes, not a speed (CI's 2-core
  // machine, loaded, once took more than 10 s here).
  constexpr auto kTimelineDeadline = 30s;
  for (int i = 0; i < 3; ++i) {
    crashes.push_back(crash({CT_CRASH_DEMO, i % 2 ? "--path=b" : "--path=a"}));
    wait_timeline(daemon, crashes.back().pid, kTimelineDeadline);
    if (i == 0) {
      // The steady state, once an entry was handled.
      for (const auto &t : fd_targets(daemon.pid()))
        if (!is_journal(t)) ++others0, others0_list += " " + t;
    }
    const auto rotated = ct::test::run({"/usr/bin/journalctl", "--rotate"});
    ASSERT_EQ(rotated.exit_code(), 0) << rotated.err;
  }
  crashes.push_back(crash({CT_CRASH_DEMO, "--path=a"}));
  for (const auto &c : crashes) EXPECT_EQ(wait_timeline(daemon, c.pid, kTimelineDeadline).doc["status"], "ok");
  // sd-journal holds one descriptor per journal file on disk (archived
  // files stay until journald vacuums them).  Other tests may rotate or
  // vacuum at the same time, so the invariant is checked, not a count:
  // no descriptor of a deleted journal file, no more journal descriptors
  // than journal files, and no growth in the others.
  std::string why;
  // Polled until it holds; the deadline bounds a hang only.
  for (auto deadline = Clock::now() + 60s;; std::this_thread::sleep_for(100ms)) {
    std::size_t journal = 0, deleted = 0, others = 0;
    std::string other_list;
    for (const auto &t : fd_targets(daemon.pid())) {
      if (!is_journal(t)) ++others, other_list += " " + t;
      else if (t.ends_with(" (deleted)")) ++deleted;
      else ++journal;
    }
    const std::size_t files = journal_files();
    why = "journal descriptors " + std::to_string(journal) + " (files on disk " + std::to_string(files) +
          "), of deleted files " + std::to_string(deleted) + ", others " + std::to_string(others) + " (at start " +
          std::to_string(others0) + ":" + others0_list + "):" + other_list;
    if ((deleted == 0 && journal <= files && others <= others0) || Clock::now() >= deadline) {
      EXPECT_EQ(deleted, 0u) << why;
      EXPECT_LE(journal, files) << why;
      EXPECT_LE(others, others0) << why;
      break;
    }
  }
  std::fprintf(stderr, "after 3 rotations: %s\n", why.c_str());
  EXPECT_EQ(daemon.stop(), 0);
}

// ---- untrusted entries ---------------------------------------------------------

TEST_F(DaemonPipeline, ForgedEntriesAreIgnoredAndLogged) {
  daemon.start();
  const std::uint64_t since = now_usec();
  const std::string fake_pid = "4000000";  // above any pid_max
  const std::string ts = std::to_string(since / 1000000 * 1000000);
  // 1. An ordinary process (nobody), naming itself like systemd-coredump.
  int hold[2];
  ASSERT_EQ(pipe2(hold, O_CLOEXEC), 0);
  pid_t forger = fork();
  if (forger == 0) {
    close(hold[1]);
    if (setgroups(0, nullptr) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
      _exit(3);
    prctl(PR_SET_NAME, "systemd-coredum");
    int r = sd_journal_send("MESSAGE=Process 4000000 (evil) of user 65534 dumped core.",
                            "MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1", "COREDUMP_FILENAME=/etc/shadow",
                            ("COREDUMP_PID=" + fake_pid).c_str(), "COREDUMP_UID=65534",
                            // Every field coredumpctl 252 needs: without
                            // COREDUMP_GID it aborts (parse_uid(NULL)) on
                            // this entry, for every later `coredumpctl list`.
                            "COREDUMP_GID=65534", "COREDUMP_SIGNAL=11",
                            ("COREDUMP_TIMESTAMP=" + ts).c_str(), "COREDUMP_COMM=evil", nullptr);
    // Alive (journald reads the sender's _EXE from /proc) until the test
    // has seen the entry in the journal and closes the pipe.
    char b;
    (void)!read(hold[0], &b, 1);
    _exit(r < 0 ? 4 : 0);
  }
  close(hold[0]);
  const bool forged_written =
      wait_journal({"COREDUMP_PID=" + fake_pid, "_PID=" + std::to_string(forger)}, since, 60s).has_value();
  close(hold[1]);
  int st = 0;
  waitpid(forger, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the forger failed: " << st;
  ASSERT_TRUE(forged_written) << "the forged entry never reached the journal";
  auto e = wait_journal({"MESSAGE_ID=" + std::string(ctd::kMsgEntryRejected),
                         "CORE_TIMELINE_SENDER_PID=" + std::to_string(forger)},
                        since, 5s);
  ASSERT_TRUE(e) << "no rejection logged for the forger pid " << forger << "\n" << daemon.log_tail();
  EXPECT_EQ((*e)["PRIORITY"], "4");
  EXPECT_EQ((*e)["CORE_TIMELINE_SENDER_UID"], "65534");

  // 2. The same through systemd-coredump itself, which any user can run in
  // --backtrace mode: _EXE and _COMM are then systemd-coredump's.
  const std::string input = dir.path + "/forged-entry";
  std::ofstream(input) << "MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1\nCOREDUMP_FILENAME=/etc/shadow\n"
                          "MESSAGE=forged through --backtrace\n\n";
  chmod(input.c_str(), 0644);
  ct::test::ProcessOptions as_nobody;
  as_nobody.in = ct::test::Stream::file(input);
  as_nobody.in_child = [] {
    if (setgroups(0, nullptr) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
      ct::test::child_failed("cannot become nobody");
  };
  // The pid it reports itself as is its own: known only in the child, so
  // through a shell that execs systemd-coredump with its $$.
  const auto forged = ct::test::run({"/bin/sh", "-c",
                                     "exec /lib/systemd/systemd-coredump --backtrace $$ 65534 65534 11 " + ts +
                                         " 0 forged"},
                                    as_nobody);
  const pid_t bt = forged.pid;
  ASSERT_EQ(forged.exit_code(), 0) << "systemd-coredump --backtrace failed: " << forged.wait_status << "\n"
                                   << forged.err;
  e = wait_journal({"MESSAGE_ID=" + std::string(ctd::kMsgEntryRejected), "CORE_TIMELINE_SENDER_PID=" + std::to_string(bt)},
                   since, 5s);
  ASSERT_TRUE(e) << "no rejection logged for systemd-coredump --backtrace (pid " << bt << ")\n" << daemon.log_tail();
  EXPECT_NE((*e)["CORE_TIMELINE_REASON"].find("MESSAGE_ID occurs 2 times"), std::string::npos)
      << (*e)["CORE_TIMELINE_REASON"];

  // A real crash after the forgeries is handled, so the daemon has seen
  // them all by now; none left a timeline.
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  EXPECT_EQ(wait_timeline(daemon, c.pid).doc["status"], "ok");
  for (const auto &d : daemon.timeline_dirs())
    for (const auto &f : fs::directory_iterator(d)) {
      const std::string name = f.path().filename();
      EXPECT_EQ(name.find("." + boot_id() + "." + fake_pid + "."), std::string::npos) << f.path();
      EXPECT_EQ(name.find("." + boot_id() + "." + std::to_string(bt) + "."), std::string::npos) << f.path();
    }
  EXPECT_EQ(daemon.stop(), 0);
}

namespace {

// Every journal entry written after `since_usec` that has all `matches`.
std::vector<std::map<std::string, std::string>> journal_entries(const std::vector<std::string> &matches,
                                                                std::uint64_t since_usec) {
  std::vector<std::map<std::string, std::string>> out;
  sd_journal *j = nullptr;
  if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY) < 0) return out;
  for (const auto &m : matches) sd_journal_add_match(j, m.data(), m.size());
  sd_journal_seek_realtime_usec(j, since_usec);
  while (sd_journal_next(j) > 0) {
    std::uint64_t t = 0;
    sd_journal_get_realtime_usec(j, &t);
    if (t < since_usec) continue;
    out.push_back(entry_fields(j));
  }
  sd_journal_close(j);
  return out;
}

}  // namespace

// Guards against: a forged entry (a user's own entry dressed as
// systemd-coredump's) planting a record.
// A test user runs forge_and_exec (comm "systemd-coredum", an entry about
// its own uid saying pid 1 (/bin/bash) crashed, with a core file name of
// the right shape for a core that does not exist, then exec of
// /lib/systemd/systemd-coredump to win journald's _EXE race) 40 times.
// Each try must end up rejected (the race lost: _EXE or _COMM is the
// forger's) or unverified (won: every old rule passes, but no root-owned
// core with systemd-coredump's xattrs corroborates it), and none may leave
// a timeline file or a timeline entry.  At least one must be unverified, or
// the attack never got past the old rules and the test proves nothing.  A
// real crash of the same user is still stored (its core corroborates it),
// and, handled after the forgeries, shows the daemon has read them all.
TEST_F(DaemonPipeline, ForgedEntriesThatWinTheExeRaceAreUnverifiedAndPlantNothing) {
  PersistentJournal persistent;  // the user's entries in user-UID.journal, as on a booted system
  ASSERT_TRUE(persistent.ok) << "journalctl --flush failed";
  TestUser user;
  ASSERT_TRUE(user.made) << "could not make a test user with groupadd/useradd";
  const std::string forge = dir.path + "/forge_and_exec", exe = dir.path + "/crash_demo";
  fs::copy_file(CT_FORGE_AND_EXEC, forge);
  fs::copy_file(CT_CRASH_DEMO, exe);
  chmod(forge.c_str(), 0755);
  chmod(exe.c_str(), 0755);
  daemon.start();
  const std::uint64_t since = now_usec();
  constexpr int kTries = 40;
  std::set<std::string> forgers;
  const std::uint64_t first_ts = since / 1000000 * 1000000;
  for (int i = 0; i < kTries; ++i) {
    ct::test::ProcessOptions po;
    po.out = ct::test::Stream::null();
    po.err = ct::test::Stream::null();
    po.in_child = user.become();
    // A timestamp of its own each: each try is another crash's key.
    const auto r = ct::test::run({forge, std::to_string(first_ts + static_cast<std::uint64_t>(i) * 1000000)}, po);
    ASSERT_TRUE(r.exit_code() == 0 || r.exit_code() == 1)
        << "forge_and_exec failed before or at its exec: wait status " << r.wait_status;
    forgers.insert(std::to_string(r.pid));
  }
  // The positive control, after the forgeries in the journal.
  const auto c = crash({exe, "--path=a"}, std::nullopt, user.uid);
  const Timeline t = wait_timeline(daemon, c.pid, 20s);
  EXPECT_EQ(t.doc["status"], "ok") << "a real crash of the user must still be stored";
  EXPECT_EQ(t.doc["coredump"]["fields"]["_UID"], std::to_string(user.uid)) << "sent as the user: the case at stake";
  EXPECT_EQ(daemon.stop(), 0);

  const std::string boot = boot_id();
  for (const auto &d : daemon.timeline_dirs()) {
    std::error_code ec;
    for (const auto &f : fs::directory_iterator(d, ec)) {
      const std::string name = f.path().filename();
      EXPECT_EQ(name.find("." + std::to_string(user.uid) + "." + boot + ".1."), std::string::npos)
          << "a forged crash of pid 1 was planted: " << f.path();
    }
  }
  EXPECT_TRUE(journal_entries({"MESSAGE_ID=" + std::string(jn::kTimelineMessageId), "COREDUMP_PID=1"}, since).empty())
      << "a timeline entry for the forged pid 1 was sent";

  std::size_t rejected = 0, unverified = 0, suppressed = 0;
  for (const auto &e : journal_entries({"MESSAGE_ID=" + std::string(ctd::kMsgEntryRejected)}, since))
    rejected += e.count("CORE_TIMELINE_SENDER_PID") && forgers.count(e.at("CORE_TIMELINE_SENDER_PID"));
  for (const auto &e : journal_entries({"MESSAGE_ID=" + std::string(ctd::kMsgEntryUnverified)}, since)) {
    if (e.count("CORE_TIMELINE_SUPPRESSED")) {
      suppressed += std::stoul(e.at("CORE_TIMELINE_SUPPRESSED"));
      continue;
    }
    if (!e.count("CORE_TIMELINE_SENDER_PID") || !forgers.count(e.at("CORE_TIMELINE_SENDER_PID"))) continue;
    ++unverified;
    EXPECT_EQ(e.at("PRIORITY"), "4");
    EXPECT_EQ(e.at("CORE_TIMELINE_PID"), "1");
    EXPECT_EQ(e.at("CORE_TIMELINE_UID"), std::to_string(user.uid));
    EXPECT_NE(e.at("CORE_TIMELINE_REASON").find("cannot be opened"), std::string::npos)
        << e.at("CORE_TIMELINE_REASON");
  }
  std::fprintf(stderr, "%d forged entries: %zu rejected, %zu unverified and logged, %zu unverified and suppressed\n",
               kTries, rejected, unverified, suppressed);
  EXPECT_GE(unverified, 1u) << "no forged entry got past the old rules: the attack did not happen\n"
                            << daemon.log_tail();
  EXPECT_LE(unverified, ctd::Daemon::kUnverifiedBurst + 1) << "the unverified lines are not rate-limited";
  EXPECT_EQ(rejected + unverified + suppressed, static_cast<std::size_t>(kTries))
      << "every forged entry is either rejected or unverified\n" << daemon.log_tail();

  // ctl-query's half: the user forges the daemon's own timeline entry
  // about a crash of theirs that never happened (MESSAGE_ID 9d72..., sent
  // through the real journald with logger(1)), naming the real crash's
  // timeline file.  Root's ctl-query leaves it out and says so; the real
  // crash, whose entry the daemon sent as the user too, is still listed,
  // backed by its root-owned file.
  ASSERT_FALSE(t.path.empty());
  const std::string fields = dir.path + "/forged-timeline-entry";
  std::ofstream(fields) << "MESSAGE_ID=" << jn::kTimelineMessageId << "\nMESSAGE=timeline written\n"
                        << "COREDUMP_PID=4242\nCOREDUMP_UID=" << user.uid << "\nCOREDUMP_EXE=/usr/bin/forged\n"
                        << "COREDUMP_TIMESTAMP=" << first_ts << "\n" << jn::kBootId << "=" << boot << "\n"
                        << jn::kStatus << "=ok\n" << jn::kEvents << "=3\n" << jn::kTimelinePath << "=" << t.path
                        << "\n";
  chmod(fields.c_str(), 0644);
  {
    ct::test::ProcessOptions po;
    po.in_child = user.become();
    const auto r = ct::test::run({"/usr/bin/logger", "--journald=" + fields}, po);
    ASSERT_EQ(r.exit_code(), 0) << r.err;
  }
  std::vector<std::map<std::string, std::string>> planted;
  ct::test::wait_until(
      [&] {
        planted = journal_entries({"MESSAGE_ID=" + std::string(jn::kTimelineMessageId), "COREDUMP_PID=4242"}, since);
        return !planted.empty();
      },
      60s);
  ASSERT_EQ(planted.size(), 1u) << "the forged timeline entry never reached the journal";
  EXPECT_EQ(planted[0]["_UID"], std::to_string(user.uid));
  // This test's crashes only (the test user's uid may be an earlier run's).
  const std::string by_uid = "COREDUMP_UID=" + std::to_string(user.uid),
                    this_run = "--since=@" + std::to_string(first_ts / 1000000);
  const auto listed = ct::test::run({CT_CTL_QUERY_BIN, this_run, "--json", "list", by_uid});
  EXPECT_EQ(listed.exit_code(), 0) << listed.err;
  EXPECT_NE(listed.out.find("\"pid\":" + std::to_string(c.pid) + ","), std::string::npos)
      << "the user's real crash is no longer listed:\n" << listed.out << listed.err;
  EXPECT_EQ(listed.out.find("4242"), std::string::npos) << "the forged entry is listed:\n" << listed.out;
  EXPECT_NE(listed.err.find("1 journal entry left out: only the crashed user vouches for it"), std::string::npos)
      << listed.err;
  const auto forged = ct::test::run({CT_CTL_QUERY_BIN, this_run, "list", "4242"});
  EXPECT_EQ(forged.exit_code(), 3) << forged.out << forged.err;
  const auto shown = ct::test::run({CT_CTL_QUERY_BIN, this_run, "--unverified", "list", "4242"});
  EXPECT_EQ(shown.exit_code(), 0) << shown.err;
  EXPECT_NE(shown.out.find("/usr/bin/forged (unverified)"), std::string::npos) << shown.out;
}

// ---- a big core ---------------------------------------------------------------

TEST_F(DaemonPipeline, BigCoreIsStreamedSparseWithMemoryThatDoesNotFollowItsSize) {
  daemon.start({"--keep-whole-below", "16M"});
  const auto c = crash({CT_BIG_CRASHER, "384"});
  Timeline t = wait_timeline(daemon, c.pid, 60s);
  ASSERT_EQ(t.doc["status"], "ok") << t.doc.dump(1).substr(0, 2000);
  const json &x = t.doc["daemon"]["extraction"];
  EXPECT_GT(x["core_bytes"].get<std::uint64_t>(), 384ull << 20);
  EXPECT_TRUE(x["sparse"].get<bool>());
  EXPECT_LT(x["kept_bytes"].get<std::uint64_t>(), 48ull << 20) << x.dump();
  // The decoder's own allocations do not follow the core.  (Its peak RSS,
  // max_rss_kb, still does: the reader maps the whole core and reads every
  // page, holes included; docs/core-timelined.md, "Big cores".)
  EXPECT_LT(t.doc["daemon"]["decoder"]["anon_kb"].get<std::uint64_t>(), 64u * 1024) << t.doc["daemon"].dump();
  EXPECT_GT(t.doc["daemon"]["decoder"]["anon_kb"].get<std::uint64_t>(), 0u);
  // The daemon's own peak memory, after streaming 384 MiB through it.
  std::ifstream status("/proc/" + std::to_string(daemon.pid()) + "/status");
  std::string line;
  std::uint64_t hwm = 0;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::stoull(line.substr(6));
  EXPECT_GT(hwm, 0u);
  EXPECT_LT(hwm, 64u * 1024) << "core-timelined peaked at " << hwm << " kB";
  std::vector<std::string> kinds;
  for (auto &[k, a] : event_ids(t.doc))
    if (k != "LANE_CLAIM") kinds.push_back(k + "/" + std::to_string(a));
  ASSERT_EQ(kinds.size(), 3u) << t.doc["text"];
  EXPECT_EQ(kinds[0], "id=8193/384");
  EXPECT_EQ(kinds[1], "id=8194/" + std::to_string(384 * 256));
  EXPECT_EQ(kinds[2].substr(0, 6), "CRASH/");
  // The sparse core says what the whole core says.
  const std::string plain = dir.path + "/core.big";
  ct::test::decompress_core_file(t.doc["coredump"]["core_file"], plain);
  const auto text = ct::test::run({CT_READER_BIN, plain});
  fs::remove(plain);
  EXPECT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_EQ(t.doc["text"], text.out);
  EXPECT_EQ(daemon.stop(), 0);
}

// ---- a systemd service ------------------------------------------------------------

TEST_F(DaemonPipeline, NotifiesReadinessPingsTheWatchdogAndStopsCleanlyOnSigterm) {
  // Counts, not times: the daemon pings again and again while idle, and
  // still after a crash; how often (a quarter of WATCHDOG_USEC, daemon.cc)
  // is not timed here.  Each wait's deadline bounds a hang only.
  daemon.start({}, {{"WATCHDOG_USEC", "400000"}});
  const auto pings_within = [&](int want, std::chrono::milliseconds deadline) {
    int pings = 0;
    ct::test::wait_until(
        [&] { return daemon.next_notification(100ms).find("WATCHDOG=1") != std::string::npos && ++pings >= want; },
        deadline);
    return pings;
  };
  EXPECT_EQ(pings_within(3, 60s), 3) << "WATCHDOG_USEC=400000 asks for pings, again and again";
  // Pings not read by the test for a while (30 of them, three times
  // net.unix.max_dgram_qlen's 10) do not stop the daemon: the harness reads
  // the socket all the time, as PID 1 does (a harness that did not left the
  // daemon blocked in sd_notify() and this crash undecoded).
  EXPECT_TRUE(ct::test::wait_until([&] { return daemon.pending_notifications() >= 30; }, 120s))
      << daemon.pending_notifications() << " pings waiting";
  // A crash decoded while the watchdog runs, and pings after it.
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  EXPECT_EQ(wait_timeline(daemon, c.pid).doc["status"], "ok");
  while (daemon.pending_notifications() > 0) daemon.next_notification(0ms);
  EXPECT_EQ(pings_within(1, 60s), 1) << "no ping after the crash";
  // SIGTERM: it exits by itself with 0 (stop() would kill it after its
  // stop_timeout and say -1), after STOPPING=1.
  EXPECT_EQ(daemon.stop(), 0);
  bool stopping = false;
  ct::test::wait_until(
      [&] { return stopping = daemon.next_notification(100ms).find("STOPPING=1") != std::string::npos; }, 30s);
  EXPECT_TRUE(stopping);
  EXPECT_NE(daemon.log().find("SIGTERM received: stopping"), std::string::npos);
}

// ---- whose rights a decoder has ------------------------------------------------

namespace {

// The warnings[] of a document that start with "decoder probe: "
// (core-timelined-test-hooks, tests/daemon/decoder_probe.cc).
std::set<std::string> probe_lines(const json &doc) {
  std::set<std::string> out;
  if (doc.contains("warnings") && doc["warnings"].is_array())
    for (const auto &w : doc["warnings"])
      if (w.is_string() && w.get<std::string>().starts_with("decoder probe: ")) out.insert(w.get<std::string>());
  return out;
}

// A file of `bytes` owned by `uid`:`uid`, mode 0600.
void write_private_file(const std::string &path, uid_t uid) {
  std::ofstream(path) << "secret of uid " << uid << "\n";
  ASSERT_EQ(chown(path.c_str(), uid, uid), 0) << path;
  ASSERT_EQ(chmod(path.c_str(), 0600), 0) << path;
}

// The functions of the symbolized locations of a document's events and
// crash.
std::set<std::string> functions(const json &doc) {
  std::set<std::string> out;
  auto take = [&out](const json &loc) {
    if (loc.is_object() && loc.contains("function") && loc["function"].is_string()) out.insert(loc["function"]);
  };
  if (doc.contains("events"))
    for (const auto &e : doc["events"])
      if (e.contains("location")) take(e["location"]);
  if (doc.contains("crash") && doc["crash"].is_object() && doc["crash"].contains("location"))
    take(doc["crash"]["location"]);
  return out;
}

// The user core-timeline-decoder (units/core-timeline.sysusers): made with
// systemd-sysusers from that file if it does not exist, and then removed
// again (userdel, groupdel) on every exit path.
struct DecoderUser {
  bool made = false;
  std::optional<std::pair<uid_t, gid_t>> ids;
  DecoderUser() {
    if (!getpwnam("core-timeline-decoder")) {
      const auto r = ct::test::run({"/bin/systemd-sysusers", CT_SYSUSERS_FILE});
      made = r.ok();
      if (!made) std::fprintf(stderr, "systemd-sysusers %s: %s\n", CT_SYSUSERS_FILE, r.err.c_str());
    }
    if (const struct passwd *pw = getpwnam("core-timeline-decoder")) ids = std::make_pair(pw->pw_uid, pw->pw_gid);
  }
  ~DecoderUser() {
    if (!made) return;
    ct::test::run({"/usr/sbin/userdel", "core-timeline-decoder"});
    if (getgrnam("core-timeline-decoder")) ct::test::run({"/usr/sbin/groupdel", "core-timeline-decoder"});
  }
};

}  // namespace

TEST_F(DaemonPipeline, UsersDecoderCannotOpenShadowNorAnotherUsersFileButOpensItsOwn) {
  TestUser user, other;
  ASSERT_TRUE(user.made && other.made) << "could not make two test users with groupadd/useradd";
  const std::string files = dir.path + "/files";
  ASSERT_EQ(mkdir(files.c_str(), 0755), 0);
  const std::string own = files + "/own-secret", theirs = files + "/others-secret";
  write_private_file(own, user.uid);
  write_private_file(theirs, other.uid);
  const std::string exe = dir.path + "/crash_demo";
  fs::copy_file(CT_CRASH_DEMO, exe);
  chmod(exe.c_str(), 0755);
  // The test build: each decoder tries these opens after its drop and
  // confinement, as one taken over by a hostile core would.
  daemon.options().binary = CT_DAEMON_TEST_HOOKS_BIN;
  daemon.start({}, {{"CT_TEST_DECODER_PROBE", "/etc/shadow:" + theirs + ":" + own}});
  const auto c = crash({exe, "--path=a"}, std::nullopt, user.uid);
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(t.doc["status"], "ok") << t.doc.dump().substr(0, 2000);
  const auto probed = probe_lines(t.doc);
  const std::string u = std::to_string(user.uid);
  EXPECT_EQ(probed, (std::set<std::string>{"decoder probe: uid " + u + " gid " + u + " groups 0",
                                           "decoder probe: open /etc/shadow: EACCES",
                                           "decoder probe: open " + theirs + ": EACCES",
                                           "decoder probe: open " + own + ": ok"}))
      << t.doc["warnings"].dump();
  const json &run_as = t.doc["daemon"]["decoder"]["run_as"];
  EXPECT_EQ(run_as["uid"], user.uid);
  EXPECT_EQ(run_as["gid"], user.uid);
  EXPECT_EQ(run_as["as"], "crashed_user");
  EXPECT_EQ(t.doc["daemon"]["decoder"]["via_server"], true) << "decoded by fork and exec: " << daemon.log_tail();
  expect_schema_valid(read_text(t.path), dir.path);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, RootsCrashIsDecodedAsTheDedicatedUser) {
  DecoderUser decoder_user;
  ASSERT_TRUE(decoder_user.ids) << "no user core-timeline-decoder, and systemd-sysusers could not make it";
  const auto [duid, dgid] = *decoder_user.ids;
  ASSERT_NE(duid, 0u);
  daemon.options().binary = CT_DAEMON_TEST_HOOKS_BIN;
  daemon.start({}, {{"CT_TEST_DECODER_PROBE", "/etc/shadow"}});
  EXPECT_EQ(daemon.log().find("there is no user core-timeline-decoder"), std::string::npos) << daemon.log_tail();
  const auto c = crash({CT_CRASH_DEMO, "--path=a"});
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(t.doc["status"], "ok") << t.doc.dump().substr(0, 2000);
  EXPECT_EQ(t.doc["coredump"]["fields"]["COREDUMP_UID"], "0");
  const json &run_as = t.doc["daemon"]["decoder"]["run_as"];
  EXPECT_EQ(run_as["uid"], duid);
  EXPECT_EQ(run_as["gid"], dgid);
  EXPECT_EQ(run_as["as"], "dedicated_user");
  EXPECT_EQ(probe_lines(t.doc),
            (std::set<std::string>{"decoder probe: uid " + std::to_string(duid) + " gid " + std::to_string(dgid) +
                                       " groups 0",
                                   "decoder probe: open /etc/shadow: EACCES"}));
  // Still symbolized: crash_demo and its directories are world-readable.
  const auto f = functions(t.doc);
  for (const char *fn : {"path_a", "parse_request", "die"}) EXPECT_TRUE(f.count(fn)) << fn << " in " << json(f).dump();
  expect_schema_valid(read_text(t.path), dir.path);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(DaemonPipeline, UsersCrashIsSymbolizedFromTheirOwnBinaryInADirectoryOnlyTheyMayRead) {
  TestUser user;
  ASSERT_TRUE(user.made) << "could not make a test user with groupadd/useradd";
  const std::string home = dir.path + "/private";
  ASSERT_EQ(mkdir(home.c_str(), 0700), 0);
  ASSERT_EQ(chown(home.c_str(), user.uid, user.uid), 0);
  const std::string exe = home + "/crash_demo";
  fs::copy_file(CT_CRASH_DEMO, exe);
  ASSERT_EQ(chown(exe.c_str(), user.uid, user.uid), 0);
  ASSERT_EQ(chmod(exe.c_str(), 0700), 0);
  daemon.start();
  const auto c = crash({exe, "--path=a"}, std::nullopt, user.uid);
  const Timeline t = wait_timeline(daemon, c.pid);
  ASSERT_EQ(t.doc["status"], "ok") << t.doc.dump().substr(0, 2000);
  EXPECT_EQ(t.doc["daemon"]["decoder"]["run_as"]["uid"], user.uid);
  EXPECT_EQ(t.doc["daemon"]["decoder"]["run_as"]["as"], "crashed_user");
  // The frames carry function names read from the user's own 0700 copy.
  const auto f = functions(t.doc);
  for (const char *fn : {"path_a", "parse_request", "die"}) EXPECT_TRUE(f.count(fn)) << fn << " in " << json(f).dump();
  ASSERT_TRUE(t.doc["crash"]["location"].is_object());
  EXPECT_EQ(t.doc["crash"]["location"]["module"], exe);
  EXPECT_EQ(t.doc["crash"]["location"]["function"], "die");
  EXPECT_EQ(daemon.stop(), 0);
}
