// SPDX-License-Identifier: MIT
//
// ctl_query_group_test - the group signature end to end (docs/grouping.md):
// real crashes through the pipeline, the real core-timelined storing their
// timelines and entries, then ctl-query group and list over the timeline
// files (-D) and over the journal (its index: CORE_TIMELINE_GROUP=).
//
//  - the dispatcher fixture (dispatcher.c): three handlers, the same stack,
//    N crashes of each kind interleaved with random noise: exactly three
//    groups of N, one group of 3N by the stack alone;
//  - the same fixture built with -O2, and with a function added before the
//    handlers: the same group ids;
//  - crash_demo's two paths: two groups;
//  - ctl-query diff of a get and a put crash (and of an admin and a put):
//    the same stack, the history lines that differ marked; of two put
//    crashes: the same group.
//
// Needs root and the pipeline.  Registered only when the build has
// core-timelined.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon_harness.h"
#include "process.h"

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr int kPerKind = 4;  // N crashes of each kind

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) v.push_back(l);
  return v;
}

std::vector<json> json_lines(const std::string &s) {
  std::vector<json> v;
  for (const auto &l : lines_of(s)) v.push_back(json::parse(l));
  return v;
}

/* Crashes `argv` (a core of any size) and returns the daemon's timeline. */
json crash_and_store(ct::test::DaemonHarness &daemon, const std::vector<std::string> &argv) {
  ct::test::ProcessOptions o;
  o.out = ct::test::Stream::null();
  o.err = ct::test::Stream::null();
  o.in_child = [] {
    const struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
  };
  const ct::test::Ran r = ct::test::run(argv, o);
  if (!WIFSIGNALED(r.wait_status) || WTERMSIG(r.wait_status) != SIGSEGV) {
    ADD_FAILURE() << argv[0] << " did not die of SIGSEGV (status " << r.wait_status << ")";
    return nullptr;
  }
  const auto t = daemon.wait_timeline(r.pid, std::chrono::seconds(30));
  if (!t) {
    ADD_FAILURE() << "no timeline of pid " << r.pid << "\n" << daemon.log_tail();
    return nullptr;
  }
  json doc = t->doc;  // in the full shape, its text rendered (daemon_harness.h)
  doc["test_pid"] = r.pid;
  return doc;
}

std::string since_arg(std::uint64_t usec) { return "@" + std::to_string(usec / 1000000); }

const std::map<std::string, std::string> kWords = {
    {"get", "SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST, after PARSE_HEADERS, LOOKUP"},
    {"put", "SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST, after PARSE_BODY, STORE"},
    {"admin", "SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST > ADMIN, after PARSE_BODY, STORE"}};

/* ctl-query diff of two crashes of different groups through the same
 * stack names the stack once and marks the history that set them apart;
 * of two crashes of one group it says so. */
