// SPDX-License-Identifier: MIT
//
// ctl_query_unit_test - ctl-query's parts in-process: times, file names,
// matches, the document reader on documents built here (valid, malformed,
// huge, truncated at every byte, mutated), and command-line errors.  The
// command on real timelines is ctl_query_pipeline_test.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "leaves.h"
#include "document_reader.h"
#include "match.h"
#include "query.h"
#include "text.h"
#include "time_spec.h"
#include "view.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/names.h"
#include "core_timeline/reader/render.h"

namespace ctlq = core_timeline::ctl_query;
namespace ctdoc = core_timeline::document;
using json = nlohmann::ordered_json;

namespace {

constexpr std::int64_t kSec = 1000000;

// Runs every test in UTC so that local-time forms are predictable.
class UtcEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};
const auto *const kUtc = ::testing::AddGlobalTestEnvironment(new UtcEnvironment);

std::int64_t utc(int y, int mo, int d, int h, int mi, int s) {
  struct tm tm {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<std::int64_t>(timegm(&tm)) * kSec;
}

// A document of the shape core-timelined writes (docs/ctl-query.md), small
// enough to mutate byte by byte.  Built here: these tests are about the
// reader's handling of documents, not about real crashes.
json sample_document() {
  json d;
  d["schema_version"] = 1;
  d["status"] = "ok";
  d["exit_code"] = 0;
  d["reason"] = nullptr;
  d["source"] = "core-only";
  d["process"] = {{"pid", 4242}, {"comm", "demo"}, {"exe", "/usr/bin/demo"}};
  d["crash"] = {{"signal", 11}, {"signal_name", "SIGSEGV"}};
  d["rings"] = json::array({json{{"index", 0}, {"state", "valid"}, {"lanes", json::array({json{{"lane", 0}}})}}});
  d["events"] = json::array();
  d["events"].push_back({{"seq", 1}, {"tid", 4242}, {"kind", "USER"}, {"name", "REQ_PARSE"}, {"id", 4097},
                         {"args", {41, 0}}, {"location", nullptr}});
  d["events"].push_back({{"seq", 2}, {"tid", 4243}, {"kind", "USER"}, {"name", "BEFORE_DIE"}, {"id", 4099},
                         {"args", {1001, 7}}, {"location", nullptr}});
  d["events"].push_back({{"seq", 3}, {"tid", 4242}, {"kind", "CRASH"}, {"name", "CRASH"}, {"id", 0},
                         {"args", {0, 0}}, {"crash", {{"signal_name", "SIGSEGV"}}}});
  d["coredump"] = {{"journal_cursor", "s=1;i=2"},
                   {"boot_id", "feac8a91104c4813a37419e2b9ab4803"},
                   {"realtime_usec", 1796020111805641ull},
                   {"core_file", nullptr},
                   {"storage", "journal"},
                   {"fields",
                    {{"COREDUMP_PID", "4242"},
                     {"COREDUMP_UID", "1000"},
                     {"COREDUMP_GID", "1000"},
                     {"COREDUMP_SIGNAL", "11"},
                     {"COREDUMP_SIGNAL_NAME", "SIGSEGV"},
                     {"COREDUMP_EXE", "/usr/bin/demo"},
                     {"COREDUMP_COMM", "demo"},
                     {"COREDUMP_CMDLINE", "demo --x"},
                     {"COREDUMP_ENVIRON", "A=1\nB=2\n"},
                     {"COREDUMP_TIMESTAMP", "1796020111000000"}}}};
  d["daemon"] = {{"version", "0.1.0"}, {"decoded_usec", 1796020112000000ull}, {"duration_ms", 12}};
  d["text"] = "core-timeline: core-only, pid 4242 (demo), 3 events\n";
  return d;
}

ctlq::ReadRequest request() { return ctlq::ReadRequest{}; }

// A scratch directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ctlq-unit-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }
  void write(const std::string &name, const std::string &bytes) const {
    FILE *f = fopen((path_ + "/" + name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    fclose(f);
  }

 private:
  std::string path_;
};

struct Cli {
  int rc;
  std::string out, err;
};

Cli cli(std::vector<std::string> args, std::int64_t now = utc(2026, 11, 30, 12, 0, 0)) {
  args.insert(args.begin(), "ctl-query");
  std::ostringstream out, err;
  int rc = ctlq::ctl_query_main(args, out, err, now);
  return Cli{rc, out.str(), err.str()};
}

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

}  // namespace

// ---- times -----------------------------------------------------------------

TEST(TimeSpec, AbsoluteFormsInLocalTimeAndUtc) {
  const std::int64_t now = utc(2026, 11, 30, 12, 0, 0);
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30 06:25:26", now), utc(2026, 11, 30, 6, 25, 26));
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30T06:25:26", now), utc(2026, 11, 30, 6, 25, 26));
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30 06:25", now), utc(2026, 11, 30, 6, 25, 0));
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30", now), utc(2026, 11, 30, 0, 0, 0));
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30 06:25:26.250000", now), utc(2026, 11, 30, 6, 25, 26) + 250000);
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30 06:25:26 UTC", now), utc(2026, 11, 30, 6, 25, 26));
  EXPECT_EQ(*ctlq::parse_time_spec("2026-11-30T06:25:26Z", now), utc(2026, 11, 30, 6, 25, 26));
  EXPECT_EQ(*ctlq::parse_time_spec("06:25:26", now), utc(2026, 11, 30, 6, 25, 26));
  EXPECT_EQ(*ctlq::parse_time_spec("@1796020111", now), 1796020111 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("  2026-11-30 06:25:26  ", now), utc(2026, 11, 30, 6, 25, 26));
}

TEST(TimeSpec, WhatListPrintsParsesBack) {
  // So that a time copied from `ctl-query list` works with --since.
  const std::int64_t t = utc(2026, 11, 30, 6, 25, 26);
  const std::string printed = ctlq::format_time(t);
  EXPECT_EQ(printed, "Mon 2026-11-30 06:25:26 UTC");
  auto back = ctlq::parse_time_spec(printed, t);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, t);
}

TEST(TimeSpec, NamedDaysAreMidnights) {
  const std::int64_t now = utc(2026, 11, 30, 12, 34, 56) + 789;
  EXPECT_EQ(*ctlq::parse_time_spec("now", now), now);
  EXPECT_EQ(*ctlq::parse_time_spec("today", now), utc(2026, 11, 30, 0, 0, 0));
  EXPECT_EQ(*ctlq::parse_time_spec("yesterday", now), utc(2026, 11, 29, 0, 0, 0));
  EXPECT_EQ(*ctlq::parse_time_spec("tomorrow", now), utc(2026, 12, 1, 0, 0, 0));
  // Across a month boundary.
  EXPECT_EQ(*ctlq::parse_time_spec("yesterday", utc(2026, 12, 1, 0, 30, 0)), utc(2026, 11, 30, 0, 0, 0));
}

