// SPDX-License-Identifier: MIT
//
// ctl_query_diff_pipeline_test - `ctl-query diff` on real crashes
// (docs/ctl-query.md, "diff"): crash_demo --path=a against --path=b
// (fixtures/crash_demo.c), crashed through the real pipeline (journald,
// systemd-coredump) while the real core-timelined stores their timelines.
//
// Compared three ways, which must agree: as two core FILEs (the kernel's
// cores, decompressed by the crash harness, analyzed by ctl-query itself),
// as two stored crashes found by their pids (the daemon's documents), and
// one of each.  What is expected follows from the fixture's documented
// paths (a: REQUEST span, REQ_PARSE, FREE; b: RELOAD span, CONFIG_RELOAD,
// MALLOC; both: BEFORE_DIE, the CRASH, lane claims) and the counts
// core-timeline-read --json gives for each core, never from a stored
// output: the top four event rows are the four that only one path has,
// each absent on the other side (crash_demo loses no event), and the two
// span rows are REQUEST and RELOAD, each open at the end on its side only.
//
// And a crash against what normal looks like: path a's core (and stored
// timeline) against a live snapshot of normal_run (tests/ctl-query/
// normal_run.c: the same requests, completed), saved by core-timeline-read
// --pid PID --save FILE; skipped, saying so, by a core-timeline-read
// without --save.
//
// Needs root and the pipeline (ctest fixture "pipeline"; by hand: under
// flock /tmp/ct-pipeline.lock).  The stored half needs core-timelined in
// the build and skips, saying so, without it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "daemon_harness.h"
#include "process.h"

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

