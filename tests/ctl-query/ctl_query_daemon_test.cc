// SPDX-License-Identifier: MIT
//
// ctl_query_daemon_test - end to end: real crashes, the real pipeline, the
// real core-timelined writing the timelines, then ctl-query reading them
// (crash_demo --path=a gives a timeline.json next to its core with status
// ok and the a-path events; `ctl-query show <pid>` prints them; `ctl-query
// list` lists it; as an unprivileged user, ctl-query lists that user's
// timelines and says which others it may not read).
//
// The daemon runs in the foreground with its own state and output
// directories (--first-start new; tests/support/daemon_harness.h), so the
// test neither depends on nor changes the machine's saved cursor or
// /var/lib/systemd/coredump; its readiness is its sd_notify READY=1 on a
// socket of the test's.  One crash
// is root's (crash_demo --path=a), one a regular user's (--path=b).
//
// Needs root.  Registered only when the build has core-timelined.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "daemon_harness.h"
#include "leaves.h"
#include "test_timelines.h"
#include "test_files.h"

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

bool contains(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

using ct::test::slurp;

std::string timeline_name_for(const std::map<std::string, std::string> &fields) {
  std::string core = fs::path(fields.at("COREDUMP_FILENAME")).filename().string();
  for (const char *s : {".zst", ".lz4", ".xz"}) {
    const std::string suffix = s;
    if (core.size() > suffix.size() && core.compare(core.size() - suffix.size(), suffix.size(), suffix) == 0)
      core.resize(core.size() - suffix.size());
  }
  return core + ".timeline.json";
}

TEST(CtlQueryWithDaemon, TheDaemonsTimelinesAreFoundListedAndShown) {
  ASSERT_EQ(geteuid(), 0u);
  // Its own configuration (not the machine's) and event names.
  const ct::test::DaemonRoot dr("ctlq-e2e");
  fs::copy_file(CT_TLMAP, dr.tlmap_dir() + "/crash_demo.tlmap");
  ct::test::DaemonHarness daemon(dr.options(CT_DAEMON));
  daemon.start();

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
  ct::test::ProcessOptions quiet_as_user;
  quiet_as_user.out = ct::test::Stream::null();
  quiet_as_user.err = ct::test::Stream::null();
  quiet_as_user.in_child = as_user;
  const ct::test::Ran user_crash = ct::test::run({CT_CRASH_DEMO, "--path=b"}, quiet_as_user);
  const pid_t child = user_crash.pid;
  ASSERT_TRUE(WIFSIGNALED(user_crash.wait_status))
      << "crash_demo as uid " << uid << " did not crash (status " << user_crash.wait_status << ")";
  const std::string pid_b = std::to_string(child);
  // systemd-coredump sends an unprivileged user's entry as that user (_UID
  // is theirs), which the crash harness does not trust; the timeline is
  // found by its pid instead, named core.crash_demo.<uid>.<boot>.<pid>.<usec>.
  const std::string prefix_b = "core.crash_demo." + std::to_string(uid) + ".";

  // The daemon writes both (the issue asks for 5 s; allow for a busy CI).
  const auto ta = daemon.wait_timeline(a.pid, std::chrono::seconds(20));
  ASSERT_TRUE(ta) << "no " << name_a << "\n" << daemon.log();
  ASSERT_EQ(ta->path, daemon.output_dir() + "/" + name_a) << daemon.log();
  const auto tb = daemon.wait_timeline(child, std::chrono::seconds(20));
  ASSERT_TRUE(tb) << "no timeline of the user's pid " << pid_b << "\n" << daemon.log();
  const std::string name_b = fs::path(tb->path).filename().string();
  ASSERT_EQ(tb->path, daemon.output_dir() + "/" + name_b);
  ASSERT_EQ(name_b.rfind(prefix_b, 0), 0u) << name_b;
  const json doc_a = ct::test::full_document(json::parse(slurp(ta->path)));
  EXPECT_EQ(doc_a["status"], "ok");

  auto query = [&](std::vector<std::string> args, const std::function<void()> &in_child = {}) {
    args.insert(args.begin(), {CT_CTL_QUERY, "-D", daemon.output_dir()});
    ct::test::ProcessOptions o;
    o.in_child = in_child;
    return ct::test::run(args, o);
  };

  // show: the a-path events, as core-timeline-read printed them.
  ct::test::Ran show = query({"--all", "show", pid_a});
  ASSERT_EQ(show.exit_code(), 0) << show.err;
  EXPECT_EQ(show.out, doc_a["text"].get<std::string>());
  for (const char *s : {"REQ_PARSE", "BEFORE_DIE", "code=1001", "CRASH"}) EXPECT_TRUE(contains(show.out, s)) << s;
  EXPECT_FALSE(contains(show.out, "code=2002"));

  // list: both, with what the documents say.
  ct::test::Ran list = query({"list", pid_a, pid_b});
  ASSERT_EQ(list.exit_code(), 0) << list.err;
  auto l = lines_of(list.out);
  ASSERT_EQ(l.size(), 3u) << list.out;
  EXPECT_TRUE(contains(l[1], " " + pid_a + " ") && contains(l[1], " ok ") && l[1].ends_with(" BEFORE_DIE")) << l[1];
  EXPECT_TRUE(contains(l[2], " " + pid_b + " ") && contains(l[2], " " + std::to_string(uid) + " ") &&
              l[2].ends_with(" BEFORE_DIE"))
      << l[2];
  ct::test::Ran js = query({"--json", "list", pid_a});
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
  ct::test::Ran leaves = query(every);
  EXPECT_EQ(leaves.exit_code(), 0) << leaves.err;
  EXPECT_EQ(lines_of(leaves.out).size(), 1u) << leaves.out;
  EXPECT_TRUE(contains(leaves.out, " " + pid_a + " ")) << leaves.out;
  if (leaves.exit_code() != 0) {
    for (std::size_t i = 2; i < every.size(); ++i)
      EXPECT_EQ(query({"list", pid_a, every[i]}).exit_code(), 0) << every[i];
  }
  ct::test::Ran misspelt = query({"list", "core.trunacted=true"});
  EXPECT_EQ(misspelt.exit_code(), 1);
  EXPECT_TRUE(contains(misspelt.err, "no timeline has a field core.trunacted\n")) << misspelt.err;

  // The user lists their own timeline and is told of root's.
  ct::test::Ran mine = query({"list"}, as_user);
  ASSERT_NE(mine.exit_code(), 126) << "could not become uid " << uid;
  EXPECT_EQ(mine.exit_code(), 0) << mine.err;
  EXPECT_TRUE(contains(mine.out, " " + pid_b + " ")) << mine.out;
  EXPECT_FALSE(contains(mine.out, " " + pid_a + " ")) << mine.out;
  EXPECT_TRUE(contains(mine.err, name_a + ": permission denied")) << mine.err;
  ct::test::Ran theirs = query({"list", pid_a}, as_user);
  EXPECT_EQ(theirs.exit_code(), 3) << theirs.out << theirs.err;
  ct::test::Ran show_mine = query({"show", pid_b}, as_user);
  EXPECT_EQ(show_mine.exit_code(), 0) << show_mine.err;
  EXPECT_TRUE(contains(show_mine.out, "code=2002")) << show_mine.out;

  EXPECT_EQ(daemon.stop(), 0) << daemon.log();
}

/* spans_three_threads' timeline, stored by the daemon with no
 * tlmap, has the same open spans, closed spans and names as core-timeline-read
 * gives from the core, and ctl-query show prints it as stored. */
TEST(CtlQueryWithDaemon, SpansAndNamesFromTheCoreReachTheStoredTimelineAndShow) {
  ASSERT_EQ(geteuid(), 0u);
  const ct::test::DaemonRoot dr("ctlq-spans");  // no tlmap: the names come from the core
  ct::test::DaemonHarness daemon(dr.options(CT_DAEMON));
  daemon.start();

  ct::test::CrashRun run = ct::test::run_and_collect_core({CT_SPANS_THREE_THREADS});
  const auto t = daemon.wait_timeline(run.pid, std::chrono::seconds(20));
  ASSERT_TRUE(t) << daemon.log();
  const json stored = ct::test::full_document(json::parse(slurp(t->path)));
  ASSERT_EQ(stored["status"], "ok") << stored.dump(1).substr(0, 2000);

  /* The same spans, threads and names as the reader's own reading. */
  ct::test::Ran reader = ct::test::run({CT_READER, "--json", run.core_path});
  ASSERT_EQ(reader.exit_code(), 0) << reader.err;
  const json read = json::parse(reader.out);
  EXPECT_EQ(stored["spans"], read["spans"]);
  EXPECT_EQ(stored["threads"], read["threads"]);
  EXPECT_EQ(stored["names"], read["names"]);
  EXPECT_EQ(stored["crash"]["inside_spans"], read["crash"]["inside_spans"]);
  for (const auto &n : stored["names"]) EXPECT_EQ(n["name_from"], "core");

  /* show prints the stored text: the open spans headline first. */
  ct::test::Ran show = ct::test::run({CT_CTL_QUERY, "-D", daemon.output_dir(), "--all", "show", std::to_string(run.pid)});
  ASSERT_EQ(show.exit_code(), 0) << show.err;
  EXPECT_EQ(show.out, stored["text"].get<std::string>());
  EXPECT_TRUE(contains(show.out, "open spans at the crash:")) << show.out;
  EXPECT_TRUE(contains(show.out, "OUTER") && contains(show.out, " > INNER") &&
              contains(show.out, "<- crashed inside"))
      << show.out;
  EXPECT_TRUE(contains(show.out, "WAIT") && contains(show.out, "end (lasted ")) << show.out;
  EXPECT_EQ(daemon.stop(), 0);
}

}  // namespace
