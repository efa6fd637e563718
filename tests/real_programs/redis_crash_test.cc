// SPDX-License-Identifier: MIT
//
// redis_crash_test - Debian's redis-server, a real server whose own SIGSEGV
// handler prints a bug report and re-raises the fault with kill(), crashed
// with `redis-cli DEBUG SEGFAULT` through the real systemd-coredump
// pipeline, its timeline written by core-timelined (the real binary, in a
// directory of the test's own: tests/support/daemon_harness.h).
//
// redis 7.0's DEBUG SEGFAULT writes into a PROT_READ mapping it has just
// made (debug.c): SIGSEGV, SEGV_ACCERR, at that mapping's address, in
// debugCommand.  Its handler (sigsegvHandler, installed with SA_SIGINFO |
// SA_NODEFER | SA_RESETHAND after libtimeline's constructor ran) logs the
// bug report, with "Accessing address: 0x...", then tail-calls
// bugReportEnd, which restores SIG_DFL and kill()s the process with
// SIGSEGV: the frame just inside the signal frame is bugReportEnd's
// (the tail call replaced sigsegvHandler's).
//
// Each case starts redis on 127.0.0.1 with a free port, its own --dir, no
// persistence, the crash log on (redis's default) but without its "fast
// memory test" (--crash-memcheck-enabled no), and:
//  - no preload: how redis dies without libtimeline (the other cases must
//    die the same way), and the bug report it prints;
//  - LD_PRELOAD=libtimeline.so.1: redis's handler replaces libtimeline's,
//    so the ring has no CRASH event; the stored timeline has the original
//    fault from the kernel's signal frame in the core (crash.reraised) and
//    the crashing thread's whole stack from the core, through the signal
//    frame, processCommand, down to main; the warning says what the core
//    shows, never "not installed";
//  - LD_PRELOAD="libtimeline.so.1 libtimeline-signal.so" (and the other
//    order): libtimeline's handler runs first and writes a CRASH event of
//    the original fault (chained), then redis's handler still prints its
//    bug report;
//  - the same with a copy of libtimeline.so.1 stripped as a package ships
//    it: the CRASH event is still the original fault, and the reader says
//    no more than its unwind of the core saw, and (StrippedLibtimelineWhole-
//    Stack) the whole stack through libtimeline's handler, by its .eh_frame.
//
// Why no memory test in the other cases.  redis's fast memory test
// (debug.c) writes patterns over every anonymous read-write mapping whose
// /proc/self/maps line does not say "stack", and compares; libtimeline's
// alternate signal stack is such a mapping.  redis's handler does not ask
// SA_ONSTACK, so libtimeline runs it on the interrupted stack, as the
// kernel would (MemoryTestOnTheInterruptedStack checks the test passes and
// the CRASH event is the original fault).  Without libtimeline the test
// also faults now and then by itself (seen once in memtest_compare, with
// libjemalloc's background thread alive beside it), which would make every
// case flaky.
//
// The waits only bound a hang; nothing is timed.  Every case kills redis if
// it still runs and removes its directory on every way out.  Needs root
// (the stored cores) and the pipeline (ctest fixture "pipeline").
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "daemon_harness.h"
#include "schema_check.h"
#include "process.h"
#include "test_files.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char kRedisServer[] = CT_REDIS_SERVER;
constexpr const char kRedisCli[] = CT_REDIS_CLI;

// A directory of its own, removed (with everything in it) on every way out.
struct TempDir : ct::test::TempDir {
  TempDir() : ct::test::TempDir("ct-redis") {}
};

// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice
// for a bind to port 0; redis binds it a moment later).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
  close(fd);
  if (!ok) throw std::runtime_error("cannot bind 127.0.0.1:0");
  return ntohs(a.sin_port);
}