bool contains(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

/* Per event name, how many the reader's document holds (spans' begin and
 * end events are spans, as diff counts them). */
std::map<std::string, std::uint64_t> counts_of(const json &doc) {
  std::map<std::string, std::uint64_t> m;
  for (const auto &e : doc.at("events"))
    if (e.at("kind") != "SPAN_BEGIN" && e.at("kind") != "SPAN_END") ++m[e.at("name").get<std::string>()];
  return m;
}

class DiffOfTheTwoPaths : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
#ifdef CT_DAEMON
      // crash_demo's tlmap, not the machine's.
      root_ = new ct::test::DaemonRoot("ctlq-diff");
      fs::copy_file(CT_TLMAP, root_->tlmap_dir() + "/crash_demo.tlmap");
      daemon_ = new ct::test::DaemonHarness(root_->options(CT_DAEMON));
      daemon_->start();
#endif
      a_ = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=a"});
      // b in a later second of COREDUMP_TIMESTAMP (whole seconds, from a
      // clock that may lag by a tick), so that it is certainly the newer.
      const std::uint64_t second_a = std::stoull(a_.journal_fields.at("COREDUMP_TIMESTAMP")) / 1000000;
      while (static_cast<std::uint64_t>(time(nullptr)) < second_a + 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a wait on the clock itself
      b_ = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=b"});
      for (auto [run, doc] : {std::pair{&a_, &doc_a_}, std::pair{&b_, &doc_b_}}) {
        const ct::test::Ran r = ct::test::run({CT_READER, "--json", run->core_path});
        if (r.exit_code() != 0) throw std::runtime_error("core-timeline-read " + run->core_path + ": " + r.err);
        *doc = json::parse(r.out);
      }
#ifdef CT_DAEMON
      for (const auto *run : {&a_, &b_})
        if (!daemon_->wait_timeline(run->pid, std::chrono::seconds(20)))
          throw std::runtime_error("the daemon stored no timeline of pid " + std::to_string(run->pid) + "\n" +
                                   daemon_->log());
      stored_dir_ = daemon_->output_dir();
      if (daemon_->stop() != 0) throw std::runtime_error("the daemon did not stop cleanly\n" + daemon_->log());
#endif
    } catch (const std::exception &e) {
      setup_error_ = e.what();
    }
  }

  static void TearDownTestSuite() {
#ifdef CT_DAEMON
    delete daemon_;
    delete root_;
#endif
  }

  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "needs root (the stored cores)";
    if (!setup_error_.empty()) GTEST_FAIL() << "setting up the crashes failed: " << setup_error_;
  }

  static ct::test::Ran diff(const std::vector<std::string> &args) {
    std::vector<std::string> argv{CT_CTL_QUERY};
    if (!stored_dir_.empty()) argv.insert(argv.end(), {"-D", stored_dir_});
    argv.push_back("diff");
    argv.insert(argv.end(), args.begin(), args.end());
    return ct::test::run(argv);
  }

  static std::string pid(const ct::test::CrashRun &r) { return std::to_string(r.pid); }

  /* What every way of comparing a with b must show (--json). */
  static void expect_the_two_paths(const json &j) {
    const auto ca = counts_of(doc_a_), cb = counts_of(doc_b_);
    // The fixture's four differences are on one side only.
    for (const char *n : {"REQ_PARSE", "FREE"}) {
      EXPECT_EQ(ca.count(n), 1u) << n;
      EXPECT_EQ(cb.count(n), 0u) << n;
    }
    for (const char *n : {"CONFIG_RELOAD", "MALLOC"}) {
      EXPECT_EQ(ca.count(n), 0u) << n;
      EXPECT_EQ(cb.count(n), 1u) << n;
    }
    const json &ev = j.at("events");
    std::set<std::string> names;
    for (const auto &[n, c] : ca) names.insert(n);
    for (const auto &[n, c] : cb) names.insert(n);
    ASSERT_EQ(ev.size(), names.size()) << j.dump(1);
    std::set<std::string> top4;
    for (std::size_t i = 0; i < 4; ++i) {
      const json &r = ev[i];
      const std::string n = r.at("name");
      top4.insert(n);
      const bool in_a = n == "REQ_PARSE" || n == "FREE";
      EXPECT_EQ(r["tier"], 0) << n;
      EXPECT_EQ(r["a"]["count"], in_a ? ca.at(n) : 0u) << n;
      EXPECT_EQ(r["b"]["count"], in_a ? 0u : cb.at(n)) << n;
      EXPECT_EQ(r[in_a ? "b" : "a"]["absence"], "absent") << n << ": " << j[in_a ? "b" : "a"]["windows"].dump();
      EXPECT_TRUE(r[in_a ? "a" : "b"]["absence"].is_null()) << n;
    }
    EXPECT_EQ(top4, (std::set<std::string>{"REQ_PARSE", "FREE", "CONFIG_RELOAD", "MALLOC"}));
    // The rest are on both sides, with the reader's counts.
    for (std::size_t i = 4; i < ev.size(); ++i) {
      const std::string n = ev[i].at("name");
      EXPECT_EQ(ev[i]["tier"], 2) << n;
      EXPECT_EQ(ev[i]["a"]["count"], ca.at(n)) << n;
      EXPECT_EQ(ev[i]["b"]["count"], cb.at(n)) << n;
    }
    for (const char *n : {"BEFORE_DIE", "CRASH"}) {
      bool found = false;
      for (std::size_t i = 4; i < ev.size(); ++i) found = found || ev[i]["name"] == n;
      EXPECT_TRUE(found) << n;
    }
    // A rate is told exactly when that side's kept window is.
    for (const char *side : {"a", "b"})
      for (const auto &r : ev) EXPECT_EQ(r[side]["rate_per_s"].is_null(), j[side]["window_ns"].is_null());

    // The spans: each path's own, open at the end on its side only.
    const json &sp = j.at("spans");
    ASSERT_EQ(sp.size(), 2u) << sp.dump(1);
    std::map<std::string, json> by_name;
    for (const auto &r : sp) by_name[r.at("name")] = r;
    ASSERT_TRUE(by_name.count("REQUEST") && by_name.count("RELOAD")) << sp.dump(1);
    for (const auto &[n, side, other] : {std::tuple{"REQUEST", "a", "b"}, std::tuple{"RELOAD", "b", "a"}}) {
      const json &r = by_name[n];
      EXPECT_EQ(r["tier"], 0) << n;
      EXPECT_EQ(r[side]["count"], 1) << n;
      EXPECT_EQ(r[side]["open_at_end"], 1) << n;
      EXPECT_EQ(r[side]["closed"], 0) << n;
      EXPECT_EQ(r[other]["count"], 0) << n;
      EXPECT_EQ(r[other]["absence"], "absent") << n;
    }
    EXPECT_EQ(j["a"]["pid"], doc_a_["process"]["pid"]);
    EXPECT_EQ(j["b"]["pid"], doc_b_["process"]["pid"]);
    // The group section: the two paths die through different stacks (a
    // core side is read with symbols, so its stack is named as the
    // daemon names it).
    const json &g = j.at("group");
    EXPECT_EQ(g["relation"], "different_stacks") << g.dump(1);
    EXPECT_EQ(g["a"]["stack_words"], "SIGSEGV in die() <- path_a() <- main()") << g.dump(1);
    EXPECT_EQ(g["b"]["stack_words"], "SIGSEGV in die() <- path_b() <- main()") << g.dump(1);
    EXPECT_EQ(g["a"]["words"], doc_a_["group"]["words"]);
    EXPECT_EQ(g["b"]["id"], doc_b_["group"]["id"]);
  }

  /* The text: the same four first, then the two spans, worded. */
  static void expect_the_two_paths_text(const std::string &out) {
    const auto l = lines_of(out);
    std::size_t h = 0;
    while (h < l.size() && !l[h].starts_with("EVENT ")) ++h;
    ASSERT_LT(h + 4, l.size()) << out;
    std::set<std::string> top4;
    for (std::size_t i = h + 1; i <= h + 4; ++i) {
      const std::string name = l[i].substr(0, l[i].find(' '));
      top4.insert(name);
      const bool in_a = name == "REQ_PARSE" || name == "FREE";
      EXPECT_TRUE(l[i].ends_with(in_a ? " only in A; absent in B" : " only in B; absent in A")) << l[i];
    }
    EXPECT_EQ(top4, (std::set<std::string>{"REQ_PARSE", "FREE", "CONFIG_RELOAD", "MALLOC"})) << out;
    std::size_t s = h;
    while (s < l.size() && !l[s].starts_with("SPAN ")) ++s;
    ASSERT_EQ(s + 3, l.size()) << out;
    EXPECT_TRUE(l[s + 1].starts_with("RELOAD ") && l[s + 1].ends_with(" only in B; absent in A")) << l[s + 1];
    EXPECT_TRUE(l[s + 2].starts_with("REQUEST ") && l[s + 2].ends_with(" only in A; absent in B")) << l[s + 2];
  }

  static inline ct::test::CrashRun a_, b_;
  static inline json doc_a_, doc_b_;
  static inline std::string stored_dir_, setup_error_;