TEST(TimeSpec, RelativeForms) {
  const std::int64_t now = utc(2026, 11, 30, 12, 0, 0);
  EXPECT_EQ(*ctlq::parse_time_spec("-1h", now), now - 3600 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("+30min", now), now + 1800 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("-1h30min", now), now - 5400 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("2d 3h ago", now), now - (2 * 86400 + 3 * 3600) * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("5min left", now), now + 300 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("-90", now), now - 90 * kSec);  // no unit: seconds
  EXPECT_EQ(*ctlq::parse_time_spec("-1.5h", now), now - 5400 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("-2w", now), now - 14 * 86400 * kSec);
  EXPECT_EQ(*ctlq::parse_time_spec("-500ms", now), now - 500000);
  EXPECT_EQ(*ctlq::parse_time_spec("-1M", now), now - 2629800 * kSec);  // M: months
  EXPECT_EQ(*ctlq::parse_time_spec("-1m", now), now - 60 * kSec);       // m: minutes
}

TEST(TimeSpec, RejectsWhatItCannotRead) {
  const std::int64_t now = utc(2026, 11, 30, 12, 0, 0);
  for (const char *bad : {"", "soon", "2026-02-30", "2026-13-01", "2026-11-30 25:00", "2026-11-30 10:61",
                          "Tue 2026-11-30 06:25:26",  // 2026-11-30 is a Monday
                          "-1 fortnight", "2026-11-30 06:25:26 Mars/Olympus", "@", "-", "1h", "2026/11/30",
                          "-99999999999999999999h", "2026-11-30 06:25.5", "2026-11-30 06:25:26.",
                          "2026-11-30 06:25:26.5x", "+2026-11-30", "11-30 06:25"}) {
    auto r = ctlq::parse_time_spec(bad, now);
    EXPECT_FALSE(r) << "accepted \"" << bad << "\"";
    if (!r) {
      EXPECT_NE(r.error().message.find("cannot parse time"), std::string::npos) << r.error().message;
    }
  }
}

// ---- file names --------------------------------------------------------------

TEST(TimelineName, ParsesSystemdCoredumpNames) {
  auto n = ctdoc::parse_timeline_name(
      "core.crash_demo.1000.feac8a91104c4813a37419e2b9ab4803.12659.1796020111000000.timeline.json");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->comm, "crash_demo");
  EXPECT_EQ(n->uid, 1000u);
  EXPECT_EQ(n->boot_id, "feac8a91104c4813a37419e2b9ab4803");
  EXPECT_EQ(n->pid, 12659u);
  EXPECT_EQ(n->usec, 1796020111000000u);
  // systemd escapes '.', '/' and ' ' in comm as \xNN.
  auto e = ctdoc::parse_timeline_name(
      "core.a\\x2eb\\x20c.0.feac8a91104c4813a37419e2b9ab4803.7.1796020111000000.timeline.json");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->comm, "a.b c");
}

TEST(TimelineName, OtherNamesAreNotParsed) {
  for (const char *bad : {
           "core.crash_demo.0.feac8a91104c4813a37419e2b9ab4803.12659.1796020111000000.zst",
           "core.crash_demo.0.feac8a91104c4813a37419e2b9ab4803.12659.timeline.json",
           "core.crash_demo.0.FEAC8A91104C4813A37419E2B9AB4803.12659.1796020111000000.timeline.json",
           "core.crash_demo.0.feac8a91.12659.1796020111000000.timeline.json",
           "core.crash_demo.x.feac8a91104c4813a37419e2b9ab4803.12659.1796020111000000.timeline.json",
           "core.crash_demo.0.feac8a91104c4813a37419e2b9ab4803.0.1796020111000000.timeline.json",
           "copied.timeline.json",
       })
    EXPECT_FALSE(ctdoc::parse_timeline_name(bad)) << bad;
  EXPECT_TRUE(ctdoc::is_timeline_file_name("copied.timeline.json"));
  EXPECT_FALSE(ctdoc::is_timeline_file_name(".timeline.json"));
  EXPECT_FALSE(ctdoc::is_timeline_file_name("core.x.json"));
}

// ---- matches -----------------------------------------------------------------

TEST(Matches, ClassifiedAsCoredumpctlDoes) {
  auto m = ctlq::MatchSet::parse({"4242", "/usr/bin/../bin/demo", "bin/demo", "demo", "COREDUMP_UID=1000", "0042"},
                                 "/usr");
  ASSERT_TRUE(m) << m.error().message;
  std::map<std::string, std::vector<std::string>> g;
  for (const auto &grp : m->groups()) g[grp.field] = grp.values;
  EXPECT_EQ(g["COREDUMP_PID"], (std::vector<std::string>{"4242", "42"}));
  ASSERT_FALSE(g["COREDUMP_EXE"].empty());
  EXPECT_EQ(g["COREDUMP_EXE"][0], "/usr/bin/demo");  // normalized, relative to cwd
  EXPECT_EQ(g["COREDUMP_COMM"], (std::vector<std::string>{"demo"}));
  EXPECT_EQ(g["COREDUMP_UID"], (std::vector<std::string>{"1000"}));
  EXPECT_FALSE(ctlq::MatchSet::parse({"=x"}, "/"));
  EXPECT_FALSE(ctlq::MatchSet::parse({""}, "/"));
  EXPECT_FALSE(ctlq::MatchSet::parse({"0"}, "/"));
  EXPECT_FALSE(ctlq::MatchSet::parse({"99999999999"}, "/"));
}

TEST(Matches, SameFieldIsOrDifferentFieldsAreAnd) {
  const std::string doc = sample_document().dump();
  auto t = ctlq::parse_timeline(doc, "x.timeline.json", request());
  ASSERT_TRUE(t) << t.error().message;
  auto matches = [&](std::vector<std::string> args) { return ctlq::MatchSet::parse(args, "/")->matches(*t); };
  EXPECT_TRUE(matches({}));
  EXPECT_TRUE(matches({"4242"}));
  EXPECT_TRUE(matches({"1", "4242"}));
  EXPECT_FALSE(matches({"1"}));
  EXPECT_TRUE(matches({"4242", "demo"}));
  EXPECT_FALSE(matches({"4242", "other"}));
  EXPECT_TRUE(matches({"/usr/bin/demo"}));
  EXPECT_FALSE(matches({"/usr/bin/demox"}));
  EXPECT_TRUE(matches({"COREDUMP_SIGNAL_NAME=SIGSEGV"}));
  EXPECT_TRUE(matches({"status=ok"}));
  EXPECT_FALSE(matches({"status=no_ring"}));
  EXPECT_TRUE(matches({"coredump.storage=journal"}));
  EXPECT_TRUE(matches({"schema_version=1"}));
  EXPECT_TRUE(matches({"process.comm=demo"}));
  EXPECT_FALSE(matches({"NO_SUCH_FIELD=1"}));
  // _BOOT_ID is coredump.boot_id when the fields do not carry it.
  EXPECT_TRUE(matches({"_BOOT_ID=feac8a91104c4813a37419e2b9ab4803"}));
  EXPECT_FALSE(matches({"_BOOT_ID=00000000000000000000000000000000"}));
}

