// SPDX-License-Identifier: MIT
//
// ctl_query_daemon_test - end to end: real crashes, the real pipeline, the
// real core-timelined writing the timelines, then ctl-query reading them
// (issue 4: "crash_demo --path=a gives a timeline.json next to its core
// with status ok and the a-path events; `ctl-query show <pid>` prints them;
// `ctl-query list` lists it"; "as an unprivileged user, ctl-query lists that
// user's timelines and says which others it may not read").
//
// The daemon runs in the foreground with its own state and output
// directories (--first-start new), so the test neither depends on nor
// changes the machine's saved cursor or /var/lib/systemd/coredump; its
// readiness is its sd_notify READY=1 on a socket of the test's.  One crash
// is root's (crash_demo --path=a), one a regular user's (--path=b).
//
// Needs root.  Registered only when the build has core-timelined.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "leaves.h"
#include "test_timelines.h"

namespace {

using json = nlohmann::ordered_json;
using ct::test::ctlq::ProcessResult;
namespace fs = std::filesystem;
using std::chrono::steady_clock;

bool contains(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string timeline_name_for(const std::map<std::string, std::string> &fields) {
  std::string core = fs::path(fields.at("COREDUMP_FILENAME")).filename().string();
  for (const char *s : {".zst", ".lz4", ".xz"}) {
    const std::string suffix = s;
    if (core.size() > suffix.size() && core.compare(core.size() - suffix.size(), suffix.size(), suffix) == 0)
      core.resize(core.size() - suffix.size());
  }
  return core + ".timeline.json";
}

// core-timelined in the foreground, until stop().
class Daemon {
 public:
  void start(const std::string &root) {
    const std::string out = root + "/out", state = root + "/state", tlmaps = root + "/tlmap.d";
    for (const auto &d : {out, state, tlmaps}) fs::create_directories(d);
    fs::permissions(out, fs::perms(0755));
    fs::copy_file(CT_TLMAP, tlmaps + "/crash_demo.tlmap");
    const std::string config = root + "/empty.conf";  // not the machine's
    std::ofstream(config).flush();
    log_ = root + "/daemon.log";
    const std::string sock_path = root + "/notify";
    sock_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(sock_, 0);
    struct sockaddr_un a {};
    a.sun_family = AF_UNIX;
    ASSERT_LT(sock_path.size(), sizeof a.sun_path);
    std::strncpy(a.sun_path, sock_path.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(bind(sock_, reinterpret_cast<struct sockaddr *>(&a), sizeof a), 0);
    out_ = out;
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(126);
      dup2(fd, 1);
      dup2(fd, 2);
      setenv("NOTIFY_SOCKET", sock_path.c_str(), 1);
      execl(CT_DAEMON, CT_DAEMON, "--output-dir", out.c_str(), "--state-dir", state.c_str(), "--tlmap-dir",
            tlmaps.c_str(), "--first-start", "new", "--log-target", "stderr", "--config", config.c_str(),
            static_cast<char *>(nullptr));
      _exit(127);
    }
    // Wait for READY=1.
    const auto deadline = steady_clock::now() + std::chrono::seconds(30);
    while (steady_clock::now() < deadline) {
      struct pollfd p = {sock_, POLLIN, 0};
      if (poll(&p, 1, 200) > 0) {
        char buf[4096];
        ssize_t n = recv(sock_, buf, sizeof buf - 1, 0);
        if (n > 0 && contains(std::string(buf, static_cast<std::size_t>(n)), "READY=1")) return;
      }
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        FAIL() << "core-timelined exited before it was ready:\n" << slurp(log_);
      }
    }
    FAIL() << "core-timelined did not say READY=1 within 30 s:\n" << slurp(log_);
  }

  // Stops it with SIGTERM (the clean stop); returns its wait status.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int st = 0;
    const auto deadline = steady_clock::now() + std::chrono::seconds(20);
    while (waitpid(pid_, &st, WNOHANG) == 0) {
      if (steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
    if (sock_ >= 0) close(sock_);
    sock_ = -1;
    return st;
  }

  ~Daemon() { stop(); }

  // Waits until `name` is in the output directory.
  bool wait_for(const std::string &name, std::chrono::milliseconds timeout) const {
    const auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
      if (fs::exists(out_ + "/" + name)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  const std::string &out() const { return out_; }
  std::string log() const { return slurp(log_); }

 private:
  pid_t pid_ = -1;
  int sock_ = -1;
  std::string out_, log_;
};

TEST(CtlQueryWithDaemon, TheDaemonsTimelinesAreFoundListedAndShown) {
  ASSERT_EQ(geteuid(), 0u);
  char tmpl[] = "/tmp/ctlq-e2e-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  chmod(root.c_str(), 0755);
  struct Cleanup {
    std::string path;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } cleanup{root};

  Daemon daemon;
  ASSERT_NO_FATAL_FAILURE(daemon.start(root));

  // Root's crash.
  ct::test::CrashRun a = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=a"});
  const std::string pid_a = a.journal_fields.at("COREDUMP_PID");
  const std::string name_a = timeline_name_for(a.journal_fields);

  // A regular user's crash.  Not nobody: systemd-coredump grants a user
  // read access to their core with an ACL, except for system users and
  // nobody (coredump.c fix_acl()), and the daemon copies that ACL.  A uid
  // with no passwd entry in the regular range is enough.
  uid_t uid = 4242;
  while (getpwuid(uid) != nullptr) ++uid;
  const gid_t gid = uid;
  auto as_user = [uid, gid] {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
  };
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    as_user();
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(CT_CRASH_DEMO, CT_CRASH_DEMO, "--path=b", static_cast<char *>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(child, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st)) << "crash_demo as uid " << uid << " did not crash (status " << st << ")";
  const std::string pid_b = std::to_string(child);
  // systemd-coredump sends an unprivileged user's entry as that user (_UID
  // is theirs), which the crash harness does not trust; the timeline's name
  // is found by its pid instead: core.crash_demo.<uid>.<boot>.<pid>.<usec>.
  const std::string prefix_b = "core.crash_demo." + std::to_string(uid) + ".";
  const std::string infix_b = "." + pid_b + ".";
  std::string name_b;
  auto find_b = [&] {
    for (const auto &e : fs::directory_iterator(daemon.out())) {
      const std::string n = e.path().filename().string();
      if (n.rfind(prefix_b, 0) == 0 && contains(n, infix_b) && n.size() > 14 &&
          n.compare(n.size() - 14, 14, ".timeline.json") == 0)
        name_b = n;
    }
    return !name_b.empty();
  };

  // The daemon writes both (the issue asks for 5 s; allow for a busy CI).
  ASSERT_TRUE(daemon.wait_for(name_a, std::chrono::seconds(20))) << "no " << name_a << "\n" << daemon.log();
  const auto deadline_b = steady_clock::now() + std::chrono::seconds(20);
  while (!find_b() && steady_clock::now() < deadline_b) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(name_b.empty()) << "no timeline of the user's pid " << pid_b << "\n" << daemon.log();
  const json doc_a = json::parse(slurp(daemon.out() + "/" + name_a));
  EXPECT_EQ(doc_a["status"], "ok");

  auto query = [&](std::vector<std::string> args, const std::function<void()> &in_child = {}) {
    args.insert(args.begin(), {CT_CTL_QUERY, "-D", daemon.out()});
    return ct::test::ctlq::run_process(args, in_child);
  };

  // show: the a-path events, as core-timeline-read printed them.
  ProcessResult show = query({"show", pid_a});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(show.out, doc_a["text"].get<std::string>());
  for (const char *s : {"REQ_PARSE", "BEFORE_DIE", "arg=1001", "CRASH"}) EXPECT_TRUE(contains(show.out, s)) << s;
  EXPECT_FALSE(contains(show.out, "arg=2002"));

  // list: both, with what the documents say.
  ProcessResult list = query({"list", pid_a, pid_b});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto l = lines_of(list.out);
  ASSERT_EQ(l.size(), 3u) << list.out;
  EXPECT_TRUE(contains(l[1], " " + pid_a + " ") && contains(l[1], " ok ") && contains(l[1], "BEFORE_DIE arg=1001"))
      << l[1];
  EXPECT_TRUE(contains(l[2], " " + pid_b + " ") && contains(l[2], " " + std::to_string(uid) + " ") &&
              contains(l[2], "BEFORE_DIE arg=2002"))
      << l[2];
  ProcessResult js = query({"--json", "list", pid_a});
  ASSERT_EQ(lines_of(js.out).size(), 1u) << js.out;
  json ja = json::parse(lines_of(js.out)[0]);
  EXPECT_EQ(ja["events"], doc_a["events"].size());
  EXPECT_EQ(ja["journal_cursor"], doc_a["coredump"]["journal_cursor"]);
  EXPECT_EQ(lines_of(query({"events", "--no-legend", "--name", "BEFORE_DIE", pid_a, pid_b}).out).size(), 2u);

  // Every value of the stored document matches by its dotted path (all of
  // them at once: each must hold), and a misspelt path is named.
  // A value with a NUL byte (COREDUMP_PROC_AUXV is binary) cannot be an
  // argument: execve(2) takes NUL-terminated strings.
  std::vector<std::string> every = ct::test::ctlq::leaf_matches(doc_a);
  std::erase_if(every, [](const std::string &m) { return m.find('\0') != std::string::npos; });
  ASSERT_GT(every.size(), 100u);
  every.insert(every.begin(), {"list", "--no-legend"});
  ProcessResult leaves = query(every);
  EXPECT_EQ(leaves.exit_code, 0) << leaves.err;
  EXPECT_EQ(lines_of(leaves.out).size(), 1u) << leaves.out;
  EXPECT_TRUE(contains(leaves.out, " " + pid_a + " ")) << leaves.out;
  if (leaves.exit_code != 0) {
    for (std::size_t i = 2; i < every.size(); ++i)
      EXPECT_EQ(query({"list", pid_a, every[i]}).exit_code, 0) << every[i];
  }
  ProcessResult misspelt = query({"list", "core.trunacted=true"});
  EXPECT_EQ(misspelt.exit_code, 1);
  EXPECT_TRUE(contains(misspelt.err, "no timeline has a field core.trunacted\n")) << misspelt.err;

  // The user lists their own timeline and is told of root's.
  ProcessResult mine = query({"list"}, as_user);
  ASSERT_NE(mine.exit_code, 126) << "could not become uid " << uid;
  EXPECT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_TRUE(contains(mine.out, " " + pid_b + " ")) << mine.out;
  EXPECT_FALSE(contains(mine.out, " " + pid_a + " ")) << mine.out;
  EXPECT_TRUE(contains(mine.err, name_a + ": permission denied")) << mine.err;
  ProcessResult theirs = query({"list", pid_a}, as_user);
  EXPECT_EQ(theirs.exit_code, 3) << theirs.out << theirs.err;
  ProcessResult show_mine = query({"show", pid_b}, as_user);
  EXPECT_EQ(show_mine.exit_code, 0) << show_mine.err;
  EXPECT_TRUE(contains(show_mine.out, "arg=2002")) << show_mine.out;

  const int stopped = daemon.stop();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0) << "status " << stopped << "\n" << daemon.log();
}

}  // namespace