void expect_diff_tells_the_groups(const std::string &dir, const std::map<std::string, std::vector<std::string>> &pids_of,
                                  const std::map<std::string, std::string> &id_of, const std::string &stack_id) {
  const auto diff = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {CT_CTL_QUERY, "-D", dir, "diff"});
    const ct::test::Ran r = ct::test::run(args);
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return r.out;
  };
  const std::string get = pids_of.at("get")[0], put = pids_of.at("put")[0], admin = pids_of.at("admin")[0];
  const std::string stack_line = "\n  stack: " + stack_id + " SIGSEGV in crash_helper() <- dispatch() <- main()\n";
  std::string out = diff({get, put});
  EXPECT_NE(out.find("\ngroup: different groups through the same stack" + stack_line), std::string::npos) << out;
  EXPECT_NE(out.find("\n  A: " + id_of.at("get") + " inside REQUEST, after *PARSE_HEADERS*, *LOOKUP*\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("\n  B: " + id_of.at("put") + " inside REQUEST, after *PARSE_BODY*, *STORE*\n"),
            std::string::npos) << out;
  /* admin is put inside one more span: only that differs. */
  out = diff({admin, put});
  EXPECT_NE(out.find(stack_line), std::string::npos) << out;
  EXPECT_NE(out.find("\n  A: " + id_of.at("admin") + " inside REQUEST > *ADMIN*, after PARSE_BODY, STORE\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("\n  B: " + id_of.at("put") + " inside REQUEST, after PARSE_BODY, STORE\n"), std::string::npos)
      << out;
  const json j = json::parse(diff({"--json", admin, put}));
  EXPECT_EQ(j["group"]["relation"], "same_stack") << j["group"];
  EXPECT_EQ(j["group"]["stack_id"], stack_id);
  EXPECT_EQ(j["group"]["a"]["id"], id_of.at("admin"));
  EXPECT_EQ(j["group"]["a"]["open_spans"], json::array({"REQUEST", "ADMIN"}));
  EXPECT_EQ(j["group"]["a"]["open_spans_differ"], json::array({false, true}));
  EXPECT_EQ(j["group"]["b"]["last_events_differ"], json::array({false, false}));
  /* Two crashes of one group (different pids, noise and ASLR). */
  const auto &puts = pids_of.at("put");
  ASSERT_GE(puts.size(), 2u);
  out = diff({puts[0], puts[1]});
  EXPECT_NE(out.find("\ngroup: same group " + id_of.at("put") + " " + kWords.at("put") + "\n"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("through the same stack"), std::string::npos) << out;
  EXPECT_EQ(json::parse(diff({"--json", puts[0], puts[1]}))["group"]["relation"], "same_group");
}

TEST(CtlQueryGroup, DispatcherHandlersGroupApartThroughTheSameStack) {
  ASSERT_EQ(geteuid(), 0u);
  const ct::test::DaemonRoot dr("ctlq-group");
  ct::test::DaemonHarness daemon(dr.options(CT_DAEMON));
  daemon.start();
  const std::uint64_t t0 = ct::test::now_usec() - 1000000;  // whole seconds: -S @SECONDS

  std::vector<std::string> order;
  for (int i = 0; i < kPerKind; ++i)
    for (const char *k : {"get", "put", "admin"}) order.push_back(k);
  std::mt19937_64 rng(std::random_device{}());
  std::shuffle(order.begin(), order.end(), rng);

  std::map<std::string, std::string> id_of;  // kind -> group id
  std::string stack_id;
  std::set<long long> pids;
  std::map<std::string, std::vector<std::string>> pids_of;  // kind -> its crashes' pids
  for (const auto &kind : order) {
    const json doc = crash_and_store(daemon, {CT_DISPATCHER, "--kind=" + kind, "--seed=" + std::to_string(rng())});
    ASSERT_TRUE(doc.is_object());
    ASSERT_EQ(doc["status"], "ok") << doc["reason"];
    const json &g = doc["group"];
    ASSERT_TRUE(g.is_object()) << doc.dump().substr(0, 500);
    EXPECT_EQ(g["basis"], "history+stack") << g;
    EXPECT_EQ(g["words"], kWords.at(kind)) << g;
    EXPECT_EQ(g["stack_words"], "SIGSEGV in crash_helper() <- dispatch() <- main()") << g;
    if (id_of.count(kind)) {
      EXPECT_EQ(g["id"], id_of[kind]) << kind << ": noise, pid or ASLR split the group";
    }
    id_of.emplace(kind, g["id"]);
    if (stack_id.empty()) stack_id = g["stack_id"];
    EXPECT_EQ(g["stack_id"], stack_id);
    pids.insert(doc["test_pid"].get<long long>());
    pids_of[kind].push_back(std::to_string(doc["test_pid"].get<long long>()));
  }
  ASSERT_EQ(id_of.size(), 3u);
  /* The text says it too (the stored document is the compact one, which
   * keeps no text: ctl-query show makes it). */
  for (const auto &[kind, kind_pids] : pids_of) {
    const ct::test::Ran shown = ct::test::run({CT_CTL_QUERY, "-D", daemon.output_dir(), "show", kind_pids[0]});
    EXPECT_EQ(shown.exit_code(), 0) << shown.err;
    EXPECT_NE(shown.out.find("group: " + id_of[kind] + " " + kWords.at(kind)), std::string::npos) << shown.out;
  }
  EXPECT_EQ(std::set<std::string>({id_of["get"], id_of["put"], id_of["admin"]}).size(), 3u);
  EXPECT_EQ(pids.size(), order.size());

  auto query = [&](std::vector<std::string> args) {
    args.insert(args.begin(), CT_CTL_QUERY);
    return ct::test::run(args);
  };
  /* Over the timeline files (each document's "group") and over the
   * journal (the entries' summary fields alone).  The daemon handles every
   * crash of the machine, and the journal holds older runs: the fixture's
   * executable (a path match) and -S keep this test's. */
  const std::vector<std::vector<std::string>> sources = {{"-D", daemon.output_dir()}, {"-S", since_arg(t0)}};
  for (const auto &src : sources) {
    SCOPED_TRACE(src[0]);
    std::vector<std::string> args = {src[0], src[1], "--json", "group", CT_DISPATCHER};
    const ct::test::Ran r = query(args);
    ASSERT_EQ(r.exit_code(), 0) << r.err;
    const std::vector<json> groups = json_lines(r.out);
    ASSERT_EQ(groups.size(), 3u) << r.out;
    for (const json &g : groups) {
      EXPECT_EQ(g["count"], kPerKind) << g;
      const auto kind = std::find_if(id_of.begin(), id_of.end(), [&](const auto &kv) { return kv.second == g["id"]; });
      ASSERT_NE(kind, id_of.end()) << g;
      EXPECT_EQ(g["words"], kWords.at(kind->first));
      EXPECT_EQ(g["basis"], "history+stack");
      EXPECT_EQ(g["executables"], json::array({fs::canonical(CT_DISPATCHER).string()}));
      EXPECT_EQ(g["hosts"].size(), 1u) << g;
      EXPECT_TRUE(pids.count(std::stoll(g["pid"].get<std::string>()))) << g;
      EXPECT_LE(g["first_usec"].get<std::uint64_t>(), g["last_usec"].get<std::uint64_t>());
    }
    /* By the stack alone: one group of them all. */
    args.push_back("--stack");
    const ct::test::Ran s = query(args);
    ASSERT_EQ(s.exit_code(), 0) << s.err;
    const std::vector<json> stacks = json_lines(s.out);
    ASSERT_EQ(stacks.size(), 1u) << s.out;
    EXPECT_EQ(stacks[0]["count"], 3 * kPerKind);
    EXPECT_EQ(stacks[0]["id"], stack_id);
    EXPECT_EQ(stacks[0]["histories"], 3);
    EXPECT_EQ(stacks[0]["words"], "SIGSEGV in crash_helper() <- dispatch() <- main()");

    /* The text: a header and three lines, most crashes first. */
    args.erase(std::find(args.begin(), args.end(), "--json"));
    args.pop_back();  // --stack
    const ct::test::Ran text = query(args);
    const auto tl = lines_of(text.out);
    ASSERT_EQ(tl.size(), 4u) << text.out;
    EXPECT_EQ(tl[0].rfind("COUNT ", 0), 0u) << tl[0];
    for (std::size_t i = 1; i < tl.size(); ++i) EXPECT_NE(tl[i].find("SIGSEGV in crash_helper()"), std::string::npos);

    /* list CORE_TIMELINE_GROUP=ID: a group's members. */
    std::vector<std::string> list = {src[0], src[1], "--no-legend", "list", CT_DISPATCHER,
                                     "CORE_TIMELINE_GROUP=" + id_of["admin"]};
    const ct::test::Ran members = query(list);
    ASSERT_EQ(members.exit_code(), 0) << members.err;
    EXPECT_EQ(lines_of(members.out).size(), static_cast<std::size_t>(kPerKind)) << members.out;
    list.back() = "CORE_TIMELINE_GROUP_STACK=" + stack_id;
    EXPECT_EQ(lines_of(query(list).out).size(), static_cast<std::size_t>(3 * kPerKind));
  }

  expect_diff_tells_the_groups(daemon.output_dir(), pids_of, id_of, stack_id);

  /* journalctl finds a group's entries through the journal's index. */
  ct::test::ProcessOptions search;
  search.search_path = true;
  const ct::test::Ran jc = ct::test::run({"journalctl", "--since", since_arg(t0), "-o", "json",
                                          "CORE_TIMELINE_GROUP=" + id_of["get"],
                                          "COREDUMP_EXE=" + fs::canonical(CT_DISPATCHER).string()},
                                         search);
  ASSERT_EQ(jc.exit_code(), 0) << jc.err;
  const std::vector<json> entries = json_lines(jc.out);
  ASSERT_EQ(entries.size(), static_cast<std::size_t>(kPerKind)) << jc.out.substr(0, 2000);
  for (const json &e : entries) {
    EXPECT_EQ(e["CORE_TIMELINE_GROUP_STACK"], stack_id);
    EXPECT_EQ(e["CORE_TIMELINE_GROUP_WORDS"], kWords.at("get"));
    EXPECT_EQ(e["CORE_TIMELINE_GROUP_BASIS"], "history+stack");
  }

  /* Rebuilt with another code layout: the same ids. */
  for (const char *variant : {CT_DISPATCHER_O2, CT_DISPATCHER_EXTRA}) {
    for (const char *kind : {"get", "put", "admin"}) {
      const json doc = crash_and_store(daemon, {variant, std::string("--kind=") + kind, "--seed=7"});
      ASSERT_TRUE(doc.is_object());
      EXPECT_EQ(doc["group"]["id"], id_of[kind]) << variant << " " << kind << ": " << doc["group"];
      EXPECT_EQ(doc["group"]["stack_id"], stack_id) << variant;
    }
  }
  EXPECT_EQ(daemon.stop(), 0) << daemon.log_tail();
}

TEST(CtlQueryGroup, CrashDemosTwoPathsAreTwoGroups) {
  ASSERT_EQ(geteuid(), 0u);
  const ct::test::DaemonRoot dr("ctlq-group-demo");
  ct::test::DaemonHarness daemon(dr.options(CT_DAEMON));
  daemon.start();
  std::map<std::string, json> groups;
  for (const char *path : {"a", "b", "a", "b"}) {
    const json doc = crash_and_store(daemon, {CT_CRASH_DEMO, std::string("--path=") + path});
    ASSERT_TRUE(doc.is_object());
    groups[path] = doc["group"];
  }
  EXPECT_EQ(groups["a"]["words"],
            "SIGSEGV in die() <- path_a() <- main() inside REQUEST, after REQ_PARSE, BEFORE_DIE");
  EXPECT_EQ(groups["b"]["words"],
            "SIGSEGV in die() <- path_b() <- main() inside RELOAD, after CONFIG_RELOAD, BEFORE_DIE");
  const ct::test::Ran r = ct::test::run({CT_CTL_QUERY, "-D", daemon.output_dir(), "--json", "group", CT_CRASH_DEMO});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const std::vector<json> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const json &g : lines) {
    EXPECT_EQ(g["count"], 2);
    EXPECT_TRUE(g["id"] == groups["a"]["id"] || g["id"] == groups["b"]["id"]) << g;
  }
  EXPECT_EQ(daemon.stop(), 0) << daemon.log_tail();
}

}  // namespace