// redis-server, started by the test; SIGKILLed and reaped if it still runs
// when this goes out of scope.
class Redis {
 public:
  Redis(const std::string &dir, const std::string &preload, bool memcheck,
        const std::map<std::string, std::string> &env = {})
      : dir_(dir), port_(free_port()) {
    ct::test::ProcessOptions po;
    po.in = ct::test::Stream::null();
    po.out = ct::test::Stream::file(dir + "/redis.out");
    po.err = ct::test::Stream::to_stdout();
    if (preload.empty())
      po.unset_env.push_back("LD_PRELOAD");
    else
      po.env["LD_PRELOAD"] = preload;
    for (const auto &[k, v] : env) po.env[k] = v;
    // Default dispositions and an empty mask for the fatal signals, as a
    // service manager starts it (the test's own may differ).
    po.in_child = [] {
      for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
    };
    not_before_usec_ = ct::test::now_usec();
    std::vector<std::string> argv{kRedisServer, "--bind", "127.0.0.1", "--port", std::to_string(port_),
                                  "--enable-debug-command", "local", "--save", "", "--appendonly", "no",
                                  "--dir", dir, "--logfile", log_path(), "--daemonize", "no"};
    if (!memcheck) argv.insert(argv.end(), {"--crash-memcheck-enabled", "no"});
    pid_ = ct::test::spawn(argv, po);
  }
  ~Redis() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Redis(const Redis &) = delete;
  Redis &operator=(const Redis &) = delete;

  pid_t pid() const { return pid_; }
  std::uint64_t not_before_usec() const { return not_before_usec_; }
  std::string log_path() const { return dir_ + "/redis.log"; }
  std::string log() const { return ct::test::read_text(log_path()) + ct::test::read_text(dir_ + "/redis.out"); }

  // Until it answers PING (true), or it died or never answered (false).
  bool wait_ready() {
    return ct::test::wait_until(
        [&] { return exited() || ct::test::run(cli({"PING"})).out == "PONG\n"; }, 60s) &&
           !reaped_;
  }

  // DEBUG SEGFAULT; then its wait status once it died (nullopt if it
  // outlives the bound, when the destructor kills it).
  std::optional<int> crash() {
    ct::test::ProcessOptions po;
    po.timeout = 60s;
    ct::test::run(cli({"DEBUG", "SEGFAULT"}), po); /* redis-cli says the connection was closed */
    if (!ct::test::wait_until([&] { return exited(); }, 60s)) return std::nullopt;
    return status_;
  }

 private:
  std::vector<std::string> cli(std::vector<std::string> args) const {
    std::vector<std::string> v{kRedisCli, "-h", "127.0.0.1", "-p", std::to_string(port_)};
    v.insert(v.end(), args.begin(), args.end());
    return v;
  }
  bool exited() {
    if (reaped_) return true;
    if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }
  std::string dir_;
  int port_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::uint64_t not_before_usec_ = 0;
};

// One crash of redis: how it died, what it logged, and its stored timeline.
struct Crashed {
  pid_t pid = -1;
  int status = 0;
  std::string log;
  std::string fault_address;  // redis's own "Accessing address: 0x..."
  json doc;                   // the timeline core-timelined stored (null: none)
  std::string coredump_message;  // systemd-coredump's journal MESSAGE
};

