// SPDX-License-Identifier: MIT
//
// ctl_query_group_unit_test - ctl-query group's counting, ordering and
// output (daemon/ctl-query/group_query.h) in-process, and the signature read
// from a document's "group"; the same end to end on real crashes:
// ctl_query_group_test.cc.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "document_reader.h"
#include "group_query.h"
#include "query.h"

namespace {

using namespace core_timeline::ctl_query;
using json = nlohmann::ordered_json;

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

const GroupFacts kA{"aaaaaaaaaaaaaaaa", "5555555555555555", "1111111111111111", "SIGSEGV in f() after X",
                    "SIGSEGV in f()", "history+stack"};
const GroupFacts kB{"bbbbbbbbbbbbbbbb", "5555555555555555", "2222222222222222", "SIGSEGV in f() after Y",
                    "SIGSEGV in f()", "history+stack"};
const GroupFacts kNone{};

std::vector<GroupMember> members() {
  return {{&kA, 100, "h1", "/bin/a", "10"}, {&kB, 150, "h1", "/bin/a", "11"}, {&kNone, 160, "h1", "/bin/a", "12"},
          {&kA, 200, "h2", "/bin/a", "13"}, {&kNone, 210, "h2", "/bin/b", "14"}, {&kA, 300, "h1", "/bin/b", "15"}};
}

std::vector<json> run(const QueryOptions &o) {
  std::ostringstream out;
  const std::size_t n = print_groups(out, members(), o);
  std::vector<json> v;
  for (const auto &l : lines_of(out.str())) v.push_back(json::parse(l));
  EXPECT_EQ(n, v.size());
  return v;
}

TEST(CtlQueryGroupUnit, MostCrashesFirstWithTheirHostsExesTimesAndNewestPid) {
  QueryOptions o;
  o.json = true;
  const auto g = run(o);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0]["id"], kA.id);
  EXPECT_EQ(g[0]["count"], 3);
  EXPECT_EQ(g[0]["first_usec"], 100);
  EXPECT_EQ(g[0]["last_usec"], 300);
  EXPECT_EQ(g[0]["hosts"], json::array({"h1", "h2"}));
  EXPECT_EQ(g[0]["executables"], json::array({"/bin/a", "/bin/b"}));
  EXPECT_EQ(g[0]["pid"], "15");
  EXPECT_EQ(g[0]["words"], kA.words);
  EXPECT_EQ(g[0]["history_id"], kA.history_id);
  EXPECT_EQ(g[0]["basis"], "history+stack");
  /* The crashes without a signature: one line, id null. */
  EXPECT_EQ(g[1]["id"], nullptr);
  EXPECT_EQ(g[1]["count"], 2);
  EXPECT_EQ(g[2]["id"], kB.id);
  EXPECT_EQ(g[2]["count"], 1);
  EXPECT_FALSE(g[0].contains("histories"));
}

TEST(CtlQueryGroupUnit, ByTheStackAloneTheHistoriesAreCounted) {
  QueryOptions o;
  o.json = true;
  o.group_by_stack = true;
  const auto g = run(o);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0]["id"], kA.stack_id);
  EXPECT_EQ(g[0]["count"], 4);
  EXPECT_EQ(g[0]["histories"], 2);
  EXPECT_EQ(g[0]["words"], "SIGSEGV in f()");
  EXPECT_EQ(g[0]["basis"], "stack");
  EXPECT_EQ(g[0]["history_id"], nullptr);
}

TEST(CtlQueryGroupUnit, TextTableAndFirstN) {
  QueryOptions o;
  o.max_entries = 2;
  std::ostringstream out;
  EXPECT_EQ(print_groups(out, members(), o), 2u);
  const auto l = lines_of(out.str());
  ASSERT_EQ(l.size(), 3u) << out.str();
  EXPECT_EQ(l[0].rfind("COUNT FIRST", 0), 0u) << l[0];
  EXPECT_TRUE(l[0].ends_with(" PID SIGNATURE")) << l[0];
  EXPECT_TRUE(l[1].ends_with(" 15 " + kA.words)) << l[1];
  EXPECT_NE(l[1].find(" h1,h2 "), std::string::npos) << l[1];
  EXPECT_TRUE(l[2].ends_with("no signature stored (a timeline written before grouping)")) << l[2];
  o.no_legend = true;
  o.group_by_stack = true;
  std::ostringstream s;
  print_groups(s, members(), o);
  const auto ls = lines_of(s.str());
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_TRUE(ls[0].ends_with(" 2 SIGSEGV in f()")) << ls[0];
}

TEST(CtlQueryGroupUnit, TheSignatureOfADocument) {
  const json doc = {{"schema_version", 6},
                    {"status", "ok"},
                    {"coredump", {{"fields", json::object()}}},
                    {"group",
                     {{"rule", 1},
                      {"id", kA.id},
                      {"stack_id", kA.stack_id},
                      {"history_id", kA.history_id},
                      {"basis", "history+stack"},
                      {"words", kA.words},
                      {"stack_words", kA.stack_words}}}};
  ReadRequest req;
  req.paths = {"group"};
  auto t = parse_timeline(doc.dump(), "doc", req);
  ASSERT_TRUE(t) << t.error().message;
  const GroupFacts g = group_facts_of(*t);
  EXPECT_EQ(g.id, kA.id);
  EXPECT_EQ(g.stack_id, kA.stack_id);
  EXPECT_EQ(g.history_id, kA.history_id);
  EXPECT_EQ(g.words, kA.words);
  EXPECT_EQ(g.stack_words, kA.stack_words);
  EXPECT_EQ(g.basis, "history+stack");
  /* A hostile "group" of the wrong types is no signature. */
  json bad = doc;
  bad["group"] = {{"id", 7}, {"words", json::array()}};
  auto tb = parse_timeline(bad.dump(), "bad", req);
  ASSERT_TRUE(tb);
  EXPECT_EQ(group_facts_of(*tb).id, "");
  bad["group"] = "x";
  auto tc = parse_timeline(bad.dump(), "bad", req);
  ASSERT_TRUE(tc);
  EXPECT_EQ(group_facts_of(*tc).words, "");
}

}  // namespace