// Guards against: matches on the paths that the summary did not keep
// ("rings", "events", "text", null values) saying "no match".
TEST(Matches, EveryLeafOfTheDocumentMatchesByItsDottedPath) {
  const json d = sample_document();
  const std::vector<std::string> leaves = ct::test::ctlq::leaf_matches(d);
  ASSERT_GT(leaves.size(), 40u);
  auto set = ctlq::MatchSet::parse(leaves, "/");
  ASSERT_TRUE(set);
  ctlq::ReadRequest req;
  for (const auto &g : set->groups()) {
    req.fields.push_back(g.field);
    req.paths.push_back(g.field);
  }
  auto t = ctlq::parse_timeline(d.dump(), "x.timeline.json", req);
  ASSERT_TRUE(t) << t.error().message;
  for (const auto &m : leaves) {
    auto one = ctlq::MatchSet::parse({m}, "/");
    ASSERT_TRUE(one);
    EXPECT_TRUE(one->matches(*t)) << m;
    EXPECT_TRUE(one->has_field(*t, 0)) << m;
  }
  EXPECT_TRUE(set->matches(*t));
  // Another value of the same path does not match.
  EXPECT_FALSE(ctlq::MatchSet::parse({"rings.0.state=torn"}, "/")->matches(*t));
  EXPECT_FALSE(ctlq::MatchSet::parse({"reason=ok"}, "/")->matches(*t));
  EXPECT_FALSE(ctlq::MatchSet::parse({"events.3.kind=USER"}, "/")->matches(*t));  // no event 3
  EXPECT_FALSE(ctlq::MatchSet::parse({"process=x"}, "/")->matches(*t));          // an object
}

TEST(Matches, AFieldNoTimelineHasGetsANote) {
  TempDir dir;
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json",
            sample_document().dump());
  Cli leaf = cli({"-D", dir.path(), "list", "rings.0.lanes.0.lane=0", "reason=null", "text=" +
                  sample_document()["text"].get<std::string>()});
  EXPECT_EQ(leaf.rc, ctlq::kExitFound) << leaf.err;
  EXPECT_EQ(leaf.err, "");
  Cli misspelt = cli({"-D", dir.path(), "list", "core.trunacted=true"});
  EXPECT_EQ(misspelt.rc, ctlq::kExitNoMatch);
  EXPECT_NE(misspelt.err.find("no timeline has a field core.trunacted\n"), std::string::npos) << misspelt.err;
  Cli field = cli({"-D", dir.path(), "list", "COREDUMP_PDI=4242"});
  EXPECT_EQ(field.rc, ctlq::kExitNoMatch);
  EXPECT_NE(field.err.find("no timeline has a field COREDUMP_PDI\n"), std::string::npos) << field.err;
  // A field that is there with another value: no note, just no match.
  Cli other = cli({"-D", dir.path(), "list", "status=no_ring"});
  EXPECT_EQ(other.rc, ctlq::kExitNoMatch);
  EXPECT_EQ(other.err.find("no timeline has a field"), std::string::npos) << other.err;
}

TEST(Matches, FileNamePrefilterOnlyRejectsWhatCannotMatch) {
  auto n = ctdoc::parse_timeline_name(
      "core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json");
  ASSERT_TRUE(n);
  auto may = [&](std::vector<std::string> args) { return ctlq::MatchSet::parse(args, "/")->may_match(*n); };
  EXPECT_TRUE(may({}));
  EXPECT_TRUE(may({"4242"}));
  EXPECT_FALSE(may({"4243"}));
  EXPECT_TRUE(may({"demo"}));
  EXPECT_FALSE(may({"other"}));
  EXPECT_FALSE(may({"COREDUMP_UID=0"}));
  EXPECT_TRUE(may({"_BOOT_ID=feac8a91104c4813a37419e2b9ab4803"}));
  EXPECT_TRUE(may({"/usr/bin/other"}));  // not in the name: must open the file
  EXPECT_TRUE(may({"status=ok"}));
  // The prefilter agrees with the document it names.
  json d = sample_document();
  auto t = ctlq::parse_timeline(d.dump(), "x", request());
  for (const auto &args : std::vector<std::vector<std::string>>{{"4242"}, {"4243"}, {"demo"}, {"other"},
                                                                  {"COREDUMP_UID=1000"}, {"COREDUMP_UID=0"}}) {
    auto m = ctlq::MatchSet::parse(args, "/");
    EXPECT_EQ(m->may_match(*n), m->matches(*t)) << args[0];
  }
}

// ---- the document reader -------------------------------------------------------

TEST(Document, SummaryAgreesWithTheFullDocument) {
  const json d = sample_document();
  for (int indent : {-1, 2}) {
    const std::string bytes = d.dump(indent);
    std::vector<json> seen;
    ctlq::ReadRequest r;
    r.want_text = true;
    r.on_event = [&](const json &e, std::size_t i) {
      EXPECT_EQ(i, seen.size());
      seen.push_back(e);
    };
    auto t = ctlq::parse_timeline(bytes, "dir/x.timeline.json", r);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->status(), d["status"]);
    EXPECT_EQ(t->top["process"], d["process"]);
    EXPECT_EQ(t->top["crash"], d["crash"]);
    EXPECT_EQ(t->top["daemon"], d["daemon"]);
    EXPECT_EQ(t->top.count("rings"), 0u) << "rings are skipped, not kept";
    EXPECT_TRUE(t->has_events);
    EXPECT_EQ(t->event_count, d["events"].size());
    EXPECT_EQ(seen, std::vector<json>(d["events"].begin(), d["events"].end()));
    EXPECT_EQ(t->last_event, d["events"][1]) << "the last event that is not the CRASH slot";
    EXPECT_EQ(*t->text, d["text"].get<std::string>());
    EXPECT_EQ(*t->field("COREDUMP_PID"), "4242");
    EXPECT_EQ(t->field("COREDUMP_ENVIRON"), nullptr) << "fields not asked for are skipped";
    EXPECT_EQ(t->time_usec, 1796020111000000u);
    EXPECT_EQ(t->realtime_usec, 1796020111805641u);
    EXPECT_EQ(t->top["coredump"]["journal_cursor"], d["coredump"]["journal_cursor"]);
  }
  ctlq::ReadRequest all;
  all.all_fields = true;
  auto t = ctlq::parse_timeline(d.dump(), "x", all);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->top["coredump"]["fields"], d["coredump"]["fields"]);
  ctlq::ReadRequest some;
  some.fields = {"COREDUMP_CMDLINE"};
  t = ctlq::parse_timeline(d.dump(), "x", some);
  ASSERT_TRUE(t);
  EXPECT_EQ(*t->field("COREDUMP_CMDLINE"), "demo --x");
}

TEST(Document, StatusesWithoutDecodingHaveNoEvents) {
  json d;
  d["status"] = "core_missing";
  d["reason"] = "the core was removed before it could be read";
  d["coredump"] = sample_document()["coredump"];
  d["daemon"] = sample_document()["daemon"];
  auto t = ctlq::parse_timeline(d.dump(), "x", request());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->has_events);
  EXPECT_EQ(t->event_count, 0u);
  EXPECT_TRUE(t->last_event.is_null());
  EXPECT_EQ(t->status(), "core_missing");
}