#ifdef CT_DAEMON
  static inline ct::test::DaemonRoot *root_ = nullptr;
  static inline ct::test::DaemonHarness *daemon_ = nullptr;
#endif
};

TEST_F(DiffOfTheTwoPaths, AsCoreFiles) {
  ASSERT_EQ(doc_a_["status"], "ok");
  ASSERT_EQ(doc_b_["status"], "ok");
  const ct::test::Ran js = diff({"--json", a_.core_path, b_.core_path});
  ASSERT_EQ(js.exit_code(), 0) << js.err;
  EXPECT_EQ(js.err, "");
  const json j = json::parse(js.out);
  EXPECT_EQ(j["a"]["from"], "core");
  EXPECT_EQ(j["b"]["from"], "core");
  EXPECT_EQ(j["a"]["file"], fs::path(a_.core_path).lexically_normal().string());
  EXPECT_EQ(j["a"]["events"], doc_a_["events"].size());
  expect_the_two_paths(j);

  const ct::test::Ran text = diff({a_.core_path, b_.core_path});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_TRUE(text.out.starts_with("A: core " + fs::path(a_.core_path).lexically_normal().string() + ": pid " +
                                   pid(a_) + " (crash_demo), SIGSEGV\n"))
      << text.out;
  expect_the_two_paths_text(text.out);

  // B against A: the same rows, the sides swapped.
  const json back = json::parse(diff({"--json", b_.core_path, a_.core_path}).out);
  EXPECT_EQ(back["events"][0]["a"], j["events"][0]["b"]) << "the same first row, sides swapped";
}

