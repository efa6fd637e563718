// SPDX-License-Identifier: MIT
//
// debuginfod_test - symbols from a real debuginfod server (Debian's
// debuginfod 0.188 serving debuginfod_victim's debug info directory), for a
// real crash of debuginfod_victim, a stripped executable whose debug info
// is only on that server:
//  - server up: function and source file:line, from core-timeline-read on
//    the core and from core-timelined's sandboxed decoder (the stored
//    document and its text);
//  - server stopped: raw module+offset and a note that debuginfod could
//    not be reached;
//  - a hung server (a socket listened on, never served): bounded by
//    --debuginfod-timeout, and a note that says so.
// Loopback only: main() moves this process into a network namespace of
// its own (unshare(CLONE_NEWNET)) and checks that lo is its only link, so
// the server (which binds every interface, it has no listen-address
// option) and every client live there; the journal's and the crash
// pipeline's pathname sockets work across namespaces.
//
// Each case has its own DEBUGINFOD_CACHE_PATH: the client caches what it
// fetched, and remembers misses (cache_miss_s).  Every process started here
// is stopped by a destructor, on every way out.  No timed assertions: a
// hang is caught by the ctest TIMEOUT and by the run() timeouts below.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/symbolize.h"
#include "crash_harness.h"
#include "daemon_harness.h"
#include "process.h"
#include "test_files.h"

extern char **environ;

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int kServerPort = 8002;  // in this test's own network namespace
constexpr int kHungPort = 8003;

struct TempDir : ct::test::TempDir {
  TempDir() : ct::test::TempDir("ct-debuginfod", 0755) {}
  ~TempDir() { keep = ::testing::Test::HasFailure(); }
};

std::string victim_build_id() {
  auto id = core_timeline::reader::file_build_id(CT_VICTIM);
  if (!id) throw std::runtime_error(std::string(CT_VICTIM) + ": " + id.error().message);
  return core_timeline::reader::hex_bytes(*id);
}

// The line of debuginfod_victim.c that crashes (marked "CRASH LINE").
int crash_line() {
  std::ifstream in(CT_VICTIM_SOURCE);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("CRASH LINE") != std::string::npos) return n;
  throw std::runtime_error(std::string("no CRASH LINE in ") + CT_VICTIM_SOURCE);
}

// Debian's debuginfod serving CT_SERVED on kServerPort (every interface of
// this namespace: lo only), its database and log in `dir`.
class Server {
 public:
  explicit Server(std::string dir) : dir_(std::move(dir)) {}
  ~Server() { stop(); }
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  static std::string url() { return "http://127.0.0.1:" + std::to_string(kServerPort); }
  std::string log() const { return ct::test::read_text(dir_ + "/debuginfod.log"); }

  // Starts it, and returns once debuginfod-find fetches the victim's
  // debug info from it (it has scanned CT_SERVED).
  void start() {
    ct::test::ProcessOptions po;
    po.search_path = true;
    po.own_process_group = true;
    po.in = ct::test::Stream::null();
    po.out = ct::test::Stream::append(dir_ + "/debuginfod.log");
    po.err = ct::test::Stream::to_stdout();
    po.unset_env = {"DEBUGINFOD_*"};
    pid_ = ct::test::spawn({"debuginfod", "-F", CT_SERVED, "-p", std::to_string(kServerPort), "-d",
                            dir_ + "/debuginfod.sqlite"},
                           po);
    const std::string id = victim_build_id();
    for (int attempt = 0; attempt < 150; ++attempt) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("debuginfod exited (wait status " + std::to_string(status) + "): " + log());
      }
      ct::test::ProcessOptions probe;
      probe.search_path = true;
      probe.timeout = 20s;
      probe.unset_env = {"DEBUGINFOD_*"};
      probe.env = {{"DEBUGINFOD_URLS", url()},
                   {"DEBUGINFOD_CACHE_PATH", dir_ + "/probe-cache-" + std::to_string(attempt)}};
      if (ct::test::run({"debuginfod-find", "debuginfo", id}, probe).ok()) return;
      std::this_thread::sleep_for(200ms);  // the poll's period: it serves, or the attempts run out (a hang)
    }
    throw std::runtime_error("debuginfod did not serve " + id + " within 30 s: " + log());
  }

  void stop() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(100ms);  // the poll's period; SIGKILL after 10 s
    }
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