TEST(Document, MalformedDocumentsAreReportedWithWhatIsWrong) {
  const json good = sample_document();
  struct Case {
    std::string bytes;
    const char *says;
  };
  auto with = [&](const char *key, json v) {
    json d = good;
    d[key] = std::move(v);
    return d.dump();
  };
  auto without = [&](const char *key) {
    json d = good;
    d.erase(key);
    return d.dump();
  };
  json no_fields = good;
  no_fields["coredump"].erase("fields");
  std::vector<Case> cases = {
      {"", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {"\"text\"", "not a JSON object"},
      {"{\"status\":\"ok\",", "expected string literal"},
      {with("events", "many"), "\"events\" is not an array"},
      {with("events", json::array({1, 2})), "event 0 is not an object"},
      {with("status", 3), "no \"status\" string"},
      {without("status"), "no \"status\" string"},
      {without("coredump"), "no \"coredump\" object"},
      {with("coredump", "x"), "\"coredump\" is not an object"},
      {no_fields.dump(), "coredump.fields"},
      {good.dump() + "{}", "expected end of input"},
      {std::string(100000, '[') + std::string(100000, ']'), "not a JSON object"},
      {"{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}", "nested deeper than 64"},
      {"{\"status\":\"o\x01k\"}", "control character"},
      {"{\"status\":\"ok", "missing closing quote"},
      {"{\"status\":tru}", "invalid literal"},
      {"{\"status\":\"ok\" \"x\":1}", "expected '}'"},
      {"{\"status\":\"\\q\"}", "forbidden character after backslash"},
      {"{\"status\":01}", "unexpected number literal"},
      {std::string("{\"st\0tus\":1}", 12), "control character"},
  };
  for (const auto &c : cases) {
    auto t = ctlq::parse_timeline(c.bytes, "dir/bad.timeline.json", request());
    ASSERT_FALSE(t) << "accepted: " << c.bytes.substr(0, 80);
    EXPECT_EQ(t.error().code, ctlq::Errc::kBadData);
    EXPECT_NE(t.error().message.find(c.says), std::string::npos)
        << "message: " << t.error().message << "\nexpected to contain: " << c.says;
    EXPECT_EQ(t.error().message.rfind("dir/bad.timeline.json: malformed: ", 0), 0u) << t.error().message;
  }
}

TEST(Document, EventsAreBoundedAndTheLastEventIsFoundFromTheEnd) {
  json d = sample_document();
  const json user = d["events"][0], crash = d["events"][2];
  // Many events: the count is exact, the last non-CRASH event is found.
  d["events"] = json::array();
  for (int i = 0; i < 5000; ++i) {
    json e = user;
    e["seq"] = i + 1;
    d["events"].push_back(e);
  }
  for (int i = 0; i < 3; ++i) d["events"].push_back(crash);
  auto t = ctlq::parse_timeline(d.dump(), "x", request());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->event_count, 5003u);
  EXPECT_EQ(t->last_event["seq"], 5000);
  // Only CRASH events among the last 64: no last event (documented).
  for (int i = 0; i < 64; ++i) d["events"].push_back(crash);
  t = ctlq::parse_timeline(d.dump(), "x", request());
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->last_event.is_null());
  // More than kMaxEvents (tiny ones): malformed, not a memory blow-up.
  std::string many = "{\"status\":\"ok\",\"events\":[";
  for (std::size_t i = 0; i <= ctlq::kMaxEvents; ++i) many += i ? ",{}" : "{}";
  many += "],\"coredump\":{\"fields\":{}}}";
  auto m = ctlq::parse_timeline(many, "x", request());
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("more than 1048576 events"), std::string::npos) << m.error().message;
}

TEST(Document, EveryTruncationIsMalformed) {
  // A document cut short anywhere (a write interrupted, a copy cut off) is
  // reported, never half-read.
  const std::string bytes = sample_document().dump(2);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    // Trailing whitespace after the closing brace is not a truncation.
    if (bytes.find_first_not_of(" \n", n) == std::string::npos) break;
    auto t = ctlq::parse_timeline(std::string_view(bytes).substr(0, n), "x", request());
    EXPECT_FALSE(t) << "a prefix of " << n << " bytes was accepted";
  }
}

TEST(Document, MutatedDocumentsNeverCrashAndAreReadOnlyWhenNlohmannAcceptsThem) {
  const std::string base = sample_document().dump();
  std::mt19937 rng(20261130);
  const std::string alphabet = "{}[]\",:\\ \n0123456789-.eEtrufalsn\x01\xff";
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string m = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % m.size();
      switch (rng() % 3) {
        case 0: m[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: m.erase(at, 1 + rng() % 8); break;
        default: m.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (m.empty()) m = "{";
    }
    ctlq::ReadRequest r;
    r.on_event = [](const json &e, std::size_t) { ASSERT_TRUE(e.is_object()); };
    auto t = ctlq::parse_timeline(m, "x", r);
    if (t) {
      ++accepted;
      EXPECT_TRUE(json::accept(m)) << "accepted invalid JSON: " << m;
    } else {
      ++rejected;
      EXPECT_EQ(t.error().code, ctlq::Errc::kBadData);
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

TEST(Document, PartsThatAreNotKeptAreStillValidated) {
  // "rings" is parsed and dropped, never kept: an invalid value there still
  // makes the document malformed, for list as for show.
  std::string bytes = sample_document().dump();
  const std::string from = "\"state\":\"valid\"";
  auto at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, from.size(), "\"state\":01");
  auto t = ctlq::parse_timeline(bytes, "x", request());
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("JSON syntax error"), std::string::npos) << t.error().message;
}

TEST(Document, FilesThatAreNotDocumentsAreRefusedBeforeReading) {
  TempDir dir;
  const std::string good = sample_document().dump();
  dir.write("good.timeline.json", good);
  int dfd = open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dfd, 0);

  auto ok = ctlq::read_timeline(dfd, dir.path(), "good.timeline.json", request());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->path, dir.path() + "/good.timeline.json");

  // 1 GiB, sparse: refused by its size, never read.
  {
    int fd = open((dir.path() + "/huge.timeline.json").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 1ll << 30), 0);
    close(fd);
  }
  auto huge = ctlq::read_timeline(dfd, dir.path(), "huge.timeline.json", request());
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().code, ctlq::Errc::kTooLarge);
  EXPECT_NE(huge.error().message.find("too large"), std::string::npos);

  ctlq::ReadRequest small;
  small.max_bytes = good.size() - 1;
  auto capped = ctlq::read_timeline(dfd, dir.path(), "good.timeline.json", small);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.error().code, ctlq::Errc::kTooLarge);

  ASSERT_EQ(symlink("good.timeline.json", (dir.path() + "/link.timeline.json").c_str()), 0);
  auto link = ctlq::read_timeline(dfd, dir.path(), "link.timeline.json", request());
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().code, ctlq::Errc::kNotRegularFile);
  EXPECT_NE(link.error().message.find("symbolic link"), std::string::npos);

  ASSERT_EQ(mkfifo((dir.path() + "/fifo.timeline.json").c_str(), 0644), 0);
  auto fifo = ctlq::read_timeline(dfd, dir.path(), "fifo.timeline.json", request());  // must not block
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, ctlq::Errc::kNotRegularFile);

  ASSERT_EQ(mkdir((dir.path() + "/d.timeline.json").c_str(), 0755), 0);
  auto d = ctlq::read_timeline(dfd, dir.path(), "d.timeline.json", request());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ctlq::Errc::kNotRegularFile);

  auto gone = ctlq::read_timeline(dfd, dir.path(), "gone.timeline.json", request());
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ctlq::Errc::kNotFound);
  close(dfd);
}

// ---- events, text ----------------------------------------------------------------