class RedisCrash : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_dir_ = new TempDir;
    ct::test::DaemonHarness::Options o;
    o.binary = CT_DAEMON_BIN;
    o.root = daemon_dir_->path;
    o.log_target = "both";
    daemon_ = new ct::test::DaemonHarness(o);
    daemon_->start();
  }
  static void TearDownTestSuite() {
    delete daemon_; /* stops it */
    daemon_ = nullptr;
    delete daemon_dir_;
    daemon_dir_ = nullptr;
  }

  // Starts redis under `preload`, crashes it, and collects what it left.
  Crashed crash(const std::string &preload, bool want_timeline, bool memcheck = false,
                const std::map<std::string, std::string> &env = {}) {
    Crashed c;
    TempDir dir;
    Redis redis(dir.path, preload, memcheck, env);
    c.pid = redis.pid();
    if (!redis.wait_ready()) {
      ADD_FAILURE() << "redis-server did not answer PING; its log:\n" << redis.log();
      return c;
    }
    const std::optional<int> status = redis.crash();
    c.log = redis.log();
    if (!status) {
      ADD_FAILURE() << "redis-server still runs after DEBUG SEGFAULT; its log:\n" << c.log;
      return c;
    }
    c.status = *status;
    std::smatch m;
    if (std::regex_search(c.log, m, std::regex(R"(Accessing address: (0x[0-9a-f]+))"))) c.fault_address = m[1];
    const auto fields = ct::test::wait_for_coredump_entry(c.pid, std::chrono::system_clock::time_point(
                                                                     std::chrono::microseconds(redis.not_before_usec())),
                                                          60s);
    if (auto it = fields.find("MESSAGE"); it != fields.end()) c.coredump_message = it->second;
    if (want_timeline) {
      if (auto t = daemon_->wait_timeline(c.pid, 60s, redis.not_before_usec())) {
        c.doc = t->doc;
        /* The stored (compact) document is what the schema says. */
        EXPECT_EQ(ct::test::schema_errors_of(ct::test::read_text(t->path), CT_SCHEMA_PATH), "") << t->path;
      } else
        ADD_FAILURE() << "no timeline for redis-server pid " << c.pid << "; daemon log:\n" << daemon_->log_tail();
    }
    return c;
  }

  static TempDir *daemon_dir_;
  static ct::test::DaemonHarness *daemon_;
};

TempDir *RedisCrash::daemon_dir_ = nullptr;
ct::test::DaemonHarness *RedisCrash::daemon_ = nullptr;

std::string fn(const json &frame) {
  return frame.contains("function") && frame["function"].is_string() ? frame["function"].get<std::string>() : "?";
}

std::string shown(const json &frames) {
  std::string s;
  for (std::size_t i = 0; i < frames.size(); ++i)
    s += "#" + std::to_string(i) + " " + frames[i].value("address", std::string("?")) + " " + fn(frames[i]) + " [" +
         frames[i].value("from", std::string("?")) + "]" +
         (frames[i].value("signal_frame", false) ? " (signal frame)" : "") + "\n";
  return s;
}

// The index of the first frame at or after `from` whose function is `name`.
std::optional<std::size_t> find_frame(const json &frames, const std::string &name, std::size_t from = 0) {
  for (std::size_t i = from; i < frames.size(); ++i)
    if (fn(frames[i]) == name) return i;
  return std::nullopt;
}

// `want` appear in `frames` in this order (others may come between).
void expect_in_order(const json &frames, const std::vector<std::string> &want) {
  std::size_t at = 0;
  for (const auto &w : want) {
    const auto i = find_frame(frames, w, at);
    if (!i) {
      ADD_FAILURE() << "no frame " << w << " (after #" << at << ") in:\n" << shown(frames);
      return;
    }
    at = *i + 1;
  }
}

// What every case checks of redis itself: it printed its bug report of the
// original fault, and died of SIGSEGV with a core, as without libtimeline.
void expect_redis_reported_and_died(const Crashed &c) {
  EXPECT_NE(c.log.find("REDIS BUG REPORT START"), std::string::npos) << c.log;
  EXPECT_NE(c.log.find("REDIS BUG REPORT END"), std::string::npos) << "the whole report:\n" << c.log;
  EXPECT_NE(c.log.find("crashed by signal: 11, si_code: 2"), std::string::npos)
      << "redis's handler saw the original SEGV_ACCERR:\n" << c.log;
  EXPECT_NE(c.log.find("debugCommand"), std::string::npos) << "redis's own stack trace:\n" << c.log;
  EXPECT_FALSE(c.fault_address.empty()) << c.log;
  ASSERT_TRUE(WIFSIGNALED(c.status)) << "wait status " << c.status;
  EXPECT_EQ(WTERMSIG(c.status), SIGSEGV);
  EXPECT_TRUE(WCOREDUMP(c.status));
}