TEST_F(DiffOfTheTwoPaths, AsStoredCrashes) {
#ifndef CT_DAEMON
  GTEST_SKIP() << "core-timelined is not a target of this build: no stored timelines to compare";
#else
  const ct::test::Ran js = diff({"--json", pid(a_), pid(b_)});
  ASSERT_EQ(js.exit_code(), 0) << js.err;
  EXPECT_EQ(js.err, "");
  const json j = json::parse(js.out);
  EXPECT_EQ(j["a"]["from"], "timeline");
  EXPECT_EQ(j["a"]["matched"], 1);
  EXPECT_TRUE(j["a"]["file"].get<std::string>().starts_with(stored_dir_ + "/core.crash_demo.")) << j["a"]["file"];
  expect_the_two_paths(j);
  // The one model: the stored documents give what the cores give.
  const json cores = json::parse(diff({"--json", a_.core_path, b_.core_path}).out);
  EXPECT_EQ(j["events"], cores["events"]);
  EXPECT_EQ(j["spans"], cores["spans"]);
  EXPECT_EQ(j["compared_ns"], cores["compared_ns"]);
  EXPECT_EQ(j["group"], cores["group"]);

  const ct::test::Ran text = diff({pid(a_), pid(b_)});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_TRUE(text.out.starts_with("A: timeline " + stored_dir_ + "/core.crash_demo.")) << text.out;
  expect_the_two_paths_text(text.out);

  // One of each, and the command name matching both crashes: the newest
  // (b) is taken, and stderr says so.
  const ct::test::Ran mixed = diff({"--json", pid(a_), b_.core_path});
  ASSERT_EQ(mixed.exit_code(), 0) << mixed.err;
  const json m = json::parse(mixed.out);
  EXPECT_EQ(m["a"]["from"], "timeline");
  EXPECT_EQ(m["b"]["from"], "core");
  expect_the_two_paths(m);
  const ct::test::Ran both = diff({"--json", a_.core_path, "crash_demo"});
  ASSERT_EQ(both.exit_code(), 0) << both.err;
  EXPECT_TRUE(contains(both.err, "B: 2 timelines match crash_demo; comparing the newest (")) << both.err;
  expect_the_two_paths(json::parse(both.out));
#endif
}


/* A crash against what normal looks like: path a's crash (A) against a
 * live snapshot of normal_run (B), the same requests done right, saved by
 * core-timeline-read --pid PID --save FILE (an ELF core of the living
 * process).  What the crash did that normal did not (BEFORE_DIE, the
 * CRASH) is absent from B; what normal did that the crash did not
 * (MALLOC) is absent from A; REQUEST is open at the end in A only. */