TEST(EventFilter, EachConditionMustHold) {
  const json d = sample_document();
  const json &req = d["events"][0], &die = d["events"][1];
  ctlq::EventFilter f;
  EXPECT_TRUE(f.matches(req));
  f.name = "BEFORE_DIE";
  EXPECT_FALSE(f.matches(req));
  EXPECT_TRUE(f.matches(die));
  f.arg = 1001;
  EXPECT_TRUE(f.matches(die));
  f.arg = 7;  // the second argument counts too
  EXPECT_TRUE(f.matches(die));
  f.arg = 41;
  EXPECT_FALSE(f.matches(die));
  f = {};
  f.id = 4099;
  EXPECT_TRUE(f.matches(die));
  f.tid = 4242;
  EXPECT_FALSE(f.matches(die));
  f = {};
  f.kind = "CRASH";
  EXPECT_TRUE(f.matches(d["events"][2]));
  EXPECT_FALSE(f.matches(json("not an object")));
}

TEST(Text, UntrustedBytesNeverReachTheTerminalRaw) {
  EXPECT_EQ(ctlq::printable("ok /usr/bin/x"), "ok /usr/bin/x");
  EXPECT_EQ(ctlq::printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(ctlq::printable("a\nb\tc"), "a\\x0ab\\x09c");
  EXPECT_EQ(ctlq::printable("a\nb\tc\x7f", true), "a\nb\tc\\x7f");
  EXPECT_EQ(ctlq::printable("caf\xc3\xa9"), "caf\\xc3\\xa9");
  const json d = sample_document();
  EXPECT_EQ(ctlq::event_args_text(d["events"][0]), "arg=41");
  EXPECT_EQ(ctlq::event_args_text(d["events"][1]), "arg=1001 arg1=7");
  /* Argument names from the document (the ring's name table or a tlmap),
   * untrusted like every string in it. */
  json named = d["events"][1];
  named["arg_names"] = {"request_id", "by\x1btes"};
  EXPECT_EQ(ctlq::event_args_text(named), "request_id=1001 by\\x1btes=7");
  named["arg_names"] = {"request_id", nullptr};
  EXPECT_EQ(ctlq::event_args_text(named), "request_id=1001 arg1=7");
  named["kind"] = "SPAN_BEGIN";
  EXPECT_EQ(ctlq::event_args_text(named), "begin request_id=1001");
  named["kind"] = "SPAN_END";
  EXPECT_EQ(ctlq::event_args_text(named), "end");
  EXPECT_EQ(ctlq::location_text(d["events"][0]), "-");
  json e = d["events"][0];
  e["location"] = {{"address", "0x55"}, {"module", "/usr/bin/demo"}, {"function", "parse\x1b"},
                   {"offset", "0x13"}, {"source", {{"file", "/src/demo.c"}, {"line", 62}}}};
  EXPECT_EQ(ctlq::location_text(e), "parse\\x1b+0x13 (demo.c:62) in demo");
  e["location"] = {{"address", "0x55"}, {"module", nullptr}, {"function", nullptr}};
  EXPECT_EQ(ctlq::location_text(e), "0x55 (in no file mapping)");
  e["args"] = "garbage";
  EXPECT_EQ(ctlq::event_args_text(e), "arg=?");
}

// Guards against: ctl-query showing an OPEN without its path, or escaping
// it a second way (the reader's inline_text is shown as it is stored).
TEST(Text, InlineTextIsShownAsTheReaderEscapedIt) {
  json e = sample_document()["events"][0];
  e["kind"] = "OPEN";
  e["args"] = {3, 0};
  e["inline_bytes"] = "2f746d702f61220a";
  e["inline_text"] = R"(/tmp/a\"\n)";
  e["inline_cut"] = false;
  EXPECT_EQ(ctlq::event_args_text(e), R"(result=3 path="/tmp/a\"\n")");
  e["inline_cut"] = true;
  EXPECT_EQ(ctlq::event_args_text(e), R"(result=3 path="/tmp/a\"\n"...)");
  e["kind"] = "CONNECT";
  e["inline_text"] = "unix:/run/x\x1b";
  e["inline_cut"] = false;
  EXPECT_EQ(ctlq::event_args_text(e), R"(result=3 addr="unix:/run/x\x1b")");
  e["kind"] = "USER_PTR";
  e["args"] = {0x1000, 8};
  e["inline_text"] = "hello";
  EXPECT_EQ(ctlq::event_args_text(e), R"(ptr=0x1000 len=8 text="hello")");
  /* Bytes that are not text have no inline_text: the summary leaves them out. */
  e.erase("inline_text");
  e.erase("inline_cut");
  EXPECT_EQ(ctlq::event_args_text(e), "ptr=0x1000 len=8");
  e["kind"] = "OPEN";
  EXPECT_EQ(ctlq::event_args_text(e), "result=4096");
}

// Guards against: ctl-query's events table showing an I/O event's fd as a
// bare number and an error as -11 when the document (schema_version 6) says
// what made the fd and names the errno, as core-timeline-read shows them.
TEST(Text, IoEventsShowTheFdsOriginAndTheErrnoName) {
  json e = sample_document()["events"][0];
  e["kind"] = "RECV";
  e["id"] = 11;
  e["args"] = {static_cast<std::uint64_t>(-11), 512};
  e["io"] = {{"fd", 11}, {"result", -11}, {"errno", 11}, {"errno_name", "EAGAIN"},
             {"origin", {{"state", "found"}, {"event", nullptr}, {"says", "accepted from 127.0.0.1:53422 at -2.100000s"}}}};
  EXPECT_EQ(ctlq::event_args_text(e), "fd=11 (accepted from 127.0.0.1:53422 at -2.100000s) result=EAGAIN count=512");
  e["kind"] = "PREAD";
  e["args"] = {4096, 4096};
  e["io"]["result"] = 4096;
  e["io"]["errno"] = nullptr;
  e["io"]["errno_name"] = nullptr;
  e["io"]["origin"]["says"] = "/data/app.db";
  e["io"]["offset"] = 8192;
  EXPECT_EQ(ctlq::event_args_text(e), "fd=11 (/data/app.db) result=4096 count=4096 offset=8192");
  e["kind"] = "OPEN";
  e["args"] = {static_cast<std::uint64_t>(-2), 0};
  e["io"] = {{"fd", nullptr}, {"result", -2}, {"errno", 2}, {"errno_name", "ENOENT"}, {"origin", nullptr},
             {"flags", "O_RDONLY|O_CLOEXEC"}, {"mode", 0}};
  e["inline_text"] = "/etc/missing";
  e["inline_cut"] = false;
  EXPECT_EQ(ctlq::event_args_text(e), R"(result=ENOENT flags=O_RDONLY|O_CLOEXEC path="/etc/missing")");
}

// ---- the command line ----------------------------------------------------------------

TEST(CommandLine, UsageErrorsExitTwo) {
  TempDir dir;
  for (const auto &args : std::vector<std::vector<std::string>>{
           {"bogus"},
           {"-D", dir.path(), "list", "--since", "soon"},
           {"-D", dir.path(), "--until", "2026-02-30"},
           {"-D", dir.path(), "--since", "today", "--until", "yesterday"},
           {"-D", dir.path(), "-n", "0"},
           {"-D", dir.path(), "-n", "x"},
           {"-D", dir.path(), "events", "--arg", "x"},
           {"-D", dir.path(), "events", "--id", "-1"},
           {"-D", dir.path(), "list", "=x"},
           {"-D", dir.path(), "--max-size", "0"},
           {"-D", dir.path(), "--json=yes", "list"},
           {"--no-such-option"},
       }) {
    Cli r = cli(args);
    EXPECT_EQ(r.rc, ctlq::kExitUsage) << args.back() << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_EQ(cli({"--help"}).rc, 0);
  EXPECT_NE(cli({"--help"}).out.find("list"), std::string::npos);
  EXPECT_EQ(cli({"--version"}).rc, 0);
}

// --json=MODE as coredumpctl takes it: short, pretty, off.
TEST(CommandLine, JsonModesAsCoredumpctl) {
  TempDir dir;
  json d = sample_document();
  const std::string stored = d.dump(2) + "\n";
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json", stored);
  Cli plain = cli({"-D", dir.path(), "--json", "list"});
  Cli short_ = cli({"-D", dir.path(), "--json=short", "list"});
  ASSERT_EQ(short_.rc, ctlq::kExitFound) << short_.err;
  EXPECT_EQ(short_.out, plain.out) << "--json is --json=short for list";
  ASSERT_EQ(lines_of(short_.out).size(), 1u) << short_.out;
  const json one = json::parse(short_.out);
  Cli pretty = cli({"-D", dir.path(), "--json=pretty", "list"});
  ASSERT_EQ(pretty.rc, ctlq::kExitFound) << pretty.err;
  EXPECT_GT(lines_of(pretty.out).size(), 10u) << pretty.out;
  EXPECT_EQ(json::parse(pretty.out), one);
  Cli off = cli({"-D", dir.path(), "--json=off", "list"});
  EXPECT_EQ(off.out.rfind("TIME", 0), 0u) << off.out;
  Cli later = cli({"-D", dir.path(), "--json=pretty", "--json=off", "list"});
  EXPECT_EQ(later.out, off.out) << "the last --json wins";
  // show: the stored document as is, or on one line.
  Cli show_pretty = cli({"-D", dir.path(), "--json=pretty", "show"});
  EXPECT_EQ(show_pretty.out, stored);
  EXPECT_EQ(cli({"-D", dir.path(), "--json", "show"}).out, stored);
  Cli show_short = cli({"-D", dir.path(), "--json=short", "show"});
  ASSERT_EQ(lines_of(show_short.out).size(), 1u) << show_short.out;
  EXPECT_EQ(json::parse(show_short.out), d);
}

TEST(CommandLine, ParseU64TakesDecimalAndHex) {
  EXPECT_EQ(*ctlq::parse_u64("1001"), 1001u);
  EXPECT_EQ(*ctlq::parse_u64("0x3e9"), 1001u);
  EXPECT_EQ(*ctlq::parse_u64("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ctlq::parse_u64("18446744073709551616"));
  EXPECT_FALSE(ctlq::parse_u64("0x"));
  EXPECT_FALSE(ctlq::parse_u64("-1"));
  EXPECT_FALSE(ctlq::parse_u64("12a"));
}

TEST(CommandLine, ExitCodesTellNoMatchFromUnreadable) {
  TempDir dir;
  // Nothing there: 1.
  Cli empty = cli({"-D", dir.path(), "list"});
  EXPECT_EQ(empty.rc, ctlq::kExitNoMatch);
  EXPECT_NE(empty.err.find("no timelines found"), std::string::npos) << empty.err;
  // A missing -D directory: 4.
  EXPECT_EQ(cli({"-D", dir.path() + "/missing"}).rc, ctlq::kExitNoDirectory);

  json d = sample_document();
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json", d.dump());
  Cli found = cli({"-D", dir.path(), "list", "4242"});
  EXPECT_EQ(found.rc, ctlq::kExitFound) << found.err;
  Cli none = cli({"-D", dir.path(), "list", "4243"});
  EXPECT_EQ(none.rc, ctlq::kExitNoMatch) << none.err;
  EXPECT_NE(none.err.find("no matching timelines"), std::string::npos);

  // A malformed document whose name says it may be pid 5: asking for pid 5
  // is "cannot tell", 3, never "no match".
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.5.1796020112000000.timeline.json", "{\"status\":");
  Cli unreadable = cli({"-D", dir.path(), "list", "5"});
  EXPECT_EQ(unreadable.rc, ctlq::kExitIncomplete);
  EXPECT_NE(unreadable.err.find(".5.1796020112000000.timeline.json: malformed"), std::string::npos)
      << unreadable.err;
  EXPECT_NE(unreadable.err.find("1 timeline or directory could not be read (1 malformed)"), std::string::npos)
      << unreadable.err;
  // Its name rules it out for pid 4242: not reported, found, 0.
  Cli other = cli({"-D", dir.path(), "list", "4242"});
  EXPECT_EQ(other.rc, ctlq::kExitFound);
  EXPECT_EQ(other.err, "");
  // Listing everything: the good one, the bad one reported, 0.
  Cli all = cli({"-D", dir.path(), "list"});
  EXPECT_EQ(all.rc, ctlq::kExitFound);
  EXPECT_EQ(lines_of(all.out).size(), 2u) << all.out;
  EXPECT_NE(all.err.find("malformed"), std::string::npos);
  // -q drops the per-file line, keeps the count.
  Cli quiet = cli({"-D", dir.path(), "-q", "list"});
  EXPECT_EQ(quiet.err.find(".timeline.json"), std::string::npos) << quiet.err;
  EXPECT_NE(quiet.err.find("could not be read"), std::string::npos) << quiet.err;
}

// Guards against: `events --name X` finding nothing in a timeline whose
// older events of some source were lost, and saying only "no match": the
// sources that lost events are named with the reader's own sentence.
TEST(Events, ASearchNamesTheSourcesThatLostEvents) {
  TempDir dir;
  json d = sample_document();
  d["windows"] = json::array(
      {json{{"source", "user"}, {"events", 2}, {"overwritten", 0}, {"dropped", 0},
            {"says", "user marks and spans: complete since tl_init, 58.204s before the reference; 2 kept"}},
       json{{"source", "alloc"}, {"events", 32768}, {"overwritten", 5189}, {"dropped", 0},
            {"says", "allocations: complete for the last 2.601ms; not known before -2.601ms (5189 overwritten)"}}});
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json", d.dump());
  Cli none = cli({"-D", dir.path(), "events", "--name", "RELOAD"});
  EXPECT_EQ(none.rc, ctlq::kExitNoMatch) << none.err;
  EXPECT_NE(none.err.find("pid 4242 (/usr/bin/demo): allocations: complete for the last 2.601ms; not known before "
                          "-2.601ms"),
            std::string::npos)
      << none.err;
  EXPECT_EQ(none.err.find("user marks and spans"), std::string::npos) << "a complete source is not a loss: " << none.err;
  Cli found = cli({"-D", dir.path(), "events", "--name", "REQ_PARSE"});
  EXPECT_EQ(found.rc, ctlq::kExitFound) << found.err;
  EXPECT_NE(found.err.find("allocations: complete for the last"), std::string::npos) << found.err;
  Cli quiet = cli({"-D", dir.path(), "-q", "events", "--name", "REQ_PARSE"});
  EXPECT_EQ(quiet.err, "");
}

// ---- -n, --all, last event, show's view ---------------------------------------------

// Guards against: `-n -3` taken as a huge count (strtoull wraps it) and
// everything printed; coredumpctl refuses a negative count.  One sentence
// about the value, the usage exit code, nothing printed.
TEST(CommandLine, ACountThatIsNotOneOrMoreIsRefused) {
  TempDir dir;
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json",
            sample_document().dump());
  for (const auto &args : std::vector<std::vector<std::string>>{{"-D", dir.path(), "-n", "-3", "list"},
                                                                 {"-D", dir.path(), "-n-3", "list"},
                                                                 {"-D", dir.path(), "list", "-n", "-3"},
                                                                 {"-D", dir.path(), "events", "-n", "-1"},
                                                                 {"-D", dir.path(), "show", "-n", "-3"},
                                                                 {"-D", dir.path(), "-n", "0", "list"},
                                                                 {"-D", dir.path(), "-n", "1e3", "list"}}) {
    Cli r = cli(args);
    std::string joined;
    for (const auto &a : args) joined += a + " ";
    EXPECT_EQ(r.rc, ctlq::kExitUsage) << joined << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << joined;
    const auto first = lines_of(r.err).empty() ? std::string() : lines_of(r.err)[0];
    EXPECT_TRUE(first.starts_with("-n: \"")) << joined << ": " << r.err;
    EXPECT_NE(first.find("is not a count: N is a whole number, 1 or more"), std::string::npos) << r.err;
    EXPECT_EQ(first.find("range"), std::string::npos) << "a sentence about the value, not a range: " << r.err;
  }
  Cli one = cli({"-D", dir.path(), "-n", "1", "list"});
  EXPECT_EQ(one.rc, ctlq::kExitFound) << one.err;
}

namespace {

// sample_document() with a LANE_CLAIM as the last event before the CRASH
// (a thread's first slot in a lane, written by libtimeline itself).
json document_ending_in_bookkeeping() {
  json d = sample_document();
  json claim = {{"seq", 1}, {"tid", 4243}, {"kind", "LANE_CLAIM"}, {"name", "LANE_CLAIM"}, {"id", 0},
                {"args", {3, 0}}, {"location", nullptr}};
  d["events"].insert(d["events"].begin() + 2, claim);
  return d;
}

}  // namespace

// Guards against: the lane bookkeeping (LANE_CLAIM, STACK) being the "last
// event" of a crash, in the document reader and in the timeline entry's
// CORE_TIMELINE_LAST_EVENT; --all (ReadRequest::bookkeeping) keeps it.
TEST(Document, TheLastEventIsNotBookkeepingUnlessAsked) {
  const json d = document_ending_in_bookkeeping();
  EXPECT_TRUE(ctdoc::is_bookkeeping_event(d["events"][2]));
  EXPECT_FALSE(ctdoc::is_bookkeeping_event(d["events"][1]));
  EXPECT_FALSE(ctdoc::is_bookkeeping_event(d["events"][3])) << "the CRASH is the crash, not bookkeeping";
  EXPECT_TRUE(ctdoc::is_bookkeeping_event(json{{"kind", "STACK"}}));
  EXPECT_FALSE(ctdoc::is_bookkeeping_event(json{{"name", "LANE_CLAIM"}})) << "a user's name is not a kind";
  EXPECT_TRUE(ctdoc::is_bookkeeping_kind("LANE_CLAIM"));
  EXPECT_TRUE(ctdoc::is_bookkeeping_kind("STACK"));
  EXPECT_FALSE(ctdoc::is_bookkeeping_kind("USER"));
  EXPECT_FALSE(ctdoc::is_bookkeeping_kind("STACKS")) << "a kind is the whole word";
  auto t = ctlq::parse_timeline(d.dump(), "x", request());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->last_event, d["events"][1]);
  ctlq::ReadRequest all;
  all.bookkeeping = true;
  t = ctlq::parse_timeline(d.dump(), "x", all);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->last_event, d["events"][2]);

  const std::string bytes = d.dump();
  ctdoc::journal::EntryInput in;
  in.document = &d;
  in.document_bytes = bytes;
  in.document_max = 0;
  std::string last;
  for (const auto &[k, v] : ctdoc::journal::entry_fields(in))
    if (k == ctdoc::journal::kLastEvent) last = v;
  EXPECT_EQ(last, "BEFORE_DIE") << "CORE_TIMELINE_LAST_EVENT passes over the LANE_CLAIM";
}

// Guards against: LAST EVENT and "last_event" taking another shape when
// the row was read from the document (name and arguments, the whole event)
// than from a journal entry's summary (the name): one shape, {"name": N}.
// And, with the above: a LANE_CLAIM last is not what list shows, unless
// --all.
TEST(List, TheLastEventHasOneShapeAndIsNotBookkeeping) {
  TempDir dir;
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json",
            document_ending_in_bookkeeping().dump());
  for (const std::vector<std::string> &match : std::vector<std::vector<std::string>>{
           {}, {"4242"}, {"status=ok"}, {"COREDUMP_CMDLINE=demo --x"}, {"process.comm=demo"}}) {
    std::vector<std::string> args{"-D", dir.path(), "--json", "list"};
    args.insert(args.end(), match.begin(), match.end());
    Cli js = cli(args);
    ASSERT_EQ(js.rc, ctlq::kExitFound) << js.err;
    EXPECT_EQ(json::parse(js.out)["last_event"], (json{{"name", "BEFORE_DIE"}})) << js.out;
    args.erase(args.begin() + 2);
    Cli text = cli(args);
    ASSERT_EQ(lines_of(text.out).size(), 2u) << text.out;
    EXPECT_TRUE(lines_of(text.out)[1].ends_with(" BEFORE_DIE")) << text.out;
  }
  Cli all = cli({"-D", dir.path(), "--all", "--json", "list"});
  EXPECT_EQ(json::parse(all.out)["last_event"], (json{{"name", "LANE_CLAIM"}})) << all.out;
}

