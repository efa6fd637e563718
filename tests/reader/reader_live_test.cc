// SPDX-License-Identifier: MIT
//
// reader_live_test - core-timeline-read --pid: live snapshots of real
// running processes (issue 15, part 4).  The writers are live_writers
// (threads recording spans and marks at full speed until killed); every
// snapshot is read by the real reader binary, or by snapshot_process() for
// the process that exits in the middle of one.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/live.h"
#include "process.h"
#include "test_util.h"

namespace {

using nlohmann::json;
using ct::testing::run;
namespace ctr = core_timeline::reader;

constexpr int kWriters = 8;

/* A live_writers process: started, ready (every thread recorded), killed
 * and reaped at the end of the test whatever happens. */
class Writers {
 public:
  explicit Writers(int threads, const std::string &budget = "2097152", bool nodump = false,
                   std::function<void()> in_child = {}) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    ct::test::ProcessOptions o;
    o.out = ct::test::Stream::inherit();
    o.err = ct::test::Stream::inherit();
    const int wfd = p[1];
    o.in_child = [wfd, in_child] {
      if (in_child) in_child();
      if (fcntl(wfd, F_SETFD, 0) != 0) ct::test::child_failed("fcntl");
    };
    std::vector<std::string> argv = {CT_LIVE_WRITERS, std::to_string(threads), std::to_string(wfd), budget};
    if (nodump) argv.push_back("nodump");
    pid_ = ct::test::spawn(argv, o);
    close(p[1]);
    char buf[16] = {};
    const ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    if (n != 6 || std::string(buf) != "ready\n") {
      stop();
      throw std::runtime_error("live_writers did not get ready");
    }
  }
  ~Writers() { stop(); }
  pid_t pid() const { return pid_; }
  /* Kills and reaps it now. */
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

std::string reader_bin() { return CT_READER_BIN; }

json read_pid(pid_t pid, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {reader_bin(), "--pid", std::to_string(pid), "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const auto r = run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

/* The checks every snapshot of live_writers must pass; returns the tids
 * whose LIVE_MARK events it holds. */
std::set<std::uint64_t> check_snapshot(const json &d, pid_t pid) {
  std::set<std::uint64_t> writers;
  EXPECT_EQ(d["status"], "ok");
  EXPECT_TRUE(d["crash"].is_null()) << "a live snapshot has no crash";
  EXPECT_EQ(d["snapshot"]["pid"], pid);
  EXPECT_EQ(d["time"]["reference"], "snapshot");
  if (d["rings"].size() != 1) {
    ADD_FAILURE() << "rings: " << d["rings"].dump();
    return writers;
  }
  const json &ring = d["rings"][0];
  EXPECT_EQ(ring["state"], "valid");
  EXPECT_FALSE(ring["counter_inconsistent"]) << ring["lanes"].dump();
  EXPECT_EQ(ring["torn"].size(), 0u) << ring["torn"].dump();
  std::uint64_t in_flight = 0;
  for (const auto &l : ring["lanes"]) {
    EXPECT_EQ(l["torn"], 0) << l.dump();
    EXPECT_EQ(l["invalid"], 0) << l.dump();
    EXPECT_FALSE(l["counter_inconsistent"]) << l.dump();
    in_flight += l["in_flight"].get<std::uint64_t>();
  }
  EXPECT_EQ(ring["in_flight"], in_flight);
  EXPECT_LE(in_flight, static_cast<std::uint64_t>(kWriters)) << ring["lanes"].dump();
  /* Each lane's sequences: contiguous from its first to its last, apart
   * from what the lane reports (missing, in flight); the events are the
   * lane's committed ones. */
  std::map<std::uint64_t, std::vector<std::uint64_t>> seqs;
  for (const auto &e : d["events"]) {
    seqs[e["lane"].get<std::uint64_t>()].push_back(e["seq"].get<std::uint64_t>());
    /* Before the snapshot's time, up to the TSC's skew between CPUs. */
    EXPECT_LE(e["age_ns"].get<std::int64_t>(), 1000) << "an event after the snapshot: " << e.dump();
    if (e["name"] == "LIVE_MARK") writers.insert(e["args"][1].get<std::uint64_t>());
  }
  for (const auto &l : ring["lanes"]) {
    const auto lane = l["lane"].get<std::uint64_t>();
    auto &s = seqs[lane];
    std::sort(s.begin(), s.end());
    EXPECT_EQ(s.size(), l["committed"].get<std::uint64_t>()) << "lane " << lane;
    if (s.empty()) continue;
    EXPECT_EQ(s.front(), l["first_seq"].get<std::uint64_t>());
    EXPECT_EQ(s.back(), l["last_seq"].get<std::uint64_t>());
    EXPECT_EQ(l["overwritten"].get<std::uint64_t>(), s.front() - 1) << "lane " << lane;
    std::uint64_t holes = 0;
    for (std::size_t i = 1; i < s.size(); ++i) holes += s[i] - s[i - 1] - 1;
    EXPECT_EQ(l["missing"], 0) << "lane " << lane << ": no signal handler writes here, so nothing is missing";
    EXPECT_LE(holes, l["in_flight"].get<std::uint64_t>()) << "lane " << lane << ": holes not in flight";
    const auto w = l["write_index"].get<std::uint64_t>();
    EXPECT_GE(w, s.back());
    EXPECT_LE(w - s.back(), l["in_flight"].get<std::uint64_t>()) << l.dump();
  }
  return writers;
}

TEST(ReaderLive, SnapshotsWhileEightThreadsWriteAtFullSpeed) {
  Writers w(kWriters);
  std::set<std::uint64_t> all = {};
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE("snapshot " + std::to_string(i));
    const json d = read_pid(w.pid(), {"--no-symbols"});
    const auto writers = check_snapshot(d, w.pid());
    EXPECT_EQ(writers.size(), static_cast<std::size_t>(kWriters)) << "events from every writer thread";
    if (HasFailure()) break;
  }
  /* The writers ran throughout: the process is still there, not stopped
   * (its main thread waits in pause(): S). */
  const std::string stat = ct::testing::slurp("/proc/" + std::to_string(w.pid()) + "/stat");
  EXPECT_EQ(stat.substr(stat.rfind(')') + 2, 1), "S") << stat;
}

TEST(ReaderLive, TextSaysLiveSnapshotAndInFlight) {
  Writers w(2);
  const auto r = run({reader_bin(), "--pid", std::to_string(w.pid()), "--no-symbols"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("core-timeline: live snapshot of pid " + std::to_string(w.pid()) + " (live_writers), taken at "),
            std::string::npos)
      << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("time: ages relative to the snapshot"), std::string::npos);
  EXPECT_NE(r.out.find(" in_flight="), std::string::npos);
  EXPECT_EQ(r.out.find("\ncrash:"), std::string::npos) << "no crash section";
}

TEST(ReaderLive, DocumentMatchesTheSchema) {
  Writers w(2, "1048576");
  const auto r = run({reader_bin(), "--pid", std::to_string(w.pid()), "--json", "--no-symbols"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ct::testing::schema_errors(r.out), "");
}

TEST(ReaderLive, StoppedProcessStaysStoppedAndReadsTheSameTwice) {
  Writers w(kWriters);
  ASSERT_EQ(kill(w.pid(), SIGSTOP), 0);
  int st = 0;
  ASSERT_EQ(waitpid(w.pid(), &st, WUNTRACED), w.pid());
  ASSERT_TRUE(WIFSTOPPED(st));
  const json a = read_pid(w.pid(), {"--no-symbols"});
  const json b = read_pid(w.pid(), {"--no-symbols"});
  check_snapshot(a, w.pid());
  /* The same events; only their ages (and wall-clock times, from a rate
   * the later snapshot's anchor refines) move with the snapshot's time. */
  const auto timeless = [](json events) {
    for (auto &e : events) {
      e.erase("age_ns");
      e.erase("time_ns");
    }
    return events;
  };
  EXPECT_EQ(timeless(a["events"]), timeless(b["events"])) << "a stopped process's ring does not change";
  EXPECT_EQ(a["rings"][0]["lanes"], b["rings"][0]["lanes"]);
  const std::string stat = ct::testing::slurp("/proc/" + std::to_string(w.pid()) + "/stat");
  EXPECT_EQ(stat.substr(stat.rfind(')') + 2, 1), "T") << "still stopped: " << stat;
  kill(w.pid(), SIGCONT);
}

TEST(ReaderLive, ProcessThatExitsDuringTheSnapshotIsAClearError) {
  Writers w(kWriters);
  const pid_t pid = w.pid();
  ctr::SnapshotOptions o;
  o.after_maps = [&] { w.stop(); };  // killed and reaped after its maps were read
  auto s = ctr::snapshot_process(pid, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ctr::Errc::kNotFound) << s.error().message;
  EXPECT_NE(s.error().message.find("pid " + std::to_string(pid) + " exited during the snapshot"), std::string::npos)
      << s.error().message;
}

TEST(ReaderLive, ProcessThatIsGoneIsExitThree) {
  pid_t gone = 0;
  {
    Writers w(1);
    gone = w.pid();
  }
  const auto r = run({reader_bin(), "--pid", std::to_string(gone)});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot take a live snapshot: pid " + std::to_string(gone) + ": no such process"),
            std::string::npos)
      << r.err;
}

TEST(ReaderLive, ProcessWithoutRingIsExitOne) {
  /* sleep(1) has no libtimeline: the snapshot has no ring mapping. */
  ct::test::ProcessOptions o;
  o.search_path = true;
  o.out = ct::test::Stream::null();
  o.err = ct::test::Stream::null();
  const pid_t p = ct::test::spawn({"sleep", "600"}, o);
  const auto r = run({reader_bin(), "--pid", std::to_string(p)});
  kill(p, SIGKILL);
  waitpid(p, nullptr, 0);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

/* setpriv(1) (util-linux) runs the reader with another uid, or without
 * capabilities; root is needed to switch. */
std::string setpriv_or_skip() {
  for (const char *p : {"/usr/bin/setpriv", "/bin/setpriv"})
    if (access(p, X_OK) == 0) return p;
  return {};
}

TEST(ReaderLive, AnotherUsersProcessIsRefusedNamingTheRule) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run the reader as uid 65534 with setpriv";
  const std::string setpriv = setpriv_or_skip();
  if (setpriv.empty()) GTEST_SKIP() << "setpriv (util-linux) is missing: cannot run the reader as another uid";
  Writers w(2);  // root's
  const auto r = run({setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                      "--bounding-set=-all", reader_bin(), "--pid", std::to_string(w.pid())});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("reading its memory was refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reading another user's process needs the same ids or CAP_SYS_PTRACE"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST(ReaderLive, NotDumpableProcessOfTheSameUserIsRefusedNamingTheRule) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run writer and reader as uid 65534 with setpriv";
  const std::string setpriv = setpriv_or_skip();
  if (setpriv.empty()) GTEST_SKIP() << "setpriv (util-linux) is missing: cannot run the reader as another uid";
  Writers w(2, "1048576", /*nodump=*/true, [] {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) ct::test::child_failed("setuid");
  });
  const auto r = run({setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                      "--bounding-set=-all", reader_bin(), "--pid", std::to_string(w.pid())});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("the process is not dumpable"), std::string::npos) << r.err;
  /* And root, with CAP_SYS_PTRACE, reads it. */
  const auto root = run({reader_bin(), "--pid", std::to_string(w.pid()), "--no-symbols"});
  EXPECT_EQ(root.exit_code, 0) << root.err;
}

TEST(ReaderLive, SavedSnapshotReadsAsTheSameLiveSnapshot) {
  Writers w(kWriters);
  char dir[] = "/tmp/ct-live-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/snap.core";
  const json direct = read_pid(w.pid(), {"--save", file, "--no-symbols"});
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto again = run({reader_bin(), file, "--json", "--no-symbols"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const json saved = json::parse(again.out);
  check_snapshot(saved, w.pid());
  EXPECT_EQ(saved["snapshot"], direct["snapshot"]);
  EXPECT_EQ(saved["events"], direct["events"]);
  EXPECT_EQ(saved["rings"][0]["lanes"], direct["rings"][0]["lanes"]);
  EXPECT_TRUE(saved["crash"].is_null());
  /* An existing FILE is refused (O_EXCL) unless --force. */
  const auto refused = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", file});
  EXPECT_EQ(refused.exit_code, 7) << refused.err;
  EXPECT_NE(refused.err.find("File exists"), std::string::npos) << refused.err;
  const auto forced = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", file, "--force", "--no-symbols"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  unlink(file.c_str());
  rmdir(dir);
}

TEST(ReaderLive, UsageErrors) {
  EXPECT_EQ(run({reader_bin()}).exit_code, 7);
  EXPECT_EQ(run({reader_bin(), "--save", "/tmp/x", "core"}).exit_code, 7) << "--save needs --pid";
  EXPECT_EQ(run({reader_bin(), "--pid", "1", "a", "b"}).exit_code, 7) << "--pid takes no CORE";
  EXPECT_EQ(run({reader_bin(), "--pid", "0"}).exit_code, 7);
}

}  // namespace