TEST_F(DiffOfTheTwoPaths, ACrashAgainstASavedSnapshotOfANormalRun) {
  const ct::test::Ran help = ct::test::run({CT_READER, "--help"});
  if (!contains(help.out, "--save"))
    GTEST_SKIP() << CT_READER << " has no --pid/--save (live snapshots, branch live, not merged into this build): "
                 << "no snapshot to compare with";
  char tmpl[] = "/tmp/ctlq-diff-snap-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    pid_t pid = -1;
    ~Cleanup() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  ct::test::ProcessOptions o;
  o.out = ct::test::Stream::file(dir + "/ready");
  o.err = ct::test::Stream::file(dir + "/stderr");
  cleanup.pid = ct::test::spawn({CT_NORMAL_RUN, "3"}, o);
  // Its "ready" once the three requests are recorded (a wait for a fact,
  // not a timed assertion: the deadline only ends a hung run).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string ready;
  while (ready != "ready\n" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the poll's period
    std::ifstream in(dir + "/ready");
    ready.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_EQ(ready, "ready\n") << "normal_run did not get ready";
  const std::string snapshot = dir + "/normal.core";
  const ct::test::Ran save =
      ct::test::run({CT_READER, "--pid", std::to_string(cleanup.pid), "--save", snapshot});
  ASSERT_EQ(save.exit_code(), 0) << save.err;
  const ct::test::Ran read = ct::test::run({CT_READER, "--json", snapshot});
  ASSERT_EQ(read.exit_code(), 0) << read.err;
  const json doc_n = json::parse(read.out);
  const auto ca = counts_of(doc_a_), cn = counts_of(doc_n);
  ASSERT_EQ(cn.count("BEFORE_DIE"), 0u);
  ASSERT_EQ(cn.count("CRASH"), 0u);
  ASSERT_EQ(cn.at("MALLOC"), 3u);
  ASSERT_EQ(ca.count("MALLOC"), 0u);

  std::vector<std::vector<std::string>> ways{{"--json", a_.core_path, snapshot}};
#ifdef CT_DAEMON
  ways.push_back({"--json", pid(a_), snapshot});  // the stored crash too
#endif
  for (const auto &args : ways) {
    const ct::test::Ran r = diff(args);
    ASSERT_EQ(r.exit_code(), 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["b"]["from"], "core");
    EXPECT_EQ(j["b"]["reference"], "snapshot") << "a living process has no CRASH";
    EXPECT_EQ(j["b"]["pid"], cleanup.pid);
    std::set<std::string> one_side, expected_one_side;
    for (const auto &[n, c] : ca)
      if (!cn.count(n)) expected_one_side.insert(n);
    for (const auto &[n, c] : cn)
      if (!ca.count(n)) expected_one_side.insert(n);
    EXPECT_TRUE(expected_one_side.count("BEFORE_DIE") && expected_one_side.count("CRASH") &&
                expected_one_side.count("MALLOC"));
    bool both_sides_seen = false;
    for (const auto &row : j["events"]) {
      const std::string n = row["name"];
      if (row["tier"] == 2) {
        both_sides_seen = true;
        EXPECT_EQ(row["a"]["count"], ca.at(n)) << n;
        EXPECT_EQ(row["b"]["count"], cn.at(n)) << n;
        continue;
      }
      EXPECT_FALSE(both_sides_seen) << n << ": a one-side row after a row of both sides";
      one_side.insert(n);
      EXPECT_EQ(row["tier"], 0) << n << ": both windows lose nothing";
      EXPECT_EQ(row[ca.count(n) ? "b" : "a"]["absence"], "absent") << n;
    }
    EXPECT_EQ(one_side, expected_one_side);
    // REQUEST: once and open in the crash, three times and closed in the
    // normal run; on both sides, first among them for its open difference.
    ASSERT_FALSE(j["spans"].empty());
    const json &req = j["spans"][0];
    EXPECT_EQ(req["name"], "REQUEST");
    EXPECT_EQ(req["tier"], 2);
    EXPECT_EQ(req["a"]["open_at_end"], 1);
    EXPECT_EQ(req["b"]["open_at_end"], 0);
    EXPECT_EQ(req["b"]["count"], 3);
    EXPECT_EQ(req["b"]["closed"], 3);
    EXPECT_TRUE(req["b"]["p95_ns"].is_number_integer());
  }
  const ct::test::Ran text = diff({a_.core_path, snapshot});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_TRUE(contains(text.out, "B: core " + snapshot + ": pid " + std::to_string(cleanup.pid) + " (normal_run)"))
      << text.out;
  EXPECT_TRUE(contains(text.out, "; ages before the snapshot (a live process)\n")) << text.out;
  EXPECT_TRUE(contains(text.out, " open at the end: A 1, B 0")) << text.out;
}

}  // namespace
