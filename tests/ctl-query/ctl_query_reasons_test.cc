// SPDX-License-Identifier: MIT
//
// ctl_query_reasons_test - the right reasons and the right ids, end to
// end: real crashes, the real pipeline, the real
// core-timelined, then ctl-query as the crashed user and as root.
//
//  - A setuid-root program run by a test user sets its uids back to that
//    user and crashes.  Having changed its credentials it is not dumpable
//    for its user (fs.suid_dumpable=2, Debian's 50-coredump.conf): the core
//    and the timeline are root's, 0640, without an ACL.  ctl-query run by
//    that user says so ("not dumpable for its user"), not "another user's";
//    root sees it; the document says coredump.dumpable 2.  A dumpable crash
//    of the same user says 1 and is the user's to read.
//  - A program crashes inside a pid namespace (unshare --pid --fork): its
//    core's pids and tids, and the ring's, are the namespace's; the entry's
//    COREDUMP_PID is the host's.  The stored document has both ("pids"),
//    ctl-query list/show print both, a PID match and events --tid take
//    either, and a host tid that cannot be told is unknown, not the
//    namespace's copied.
//
// The test user, the setuid file and the directories are removed on every
// exit path (RAII).  Needs root.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core_timeline/document/names.h"
#include "daemon_harness.h"
#include "schema_check.h"
#include "process.h"
#include "test_user.h"
#include "test_files.h"

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool contains(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// A directory of the test's, mode 0755 (the test user reads in it),
// removed at the end.
struct TempDir : ct::test::TempDir {
  explicit TempDir(const std::string &stem) : ct::test::TempDir(stem, 0755) {}
};

// A regular user (uid > 999) with its own group, for the whole test.
struct TestUser : ct::test::TestUser {
  TestUser() : ct::test::TestUser(47300, "ct-rs") {}
};

// journald on the persistent journal, as a booted system has it after
// systemd-journal-flush.service: only there does it split entries by uid
// (SplitMode=uid), so that systemd-coredump's entry of a user's crash is in
// user-UID.journal, which that user reads, and root's entries in
// system.journal, which it does not (as daemon_pipeline_test has it).
// Back to the volatile journal at the end if it was there.
struct PersistentJournal {
  bool was_flushed = fs::exists("/run/systemd/journal/flushed");
  bool ok = ct::test::run({"/usr/bin/journalctl", "--flush"}).ok();
  ~PersistentJournal() {
    if (!was_flushed) ct::test::run({"/usr/bin/journalctl", "--relinquish-var"});
  }
};

ct::test::DaemonHarness::Options daemon_options(const std::string &root) {
  ct::test::DaemonHarness::Options o;
  o.binary = CT_DAEMON;
  o.root = root;
  o.log_target = "both";  // the journal too: the timeline entries
  o.config = root + "/empty.conf";
  o.tlmap_dir = root + "/tlmap.d";
  fs::create_directories(o.tlmap_dir);
  std::ofstream(o.config).flush();
  return o;
}

// Runs argv (a crash), with default dispositions for the core signals,
// optionally as `as`; waits and returns how it ended.
ct::test::Ran crash(const std::vector<std::string> &argv, const std::function<void()> &as = {}) {
  ct::test::ProcessOptions o;
  o.out = ct::test::Stream::null();
  o.in_child = [as] {
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS}) signal(sig, SIG_DFL);
    if (as) as();
  };
  return ct::test::run(argv, o);
}

// ctl-query with `args`, as root or (in_child) another user.
ct::test::Ran query(std::vector<std::string> args, const std::function<void()> &as = {}) {
  args.insert(args.begin(), CT_CTL_QUERY);
  ct::test::ProcessOptions o;
  o.in_child = as;
  return ct::test::run(args, o);
}

// The whole timeline in `dir` of a crash of `comm` (as the file name has
// it) at or after `since_usec`, waited for up to `timeout`: its path.
std::optional<std::string> wait_timeline_of(const std::string &dir, const std::string &comm,
                                            std::uint64_t since_usec, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      const auto parsed = core_timeline::document::parse_timeline_name(n);
      if (!parsed || parsed->comm != comm || parsed->usec < since_usec) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      if (json::accept(ss.str())) return e.path().string();
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(50ms);  // the poll's period
  }
}

