// SPDX-License-Identifier: MIT
//
// ctl_query_diff_unit_test - `ctl-query diff` in-process (daemon/ctl-query/
// diff.h) on timeline documents made here, whose every count, age and
// window is chosen so that the expected rows follow from the rules of
// docs/ctl-query.md ("diff"): the sorting, the nearest-rank percentiles,
// the wording of an absence that a lossy window cannot prove, the --json
// shape, and how an argument is told to be a core FILE.  Real crashes are
// ctl_query_pipeline_test (DiffOfTheTwoPaths*).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "core_timeline/reader/group.h"
#include "diff.h"
#include "diff_group.h"
#include "query.h"

namespace ctlq = core_timeline::ctl_query;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

bool contains(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

// One event of a reader document: kind, name, age before the reference.
json event(const char *kind, const std::string &name, std::optional<std::int64_t> age_ns) {
  return {{"kind", kind}, {"name", name}, {"age_ns", age_ns ? json(*age_ns) : json(nullptr)}};
}

// A window of windows[] (docs/timeline-json.md, "Windows").
json window(const char *source, std::uint64_t overwritten, std::uint64_t dropped, std::optional<std::int64_t> complete_for,
            bool since_init) {
  return {{"source", source},
          {"events", 0},
          {"overwritten", overwritten},
          {"dropped", dropped},
          {"torn", 0},
          {"losses_by_source", true},
          {"oldest_age_ns", nullptr},
          {"complete_for_ns", complete_for ? json(*complete_for) : json(nullptr)},
          {"complete_since_init", since_init},
          {"recorder_loaded", true},
          {"enabled", true},
          {"says", std::string(source) + ": the reader's sentence"}};
}

json complete_windows() {
  return json::array({window("user", 0, 0, 5'000'000'000, true), window("alloc", 0, 0, 5'000'000'000, true),
                      window("io", 0, 0, 5'000'000'000, true)});
}

// A reader document: `n` events of each name, evenly spread over the last
// `window_ns` before the CRASH at age 0.
json document(const std::vector<std::tuple<const char *, std::string, int>> &names, std::int64_t window_ns,
              json windows = complete_windows(), json spans = json::array()) {
  json d;
  d["schema_version"] = 3;
  d["status"] = "ok";
  d["reason"] = nullptr;
  d["process"] = {{"pid", 4242}, {"comm", "demo"}, {"exe", "/usr/bin/demo"}};
  d["crash"] = {{"signal", 11}, {"signal_name", "SIGSEGV"}};
  d["events"] = json::array();
  d["events"].push_back(event("LANE_CLAIM", "LANE_CLAIM", -window_ns));
  for (const auto &[kind, name, n] : names)
    for (int i = 0; i < n; ++i) d["events"].push_back(event(kind, name, -window_ns + (window_ns * (i + 1)) / (n + 1)));
  d["events"].push_back(event("CRASH", "CRASH", 0));
  d["time"] = {{"reference", "crash"}};
  d["spans"] = std::move(spans);
  d["windows"] = std::move(windows);
  return d;
}

json span(const char *name, const char *state, std::optional<std::int64_t> duration) {
  return {{"token", "0x1"}, {"state", state}, {"id", 4100}, {"name", name},
          {"duration_ns", duration ? json(*duration) : json(nullptr)}};
}

const ctlq::EventRow *row(const ctlq::Diff &d, const std::string &name) {
  for (const auto &r : d.events)
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<std::string> event_order(const ctlq::Diff &d) {
  std::vector<std::string> v;
  for (const auto &r : d.events) v.push_back(r.name);
  return v;
}

TEST(DiffPercentile, NearestRank) {
  EXPECT_EQ(ctlq::percentile({4, 1, 3, 2}, 50), 2);  // rank ceil(0.5*4) = 2
  EXPECT_EQ(ctlq::percentile({4, 1, 3, 2}, 95), 4);  // rank ceil(3.8) = 4
  std::vector<std::int64_t> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i);
  EXPECT_EQ(ctlq::percentile(twenty, 95), 19);  // rank 19 of 20
  EXPECT_EQ(ctlq::percentile(twenty, 50), 10);
  std::vector<std::int64_t> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i * 1000);
  EXPECT_EQ(ctlq::percentile(hundred, 95), 95000);
  EXPECT_EQ(ctlq::percentile({7}, 50), 7);
  EXPECT_EQ(ctlq::percentile({7}, 95), 7);
  EXPECT_EQ(ctlq::percentile({}, 50), std::nullopt);
  EXPECT_EQ(ctlq::percentile({1, 2}, 0), std::nullopt);
  EXPECT_EQ(ctlq::percentile({1, 2}, 101), std::nullopt);
}

TEST(DiffSide, RatesAreOverTheKeptWindow) {
  // 1 LANE_CLAIM at -1s, 4 REQ at even steps, the CRASH at 0: a 1 s window.
  const ctlq::DiffSide s = ctlq::DiffSide::of_document(document({{"USER", "REQ", 4}}, 1'000'000'000));
  EXPECT_EQ(s.event_count, 6u);
  EXPECT_EQ(s.placed, 6u);
  EXPECT_EQ(s.window_ns(), 1'000'000'000);
  EXPECT_EQ(s.reach_ns(), 1'000'000'000);
  EXPECT_DOUBLE_EQ(*s.rate_per_s(s.events.at("REQ").count), 4.0);
  EXPECT_EQ(s.events.at("REQ").source, "user");
  EXPECT_EQ(s.reference, "crash");
}

TEST(DiffSide, EventsNotPlacedInTimeLeaveTheRateUntold) {
  json d = document({{"USER", "REQ", 2}}, 1000);
  for (auto &e : d["events"]) e["age_ns"] = nullptr;
  d["events"][0]["age_ns"] = -1000;
  const ctlq::DiffSide s = ctlq::DiffSide::of_document(d);
  EXPECT_EQ(s.placed, 1u);
  EXPECT_EQ(s.window_ns(), std::nullopt);
  EXPECT_EQ(s.rate_per_s(2), std::nullopt);
  EXPECT_EQ(s.window_note(), "only one event is placed in time");
}

TEST(DiffSide, KindsMapToTheirSources) {
  EXPECT_EQ(ctlq::source_of_kind_name("MALLOC"), "alloc");
  EXPECT_EQ(ctlq::source_of_kind_name("REALLOC"), "alloc");
  EXPECT_EQ(ctlq::source_of_kind_name("OPEN"), "io");
  EXPECT_EQ(ctlq::source_of_kind_name("CLOSE"), "io");
  EXPECT_EQ(ctlq::source_of_kind_name("USER"), "user");
  EXPECT_EQ(ctlq::source_of_kind_name("CRASH"), "user");
  EXPECT_EQ(ctlq::source_of_kind_name("KIND_33"), "io");  // kKindRead by number
  EXPECT_EQ(ctlq::source_of_kind_name("KIND_200"), "user");
}

TEST(DiffSide, UntrustedShapesCountAsMissingNeverThrow) {
  json d = document({{"USER", "REQ", 1}}, 1000);
  d["events"].push_back(42);
  d["events"].push_back({{"kind", 7}, {"name", json::array()}, {"age_ns", "soon"}});
  d["spans"] = json::array({"x", {{"name", 3}, {"state", "closed"}, {"duration_ns", -5}}});
  d["windows"] = json::array({7, {{"source", 1}}, {{"source", "user"}, {"overwritten", "many"}}});
  d["time"] = "now";
  const ctlq::DiffSide s = ctlq::DiffSide::of_document(d);
  EXPECT_EQ(s.event_count, 5u);
  EXPECT_EQ(s.events.at("?").count, 2u);
  EXPECT_EQ(s.spans.at("?").count, 1u);
  EXPECT_TRUE(s.spans.at("?").closed_ns.empty());  // a negative duration is not a duration
  ASSERT_EQ(s.windows.size(), 1u);
  EXPECT_EQ(s.windows[0].overwritten, 0u);
}

TEST(DiffSide, AgesWhoseSpanOverflowsGiveNoWindowNotANegativeOne) {
  // Untrusted ages -1 and INT64_MAX: newest - oldest does not fit an int64;
  // a wrapped (negative) window would make a negative rate, a NaN log
  // ratio, and a NaN sort key for std::sort.
  json d = json::object();
  d["events"] = json::array({{{"kind", "USER"}, {"name", "REQ"}, {"age_ns", -1}},
                             {{"kind", "USER"}, {"name", "REQ"}, {"age_ns", std::numeric_limits<std::int64_t>::max()}},
                             {{"kind", "USER"}, {"name", "REQ"}, {"age_ns", std::numeric_limits<std::int64_t>::min()}}});
  const ctlq::DiffSide s = ctlq::DiffSide::of_document(d);
  EXPECT_EQ(s.window_ns(), std::nullopt);
  EXPECT_EQ(s.rate_per_s(3), std::nullopt);
  EXPECT_EQ(s.reach_ns(), std::numeric_limits<std::int64_t>::max());
}

TEST(DiffCompare, OneSideOnlyFirstThenByTheLogRatioOfRates) {
  // Both windows 1 s.  ONLY_A: 3 in A only; ONLY_B: 1 in B only; X8: 1 vs 8
  // (log2 3); HALF: 4 vs 2 (log2 -1); SAME: 5 vs 5.
  const auto a = ctlq::DiffSide::of_document(
      document({{"USER", "ONLY_A", 3}, {"USER", "X8", 1}, {"USER", "HALF", 4}, {"USER", "SAME", 5}}, 1'000'000'000));
  const auto b = ctlq::DiffSide::of_document(
      document({{"USER", "ONLY_B", 1}, {"USER", "X8", 8}, {"USER", "HALF", 2}, {"USER", "SAME", 5}}, 1'000'000'000));
  const ctlq::Diff d = ctlq::compare_sides(a, b);
  EXPECT_EQ(event_order(d), (std::vector<std::string>{"ONLY_A", "ONLY_B", "X8", "HALF", "SAME", "CRASH", "LANE_CLAIM"}));
  // (SAME, CRASH and LANE_CLAIM changed by nothing: the bigger total first, then by name.)
  const auto *x8 = row(d, "X8");
  ASSERT_NE(x8, nullptr);
  EXPECT_EQ(x8->tier, 2);
  EXPECT_TRUE(x8->of_rates);
  EXPECT_DOUBLE_EQ(*x8->log2_ratio, 3.0);
  EXPECT_DOUBLE_EQ(*row(d, "HALF")->log2_ratio, -1.0);
  const auto *only_a = row(d, "ONLY_A");
  EXPECT_EQ(only_a->tier, 0);
  ASSERT_TRUE(only_a->b.absence);
  EXPECT_TRUE(only_a->b.absence->proven);
  EXPECT_FALSE(only_a->a.absence);
  EXPECT_EQ(d.compared_ns, 1'000'000'000);
}

TEST(DiffCompare, TheSameCountsOverDifferentWindowsAreDifferentRates) {
  // 2 REQ over 1 s against 2 REQ over 4 s: the rate fell by 4.
  const auto a = ctlq::DiffSide::of_document(document({{"USER", "REQ", 2}}, 1'000'000'000));
  const auto b = ctlq::DiffSide::of_document(document({{"USER", "REQ", 2}}, 4'000'000'000));
  const ctlq::Diff d = ctlq::compare_sides(a, b);
  EXPECT_DOUBLE_EQ(*row(d, "REQ")->log2_ratio, -2.0);
  EXPECT_EQ(d.compared_ns, 4'000'000'000);
}

TEST(DiffCompare, AbsentOnlyWhenTheWindowIsCompleteOverTheComparedTime) {
  // A saw FREE 1 s back.  B's allocations: 5189 overwritten, complete for
  // the last 2 ms only: FREE not seen there, not proven absent.
  json lossy = json::array({window("user", 0, 0, 1'000'000'000, true), window("alloc", 5189, 0, 2'000'000, false)});
  const auto a = ctlq::DiffSide::of_document(document({{"FREE", "FREE", 1}}, 1'000'000'000));
  const auto b = ctlq::DiffSide::of_document(document({}, 1'000'000'000, lossy));
  ctlq::Diff d = ctlq::compare_sides(a, b);
  const auto *free = row(d, "FREE");
  ASSERT_NE(free, nullptr);
  ASSERT_TRUE(free->b.absence);
  EXPECT_FALSE(free->b.absence->proven);
  EXPECT_EQ(free->b.absence->text(), "not seen; window incomplete (5189 overwritten)");
  EXPECT_EQ(free->tier, 1);
  EXPECT_EQ(free->source, "alloc");

  // Complete for 1 s, which is the compared time: absent.
  json enough = json::array({window("user", 0, 0, 1'000'000'000, true), window("alloc", 5189, 0, 1'000'000'000, false)});
  d = ctlq::compare_sides(a, ctlq::DiffSide::of_document(document({}, 1'000'000'000, enough)));
  EXPECT_TRUE(row(d, "FREE")->b.absence->proven);
  EXPECT_EQ(row(d, "FREE")->b.absence->text(), "absent");
  EXPECT_EQ(row(d, "FREE")->tier, 0);

  // Dropped events have no time: never complete.
  json dropped = json::array({window("user", 0, 0, 1'000'000'000, true), window("alloc", 0, 3, std::nullopt, false)});
  d = ctlq::compare_sides(a, ctlq::DiffSide::of_document(document({}, 1'000'000'000, dropped)));
  EXPECT_EQ(row(d, "FREE")->b.absence->text(), "not seen; window incomplete (3 dropped)");

  // A source whose recorder was not loaded, and which kept nothing, was
  // not recorded: nothing is proven of it.
  json unloaded = json::array({window("user", 0, 0, 1'000'000'000, true), window("alloc", 0, 0, 1'000'000'000, true)});
  unloaded[1]["recorder_loaded"] = false;
  d = ctlq::compare_sides(a, ctlq::DiffSide::of_document(document({}, 1'000'000'000, unloaded)));
  EXPECT_EQ(row(d, "FREE")->b.absence->text(), "not seen; not recorded (its wrapper library was not loaded)");
  unloaded[1]["events"] = 2;  // but it kept events: it was recorded after all (tl_record), and lost nothing
  d = ctlq::compare_sides(a, ctlq::DiffSide::of_document(document({}, 1'000'000'000, unloaded)));
  EXPECT_EQ(row(d, "FREE")->b.absence->text(), "absent");

  // A document without windows[] (schema 2) proves no absence.
  json old = document({}, 1'000'000'000);
  old.erase("windows");
  d = ctlq::compare_sides(a, ctlq::DiffSide::of_document(old));
  EXPECT_EQ(row(d, "FREE")->b.absence->text(), "not seen; window unknown (the document has no windows[])");

  // A proven absence sorts before one that is not.
  const auto b2 = ctlq::DiffSide::of_document(document({{"USER", "REQ", 1}}, 1'000'000'000, lossy));
  const auto a2 = ctlq::DiffSide::of_document(document({{"FREE", "FREE", 9}, {"USER", "MARK", 1}}, 1'000'000'000));
  d = ctlq::compare_sides(a2, b2);
  EXPECT_EQ(event_order(d)[0], "MARK");  // absent in B (user: complete since tl_init)
  EXPECT_EQ(event_order(d)[1], "REQ");   // absent in A
  EXPECT_EQ(event_order(d)[2], "FREE");  // not seen in B, though 9 in A
}

TEST(DiffCompare, SpansByPresenceThenOpenAtTheEndThenChange) {
  // A: GONE (closed 10), STUCK closed 10 20 30 (p50 20, p95 30), SLOWER 4
  // closed of 1 ms, SAME 1 closed.  B: NEW (open), STUCK 3 closed + 1 open,
  // SLOWER 4 closed of 8 ms (p95 x8), SAME 1 closed.
  json sa = json::array({span("GONE", "closed", 10), span("STUCK", "closed", 10), span("STUCK", "closed", 30),
                         span("STUCK", "closed", 20), span("SAME", "closed", 5)});
  json sb = json::array({span("NEW", "open", std::nullopt), span("STUCK", "closed", 10), span("STUCK", "closed", 20),
                         span("STUCK", "closed", 30), span("STUCK", "open", std::nullopt), span("SAME", "closed", 5)});
  for (int i = 0; i < 4; ++i) {
    sa.push_back(span("SLOWER", "closed", 1'000'000));
    sb.push_back(span("SLOWER", "closed", 8'000'000));
  }
  const auto a = ctlq::DiffSide::of_document(document({}, 1000, complete_windows(), sa));
  const auto b = ctlq::DiffSide::of_document(document({}, 1000, complete_windows(), sb));
  const ctlq::Diff d = ctlq::compare_sides(a, b);
  std::vector<std::string> order;
  for (const auto &r : d.spans) order.push_back(r.name);
  EXPECT_EQ(order, (std::vector<std::string>{"GONE", "NEW", "STUCK", "SLOWER", "SAME"}));
  const auto &stuck = d.spans[2];
  EXPECT_EQ(stuck.tier, 2);
  EXPECT_EQ(stuck.a.p50_ns, 20);
  EXPECT_EQ(stuck.a.p95_ns, 30);
  EXPECT_EQ(stuck.a.open, 0u);
  EXPECT_EQ(stuck.b.open, 1u);
  EXPECT_EQ(stuck.b.closed, 3u);
  const auto &slower = d.spans[3];
  EXPECT_EQ(slower.tier, 3);
  EXPECT_DOUBLE_EQ(slower.change, 3.0);  // counts equal, p95 x8
  EXPECT_EQ(d.spans[1].b.open, 1u);
  ASSERT_TRUE(d.spans[1].a.absence);
  EXPECT_TRUE(d.spans[1].a.absence->proven);
}

// Writes a stored document (the reader's plus coredump/daemon/text) for
// ctl-query's -D.
std::string store(const std::string &dir, json doc, std::uint32_t pid, std::uint64_t usec) {
  doc["coredump"] = {{"journal_cursor", "s=1"},
                     {"boot_id", "feac8a91104c4813a37419e2b9ab4803"},
                     {"realtime_usec", usec},
                     {"core_file", nullptr},
                     {"storage", "journal"},
                     {"fields",
                      {{"COREDUMP_PID", std::to_string(pid)},
                       {"COREDUMP_UID", "0"},
                       {"COREDUMP_COMM", "demo"},
                       {"COREDUMP_EXE", "/usr/bin/demo"},
                       {"COREDUMP_SIGNAL_NAME", "SIGSEGV"},
                       {"COREDUMP_TIMESTAMP", std::to_string(usec)}}}};
  doc["process"]["pid"] = pid;
  doc["daemon"] = {{"version", "test"}, {"decoded_usec", usec}, {"duration_ms", 1}};
  doc["text"] = "";
  const std::string name = "core.demo.0.feac8a91104c4813a37419e2b9ab4803." + std::to_string(pid) + "." +
                           std::to_string(usec) + ".timeline.json";
  std::ofstream(dir + "/" + name) << doc.dump(2) << '\n';
  return dir + "/" + name;
}

class DiffCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ctlq-diff-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  struct Out {
    int rc;
    std::string out, err;
  };
  Out run(std::vector<std::string> args) {
    args.insert(args.begin(), {"ctl-query", "-D", dir_});
    std::ostringstream out, err;
    const int rc = ctlq::ctl_query_main(args, out, err, 1796020200000000);
    return {rc, out.str(), err.str()};
  }
  std::string dir_;
};

TEST_F(DiffCommand, TextTablesSortedWithTheIncompleteWindowWording) {
  json lossy = json::array({window("user", 0, 0, 1'000'000'000, true), window("alloc", 5189, 0, 2'000'000, false)});
  lossy[1]["says"] = "allocations: complete for the last 2.000ms; not known before -2.000ms (5189 overwritten); 0 kept";
  store(dir_, document({{"USER", "REQ_PARSE", 2}, {"FREE", "FREE", 1}}, 1'000'000'000, complete_windows(),
                       json::array({span("REQUEST", "open", std::nullopt)})),
        101, 1796020100000000);
  store(dir_, document({{"USER", "CONFIG_RELOAD", 1}}, 1'000'000'000, lossy,
                       json::array({span("RELOAD", "open", std::nullopt)})),
        202, 1796020110000000);
  const Out r = run({"diff", "101", "202"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 10u) << r.out;
  EXPECT_TRUE(l[0].starts_with("A: timeline " + dir_ + "/core.demo.0.")) << l[0];
  EXPECT_TRUE(contains(l[0], "pid 101 (demo), SIGSEGV, crashed ")) << l[0];
  EXPECT_TRUE(contains(l[1], "A: 5 events, kept window 1.000000s (oldest to newest placed in time); ages before its CRASH"))
      << l[1];
  EXPECT_TRUE(contains(r.out, "\nB window: allocations: complete for the last 2.000ms;")) << r.out;
  EXPECT_TRUE(contains(r.out, "\ncompared: the last 1.000000s before each side's reference\n")) << r.out;
  // The event table: header, then REQ_PARSE (2, absent in B), CONFIG_RELOAD
  // (1, absent in A), FREE (not seen in B: allocations lost), then the two
  // on both sides (equal rates).
  std::size_t h = 0;
  while (h < l.size() && !l[h].starts_with("EVENT")) ++h;
  ASSERT_LT(h + 5, l.size()) << r.out;
  EXPECT_EQ(l[h], "EVENT         SOURCE A A/s B B/s CHANGE");
  EXPECT_EQ(l[h + 1], "REQ_PARSE     user   2 2.0 0 0.0 only in A; absent in B");
  EXPECT_EQ(l[h + 2], "CONFIG_RELOAD user   0 0.0 1 1.0 only in B; absent in A");
  EXPECT_EQ(l[h + 3], "FREE          alloc  1 1.0 0 0.0 only in A; not seen in B; window incomplete (5189 overwritten)");
  EXPECT_TRUE(l[h + 4].starts_with("CRASH ")) << l[h + 4];
  EXPECT_TRUE(l[h + 4].ends_with(" rate x1.00")) << l[h + 4];
  std::size_t s = h;
  while (s < l.size() && !l[s].starts_with("SPAN")) ++s;
  ASSERT_LT(s + 2, l.size()) << r.out;
  EXPECT_EQ(l[s], "SPAN    A A P50 A P95 A OPEN B B P50 B P95 B OPEN CHANGE");
  EXPECT_EQ(l[s + 1], "RELOAD  0     -     -      0 1     -     -      1 only in B; absent in A");
  EXPECT_EQ(l[s + 2], "REQUEST 1     -     -      1 0     -     -      0 only in A; absent in B");

  // --no-legend drops only the header lines.
  const Out quiet = run({"--no-legend", "diff", "101", "202"});
  EXPECT_EQ(lines_of(quiet.out).size(), l.size() - 2);
}

TEST_F(DiffCommand, JsonShape) {
  store(dir_, document({{"USER", "REQ_PARSE", 1}}, 1000, complete_windows(),
                       json::array({span("REQUEST", "closed", 400), span("REQUEST", "open", std::nullopt)})),
        101, 1796020100000000);
  store(dir_, document({{"USER", "REQ_PARSE", 3}}, 1000), 202, 1796020110000000);
  const Out r = run({"diff", "--json", "101", "202"});
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(lines_of(r.out).size(), 1u) << "one object on one line";
  const json j = json::parse(r.out);
  std::vector<std::string> top;
  for (const auto &[k, v] : j.items()) top.push_back(k);
  EXPECT_EQ(top, (std::vector<std::string>{"a", "b", "group", "compared_ns", "events", "spans"}));
  EXPECT_EQ(j["group"]["relation"], "unknown") << "documents made here have no group";
  EXPECT_FALSE(j["group"]["a"]["known"].get<bool>());
  EXPECT_EQ(j["a"]["from"], "timeline");
  EXPECT_EQ(j["a"]["argument"], "101");
  EXPECT_EQ(j["a"]["pid"], 101);
  EXPECT_EQ(j["a"]["matched"], 1);
  EXPECT_EQ(j["a"]["status"], "ok");
  EXPECT_EQ(j["a"]["reference"], "crash");
  EXPECT_EQ(j["a"]["events"], 3);
  EXPECT_EQ(j["a"]["window_ns"], 1000);
  EXPECT_TRUE(j["a"]["window_note"].is_null());
  EXPECT_EQ(j["a"]["windows"].size(), 3u);
  EXPECT_EQ(j["compared_ns"], 1000);
  const json &req = j["events"][0];
  EXPECT_EQ(req["name"], "REQ_PARSE");
  EXPECT_EQ(req["kind"], "USER");
  EXPECT_EQ(req["source"], "user");
  EXPECT_EQ(req["a"]["count"], 1);
  EXPECT_DOUBLE_EQ(req["a"]["rate_per_s"].get<double>(), 1e6);
  EXPECT_EQ(req["b"]["count"], 3);
  EXPECT_TRUE(req["b"]["absence"].is_null());
  EXPECT_EQ(req["tier"], 2);
  EXPECT_EQ(req["ratio_of"], "rates");
  EXPECT_NEAR(req["log2_ratio"].get<double>(), std::log2(3.0), 1e-12);
  const json &sp = j["spans"][0];
  EXPECT_EQ(sp["name"], "REQUEST");
  EXPECT_EQ(sp["a"]["count"], 2);
  EXPECT_EQ(sp["a"]["closed"], 1);
  EXPECT_EQ(sp["a"]["p50_ns"], 400);
  EXPECT_EQ(sp["a"]["p95_ns"], 400);
  EXPECT_EQ(sp["a"]["open_at_end"], 1);
  EXPECT_EQ(sp["b"]["count"], 0);
  EXPECT_EQ(sp["b"]["absence"], "absent");
  EXPECT_TRUE(sp["b"]["absence_note"].is_null());
  EXPECT_EQ(sp["tier"], 0);

  const Out pretty = run({"diff", "--json=pretty", "101", "202"});
  ASSERT_EQ(pretty.rc, 0);
  EXPECT_GT(lines_of(pretty.out).size(), 10u);
  EXPECT_EQ(json::parse(pretty.out), j);
}

TEST_F(DiffCommand, SeveralMatchesTakeTheNewestAndSaySo) {
  store(dir_, document({{"USER", "OLD", 1}}, 1000), 101, 1796020100000000);
  const std::string newest = store(dir_, document({{"USER", "NEW", 1}}, 1000), 102, 1796020150000000);
  store(dir_, document({{"USER", "OTHER", 1}}, 1000), 202, 1796020110000000);
  const Out r = run({"diff", "demo", "202", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "ctl-query: A: 3 timelines match demo; comparing the newest (" + newest + ")\n");
  const json j = json::parse(r.out);
  EXPECT_EQ(j["a"]["file"], newest);
  EXPECT_EQ(j["a"]["matched"], 3);
  EXPECT_EQ(j["events"][0]["name"], "NEW");
}

TEST_F(DiffCommand, ErrorsSayWhichSide) {
  store(dir_, document({{"USER", "X", 1}}, 1000), 101, 1796020100000000);
  Out r = run({"diff", "101", "999"});
  EXPECT_EQ(r.rc, ctlq::kExitNoMatch);
  EXPECT_EQ(r.err, "ctl-query: B: no timeline matches 999\n");
  r = run({"diff", "101"});
  EXPECT_EQ(r.rc, ctlq::kExitUsage);
  // A timeline without a recovered timeline cannot be compared.
  json none = document({}, 1000);
  none["status"] = "no_ring";
  none["reason"] = "no CTLN mapping found";
  none.erase("events");
  store(dir_, none, 303, 1796020120000000);
  r = run({"diff", "101", "303"});
  EXPECT_EQ(r.rc, ctlq::kExitIncomplete);
  EXPECT_TRUE(contains(r.err, "ctl-query: B: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "no timeline to compare (status no_ring: no CTLN mapping found)")) << r.err;
  // A path that is not a core is an executable MATCH, and the message says so.
  const std::string not_core = dir_ + "/not-a-core";
  std::ofstream(not_core) << "hello";
  r = run({"diff", not_core, "101"});
  EXPECT_EQ(r.rc, ctlq::kExitNoMatch);
  EXPECT_TRUE(contains(r.err, "it names a file that is not a readable ELF core")) << r.err;
}

// The first 18 bytes of an ELF header: class, data (1 LE, 2 BE), e_type.
std::string elf_header(unsigned char data, unsigned type) {
  std::string h = std::string("\x7f" "ELF", 4) + std::string(1, '\x02') + std::string(1, static_cast<char>(data));
  h.resize(16, '\0');
  if (data == 2) h += {static_cast<char>(type >> 8), static_cast<char>(type & 0xff)};
  else h += {static_cast<char>(type & 0xff), static_cast<char>(type >> 8)};
  return h + std::string(46, '\0');
}

TEST_F(DiffCommand, AnArgumentIsACoreFileOnlyWhenItIsAnEtCorePath) {
  std::ofstream(dir_ + "/core.le") << elf_header(1, 4);
  std::ofstream(dir_ + "/core.be") << elf_header(2, 4);
  std::ofstream(dir_ + "/exe") << elf_header(1, 3);  // ET_DYN
  std::ofstream(dir_ + "/short") << std::string("\x7f" "ELF", 4);
  using K = ctlq::DiffArgument;
  EXPECT_EQ(ctlq::classify_diff_argument(dir_ + "/core.le", "/"), K::kCore);
  EXPECT_EQ(ctlq::classify_diff_argument(dir_ + "/core.be", "/"), K::kCore);
  EXPECT_EQ(ctlq::classify_diff_argument("./core.le", dir_), K::kCore);
  EXPECT_EQ(ctlq::classify_diff_argument("core.le", dir_), K::kMatch) << "no '/': a COMM";
  EXPECT_EQ(ctlq::classify_diff_argument(dir_ + "/exe", "/"), K::kMatch);
  EXPECT_EQ(ctlq::classify_diff_argument(dir_ + "/short", "/"), K::kMatch);
  EXPECT_EQ(ctlq::classify_diff_argument(dir_ + "/missing", "/"), K::kMatch);
  EXPECT_EQ(ctlq::classify_diff_argument(dir_, "/"), K::kMatch) << "a directory";
  EXPECT_EQ(ctlq::classify_diff_argument("/proc/self/exe", "/"), K::kMatch);
  EXPECT_EQ(ctlq::classify_diff_argument("COREDUMP_EXE=" + dir_ + "/core.le", "/"), K::kMatch);
  EXPECT_EQ(ctlq::classify_diff_argument("1234", dir_), K::kMatch);
  // A core FILE that is an ET_CORE header and nothing else: a clear error.
  const Out r = run({"diff", dir_ + "/core.le", dir_ + "/core.be"});
  EXPECT_EQ(r.rc, ctlq::kExitIncomplete);
  EXPECT_TRUE(contains(r.err, "ctl-query: A: " + dir_ + "/core.le: ")) << r.err;
}

// The document's "group" of a signature made by the reader's own rule.
json group_of(std::vector<std::string> frames, std::vector<std::string> spans, std::vector<std::string> events) {
  const auto g = core_timeline::reader::make_signature("SIGSEGV", std::move(frames), std::move(spans),
                                                      std::move(events), true, "");
  return {{"rule", core_timeline::reader::kGroupRule}, {"id", g.id}, {"stack_id", g.stack_id},
          {"history_id", g.history_id}, {"basis", "history+stack"}, {"signal", g.signal}, {"frames", g.frames},
          {"open_spans", g.open_spans}, {"last_events", g.last_events}, {"words", g.words},
          {"stack_words", g.stack_words}, {"note", nullptr}};
}

const std::vector<std::string> kStack = {"crash_helper", "dispatch", "main"};

TEST(DiffGroup, AGroupOfTheWrongShapeIsUntoldAndSaysWhy) {
  json d = document({}, 1000);
  EXPECT_TRUE(contains(ctlq::side_group_of(d).unknown, "no group signature (written before signatures)"));
  d["group"] = nullptr;
  EXPECT_TRUE(contains(ctlq::side_group_of(d).unknown, "null")) << ctlq::side_group_of(d).unknown;
  d["group"] = "3f96ada7e83f594b";
  EXPECT_TRUE(contains(ctlq::side_group_of(d).unknown, "not an object"));
  d["group"] = group_of(kStack, {"REQUEST"}, {"PARSE"});
  d["group"]["id"] = 12;
  EXPECT_TRUE(contains(ctlq::side_group_of(d).unknown, "no id or stack_id string"));
  d["group"] = group_of(kStack, {"REQUEST"}, {"PARSE"});
  d["group"]["last_events"] = json::array({"PARSE", 7});
  EXPECT_TRUE(contains(ctlq::side_group_of(d).unknown, "wrong type"));
  EXPECT_FALSE(ctlq::side_group_of(json::array()).known);
  d["group"] = group_of(kStack, {"REQUEST"}, {"PARSE"});
  const ctlq::SideGroup g = ctlq::side_group_of(d);
  ASSERT_TRUE(g.known) << g.unknown;
  EXPECT_EQ(g.open_spans, std::vector<std::string>{"REQUEST"});
  EXPECT_EQ(g.words, "SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST, after PARSE");
}

TEST(DiffGroup, TheSameStackMarksWhatDiffersAtItsPlace) {
  json a = document({}, 1000), b = document({}, 1000);
  a["group"] = group_of(kStack, {"REQUEST_B"}, {"PARSE", "LOOKUP_B"});
  b["group"] = group_of(kStack, {}, {"START", "PARSE", "LOOKUP_C"});
  const ctlq::GroupDiff g = ctlq::compare_groups(ctlq::side_group_of(a), ctlq::side_group_of(b));
  EXPECT_EQ(g.relation, ctlq::GroupRelation::kSameStack);
  EXPECT_EQ(g.a_spans_differ, std::vector<bool>{true});
  EXPECT_EQ(g.a_events_differ, (std::vector<bool>{false, true}));  // aligned at the newest
  EXPECT_EQ(g.b_events_differ, (std::vector<bool>{true, false, true}));
  std::ostringstream out;
  ctlq::print_group_section(out, g, true);
  const std::string ida = a["group"]["id"], idb = b["group"]["id"], stack = a["group"]["stack_id"];
  EXPECT_EQ(out.str(), "group: different groups through the same stack\n"
                       "  stack: " + stack + " SIGSEGV in crash_helper() <- dispatch() <- main()\n"
                       "  A: " + ida + " inside *REQUEST_B*, after PARSE, *LOOKUP_B*\n"
                       "  B: " + idb + " after *START*, PARSE, *LOOKUP_C*\n"
                       "  (*NAME*: not the other side's at that place)\n");
  const json j = ctlq::group_diff_json(g);
  EXPECT_EQ(j["relation"], "same_stack");
  EXPECT_TRUE(j["id"].is_null());
  EXPECT_EQ(j["stack_id"], stack);
  EXPECT_EQ(j["a"]["open_spans"], json::array({"REQUEST_B"}));
  EXPECT_EQ(j["a"]["last_events_differ"], json::array({false, true}));
  EXPECT_EQ(j["b"]["open_spans_differ"], json::array());
  EXPECT_TRUE(j["b"]["unknown"].is_null());

  // One group; different stacks.
  b["group"] = a["group"];
  const ctlq::GroupDiff same = ctlq::compare_groups(ctlq::side_group_of(a), ctlq::side_group_of(b));
  EXPECT_EQ(same.relation, ctlq::GroupRelation::kSameGroup);
  out.str("");
  ctlq::print_group_section(out, same, true);
  EXPECT_EQ(out.str(), "group: same group " + ida +
                           " SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST_B, after PARSE, LOOKUP_B\n");
  b["group"] = group_of({"die", "path_b", "main"}, {"REQUEST_B"}, {"PARSE", "LOOKUP_B"});
  const ctlq::GroupDiff other = ctlq::compare_groups(ctlq::side_group_of(a), ctlq::side_group_of(b));
  EXPECT_EQ(other.relation, ctlq::GroupRelation::kDifferentStacks);
  out.str("");
  ctlq::print_group_section(out, other, true);
  EXPECT_EQ(out.str(), "group: different stacks\n  A: stack " + stack +
                           " SIGSEGV in crash_helper() <- dispatch() <- main() (group " + ida + ")\n  B: stack " +
                           b["group"]["stack_id"].get<std::string>() + " SIGSEGV in die() <- path_b() <- main() (group " +
                           b["group"]["id"].get<std::string>() + ")\n");
  EXPECT_TRUE(ctlq::group_diff_json(other)["stack_id"].is_null());
}

TEST_F(DiffCommand, TheGroupSectionComesBeforeTheTablesAndAnOldDocumentsCannotBeTold) {
  json a = document({{"USER", "LOOKUP_B", 1}}, 1000), b = document({{"USER", "LOOKUP_C", 1}}, 1000);
  a["group"] = group_of(kStack, {"REQUEST"}, {"PARSE", "LOOKUP_B"});
  b["group"] = group_of(kStack, {"REQUEST"}, {"PARSE", "LOOKUP_C"});
  store(dir_, a, 101, 1796020100000000);
  store(dir_, b, 202, 1796020110000000);
  Out r = run({"diff", "101", "202"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 8u) << r.out;
  EXPECT_EQ(l[4], "group: different groups through the same stack") << r.out;
  EXPECT_EQ(l[6], "  A: " + a["group"]["id"].get<std::string>() + " inside REQUEST, after PARSE, *LOOKUP_B*");
  EXPECT_EQ(l[7], "  B: " + b["group"]["id"].get<std::string>() + " inside REQUEST, after PARSE, *LOOKUP_C*");
  EXPECT_LT(r.out.find("group: "), r.out.find("\nEVENT")) << r.out;
  const json j = json::parse(run({"diff", "--json", "101", "202"}).out);
  EXPECT_EQ(j["group"]["relation"], "same_stack");
  EXPECT_EQ(j["group"]["b"]["last_events"], json::array({"PARSE", "LOOKUP_C"}));

  // A document written before group signatures (schema_version 6): that
  // side cannot be told; the other's group is still named.
  std::filesystem::copy_file(CT_FIXTURES "/crash_demo-a.schema6.timeline.json",
                             dir_ + "/" + std::filesystem::path(CT_FIXTURES "/crash_demo-a.schema6.timeline.json")
                                              .filename()
                                              .string());
  r = run({"diff", "23318", "202"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\ngroup: cannot be told for A (its document has no group signature (written before "
                              "signatures))\n  B: " + b["group"]["id"].get<std::string>() + " SIGSEGV in crash_helper()"))
      << r.out;
  const json old = json::parse(run({"diff", "--json", "23318", "202"}).out);
  EXPECT_EQ(old["group"]["relation"], "unknown");
  EXPECT_FALSE(old["group"]["a"]["known"].get<bool>());
  EXPECT_TRUE(old["group"]["a"]["id"].is_null());
  EXPECT_EQ(old["group"]["b"]["id"], b["group"]["id"]);
}

}  // namespace