// A TCP socket on 127.0.0.1:kHungPort that is listened on and never
// served: the kernel completes the handshakes, nobody reads the request.
class HungServer {
 public:
  HungServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kHungPort);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || listen(fd_, 64) != 0)
      throw std::runtime_error(std::string("hung server socket: ") + std::strerror(errno));
  }
  ~HungServer() { close(fd_); }
  HungServer(const HungServer &) = delete;
  HungServer &operator=(const HungServer &) = delete;
  static std::string url() { return "http://127.0.0.1:" + std::to_string(kHungPort); }

 private:
  int fd_ = -1;
};

// One real crash of the victim, its core fetched from systemd-coredump.
const std::string &victim_core() {
  static const std::string core = ct::test::run_and_collect_core({CT_VICTIM}).core_path;
  return core;
}

// core-timeline-read ARGS CORE with `env` (and no other DEBUGINFOD_*).
ct::test::Ran read_core(const std::vector<std::string> &args, const std::map<std::string, std::string> &env) {
  std::vector<std::string> argv{CT_READER_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(victim_core());
  ct::test::ProcessOptions po;
  po.unset_env = {"DEBUGINFOD_*"};
  po.env = env;
  po.timeout = 120s;
  return ct::test::run(argv, po);
}

json parse(const ct::test::Ran &r) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  try {
    return json::parse(r.out);
  } catch (const std::exception &e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out.substr(0, 2000);
    return json::object();
  }
}

std::string warnings_of(const json &doc) {
  std::string all;
  if (doc.contains("warnings"))
    for (const auto &w : doc["warnings"]) all += w.get<std::string>() + "\n";
  return all;
}

// The crash's location and the victim_mark event's, symbolized from the
// server: functions and the source line.
void expect_symbolized(const json &doc) {
  ASSERT_TRUE(doc.contains("crash") && doc["crash"].is_object()) << doc.dump(1).substr(0, 3000);
  const json &loc = doc["crash"]["location"];
  EXPECT_EQ(loc["function"], "victim_die") << loc.dump();
  EXPECT_EQ(loc["verification"], "verified") << loc.dump();
  ASSERT_TRUE(loc["source"].is_object()) << loc.dump();
  EXPECT_EQ(fs::path(loc["source"]["file"].get<std::string>()).filename(), "debuginfod_victim.c") << loc.dump();
  EXPECT_EQ(loc["source"]["line"], crash_line()) << loc.dump();
  bool mark = false;
  for (const auto &e : doc["events"])
    if (e.contains("location") && e["location"].is_object() && e["location"]["function"] == "victim_mark") mark = true;
  EXPECT_TRUE(mark) << "no event located in victim_mark";
  EXPECT_EQ(warnings_of(doc).find("DEBUGINFOD"), std::string::npos) << warnings_of(doc);
}

// The crash's location raw (module+offset, no function, no line), with a
// note and a warning that start with `why`.
void expect_raw_with_note(const json &doc, const std::string &why) {
  ASSERT_TRUE(doc.contains("crash") && doc["crash"].is_object()) << doc.dump(1).substr(0, 3000);
  const json &loc = doc["crash"]["location"];
  EXPECT_TRUE(loc["function"].is_null()) << loc.dump();
  EXPECT_TRUE(loc["source"].is_null()) << loc.dump();
  EXPECT_EQ(fs::path(loc["module"].get<std::string>()).filename(), "debuginfod_victim") << loc.dump();
  EXPECT_TRUE(loc["file_offset"].is_string()) << loc.dump();
  ASSERT_TRUE(loc.contains("note")) << loc.dump();
  EXPECT_EQ(loc["note"].get<std::string>().rfind("no debug info: " + why, 0), 0u) << loc.dump();
  EXPECT_NE(warnings_of(doc).find("DEBUGINFOD: " + why), std::string::npos) << warnings_of(doc);
}

// The size of the victim's debug info in the client cache `cache`; 0 if
// it is not there, or only as a remembered miss (an empty file).
std::uintmax_t fetched(const std::string &cache) {
  std::error_code ec;
  const auto n = fs::file_size(cache + "/" + victim_build_id() + "/debuginfo", ec);
  return ec ? 0 : n;
}