// The crash stack reaches main through the server's command path, and
// holds every frame systemd-coredump's stack of the same core has, at the
// same addresses.
void expect_whole_stack(const Crashed &c) {
  const json &st = c.doc["crash"]["stack"];
  ASSERT_TRUE(st.is_object()) << c.doc["crash"].dump(2);
  const json &frames = st["frames"];
  expect_in_order(frames, {"kill", "bugReportEnd", "__restore_rt", "debugCommand", "call", "processCommand",
                           "processInputBuffer", "readQueryFromClient", "aeMain", "main", "_start"});
  EXPECT_EQ(st["core_end"], "") << "the core's unwind reached the outermost frame:\n" << shown(frames);
  std::size_t signal_frames = 0;
  for (const auto &f : frames) signal_frames += f.value("signal_frame", false);
  EXPECT_EQ(signal_frames, 1u) << shown(frames);
  const auto theirs = ct::test::coredump_stack(c.coredump_message);
  ASSERT_GE(theirs.size(), 10u) << c.coredump_message;
  ASSERT_GE(frames.size(), theirs.size()) << shown(frames) << c.coredump_message;
  for (std::size_t i = 0; i < theirs.size(); ++i)
    EXPECT_EQ(std::stoull(frames[i]["address"].get<std::string>(), nullptr, 16), theirs[i].first)
        << "frame #" << i << " of\n" << shown(frames) << c.coredump_message;
}

// The fault the core's signal frame holds: the original SEGV_ACCERR in
// debugCommand, re-raised with kill().  The handler the signal entered:
// redis's (whose last frame is bugReportEnd's, sigsegvHandler tail-calls
// it) when redis's replaced libtimeline's; libtimeline's, which recorded
// the fault and called redis's, under libtimeline-signal.so (`recorded`).
void expect_reraised(const Crashed &c, bool recorded) {
  const json &cr = c.doc["crash"];
  EXPECT_EQ(cr["signal_name"], "SIGSEGV") << cr.dump(2);
  EXPECT_EQ(cr["si_code_name"], "SI_USER") << "the core's own siginfo is the kill()'s";
  EXPECT_EQ(cr["sender_pid"], c.pid);
  ASSERT_TRUE(cr["reraised"].is_object()) << cr.dump(2);
  const json &r = cr["reraised"];
  EXPECT_EQ(r["signal_name"], "SIGSEGV");
  EXPECT_EQ(r["si_code_name"], "SEGV_ACCERR");
  EXPECT_EQ(r["fault_address"], c.fault_address) << "redis logged the address it faulted at";
  EXPECT_EQ(fn(r["location"]), "debugCommand") << r.dump(2);
  EXPECT_EQ(r["raised_with"], "kill()");
  const std::string text = c.doc.value("text", std::string());
  const std::string fault = "caught SIGSEGV \\(SEGV_ACCERR\\) at addr=" + c.fault_address +
                            " pc=0x[0-9a-f]+ in debugCommand, redis-check-rdb";
  if (!recorded) {
    EXPECT_EQ(fn(r["handler"]), "bugReportEnd") << r.dump(2);
    EXPECT_TRUE(std::regex_search(text, std::regex("\n  re-raised: the program's own handler \\(in bugReportEnd, "
                                                   "redis-check-rdb\\) " + fault + " and re-raised it with kill\\(\\)\n")))
        << text;
  } else {
    ASSERT_TRUE(r["handler"]["module"].is_string()) << r.dump(2);
    EXPECT_EQ(fs::path(r["handler"]["module"].get<std::string>()).filename().string().rfind("libtimeline.so", 0), 0u)
        << "the signal entered libtimeline's handler:\n" << r.dump(2);
    EXPECT_TRUE(std::regex_search(text, std::regex("\n  re-raised: libtimeline's crash handler \\(in (\\S+, "
                                                   "libtimeline\\.so[.0-9]*|libtimeline\\.so[.0-9]*\\+0x[0-9a-f]+)\\) " + fault + ", recorded it \\(the "
                                                   "CRASH event\\), and the program's own handler it called "
                                                   "re-raised it with kill\\(\\)\n")))
        << text;
  }
}

const json *crash_event(const json &doc) {
  for (const auto &e : doc["events"])
    if (e["kind"] == "CRASH") return &e;
  return nullptr;
}

TEST_F(RedisCrash, WithoutLibtimelineRedisReportsAndDiesOfSigsegv) {
  const Crashed c = crash("", false);
  expect_redis_reported_and_died(c);
}