// Guards against: events listing the ring's bookkeeping among the program's
// events, or hiding it without a word; and its TIME being the crash's.
TEST(Events, BookkeepingIsLeftOutAndSaidUnlessAllAndEachEventHasItsOwnTime) {
  TempDir dir;
  json d = document_ending_in_bookkeeping();
  d["events"][0]["time_ns"] = 1796020110123456789ll;  // a second and more before the crash
  d["events"][1]["time_ns"] = nullptr;                // not placed in time
  dir.write("core.demo.1000.feac8a91104c4813a37419e2b9ab4803.4242.1796020111000000.timeline.json", d.dump());
  Cli ev = cli({"-D", dir.path(), "events"});
  ASSERT_EQ(ev.rc, ctlq::kExitFound) << ev.err;
  auto l = lines_of(ev.out);
  ASSERT_EQ(l.size(), 4u) << ev.out;  // header, REQ_PARSE, BEFORE_DIE, CRASH
  EXPECT_EQ(ev.out.find("LANE_CLAIM"), std::string::npos) << ev.out;
  EXPECT_NE(ev.err.find("1 bookkeeping event (LANE_CLAIM, STACK: the ring's own) that match was left out; --all "
                        "shows them"),
            std::string::npos)
      << ev.err;
  EXPECT_TRUE(l[1].starts_with("Mon 2026-11-30 06:28:30.123456 UTC ")) << "the event's own time: " << l[1];
  EXPECT_TRUE(l[2].starts_with("? ")) << "no time of its own: " << l[2];
  Cli all = cli({"-D", dir.path(), "--all", "events"});
  EXPECT_EQ(lines_of(all.out).size(), 5u) << all.out;
  EXPECT_EQ(all.err, "");
  Cli asked = cli({"-D", dir.path(), "events", "--kind", "LANE_CLAIM"});
  EXPECT_EQ(lines_of(asked.out).size(), 2u) << "--kind names it: " << asked.out << asked.err;
  // What events prints is a time --since takes as it is.
  EXPECT_EQ(*ctlq::parse_time_spec("Mon 2026-11-30 06:28:30.123456 UTC", 0),
            utc(2026, 11, 30, 6, 28, 30) + 123456);
}