class Debuginfod : public ::testing::Test {
 protected:
  TempDir dir;
  std::string cache(const std::string &name) const { return dir.path + "/cache-" + name; }
};

}  // namespace

// The control: without DEBUGINFOD_URLS the victim has no symbols at all,
// so any name below came from the server.
TEST_F(Debuginfod, WithoutAServerTheStrippedVictimHasNoSymbols) {
  const json doc = parse(read_core({"--json"}, {}));
  const json &loc = doc["crash"]["location"];
  EXPECT_TRUE(loc["function"].is_null()) << loc.dump();
  EXPECT_TRUE(loc["source"].is_null()) << loc.dump();
  EXPECT_EQ(warnings_of(doc).find("DEBUGINFOD"), std::string::npos) << warnings_of(doc);
}

TEST_F(Debuginfod, ReaderSymbolizesFromTheServer) {
  Server server(dir.path);
  server.start();
  const std::map<std::string, std::string> env{{"DEBUGINFOD_URLS", Server::url()},
                                               {"DEBUGINFOD_CACHE_PATH", cache("up")}};
  expect_symbolized(parse(read_core({"--json"}, env)));
  const auto text = read_core({}, env);
  EXPECT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_NE(text.out.find("at victim_die+0x0 (debuginfod_victim.c:" + std::to_string(crash_line()) + ")"),
            std::string::npos)
      << text.out;
  // What it fetched is in the cache it was given, by build-id (a miss
  // would be an empty file there).
  EXPECT_GT(fetched(cache("up")), 0u) << server.log();
}