// LD_PRELOAD=libtimeline.so.1 alone: redis's handler, installed after
// libtimeline's constructor, replaces libtimeline's.  The reader's fallback
// from the core is all there is, and it is the whole story.
TEST_F(RedisCrash, LibtimelineAloneTheCoreTellsTheOriginalFault) {
  const Crashed c = crash(CT_LIBTIMELINE_SO, true);
  expect_redis_reported_and_died(c);
  ASSERT_TRUE(c.doc.is_object());
  EXPECT_EQ(c.doc["status"], "ok") << c.doc.dump(2).substr(0, 4000);
  EXPECT_EQ(crash_event(c.doc), nullptr) << "redis's handler displaced libtimeline's: no CRASH event";
  EXPECT_FALSE(c.doc["crash"]["ring_slot"].get<bool>());

  // The warning says what the core shows (redis's handler caught the fault
  // and re-raised it), never that libtimeline's was not installed.
  bool warned = false;
  for (const auto &w : c.doc["warnings"]) {
    const std::string s = w.get<std::string>();
    EXPECT_EQ(s.find("not installed"), std::string::npos) << s;
    warned = warned || s.rfind("no CRASH event in the ring: the program's own handler (bugReportEnd) caught the "
                               "original SIGSEGV and re-raised it with kill()",
                               0) == 0;
  }
  EXPECT_TRUE(warned) << c.doc["warnings"].dump(2);

  expect_reraised(c, false);
  expect_whole_stack(c);
  if (c.doc["crash"]["stack"].is_object()) {
    for (const auto &f : c.doc["crash"]["stack"]["frames"]) EXPECT_EQ(f["from"], "core") << f.dump();
  }
}

// With libtimeline-signal.so (lib/preload/README.md): libtimeline's handler
// stays the kernel's, writes the CRASH event of the original fault, then
// calls redis's, which still prints its bug report and re-raises.
void expect_chained_crash_event(const Crashed &c) {
  expect_redis_reported_and_died(c);
  ASSERT_TRUE(c.doc.is_object());
  EXPECT_EQ(c.doc["status"], "ok") << c.doc.dump(2).substr(0, 4000);
  EXPECT_TRUE(c.doc["crash"]["ring_slot"].get<bool>()) << c.doc["crash"].dump(2);
  const json *e = crash_event(c.doc);
  ASSERT_NE(e, nullptr) << "no CRASH event in the stored timeline";
  const json &ec = (*e)["crash"];
  EXPECT_EQ(ec["signal_name"], "SIGSEGV") << e->dump(2);
  EXPECT_EQ(ec["si_code_name"], "SEGV_ACCERR") << e->dump(2);
  EXPECT_EQ(ec["fault_address"], c.fault_address) << e->dump(2);
  EXPECT_TRUE(ec["chained"].get<bool>()) << "recorded as the fault redis's handler re-raised";
  // Written before redis's handler ran; redis re-raised it and died of it.
  EXPECT_TRUE(ec["handed"].get<bool>()) << e->dump(2);
  EXPECT_EQ(ec["handed_outcome"], "crash") << e->dump(2);
  EXPECT_EQ(fn((*e)["location"]), "debugCommand") << e->dump(2);
  for (const auto &w : c.doc["warnings"])
    EXPECT_EQ(w.get<std::string>().find("no CRASH event"), std::string::npos) << w;

  // The core still shows the kill() and the signal frame it came through.
  expect_reraised(c, true);
  expect_whole_stack(c);
  // From the CRASH event's pc on, its walk and the core's unwind are one
  // stack, down to main.
  ASSERT_TRUE(c.doc["crash"]["stack"].is_object());
  const json &frames = c.doc["crash"]["stack"]["frames"];
  const auto at = find_frame(frames, "debugCommand");
  ASSERT_TRUE(at) << shown(frames);
  EXPECT_EQ(frames[*at]["from"], "ring+core") << shown(frames);
  const auto main_at = find_frame(frames, "main", *at);
  ASSERT_TRUE(main_at) << shown(frames);
  EXPECT_EQ(frames[*main_at]["from"], "ring+core") << shown(frames);
}