namespace {

// A stored text laid out as the reader writes it, for the events below.
ctlq::ViewInput view_input(const std::string &text) {
  ctlq::ViewInput in;
  in.text = text;
  const auto ev = [](const char *kind, const char *name, std::uint64_t tid, std::optional<std::int64_t> time,
                     std::size_t stack) {
    ctlq::ViewEvent e;
    e.kind = kind;
    e.name = name;
    e.tid = tid;
    e.time_ns = time;
    e.stack_lines = stack;
    e.bookkeeping = std::string(kind) == "LANE_CLAIM";
    return e;
  };
  in.events = {ev("LANE_CLAIM", "LANE_CLAIM", 10, 1796020110000000000ll, 0),
               ev("USER", "A", 10, 1796020110000001000ll, 0),
               ev("LANE_CLAIM", "LANE_CLAIM", 11, 1796020110000002000ll, 0),
               ev("USER", "B", 11, std::nullopt, 0),
               ev("CRASH", "CRASH", 10, 1796020110000003000ll, 2)};
  in.threads = {{10, "main"}, {11, ""}};
  in.crash = true;
  in.warnings = 1;
  return in;
}

const std::string kStoredText =
    "core-timeline: core-only, pid 10 (demo), 5 events\n"
    "  time: ages relative to the CRASH event\n"
    "    -0.003ms tid 10      main            LANE_CLAIM       lane=0 prev_owner=0\n"
    "    -0.002ms tid 10      main            A                arg=1\n"
    "    -0.001ms tid 11      -               LANE_CLAIM       lane=1 prev_owner=0\n"
    "           ? tid 11      -               B                arg=2\n"
    "     0.000ms tid 10      main            CRASH            sig=SIGSEGV  at die+0x0\n"
    "               from main+0x1\n"
    "               (stack: 1 frame, complete)\n"
    "crash: SIGSEGV in tid 10\n"
    "warning: something\n";

}  // namespace

