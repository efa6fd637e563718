// SPDX-License-Identifier: MIT
//
// reader_live_test - core-timeline-read --pid: live snapshots of real
// running processes.  The writers are live_writers
// (threads recording spans and marks at full speed until killed); every
// snapshot is read by the real reader binary, or by snapshot_process() for
// the process that exits in the middle of one.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/live.h"
#include "core_timeline/reader/render.h"
#include "process.h"
#include "test_util.h"

namespace {

using nlohmann::json;
using ct::test::run;
namespace ctr = core_timeline::reader;
namespace fmtx = core_timeline::format;

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
  EXPECT_EQ(r.exit_code(), 0) << r.err;
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

ctr::DecodeOptions live_options() {
  ctr::DecodeOptions o;
  o.live = true;
  return o;
}

/* The reader's rule on built rings: a slot caught mid-write among a lane's
 * last reserved sequences is in flight in a live snapshot, torn in a core;
 * one far below them is torn in both. */
TEST(ReaderLiveRule, CaughtMidWriteIsInFlightOnlyInALiveSnapshot) {
  ct::test::RingBuilder r = ct::test::three_events();
  r.lane(0).write_index = 5;
  r.add(0, 4, fmtx::kKindUser, 0x1004, 4);
  r.slot(0, 4).begin_seq = 5 | fmtx::kSeqWriting;  // seq 5 being written
  r.lane(0).write_index = 5;
  struct Keep final : ctr::RingEventSink {
    void reserve(std::uint64_t, std::uint64_t) override {}
    void event(const ctr::RingEvent &) override {}
  } keep;
  auto core = ctr::decode_ring(r.bytes(), r.bytes().size(), keep, ctr::DecodeOptions{});
  auto live = ctr::decode_ring(r.bytes(), r.bytes().size(), keep, live_options());
  ASSERT_TRUE(core && live);
  EXPECT_EQ(core->torn, 1u);
  EXPECT_EQ(live->torn, 0u);
  EXPECT_EQ(live->in_flight, 1u);
  EXPECT_EQ(live->rejected.size(), 0u);
  EXPECT_FALSE(live->counter_inconsistent) << live->lanes[0].counter_reason;

  /* A signal handler's event (5) committed above one being written (4):
   * in flight, not missing. */
  ct::test::RingBuilder h = ct::test::three_events();
  h.add(0, 5, fmtx::kKindUser, 0x1005, 5);
  h.slot(0, 3).begin_seq = 4 | fmtx::kSeqWriting;
  h.slot(0, 3).end_seq = 0;
  auto hl = ctr::decode_ring(h.bytes(), h.bytes().size(), keep, live_options());
  ASSERT_TRUE(hl);
  EXPECT_EQ(hl->lanes[0].missing, 0u);
  EXPECT_EQ(hl->lanes[0].in_flight, 1u);
  EXPECT_EQ(hl->torn, 0u);

  /* Stuck mid-write far below the lane's newest: torn, live or not. */
  ct::test::RingBuilder t = ct::test::three_events();
  for (std::uint64_t seq = 4; seq <= 7; ++seq) t.add(0, seq, fmtx::kKindUser, 0x1001, seq);
  t.slot(0, 1).begin_seq = 2 | fmtx::kSeqWriting;
  auto tl = ctr::decode_ring(t.bytes(), t.bytes().size(), keep, live_options());
  ASSERT_TRUE(tl);
  EXPECT_EQ(tl->torn, 1u);
  EXPECT_EQ(tl->in_flight, 0u);
}

/* A core with the CORE-TIMELINE note is a live snapshot: no crash, the
 * snapshot's time as the reference; without it, the same core is a crash. */
TEST(ReaderLiveRule, TheNoteMakesTheCoreASnapshot) {
  ct::test::RingBuilder r = ct::test::three_events();
  ct::test::CoreBuilder plain = ct::test::standard_core(r);
  ct::test::CoreBuilder live = ct::test::standard_core(r);
  live.sig_signo.reset();
  ctr::LiveSnapshotNote n{};
  n.version = ctr::kLiveNoteVersion;
  n.pid = 4242;
  n.monotonic_ns = 5'000'000'000;
  n.realtime_ns = 1'700'000'000'000'000'000;
  n.duration_ns = 1000;
  std::vector<std::uint8_t> desc(sizeof n);
  std::memcpy(desc.data(), &n, sizeof n);
  live.extra_notes.push_back({ctr::kLiveNoteName, ctr::kNtLiveSnapshot, desc});
  ctr::ReadOptions o;
  o.symbolize = false;
  auto pc = ctr::CoreFile::from_bytes(plain.build(), "plain");
  auto lc = ctr::CoreFile::from_bytes(live.build(), "live");
  ASSERT_TRUE(pc && lc);
  const ctr::Analysis pa = ctr::analyze(*pc, o), la = ctr::analyze(*lc, o);
  EXPECT_TRUE(pa.crash.has_value());
  EXPECT_FALSE(pa.snapshot.has_value());
  ASSERT_TRUE(la.snapshot.has_value());
  EXPECT_EQ(la.snapshot->pid, 4242u);
  EXPECT_FALSE(la.crash.has_value());
  for (const auto &t : lc->notes().threads) EXPECT_FALSE(t.has_regs) << "a snapshot's registers are unknown";
  EXPECT_EQ(ct::test::schema_errors(ctr::render_json(la)), "");
  EXPECT_NE(ctr::render_text(la).find("live snapshot of pid 4242"), std::string::npos) << ctr::render_text(la);
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
  const std::string stat = ct::test::slurp("/proc/" + std::to_string(w.pid()) + "/stat");
  EXPECT_EQ(stat.substr(stat.rfind(')') + 2, 1), "S") << stat;
}

TEST(ReaderLive, TextSaysLiveSnapshotAndInFlight) {
  Writers w(2);
  const auto r = run({reader_bin(), "--pid", std::to_string(w.pid()), "--no-symbols"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("core-timeline: live snapshot of pid " + std::to_string(w.pid()) + " (live_writers), taken at "),
            std::string::npos)
      << r.out.substr(0, 400);
  EXPECT_NE(r.out.find("time: ages relative to the snapshot"), std::string::npos);
  EXPECT_NE(r.out.find(" in_flight="), std::string::npos);
  EXPECT_EQ(r.out.find("\ncrash:"), std::string::npos) << "no crash section";
}

TEST(ReaderLive, BuildIdsAndSymbolsComeFromTheSnapshot) {
  Writers w(2, "1048576");
  const json d = read_pid(w.pid());
  EXPECT_EQ(d["process"]["exe"], CT_LIVE_WRITERS);
  EXPECT_TRUE(d["process"]["build_id"].is_string()) << d["process"].dump();
  std::set<std::string> functions;
  for (const auto &e : d["events"])
    if (e["location"].is_object() && e["location"]["verification"] == "verified")
      functions.insert(e["location"]["function"].get<std::string>());
  EXPECT_TRUE(functions.count("writer")) << "the writers' marks are symbolized, verified by build-id";
}

TEST(ReaderLive, DocumentMatchesTheSchema) {
  Writers w(2, "1048576");
  const auto r = run({reader_bin(), "--pid", std::to_string(w.pid()), "--json", "--no-symbols"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(ct::test::schema_errors(r.out), "");
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
  const std::string stat = ct::test::slurp("/proc/" + std::to_string(w.pid()) + "/stat");
  EXPECT_EQ(stat.substr(stat.rfind(')') + 2, 1), "T") << "still stopped: " << stat;
  kill(w.pid(), SIGCONT);
}

TEST(ReaderLive, ProcessHeldByADebuggerIsRead) {
  Writers w(kWriters);
  /* This test is its debugger: attached with ptrace, as gdb attaches,
   * and stopped (the attach's SIGSTOP stops every thread). */
  ASSERT_EQ(ptrace(PTRACE_ATTACH, w.pid(), nullptr, nullptr), 0) << std::strerror(errno);
  int st = 0;
  ASSERT_EQ(waitpid(w.pid(), &st, __WALL), w.pid());
  ASSERT_TRUE(WIFSTOPPED(st));
  const json d = read_pid(w.pid(), {"--no-symbols"});
  const auto writers = check_snapshot(d, w.pid());
  EXPECT_EQ(writers.size(), static_cast<std::size_t>(kWriters));
  EXPECT_EQ(ptrace(PTRACE_DETACH, w.pid(), nullptr, nullptr), 0) << std::strerror(errno);
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
  EXPECT_EQ(r.exit_code(), 3) << r.err;
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
  EXPECT_EQ(r.exit_code(), 1) << r.out << r.err;
}

/* setpriv(1) (util-linux) runs the reader with another uid, or without
 * capabilities; root is needed to switch. */
std::string setpriv_or_skip() {
  for (const char *p : {"/usr/bin/setpriv", "/bin/setpriv"})
    if (access(p, X_OK) == 0) return p;
  return {};
}

/* Whether uid 65534 can run the reader at all (every directory on its
 * path searchable): else the refusal tested would be exec's. */
std::string nobody_cannot_run_reader(const std::string &setpriv) {
  const auto r = run({setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", reader_bin(), "--help"});
  return r.exit_code() == 0 ? "" : "uid 65534 cannot run " + reader_bin() + " (exit " + std::to_string(r.exit_code()) +
                                      ": " + r.err + "); a directory on its path is not searchable by others";
}

TEST(ReaderLive, AnotherUsersProcessIsRefusedNamingTheRule) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run the reader as uid 65534 with setpriv";
  const std::string setpriv = setpriv_or_skip();
  if (setpriv.empty()) GTEST_SKIP() << "setpriv (util-linux) is missing: cannot run the reader as another uid";
  if (const auto why = nobody_cannot_run_reader(setpriv); !why.empty()) GTEST_SKIP() << why;
  Writers w(2);  // root's
  const auto r = run({setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                      "--bounding-set=-all", reader_bin(), "--pid", std::to_string(w.pid())});
  EXPECT_EQ(r.exit_code(), 3) << r.out << r.err;
  EXPECT_NE(r.err.find("reading its memory was refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reading another user's process needs the same ids or CAP_SYS_PTRACE"), std::string::npos)
      << r.err;
  /* The ids as words, not /proc/PID/status's tab-separated fields. */
  EXPECT_NE(r.err.find("its uids (real, effective, saved) are 0 0 0 and gids 0 0 0, and ours (real) are uid 65534 "
                       "gid 65534"),
            std::string::npos)
      << r.err;
  for (const char ch : r.err.substr(0, r.err.size() - 1))
    EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << "a raw control byte " << int(ch) << " in " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST(ReaderLive, NotDumpableProcessOfTheSameUserIsRefusedNamingTheRule) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run writer and reader as uid 65534 with setpriv";
  const std::string setpriv = setpriv_or_skip();
  if (setpriv.empty()) GTEST_SKIP() << "setpriv (util-linux) is missing: cannot run the reader as another uid";
  if (const auto why = nobody_cannot_run_reader(setpriv); !why.empty()) GTEST_SKIP() << why;
  Writers w(2, "1048576", /*nodump=*/true, [] {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) ct::test::child_failed("setuid");
  });
  const auto r = run({setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                      "--bounding-set=-all", reader_bin(), "--pid", std::to_string(w.pid())});
  EXPECT_EQ(r.exit_code(), 3) << r.out << r.err;
  EXPECT_NE(r.err.find("the process is not dumpable"), std::string::npos) << r.err;
  /* And root, with CAP_SYS_PTRACE, reads it. */
  const auto root = run({reader_bin(), "--pid", std::to_string(w.pid()), "--no-symbols"});
  EXPECT_EQ(root.exit_code(), 0) << root.err;
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
  ASSERT_EQ(again.exit_code(), 0) << again.err;
  const json saved = json::parse(again.out);
  check_snapshot(saved, w.pid());
  EXPECT_EQ(saved["snapshot"], direct["snapshot"]);
  EXPECT_EQ(saved["events"], direct["events"]);
  EXPECT_EQ(saved["rings"][0]["lanes"], direct["rings"][0]["lanes"]);
  EXPECT_TRUE(saved["crash"].is_null());
  /* An existing FILE is refused unless --force. */
  const auto refused = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", file});
  EXPECT_EQ(refused.exit_code(), 7) << refused.err;
  EXPECT_NE(refused.err.find("core-timeline-read: --save " + file + ": the file exists; --force replaces it"),
            std::string::npos)
      << refused.err;
  const auto forced = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", file, "--force", "--no-symbols"});
  EXPECT_EQ(forced.exit_code(), 0) << forced.err;
  unlink(file.c_str());
  rmdir(dir);
}

/* --save writes regular files only.  Whatever else is at FILE (a FIFO, a
 * character device such as /dev/full, a socket, a directory, a symbolic
 * link) is refused with exit 7 and a sentence naming what it is, with or
 * without --force, and is left as it was: no open that blocks (a FIFO
 * without a reader), no write to a device, no change of its mode.  A FIFO
 * that blocked would be killed at the deadline, which only bounds a hang. */
TEST(ReaderLive, SaveRefusesWhatIsNotARegularFile) {
  Writers w(1, "1048576");
  char tmpl[] = "/tmp/ct-live-save-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string fifo = dir + "/fifo", device = dir + "/full", socket_path = dir + "/socket",
                    subdir = dir + "/subdir", target = dir + "/target", link = dir + "/link";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  /* /dev/full's own numbers (char 1:7), made here: the real one stays untouched. */
  const bool have_device = mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0;
  if (geteuid() == 0) {
    ASSERT_TRUE(have_device) << "mknod: " << std::strerror(errno);
  }
  if (have_device) {
    ASSERT_EQ(chmod(device.c_str(), 0666), 0);  // past the umask
  }
  const int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", socket_path.c_str());
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0) << std::strerror(errno);
  ASSERT_EQ(mkdir(subdir.c_str(), 0755), 0);
  { std::ofstream(target) << "the target"; }
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);

  struct Case {
    std::string path, is;
  };
  std::vector<Case> cases = {{fifo, "a FIFO"}, {socket_path, "a socket"}, {subdir, "a directory"},
                             {link, "a symbolic link"}};
  if (have_device) cases.push_back({device, "a character device"});
  for (const auto &c : cases) {
    struct stat st0 {};
    ASSERT_EQ(lstat(c.path.c_str(), &st0), 0) << c.path;
    for (const bool force : {true, false}) {
      std::vector<std::string> argv = {reader_bin(), "--pid", std::to_string(w.pid()), "--save", c.path};
      if (force) argv.push_back("--force");
      ct::test::ProcessOptions o;
      o.timeout = std::chrono::minutes(2);
      const auto r = ct::test::run(argv, o);
      ASSERT_FALSE(r.timed_out) << c.is << ": the reader blocked on " << c.path;
      EXPECT_EQ(r.exit_code(), 7) << c.is << " " << r.err;
      EXPECT_EQ(r.err, "core-timeline-read: --save " + c.path + ": it is " + c.is +
                           "; --save writes a regular file only (a new one, or an existing one with --force), so "
                           "nothing was written\n")
          << "--force " << force;
      EXPECT_TRUE(r.out.empty()) << r.out;
      struct stat st {};
      ASSERT_EQ(lstat(c.path.c_str(), &st), 0) << c.path;
      EXPECT_EQ(st.st_mode, st0.st_mode) << c.is << ": its type and mode must stay as they were";
      EXPECT_EQ(st.st_ino, st0.st_ino) << c.is;
    }
  }
  EXPECT_EQ(ct::test::slurp(target), "the target") << "written through the symbolic link";
  close(sock);
  std::filesystem::remove_all(dir);
  if (!have_device) GTEST_SKIP() << "not root: mknod of a character device was refused, its case was not run";
}

/* --save --force over an existing regular file writes it in place: its
 * mode (0644 here) and inode stay its own, the snapshot is what it holds
 * afterwards; a file --save creates has mode 0600. */
TEST(ReaderLive, SaveForceKeepsTheModeOfAFileItDidNotCreate) {
  Writers w(1, "1048576");
  char tmpl[] = "/tmp/ct-live-save-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, file = dir + "/theirs.core", fresh = dir + "/new.core";
  { std::ofstream(file) << "an older file, longer than nothing"; }
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);
  struct stat st0 {};
  ASSERT_EQ(stat(file.c_str(), &st0), 0);
  const auto r = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", file, "--force", "--no-symbols"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u) << "the mode of a file --save did not create was changed";
  EXPECT_EQ(st.st_ino, st0.st_ino) << "written in place";
  const auto again = run({reader_bin(), file, "--json", "--no-symbols"});
  ASSERT_EQ(again.exit_code(), 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["snapshot"]["pid"], w.pid());

  const auto created = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", fresh, "--force"});
  ASSERT_EQ(created.exit_code(), 0) << created.err;
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::filesystem::remove_all(dir);
}

/* The exports read a live snapshot as they read a core: no crash, spans
 * open at the snapshot; and a saved one as well. */
TEST(ReaderLive, SnapshotExportsToChromeTrace) {
  Writers w(2, "1048576");
  char dir[] = "/tmp/ct-live-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/snap.core";
  const auto direct = run({reader_bin(), "--pid", std::to_string(w.pid()), "--save", file, "--format=chrome-trace"});
  ASSERT_EQ(direct.exit_code(), 0) << direct.err;
  const auto saved = run({reader_bin(), file, "--format=chrome-trace"});
  ASSERT_EQ(saved.exit_code(), 0) << saved.err;
  for (const auto *out : {&direct.out, &saved.out}) {
    const json t = json::parse(*out);
    ASSERT_TRUE(t["traceEvents"].is_array());
    EXPECT_GT(t["traceEvents"].size(), 10u);
    EXPECT_TRUE(t["otherData"]["crash"].is_null()) << t["otherData"].dump();
  }
  unlink(file.c_str());
  rmdir(dir);
}

TEST(ReaderLive, UsageErrors) {
  EXPECT_EQ(run({reader_bin()}).exit_code(), 7);
  EXPECT_EQ(run({reader_bin(), "--save", "/tmp/x", "core"}).exit_code(), 7) << "--save needs --pid";
  EXPECT_EQ(run({reader_bin(), "--pid", "1", "a", "b"}).exit_code(), 7) << "--pid takes no CORE";
}

/* A --pid that is not a process id: exit 7, and a sentence about the value
 * given (escaped), not CLI11's range of doubles. */
TEST(ReaderLive, PidThatIsNotAProcessIdIsASentenceAboutIt) {
  const std::string range = " is not a process id: process ids are whole numbers from 1 to 4194304\n";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--pid", "0"}, "--pid: 0" + range},
      {{"--pid", "-1"}, "--pid: -1" + range},
      {{"--pid=-1"}, "--pid: -1" + range},
      {{"--pid", "abc"}, "--pid: \"abc\"" + range},
      {{"--pid", "12x"}, "--pid: \"12x\"" + range},
      {{"--pid", "4194305"}, "--pid: 4194305" + range},
      {{"--pid", "99999999999999999999"}, "--pid: 99999999999999999999" + range},
      {{"--pid", "a\tb\x1b[2J"}, "--pid: \"a\\tb\\x1b[2J\"" + range},
  };
  for (const auto &c : cases) {
    std::vector<std::string> argv = {reader_bin()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = run(argv);
    EXPECT_EQ(r.exit_code(), 7) << c.args.back();
    EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1), c.says) << r.err;
    EXPECT_EQ(r.err.find("range"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

/* --pid with a file named: that file is the process's EXECUTABLE.  A core
 * there (a snapshot saved a moment before) is a usage error that says so;
 * a file that is not ELF is refused for what it is (exit 5), not with "its
 * build-id is PATH: not an ELF file". */
TEST(ReaderLive, PidWithACoreOrANonElfFileSaysWhatTheFileIs) {
  Writers w(1, "1048576");
  char tmpl[] = "/tmp/ct-live-pidfile-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, core = dir + "/snap.core", text = dir + "/notes.txt";
  const std::string pid = std::to_string(w.pid());
  ASSERT_EQ(run({reader_bin(), "--pid", pid, "--save", core, "--no-symbols"}).exit_code(), 0);
  { std::ofstream(text) << "not a program\n"; }

  const auto with_core = run({reader_bin(), "--pid", pid, core});
  EXPECT_EQ(with_core.exit_code(), 7) << with_core.err;
  EXPECT_EQ(with_core.err, "core-timeline-read: " + core +
                               " is a core file, and --pid reads a running process, not a core (with --pid the one "
                               "file named is the process's EXECUTABLE): give the core without --pid, or --pid "
                               "alone\n");
  EXPECT_TRUE(with_core.out.empty()) << with_core.out;

  const auto with_text = run({reader_bin(), "--pid", pid, text, "--no-symbols"});
  EXPECT_EQ(with_text.exit_code(), 5) << with_text.err;
  EXPECT_EQ(with_text.err.rfind("core-timeline-read: " + text + ": not an ELF file, so it cannot be the executable of "
                                "process " + pid + " (",
                                0),
            0u)
      << with_text.err;
  EXPECT_EQ(with_text.err.find("its build-id is"), std::string::npos) << with_text.err;
  EXPECT_EQ(std::count(with_text.err.begin(), with_text.err.end(), '\n'), 1) << with_text.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