TEST_F(Debuginfod, ReaderWithTheServerStoppedShowsRawAddressesAndSaysWhy) {
  Server server(dir.path);
  server.start();  // it served...
  server.stop();   // ...and is gone: connections are refused
  const std::map<std::string, std::string> env{{"DEBUGINFOD_URLS", Server::url()},
                                               {"DEBUGINFOD_CACHE_PATH", cache("stopped")}};
  const json doc = parse(read_core({"--json"}, env));
  expect_raw_with_note(doc, "debuginfod could not be reached");
  EXPECT_NE(doc["crash"]["location"]["note"].get<std::string>().find("Connection refused"), std::string::npos);
  const auto text = read_core({}, env);
  EXPECT_NE(text.out.find("at debuginfod_victim+0x"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("warning: DEBUGINFOD: debuginfod could not be reached"), std::string::npos) << text.out;
}

TEST_F(Debuginfod, ReaderWithAHungServerIsBoundedByItsTimeout) {
  HungServer hung;
  const std::map<std::string, std::string> env{{"DEBUGINFOD_URLS", HungServer::url()},
                                               {"DEBUGINFOD_CACHE_PATH", cache("hung")}};
  const json doc = parse(read_core({"--json", "--debuginfod-timeout=1"}, env));
  expect_raw_with_note(doc, "debuginfod did not answer within 1000 ms");
}

namespace {

ct::test::DaemonHarness::Options daemon_options(const std::string &root) {
  ct::test::DaemonHarness::Options o;
  o.binary = CT_DAEMON_BIN;
  o.root = root;
  o.log_target = "stderr";
  o.log_level = "debug";
  return o;
}

// Crashes the victim with the daemon running; its stored timeline.
ct::test::Timeline crash_for(const ct::test::DaemonHarness &daemon) {
  const std::uint64_t not_before = ct::test::now_usec();
  const auto run = ct::test::run_and_collect_core({CT_VICTIM});
  auto t = daemon.wait_timeline(run.pid, 60s, not_before);
  if (!t) throw std::runtime_error("no timeline for pid " + std::to_string(run.pid) + ": " + daemon.log_tail());
  return *t;
}

void expect_confined(const json &doc) {
  EXPECT_GE(doc["daemon"]["decoder"]["landlock_abi"].get<int>(), 4) << doc["daemon"].dump();
  EXPECT_EQ(doc["daemon"]["decoder"]["seccomp"], true) << doc["daemon"].dump();
}

}  // namespace

// The daemon's sandboxed decoder: with DEBUGINFOD_URLS in the daemon's
// environment and no DEBUGINFOD_CACHE_PATH, it fetches into
// STATE_DIR/debuginfod_client/UID, UID the one it decoded as (the one place
// beneath which its Landlock rules let it write) over TCP to the URL's port (the one port they let
// it connect to).
TEST_F(Debuginfod, DaemonDecoderSymbolizesFromTheServer) {
  Server server(dir.path);
  server.start();
  fs::create_directories(dir.path + "/daemon");
  ct::test::DaemonHarness daemon{daemon_options(dir.path + "/daemon")};
  daemon.start({}, {{"DEBUGINFOD_URLS", Server::url()}});
  const auto t = crash_for(daemon);
  EXPECT_EQ(t.doc["status"], "ok");
  expect_symbolized(t.doc);
  expect_confined(t.doc);
  EXPECT_NE(t.doc["text"].get<std::string>().find("at victim_die+0x0 (debuginfod_victim.c:" +
                                                  std::to_string(crash_line()) + ")"),
            std::string::npos)
      << t.doc["text"];
  // In the cache of the uid that decoded it (daemon.decoder.run_as): each
  // decoding uid has its own beneath the base (docs/core-timelined.md,
  // "The cache").
  const std::string base = daemon.state_dir() + "/debuginfod_client";
  const auto uid = t.doc["daemon"]["decoder"]["run_as"]["uid"].get<std::uint32_t>();
  EXPECT_NE(uid, 0u);
  EXPECT_GT(fetched(base + "/" + std::to_string(uid)), 0u) << daemon.log_tail();
  EXPECT_EQ(fetched(base), 0u) << "in the cache every uid would share";
  EXPECT_TRUE(daemon.wait_log("debuginfod: decoders ask DEBUGINFOD_URLS=" + Server::url(), 1s)) << daemon.log_tail();
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(Debuginfod, DaemonDecoderWithTheServerStoppedShowsRawAddressesAndSaysWhy) {
  Server server(dir.path);
  server.start();
  server.stop();
  fs::create_directories(dir.path + "/daemon");
  ct::test::DaemonHarness daemon{daemon_options(dir.path + "/daemon")};
  daemon.start({}, {{"DEBUGINFOD_URLS", Server::url()}});
  const auto t = crash_for(daemon);
  EXPECT_EQ(t.doc["status"], "ok");
  expect_raw_with_note(t.doc, "debuginfod could not be reached");
  expect_confined(t.doc);
  EXPECT_NE(t.doc["text"].get<std::string>().find("warning: DEBUGINFOD: debuginfod could not be reached"),
            std::string::npos)
      << t.doc["text"];
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(Debuginfod, DaemonDecoderWithAHungServerIsBoundedByItsTimeout) {
  HungServer hung;
  fs::create_directories(dir.path + "/daemon");
  ct::test::DaemonHarness daemon{daemon_options(dir.path + "/daemon")};
  daemon.start({"--debuginfod-timeout=1"}, {{"DEBUGINFOD_URLS", HungServer::url()}});
  const auto t = crash_for(daemon);
  EXPECT_EQ(t.doc["status"], "ok");
  expect_raw_with_note(t.doc, "debuginfod did not answer within 1000 ms");
  EXPECT_EQ(daemon.stop(), 0);
}

// Into a network namespace of this process's own, where lo is the only
// link, before any test (and any thread) runs.
int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Only what each case sets (Debian's /etc/profile.d/debuginfod.sh sets
  // DEBUGINFOD_URLS in login shells).
  std::vector<std::string> inherited;
  for (char **e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "DEBUGINFOD_", 11) == 0) inherited.emplace_back(*e, std::strcspn(*e, "="));
  for (const auto &name : inherited) unsetenv(name.c_str());
  if (unshare(CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "debuginfod_test: unshare(CLONE_NEWNET): %s (run as root)\n", std::strerror(errno));
    return 1;
  }
  ct::test::ProcessOptions po;
  po.search_path = true;
  const auto up = ct::test::run({"ip", "link", "set", "lo", "up"}, po);
  const auto links = ct::test::run({"ip", "-o", "link", "show"}, po);
  std::istringstream lines(links.out);
  std::vector<std::string> names;
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) names.push_back(l);
  if (!up.ok() || !links.ok() || names.size() != 1 || names[0].find(": lo:") == std::string::npos) {
    std::fprintf(stderr, "debuginfod_test: not in a loopback-only network namespace: %s%s%s\n", up.err.c_str(),
                 links.out.c_str(), links.err.c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