// Guards against: the cause section's lines (docs/cause.md) between the
// "crash:" line and the warnings taken for events, which misaligns the view.
TEST(ShowView, TheCauseSectionStaysWithTheCrashLine) {
  std::string text = kStoredText;
  const std::string cause =
      "cause: use after free: rdi=0x10 is 0 bytes into a 24-byte block\n"
      "  relies on: allocations are complete since tl_init (1.000ms)\n"
      "cause: abort message: boom\n"
      "cause cannot be told: something\n";
  text.insert(text.find("warning: "), cause);
  ctlq::ViewInput in = view_input(text);
  EXPECT_FALSE(ctlq::view_text(in, {})) << "without the cause's lines counted, the view must not line up";
  const json c = json::parse(R"({"causes": [{"kind": "use_after_free", "window": "allocations are complete"},
                                            {"kind": "abort_message", "window": null}],
                                 "cannot_tell": ["something"]})");
  in.take_cause(&c);
  const auto shown = ctlq::view_text(in, {});
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_NE(shown->find("crash: SIGSEGV in tid 10\n" + cause + "warning: something\n"), std::string::npos) << *shown;
  EXPECT_EQ(shown->find("LANE_CLAIM       lane="), std::string::npos) << *shown;
}

// Guards against: show printing the bookkeeping without an option, hiding
// it without a word, and having none of the reader's view options.
TEST(ShowView, BookkeepingLeftOutAndSaidAndTheReadersViewOptions) {
  const ctlq::ViewInput in = view_input(kStoredText);
  ctlq::ViewOptions all;
  all.all = true;
  EXPECT_EQ(*ctlq::view_text(in, all), kStoredText) << "--all: the text as stored";
  const auto shown = ctlq::view_text(in, {});
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_EQ(*shown,
            "core-timeline: core-only, pid 10 (demo), 5 events\n"
            "  time: ages relative to the CRASH event\n"
            "shown: 3 of 5 events: 2 LANE_CLAIM left out, the ring's own bookkeeping (--all shows them)\n"
            "    -0.002ms tid 10      main            A                arg=1\n"
            "           ? tid 11      -               B                arg=2\n"
            "     0.000ms tid 10      main            CRASH            sig=SIGSEGV  at die+0x0\n"
            "               from main+0x1\n"
            "               (stack: 1 frame, complete)\n"
            "crash: SIGSEGV in tid 10\n"
            "warning: something\n");
  ctlq::ViewOptions o;
  o.tid = 10;
  o.last = 1;
  EXPECT_EQ(*ctlq::view_text(in, o),
            "core-timeline: core-only, pid 10 (demo), 5 events\n"
            "  time: ages relative to the CRASH event\n"
            "shown: 1 of 5 events: tid 10 only; the last 1; 2 LANE_CLAIM left out, the ring's own bookkeeping "
            "(--all shows them)\n"
            "     0.000ms tid 10      main            CRASH            sig=SIGSEGV  at die+0x0\n"
            "               from main+0x1\n"
            "               (stack: 1 frame, complete)\n"
            "crash: SIGSEGV in tid 10\n"
            "warning: something\n");
  ctlq::ViewOptions threads = all;
  threads.by_thread = true;
  threads.wall_clock = true;
  const std::string w0 = core_timeline::reader::format_wall_clock(1796020110000001000ll);
  const std::string w2 = core_timeline::reader::format_wall_clock(1796020110000003000ll);
  ASSERT_LE(w0.size(), 22u) << w0;  // "Nov 30 06:28:30.000001", in a column 22 wide
  const auto by = ctlq::view_text(in, threads);
  ASSERT_TRUE(by) << by.error().message;
  const auto l = lines_of(*by);
  ASSERT_EQ(l.size(), 13u) << *by;
  EXPECT_EQ(l[2], "thread 10 (main): 3 events");
  EXPECT_EQ(l[4], std::string(22 - w0.size(), ' ') + w0 + " tid 10      main            A                arg=1");
  EXPECT_EQ(l[5], std::string(22 - w2.size(), ' ') + w2 + " tid 10      main            CRASH            sig=SIGSEGV  at die+0x0");
  EXPECT_EQ(l[6], std::string(23, ' ') + "  from main+0x1") << "the stack under the wider column";
  EXPECT_EQ(l[8], "thread 11 (-): 2 events");
  EXPECT_EQ(l[10], "                     ? tid 11      -               B                arg=2");
  EXPECT_EQ(l[11], "crash: SIGSEGV in tid 10");
}

// A text that does not line up with the events (cut, edited) is an error
// the caller reports, never a wrong view.
TEST(ShowView, ATextThatDoesNotLineUpIsAnError) {
  std::string shifted = kStoredText;
  shifted.replace(shifted.find("tid 11      -               B"), 6, "tid 12");
  auto r = ctlq::view_text(view_input(shifted), {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not line up with the document's events: line 6 is not event 3 (tid 11, B)"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(ctlq::view_text(view_input("core-timeline: cut\n"), {}));
}