TEST_F(RedisCrash, WithTheSignalPreloadTheCrashEventIsTheOriginalFault) {
  expect_chained_crash_event(
      crash(std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_SIGNAL_SO, true));
}

// The two preloads in the other order: the same (libtimeline-signal.so
// needs libtimeline.so.1, whose constructor runs first either way).
TEST_F(RedisCrash, WithTheSignalPreloadFirstTheSame) {
  expect_chained_crash_event(
      crash(std::string(CT_PRELOAD_SIGNAL_SO) + " " + CT_LIBTIMELINE_SO, true));
}

// libtimeline.so.1 stripped as Debian's dh_strip strips a shared library
// (strip --strip-unneeded: no .symtab, no .debug_frame), a copy in the
// case's directory, with libtimeline-signal.so.  The CRASH event is the
// original fault whatever the core's unwind can do; the crash stack reaches
// main (the CRASH event's walk after the core's frames, where the core's
// unwind stopped in libtimeline's handler); and the reader never says the
// stack passes through no signal frame unless its unwind reached the
// outermost frame.
std::string stripped_libtimeline(const std::string &dir) {
  // Readable by the daemon's decoder (another uid), as /usr/lib is: the
  // core's unwind reads the copy's .eh_frame.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  const std::string path = dir + "/libtimeline.so.1";
  fs::copy_file(CT_LIBTIMELINE_SO, path, fs::copy_options::overwrite_existing);
  const ct::test::Ran r = ct::test::run({CT_STRIP, "--strip-unneeded", path});
  if (!r.ok()) throw std::runtime_error("strip " + path + ": " + r.err);
  return path;
}

TEST_F(RedisCrash, StrippedLibtimelineTheCrashEventIsStillTheOriginalFault) {
  TempDir lib;
  const Crashed c = crash(stripped_libtimeline(lib.path) + " " + CT_PRELOAD_SIGNAL_SO, true);
  expect_redis_reported_and_died(c);
  ASSERT_TRUE(c.doc.is_object());
  const json *e = crash_event(c.doc);
  ASSERT_NE(e, nullptr) << "no CRASH event in the stored timeline";
  EXPECT_EQ((*e)["crash"]["si_code_name"], "SEGV_ACCERR") << e->dump(2);
  EXPECT_EQ((*e)["crash"]["fault_address"], c.fault_address) << e->dump(2);
  EXPECT_TRUE((*e)["crash"]["chained"].get<bool>()) << e->dump(2);
  EXPECT_EQ(fn((*e)["location"]), "debugCommand") << e->dump(2);
  const json &cr = c.doc["crash"];
  ASSERT_TRUE(cr["stack"].is_object()) << cr.dump(2);
  // Whatever the core's unwind could do, the crash stack goes from the
  // fault down to main (the CRASH event's walk, where the core's stopped).
  expect_in_order(cr["stack"]["frames"], {"debugCommand", "call", "processCommand", "aeMain", "main"});
  if (!cr["reraised"].is_object()) {
    ASSERT_TRUE(cr.contains("reraised_note")) << cr.dump(2);
    const std::string note = cr["reraised_note"];
    if (cr["stack"]["core_end"] != "") {
      EXPECT_EQ(note.find("passes through no signal frame"), std::string::npos)
          << "the core's unwind stopped (" << cr["stack"]["core_end"] << "): a signal frame may lie beyond it\n"
          << note;
    }
  }
}

// The same, with the whole stack from the core and the re-raised fault
// from its signal frame: libtimeline keeps its .eh_frame when stripped
// (built with asynchronous unwind tables), so libdwfl's unwind of the core
// goes through its crash handler and the stack switch to the signal frame.
TEST_F(RedisCrash, StrippedLibtimelineWholeStack) {
  TempDir lib;
  const Crashed c = crash(stripped_libtimeline(lib.path) + " " + CT_PRELOAD_SIGNAL_SO, true);
  expect_chained_crash_event(c);
}