/* A stored timeline in the full shape (a compact one made whole again). */
json read_json(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ct::test::full_document(json::parse(ss.str()));  // a compact one in the full shape
}

// docs/timeline.schema.json (python3-jsonschema) on the stored document at
// `path`.
void expect_schema_valid(const std::string &path) {
  EXPECT_EQ(ct::test::schema_errors_of_file(path, CT_SCHEMA_PATH), "") << path << " does not match docs/timeline.schema.json";
}

bool has_acl(const std::string &path) {
  char buf[256];
  return getxattr(path.c_str(), "system.posix_acl_access", buf, sizeof buf) >= 0;
}

TEST(CtlQueryReasons, ASetuidCrashIsNotDumpableForItsUserNotAnotherUsers) {
  ASSERT_EQ(geteuid(), 0u);
  // The kernel dumps a process that is not dumpable for its user only with
  // fs.suid_dumpable=2 (Debian's /usr/lib/sysctl.d/50-coredump.conf).
  std::ifstream sd("/proc/sys/fs/suid_dumpable");
  int suid_dumpable = -1;
  sd >> suid_dumpable;
  ASSERT_EQ(suid_dumpable, 2) << "fs.suid_dumpable is not 2: a setuid crash leaves no core";
  PersistentJournal persistent;
  ASSERT_TRUE(persistent.ok) << "journalctl --flush failed";
  TestUser user;
  ASSERT_TRUE(user.made) << "could not make a test user with groupadd/useradd";
  TempDir root("ctlq-reasons");
  ASSERT_FALSE(root.path.empty());
  // The setuid copy, on a file system that honours setuid bits.
  struct statvfs vfs;
  ASSERT_EQ(statvfs(root.path.c_str(), &vfs), 0);
  ASSERT_FALSE(vfs.f_flag & ST_NOSUID) << root.path << " is on a nosuid file system";
  const std::string suid = root.path + "/suid_crasher";
  fs::copy_file(CT_SUID_CRASHER, suid);
  ASSERT_EQ(chown(suid.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(suid.c_str(), 04755), 0);
  const std::string plain = root.path + "/plain_crasher";  // the same program, not setuid
  fs::copy_file(CT_SUID_CRASHER, plain);
  ASSERT_EQ(chmod(plain.c_str(), 0755), 0);

  ct::test::DaemonHarness daemon(daemon_options(root.path));
  daemon.start();
  const ct::test::Ran s = crash({suid}, user.become());
  ASSERT_TRUE(WIFSIGNALED(s.wait_status) && WCOREDUMP(s.wait_status)) << "status " << s.wait_status << " " << s.err;
  const auto sd_path = daemon.wait_timeline(s.pid, 20s);
  ASSERT_TRUE(sd_path) << daemon.log_tail();
  const ct::test::Ran p = crash({plain}, user.become());
  ASSERT_TRUE(WIFSIGNALED(p.wait_status) && WCOREDUMP(p.wait_status)) << "status " << p.wait_status << " " << p.err;
  const auto plain_path = daemon.wait_timeline(p.pid, 20s);
  ASSERT_TRUE(plain_path) << daemon.log_tail();

  // What the daemon stored: the user's crash by its name, root's file
  // without an ACL, and COREDUMP_DUMPABLE 2 in the document.
  const auto name = core_timeline::document::parse_timeline_name(fs::path(sd_path->path).filename().string());
  ASSERT_TRUE(name);
  EXPECT_EQ(name->uid, user.uid);
  struct stat st;
  ASSERT_EQ(stat(sd_path->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_FALSE(has_acl(sd_path->path)) << "systemd-coredump granted the user read of a non-dumpable core";
  const json doc = read_json(sd_path->path);
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_DUMPABLE"], "2");
  EXPECT_EQ(doc["coredump"]["dumpable"], 2);
  EXPECT_EQ(doc["status"], "ok") << doc["reason"];
  expect_schema_valid(sd_path->path);
  const json plain_doc = read_json(plain_path->path);
  EXPECT_EQ(plain_doc["coredump"]["dumpable"], 1);
  EXPECT_TRUE(has_acl(plain_path->path)) << "the dumpable crash's timeline should grant its user read";

  const std::string out = daemon.output_dir();
  const std::string spid = std::to_string(s.pid), ppid = std::to_string(p.pid);
  // The user: show says why, and that it is theirs; exit 3 (it may match).
  const ct::test::Ran show = query({"-D", out, "show", spid}, user.become());
  EXPECT_EQ(show.exit_code(), 3) << show.out << show.err;
  EXPECT_TRUE(contains(show.err, fs::path(sd_path->path).filename().string() + ": permission denied")) << show.err;
  EXPECT_TRUE(contains(show.err, "your crash, but the process was not dumpable for you")) << show.err;
  EXPECT_TRUE(contains(show.err, "its core and timeline belong to root")) << show.err;
  EXPECT_TRUE(contains(show.err, "(1 not dumpable for its user); run as root to see them")) << show.err;
  EXPECT_FALSE(contains(show.err, "another user")) << show.err;
  std::cout << "[ reasons ] the user's show:\n" << show.err;
  // list: the user's dumpable crash listed, the other one explained.
  const ct::test::Ran list = query({"-D", out, "list"}, user.become());
  EXPECT_EQ(list.exit_code(), 0) << list.err;
  EXPECT_TRUE(contains(list.out, " " + ppid + " ")) << list.out;
  EXPECT_FALSE(contains(list.out, " " + spid + " ")) << list.out;
  EXPECT_TRUE(contains(list.err, "not dumpable for you")) << list.err;
  EXPECT_FALSE(contains(list.err, "another user")) << list.err;
  // Another user's view of the same file: another user's.
  const uid_t other = user.uid + 1000;
  const auto as_other = [other] {
    if (setgroups(0, nullptr) != 0 || setresgid(other, other, other) != 0 || setresuid(other, other, other) != 0)
      ct::test::child_failed("cannot become another uid");
  };
  const ct::test::Ran theirs = query({"-D", out, "show", spid}, as_other);
  EXPECT_EQ(theirs.exit_code(), 3) << theirs.err;
  EXPECT_TRUE(contains(theirs.err, "another user's crash")) << theirs.err;
  EXPECT_FALSE(contains(theirs.err, "not dumpable")) << theirs.err;
  // From the journal alone (ctl-query's default source): the timeline
  // entry is root's, in system.journal, but systemd-coredump's own entry,
  // in the user's journal, says COREDUMP_DUMPABLE=2.
  // Asked until the entry shows (the deadline bounds a hang only).
  ct::test::Ran from_journal;
  ct::test::wait_until(
      [&] {
        from_journal = query({"show", spid}, user.become());
        return contains(from_journal.err, "COREDUMP_DUMPABLE=2");
      },
      60s);
  EXPECT_EQ(from_journal.exit_code(), 3) << from_journal.out << from_journal.err;
  EXPECT_TRUE(contains(from_journal.err, "pid " + spid + " (" + suid + ") crashed at ")) << from_journal.err;
  EXPECT_TRUE(contains(from_journal.err, "COREDUMP_DUMPABLE=2: the process was not dumpable for you"))
      << from_journal.err;
  EXPECT_TRUE(contains(from_journal.err, "1 not dumpable for its user")) << from_journal.err;
  EXPECT_FALSE(contains(from_journal.err, "another user")) << from_journal.err;
  std::cout << "[ reasons ] the user's show from the journal:\n" << from_journal.err;
  // Its dumpable crash is the user's to read there, and draws no such note.
  const ct::test::Ran mine = query({"show", ppid}, user.become());
  EXPECT_EQ(mine.exit_code(), 0) << mine.err;
  EXPECT_TRUE(contains(mine.out, "SUID_MARK")) << mine.out;
  EXPECT_FALSE(contains(mine.err, "COREDUMP_DUMPABLE")) << mine.err;
  // Root: shown, with its event.
  const ct::test::Ran as_root = query({"-D", out, "--all", "show", spid});
  EXPECT_EQ(as_root.exit_code(), 0) << as_root.err;
  EXPECT_TRUE(contains(as_root.out, "SUID_MARK")) << as_root.out;
  EXPECT_EQ(as_root.out, doc["text"].get<std::string>());
  const ct::test::Ran root_list = query({"-D", out, "--json", "list", spid});
  ASSERT_EQ(root_list.exit_code(), 0) << root_list.err;
  EXPECT_EQ(json::parse(root_list.out)["uid"], user.uid);
  EXPECT_EQ(daemon.stop(), 0) << daemon.log_tail();
}

TEST(CtlQueryReasons, ACrashInAPidNamespaceShowsTheHostsAndTheNamespacesIds) {
  ASSERT_EQ(geteuid(), 0u);
  TempDir root("ctlq-pidns");
  ASSERT_FALSE(root.path.empty());
  ct::test::DaemonHarness daemon(daemon_options(root.path));
  daemon.start();
  // spans_three_threads dies in a thread of its own; its main thread has
  // events too.  sh is the namespace's pid 1, the crasher its child.
  const std::uint64_t t0 = ct::test::now_usec() / 1000000 * 1000000;
  const ct::test::Ran r = ct::test::run(
      {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", std::string(CT_SPANS_THREE_THREADS) + "; true"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const std::string comm = fs::path(CT_SPANS_THREE_THREADS).filename().string().substr(0, 15);
  const auto path = wait_timeline_of(daemon.output_dir(), comm, t0, 20s);
  ASSERT_TRUE(path) << daemon.log_tail();
  const json doc = read_json(*path);
  ASSERT_EQ(doc["status"], "ok") << doc["reason"];
  const auto name = core_timeline::document::parse_timeline_name(fs::path(*path).filename().string());
  ASSERT_TRUE(name);
  const std::uint64_t host_pid = name->pid;
  const std::uint64_t ns_pid = doc["process"]["pid"];
  ASSERT_NE(ns_pid, host_pid) << "the core's pid is the host's: not a pid namespace";
  EXPECT_EQ(ns_pid, 2u) << "sh is pid 1, the crasher its first child";
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], std::to_string(host_pid));

  // The document: both pids, how it was told, each tid with its host tid
  // where it can be told (the leader's), null where not.
  expect_schema_valid(*path);
  const json &ids = doc["pids"];
  EXPECT_EQ(ids["host_pid"], host_pid);
  EXPECT_EQ(ids["pid"], ns_pid);
  EXPECT_EQ(ids["namespaced"], true);
  EXPECT_EQ(ids["from"], "COREDUMP_PROC_STATUS NStgid");
  const std::uint64_t crash_tid = doc["crash"]["tid"];
  EXPECT_NE(crash_tid, ns_pid) << "spans_three_threads should die in a thread of its own";
  std::map<std::uint64_t, json> host_of;
  for (const auto &t : ids["threads"]) host_of[t["tid"].get<std::uint64_t>()] = t["host_tid"];
  ASSERT_TRUE(host_of.count(ns_pid)) << ids.dump();
  EXPECT_EQ(host_of[ns_pid], host_pid);
  ASSERT_TRUE(host_of.count(crash_tid)) << ids.dump();
  EXPECT_TRUE(host_of[crash_tid].is_null()) << "a host tid the entry does not give must be unknown: " << ids.dump();
  for (const auto &[tid, h] : host_of) {
    if (tid != ns_pid) {
      EXPECT_TRUE(h.is_null()) << tid;
    }
  }
  // The file says its namespace pid, so that a PID match on it need not
  // parse every document (the name holds only the host pid).
  char xv[32];
  const ssize_t xn = getxattr(path->c_str(), "user.core_timeline.namespace_pid", xv, sizeof xv);
  ASSERT_GT(xn, 0) << "no namespace pid xattr on " << *path;
  EXPECT_EQ(std::string(xv, static_cast<std::size_t>(xn)), std::to_string(ns_pid));
  std::size_t main_events = 0;
  for (const auto &e : doc["events"]) main_events += e["tid"] == ns_pid;
  ASSERT_GT(main_events, 0u) << "the main thread recorded nothing";

  const std::string out = daemon.output_dir();
  const std::string hp = std::to_string(host_pid), np = std::to_string(ns_pid);
  // list: both pids; found by either.
  for (const std::string &pid : {hp, np}) {
    const ct::test::Ran l = query({"-D", out, "list", pid});
    ASSERT_EQ(l.exit_code(), 0) << pid << ": " << l.err;
    const auto rows = lines_of(l.out);
    ASSERT_EQ(rows.size(), 2u) << l.out;
    EXPECT_TRUE(contains(rows[0], "NS PID")) << rows[0];
    EXPECT_TRUE(contains(rows[1], " " + hp + " ") && contains(rows[1], " " + np + " ")) << rows[1];
  }
  const ct::test::Ran lj = query({"-D", out, "--json", "list", hp});
  ASSERT_EQ(lj.exit_code(), 0) << lj.err;
  const json row = json::parse(lines_of(lj.out).at(0));
  EXPECT_EQ(row["pid"], host_pid);
  EXPECT_EQ(row["namespace_pid"], ns_pid);
  EXPECT_EQ(row["namespaced"], true);
  // show: a line with the host's ids before the core's text.
  const ct::test::Ran show = query({"-D", out, "--all", "show", hp});
  ASSERT_EQ(show.exit_code(), 0) << show.err;
  const std::string first = lines_of(show.out).at(0);
  std::cout << "[ reasons ] list:\n" << query({"-D", out, "list", np}).out << "[ reasons ] show: " << first << '\n';
  EXPECT_TRUE(contains(first, "pid " + np + " is host pid " + hp)) << first;
  EXPECT_TRUE(contains(first, "tid " + np + " is host tid " + hp)) << first;
  EXPECT_TRUE(contains(first, "tid " + std::to_string(crash_tid) + " is host tid unknown")) << first;
  EXPECT_TRUE(contains(show.out, doc["text"].get<std::string>()));
  // events --tid: the host tid and the namespace tid of the main thread
  // find the same events; the crasher's host tid is unknown ("?", null).
  const ct::test::Ran by_host = query({"-D", out, "--all", "--json", "events", "--tid", hp, hp});
  const ct::test::Ran by_ns = query({"-D", out, "--all", "--json", "events", "--tid", np, hp});
  ASSERT_EQ(by_host.exit_code(), 0) << by_host.err;
  ASSERT_EQ(by_ns.exit_code(), 0) << by_ns.err;
  const auto host_lines = lines_of(by_host.out), ns_lines = lines_of(by_ns.out);
  EXPECT_EQ(host_lines.size(), main_events);
  EXPECT_EQ(host_lines, ns_lines);
  for (const auto &l : host_lines) {
    const json e = json::parse(l);
    EXPECT_EQ(e["event"]["tid"], ns_pid);
    EXPECT_EQ(e["host_tid"], host_pid);
    EXPECT_EQ(e["namespace_pid"], ns_pid);
  }
  const ct::test::Ran crasher = query({"-D", out, "--json", "events", "--tid", std::to_string(crash_tid), hp});
  ASSERT_EQ(crasher.exit_code(), 0) << crasher.err;
  for (const auto &l : lines_of(crasher.out)) EXPECT_TRUE(json::parse(l)["host_tid"].is_null()) << l;
  const ct::test::Ran text = query({"-D", out, "events", "--tid", hp, hp});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_TRUE(contains(lines_of(text.out).at(0), "HOST TID")) << text.out;

  // The journal: the daemon's timeline entry carries the namespace pid,
  // so a PID match on either finds it through the journal's index.
  const std::string since = "@" + std::to_string(t0 / 1000000);
  for (const std::string &pid : {hp, np}) {
    ct::test::Ran j;  // asked until the entry shows (the deadline bounds a hang only)
    ct::test::wait_until(
        [&] {
          j = query({"--since", since, "--json", "list", pid, "COREDUMP_COMM=" + comm});
          return j.exit_code() == 0;
        },
        60s);
    ASSERT_EQ(j.exit_code(), 0) << pid << ": " << j.err;
    const json jr = json::parse(lines_of(j.out).at(0));
    EXPECT_EQ(jr["source"], "journal");
    EXPECT_EQ(jr["pid"], host_pid);
    EXPECT_EQ(jr["namespace_pid"], ns_pid);
  }
  EXPECT_EQ(daemon.stop(), 0) << daemon.log_tail();
}

// The reader's own output where it knows both ids: a live snapshot
// (core-timeline-read --pid HOSTPID) of a process that is pid 1 of its own
// pid namespace.  Its snapshot core has the namespace's ids, as a kernel
// core would (so the ring's pid and tids, which are the namespace's, match
// it: not "foreign"), and the text and snapshot.pid give the host pid.
TEST(CtlQueryReasons, ALiveSnapshotInAPidNamespaceHasTheNamespacesIdsAndSaysTheHostPid) {
  ASSERT_EQ(geteuid(), 0u);
  TempDir root("ctlq-livens");
  ASSERT_FALSE(root.path.empty());
  const std::string ready = root.path + "/ready";
  ct::test::ProcessOptions o;
  o.out = ct::test::Stream::file(ready);
  o.err = ct::test::Stream::null();
  const pid_t unshare = ct::test::spawn({"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c",
                                         std::string("exec ") + CT_LIVE_WRITERS + " 2 1"},
                                        o);
  ASSERT_GT(unshare, 0);
  // Its child is live_writers (sh exec'd it): pid 1 inside, this on the host.
  pid_t host = -1;
  std::string said;
  ct::test::wait_until(
      [&] {
        std::ifstream c("/proc/" + std::to_string(unshare) + "/task/" + std::to_string(unshare) + "/children");
        c >> host;
        std::ifstream r(ready);
        std::getline(r, said);
        return host > 0 && said.find("ready") != std::string::npos;
      },
      60s);
  struct Reap {
    pid_t a, b;
    ~Reap() {
      if (b > 0) kill(b, SIGKILL);
      kill(a, SIGKILL);
      waitpid(a, nullptr, 0);
    }
  } reap{unshare, host};
  ASSERT_GT(host, 0) << "unshare made no child";
  ASSERT_EQ(said, "ready") << "live_writers did not get ready";
  const ct::test::Ran js = ct::test::run({CT_READER, "--json", "--pid", std::to_string(host)});
  ASSERT_EQ(js.exit_code(), 0) << js.err;
  const json d = json::parse(js.out);
  EXPECT_EQ(d["process"]["pid"], 1u);
  EXPECT_EQ(d["snapshot"]["pid"], static_cast<std::uint64_t>(host));
  ASSERT_FALSE(d["rings"].empty());
  EXPECT_EQ(d["rings"][0]["state"], "valid") << d["rings"][0]["reason"];
  ASSERT_FALSE(d["events"].empty());
  std::map<std::uint64_t, std::size_t> in_core, not_in_core;
  for (const auto &e : d["events"]) (e["tid_in_core"] == true ? in_core : not_in_core)[e["tid"].get<std::uint64_t>()]++;
  std::string seen = "threads " + d["process"]["threads"].dump() + "; event tids in the core:";
  for (const auto &[t, n] : in_core) seen += " " + std::to_string(t);
  seen += "; not:";
  for (const auto &[t, n] : not_in_core) seen += " " + std::to_string(t);
  EXPECT_TRUE(not_in_core.empty()) << seen;
  EXPECT_FALSE(in_core.empty()) << seen;
  for (const auto &t : d["process"]["threads"]) EXPECT_LT(t.get<std::uint64_t>(), 100u) << "a host tid in the core";
  const ct::test::Ran text = ct::test::run({CT_READER, "--pid", std::to_string(host)});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  const std::string first = lines_of(text.out).at(0);
  EXPECT_TRUE(contains(first, "live snapshot of pid 1 (live_writers) (pid " + std::to_string(host) +
                                  " where the snapshot was taken"))
      << first;
  std::cout << "[ reasons ] live: " << first << '\n';
}

}  // namespace
