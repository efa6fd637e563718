// SPDX-License-Identifier: MIT
//
// ctl_query_reasons_unit_test - the right reasons and ids, in-process:
// the two namespaces' ids a stored document gets from an entry and a
// reader document (core_timeline/document/ids.h), the COREDUMP_DUMPABLE
// member, the timeline entry's CORE_TIMELINE_NAMESPACE_PID, PID matches on
// either pid (match.h), and why a file is refused (refusal.h).  Real
// crashes through the pipeline: ctl_query_reasons_test.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "core_timeline/document/ids.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/stored.h"
#include "document_reader.h"
#include "match.h"
#include "refusal.h"

namespace {

namespace ctdoc = core_timeline::document;
namespace ctlq = core_timeline::ctl_query;
using json = nlohmann::ordered_json;

// /proc/PID/status as systemd-coredump stores it in COREDUMP_PROC_STATUS,
// cut to the lines that matter (proc(5)), for a leader with tgid `ns`.
std::string status_with(const std::string &nstgid) {
  return "Name:\tspans_three_thr\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\nNgid:\t0\nPid:\t4242\n"
         "NStgid:" + nstgid + "\nNSpid:" + nstgid + "\nNSpgid:\t4240\t1\n";
}

// A reader document's members that ids.h reads.
json reader_doc(std::uint64_t pid, std::vector<std::uint64_t> threads, std::uint64_t crash_tid) {
  json t = json::array();
  for (auto x : threads) t.push_back({{"tid", x}, {"name", nullptr}});
  return {{"process", {{"pid", pid}, {"threads", threads}}}, {"crash", {{"tid", crash_tid}}}, {"threads", t}};
}

TEST(ProcessIds, NStgidIsReadOutermostFirstAndMalformedLinesGiveNothing) {
  EXPECT_EQ(ctdoc::namespace_pids(status_with("\t4242\t2")), (std::vector<std::uint64_t>{4242, 2}));
  EXPECT_EQ(ctdoc::namespace_pids(status_with("\t4242")), (std::vector<std::uint64_t>{4242}));
  EXPECT_EQ(ctdoc::namespace_pids("Name:\tx\nNSpid:\t7\t1\n"), (std::vector<std::uint64_t>{7, 1})) << "NSpid without NStgid";
  EXPECT_TRUE(ctdoc::namespace_pids(status_with("\t4242\tx")).empty());
  EXPECT_TRUE(ctdoc::namespace_pids(status_with("\t-1\t2")).empty());
  EXPECT_TRUE(ctdoc::namespace_pids("Name:\tx\n").empty());
  EXPECT_TRUE(ctdoc::namespace_pids("").empty());
  std::string deep = "NStgid:";
  for (int i = 0; i < 33; ++i) deep += "\t" + std::to_string(100 + i);
  EXPECT_TRUE(ctdoc::namespace_pids(deep).empty()) << "more levels than the kernel nests";
  EXPECT_TRUE(ctdoc::namespace_pids("NStgidx:\t1\n").empty());
}

TEST(ProcessIds, InANamespaceOnlyTheLeadersHostTidIsKnown) {
  const std::map<std::string, std::string> f{{"COREDUMP_PID", "4242"},
                                             {"COREDUMP_PROC_STATUS", status_with("\t4242\t2")}};
  const json r = reader_doc(2, {2, 5, 6}, 6);
  const ctdoc::ProcessIds ids = ctdoc::process_ids(f, &r);
  EXPECT_EQ(ids.host_pid, 4242u);
  EXPECT_EQ(ids.pid, 2u);
  EXPECT_EQ(ids.namespaced, true);
  EXPECT_EQ(ids.from, "COREDUMP_PROC_STATUS NStgid");
  ASSERT_EQ(ids.threads.size(), 3u);
  EXPECT_EQ(ids.threads[0].tid, 2u);
  EXPECT_EQ(ids.threads[0].host_tid, 4242u);
  EXPECT_EQ(ids.threads[1].host_tid, std::nullopt) << "never the namespace tid copied";
  EXPECT_EQ(ids.threads[2].host_tid, std::nullopt);
  const json j = ctdoc::ids_json(ids);
  EXPECT_EQ(j["threads"][1]["host_tid"], nullptr);
  EXPECT_EQ(j["host_pid"], 4242u);
}

TEST(ProcessIds, OnTheHostEveryTidIsTheHosts) {
  const std::map<std::string, std::string> f{{"COREDUMP_PID", "4242"},
                                             {"COREDUMP_PROC_STATUS", status_with("\t4242")}};
  const json r = reader_doc(4242, {4242, 4250}, 4250);
  const ctdoc::ProcessIds ids = ctdoc::process_ids(f, &r);
  EXPECT_EQ(ids.namespaced, false);
  ASSERT_EQ(ids.threads.size(), 2u);
  EXPECT_EQ(ids.threads[1].host_tid, 4250u);
}

TEST(ProcessIds, WhatCannotBeToldIsNull) {
  // No status: equal pids cannot tell; different ones can.
  const json same = reader_doc(4242, {4242, 4250}, 4250);
  ctdoc::ProcessIds ids = ctdoc::process_ids({{"COREDUMP_PID", "4242"}}, &same);
  EXPECT_EQ(ids.namespaced, std::nullopt);
  EXPECT_EQ(ids.threads[0].host_tid, 4242u) << "the leader's tid is its pid in every namespace";
  EXPECT_EQ(ids.threads[1].host_tid, std::nullopt);
  EXPECT_TRUE(ctdoc::ids_json(ids)["namespaced"].is_null());
  const json other = reader_doc(1, {1}, 1);
  ids = ctdoc::process_ids({{"COREDUMP_PID", "4242"}}, &other);
  EXPECT_EQ(ids.namespaced, true);
  EXPECT_EQ(ids.from, "COREDUMP_PID differs from the core's pid");
  // An NStgid that disagrees with the core or the entry is not believed.
  ids = ctdoc::process_ids({{"COREDUMP_PID", "4242"}, {"COREDUMP_PROC_STATUS", status_with("\t4242\t3")}}, &other);
  EXPECT_EQ(ids.from, "COREDUMP_PID differs from the core's pid");
  ids = ctdoc::process_ids({{"COREDUMP_PID", "4242"}, {"COREDUMP_PROC_STATUS", status_with("\t99\t1")}}, &other);
  EXPECT_EQ(ids.from, "COREDUMP_PID differs from the core's pid");
  // Nothing decoded: the namespace pid from NStgid, no threads.
  ids = ctdoc::process_ids({{"COREDUMP_PID", "4242"}, {"COREDUMP_PROC_STATUS", status_with("\t4242\t2")}}, nullptr);
  EXPECT_EQ(ids.pid, 2u);
  EXPECT_EQ(ids.namespaced, true);
  EXPECT_TRUE(ids.threads.empty());
  // No entry pid, no core: nothing.
  ids = ctdoc::process_ids({}, nullptr);
  EXPECT_EQ(ids.host_pid, std::nullopt);
  EXPECT_EQ(ids.namespaced, std::nullopt);
  EXPECT_TRUE(ctdoc::ids_json(ids)["from"].is_null());
}

TEST(StoredDocument, HasPidsAndDumpableAndTheEntryTheNamespacePid) {
  ctdoc::StoredParts p;
  p.status = ctdoc::Status::kCoreMissing;
  p.reason = "gone";
  p.coredump.boot_id = std::string(32, 'a');
  p.coredump.journal_cursor = "s=1";
  p.coredump.fields = {{"COREDUMP_PID", "4242"},
                       {"COREDUMP_DUMPABLE", "2"},
                       {"COREDUMP_PROC_STATUS", status_with("\t4242\t2")}};
  const json doc = ctdoc::stored_document(p);
  EXPECT_EQ(doc["coredump"]["dumpable"], 2);
  EXPECT_EQ(doc["pids"]["pid"], 2u);
  EXPECT_EQ(doc["pids"]["namespaced"], true);
  const std::string bytes = ctdoc::serialize(doc);
  ctdoc::journal::EntryInput in;
  in.document = &doc;
  in.document_bytes = bytes;
  in.coredump_fields = &p.coredump.fields;
  const auto f = ctdoc::journal::entry_fields(in);
  const auto it = std::find_if(f.begin(), f.end(), [](const auto &kv) { return kv.first == ctdoc::journal::kNamespacePid; });
  ASSERT_NE(it, f.end());
  EXPECT_EQ(it->second, "2");
  // Not in a namespace: no such field; an odd COREDUMP_DUMPABLE is null.
  p.coredump.fields = {{"COREDUMP_PID", "4242"}, {"COREDUMP_DUMPABLE", "7"}};
  const json plain = ctdoc::stored_document(p);
  EXPECT_TRUE(plain["coredump"]["dumpable"].is_null());
  const std::string plain_bytes = ctdoc::serialize(plain);
  in.document = &plain;
  in.document_bytes = plain_bytes;
  in.coredump_fields = &p.coredump.fields;
  const auto g = ctdoc::journal::entry_fields(in);
  EXPECT_TRUE(std::none_of(g.begin(), g.end(), [](const auto &kv) { return kv.first == ctdoc::journal::kNamespacePid; }));
}

// A stored document with `pid` and (when given) a namespace pid.
ctlq::Timeline timeline_with(const std::string &host, std::optional<std::uint64_t> ns) {
  json d = {{"status", "ok"},
            {"process", {{"pid", ns.value_or(std::stoull(host))}}},
            {"coredump", {{"boot_id", std::string(32, 'a')}, {"fields", {{"COREDUMP_PID", host}}}}}};
  if (ns) d["pids"] = {{"host_pid", std::stoull(host)}, {"pid", *ns}, {"namespaced", true}, {"from", nullptr}, {"threads", json::array()}};
  auto t = ctlq::parse_timeline(d.dump(), "x.timeline.json", {});
  EXPECT_TRUE(t) << t.error().message;
  return std::move(t).value();
}

TEST(PidMatch, ABareNumberIsEitherPidAFieldMatchOnlyItsField) {
  const ctlq::Timeline t = timeline_with("4242", 2);
  auto bare = ctlq::MatchSet::parse({"2"}, "/");
  ASSERT_TRUE(bare);
  EXPECT_TRUE(bare->matches(t));
  EXPECT_TRUE(ctlq::MatchSet::parse({"4242"}, "/")->matches(t));
  EXPECT_FALSE(ctlq::MatchSet::parse({"3"}, "/")->matches(t));
  EXPECT_FALSE(ctlq::MatchSet::parse({"COREDUMP_PID=2"}, "/")->matches(t)) << "a field match is that field's";
  EXPECT_TRUE(ctlq::MatchSet::parse({"pids.pid=2"}, "/")->matches(t));
  // The file name holds only the host pid; the file's xattr (the hint)
  // the namespace pid.
  using Kind = ctlq::NamespacePidHint::Kind;
  const ctdoc::TimelineName n{"x", 0, std::string(32, 'a'), 4242, 1};
  EXPECT_FALSE(bare->may_match(n)) << "no hint: no namespace pid";
  EXPECT_TRUE(bare->may_match(n, [] { return ctlq::NamespacePidHint{Kind::kPid, "2"}; }));
  EXPECT_FALSE(bare->may_match(n, [] { return ctlq::NamespacePidHint{Kind::kPid, "3"}; }));
  EXPECT_TRUE(bare->may_match(n, [] { return ctlq::NamespacePidHint{Kind::kUnknown, {}}; })) << "cannot tell: read it";
  EXPECT_TRUE(ctlq::MatchSet::parse({"4242"}, "/")->may_match(n));
  bool asked = false;
  EXPECT_TRUE(ctlq::MatchSet::parse({"4242"}, "/")->may_match(n, [&asked] {
    asked = true;
    return ctlq::NamespacePidHint{};
  }));
  EXPECT_FALSE(asked) << "the name decides when it is the host pid";
  EXPECT_FALSE(ctlq::MatchSet::parse({"COREDUMP_PID=2"}, "/")->may_match(n, [] {
    return ctlq::NamespacePidHint{Kind::kPid, "2"};
  })) << "a field match is COREDUMP_PID's alone";
  // A document from before "pids": process.pid is the namespace's.
  json old = {{"status", "ok"},
              {"process", {{"pid", 1}}},
              {"coredump", {{"boot_id", std::string(32, 'a')}, {"fields", {{"COREDUMP_PID", "77"}}}}}};
  auto o = ctlq::parse_timeline(old.dump(), "y.timeline.json", {});
  ASSERT_TRUE(o);
  EXPECT_TRUE(ctlq::MatchSet::parse({"1"}, "/")->matches(*o));
  EXPECT_EQ(ctlq::namespace_pid(*o), "1");
}

TEST(Refusal, TheUsersOwnRootOwnedAclLessTimelineWasNotDumpableForIt) {
  const ctdoc::TimelineName mine{"suid_crasher", 47300, std::string(32, 'a'), 555, 1};
  ctlq::FileFacts root_no_acl;
  root_no_acl.owner = 0;
  root_no_acl.has_acl = false;
  const ctlq::Refusal r = ctlq::refusal(47300, mine, root_no_acl);
  EXPECT_EQ(r.kind, ctlq::kNotDumpable);
  EXPECT_NE(r.why.find("not dumpable for you"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("pid 555 (suid_crasher), uid 47300"), std::string::npos) << r.why;
  // Another uid by the name: another user's, whatever the file.
  EXPECT_EQ(ctlq::refusal(47301, mine, root_no_acl).kind, ctlq::kAnotherUser);
  // What does not show it is not called so.
  ctlq::FileFacts no_acls = root_no_acl;
  no_acls.has_acl = std::nullopt;
  no_acls.acl_unsupported = true;
  ctlq::Refusal u = ctlq::refusal(47300, mine, no_acls);
  EXPECT_EQ(u.kind, "permission denied");
  EXPECT_NE(u.why.find("cannot be told"), std::string::npos) << u.why;
  ctlq::FileFacts with_acl = root_no_acl;
  with_acl.has_acl = true;
  EXPECT_EQ(ctlq::refusal(47300, mine, with_acl).kind, "permission denied");
  ctlq::FileFacts someone = root_no_acl;
  someone.owner = 1234;
  EXPECT_EQ(ctlq::refusal(47300, mine, someone).kind, "permission denied");
  EXPECT_EQ(ctlq::refusal(47300, mine, ctlq::FileFacts{}).kind, "permission denied");
  EXPECT_EQ(ctlq::refusal(47300, std::nullopt, root_no_acl).kind, "permission denied");
  // A system user's crash is root's anyway (no ACL for system users).
  const ctdoc::TimelineName sys{"svc", 120, std::string(32, 'a'), 9, 1};
  EXPECT_EQ(ctlq::refusal(120, sys, root_no_acl).kind, "permission denied");
}

}  // namespace