// redis's default crash report, fast memory test included, under
// libtimeline-signal.so.  redis's handler (SA_NODEFER|SA_RESETHAND|
// SA_SIGINFO, no SA_ONSTACK) runs on the interrupted stack, not on
// libtimeline's alternate stack, which the memory test overwrites; the
// CRASH event, written before redis's handler ran, is the original fault.
// (redis's memory test may still fault by itself now and then: see the
// file's comment.)
TEST_F(RedisCrash, MemoryTestOnTheInterruptedStack) {
  const Crashed c = crash(std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_SIGNAL_SO, true, true);
  EXPECT_NE(c.log.find("Fast memory test PASSED"), std::string::npos) << c.log;
  expect_chained_crash_event(c);
}

// Under every wrapper with TL_IO_BYTES=64: the last receive on the
// crashing thread is the READ (or RECV) of the RESP command that killed
// redis, its bytes in inline_text, uncut, on an fd the reader ties to an
// ACCEPT from 127.0.0.1 (redis-cli's connection).
TEST_F(RedisCrash, AllWrappersWithIoBytesTheLastReceiveIsDebugSegfault) {
  const std::string preload = std::string(CT_PRELOAD_ALLOC_SO) + " " + CT_PRELOAD_IO_SO + " " + CT_LIBTIMELINE_SO +
                              " " + CT_PRELOAD_SIGNAL_SO;
  const Crashed c = crash(preload, true, false, {{"TL_IO_BYTES", "64"}});
  expect_redis_reported_and_died(c);
  ASSERT_TRUE(c.doc.is_object());
  EXPECT_EQ(c.doc["status"], "ok") << c.doc.dump(2).substr(0, 4000);
  ASSERT_TRUE(c.doc["crash"]["tid"].is_number()) << c.doc["crash"].dump(2);
  const auto tid = c.doc["crash"]["tid"].get<std::uint64_t>();
  const json *last_receive = nullptr;
  std::string receives;  // the crashing thread's receives, for the message
  for (const auto &e : c.doc["events"]) {
    if (e["tid"].get<std::uint64_t>() != tid || (e["kind"] != "READ" && e["kind"] != "RECV")) continue;
    last_receive = &e;
    receives += e["kind"].get<std::string>() + " " + e["io"].dump() + " " + e.value("inline_text", "(no text)") + "\n";
  }
  ASSERT_NE(last_receive, nullptr) << "no READ or RECV on the crashing thread " << tid;
  const json &r = *last_receive;
  const std::string resp = "*2\r\n$5\r\nDEBUG\r\n$8\r\nSEGFAULT\r\n";
  ASSERT_TRUE(r.contains("inline_text")) << r.dump(2) << "\n" << receives;
  const std::string text = r["inline_text"].get<std::string>();
  EXPECT_NE(text.find("DEBUG"), std::string::npos) << text << "\n" << receives;
  EXPECT_NE(text.find("SEGFAULT"), std::string::npos) << text << "\n" << receives;
  EXPECT_EQ(r["io"]["result"], resp.size()) << r.dump(2);
  EXPECT_EQ(r["inline_cut"], false) << r.dump(2);
  EXPECT_EQ(r["inline_bytes"].get<std::string>().size(), 2 * resp.size()) << r.dump(2);
  // Its fd: made by an ACCEPT in the window, from 127.0.0.1.
  const json &origin = r["io"]["origin"];
  ASSERT_TRUE(origin.is_object()) << r.dump(2);
  EXPECT_EQ(origin["state"], "found") << origin.dump(2);
  ASSERT_TRUE(origin["event"].is_object()) << origin.dump(2);
  EXPECT_EQ(origin["event"]["kind"], "ACCEPT") << origin.dump(2);
  const json *accept = nullptr;
  for (const auto &e : c.doc["events"])
    if (e["ring"] == origin["event"]["ring"] && e["lane"] == origin["event"]["lane"] &&
        e["seq"] == origin["event"]["seq"])
      accept = &e;
  ASSERT_NE(accept, nullptr) << origin.dump(2);
  EXPECT_EQ((*accept)["io"]["result"], r["io"]["fd"]) << accept->dump(2);
  EXPECT_EQ((*accept)["io"]["peer"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << accept->dump(2);
}

}  // namespace
