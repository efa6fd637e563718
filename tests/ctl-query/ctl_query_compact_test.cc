// SPDX-License-Identifier: MIT
//
// ctl_query_compact_test - the compact document (schema_version 7,
// docs/timeline-json.md "The compact document") on the committed real core
// of `crash_demo --path=a` (fixtures/cores), and the documents today's
// tools still read: a real schema-6 timeline file and journal entry stored
// by the daemon before the compact document (tests/ctl-query/fixtures,
// made by make-schema6).
//
//   Compact*        core-timeline-read --format=compact of the core: valid
//                   against docs/timeline.schema.json, read back into the
//                   Analysis whose text is byte for byte core-timeline-read's,
//                   written in the layout the document module serializes;
//   Schema6*        ctl-query list, show, events, export and diff on the
//                   schema-6 file, and list and show on its journal entry;
//   DaemonCompact*  (root) the real core-timelined --once over the committed
//                   coredump entry: the stored document is compact, valid,
//                   and `ctl-query show` prints what core-timeline-read
//                   prints for the core; export equals the reader's.
// The project's headers first: keys.h names a member "si_pid", which
// <signal.h> (through gtest) defines as a macro.
#include "core_timeline/document/compact_shape.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/render.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compact_timeline.h"
#include "process.h"
#include "schema_check.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr const char kSchema6Doc[] = CT_FIXTURES "/crash_demo-a.schema6.timeline.json";
constexpr const char kSchema6Export[] = CT_FIXTURES "/crash_demo-a.schema6.export";
constexpr const char kSchema6Text[] = CT_FIXTURES "/crash_demo-a.schema6.text";

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

ct::test::Ran run(const std::vector<std::string> &argv, const std::string &stdout_path = "") {
  ct::test::ProcessOptions o;
  o.in = ct::test::Stream::file("/dev/null");
  if (!stdout_path.empty()) o.out = ct::test::Stream::file(stdout_path);
  return ct::test::run(argv, o);
}

std::string said(const ct::test::Ran &r) { return r.out + r.err; }

/* A scratch directory of the test's own, removed at the end. */
struct Scratch {
  Scratch() {
    char t[] = "/var/tmp/ct-compact-XXXXXX";
    if (!mkdtemp(t)) throw std::runtime_error("mkdtemp");
    root = t;
    fs::permissions(root, fs::perms(0755));
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  std::string path(const std::string &sub) const { return root + "/" + sub; }
  std::string root;
};

/* The committed core, uncompressed into `s`. */
std::string core_of(const Scratch &s) {
  const std::string out = s.path("core");
  const auto r = run({"/usr/bin/zstd", "-d", "-q", "-f", CT_FIXTURE_CORES "/crash_demo-a.core.zst", "-o", out});
  if (!r.ok()) throw std::runtime_error("zstd -d: " + said(r));
  return out;
}

/* `path` checked against docs/timeline.schema.json (python3-jsonschema). */
void expect_valid(const std::string &path) {
  EXPECT_EQ(ct::test::schema_errors_of_file(path, CT_SCHEMA_PATH), "") << path << " does not match docs/timeline.schema.json";
}

// ---- the compact document of a real core ------------------------------------

// Guards against: a compact document that is not what its schema says, or
// that loses anything the text shows (the text is not stored).
TEST(Compact, OfTheRealCoreIsValidAndGivesBackTheReadersText) {
  Scratch s;
  const std::string core = core_of(s);
  const auto text = run({CT_READER, core});
  const auto compact = run({CT_READER, "--format=compact", core});
  ASSERT_TRUE(text.ok()) << said(text);
  ASSERT_TRUE(compact.ok()) << said(compact);
  spit(s.path("compact.json"), compact.out);
  expect_valid(s.path("compact.json"));

  const json doc = json::parse(compact.out);
  ASSERT_TRUE(core_timeline::reader::is_compact(doc));
  ASSERT_TRUE(core_timeline::reader::looks_compact(compact.out));
  auto a = core_timeline::reader::analysis_of_compact(doc);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(core_timeline::reader::render_text(*a), text.out);
  /* The other views the reader prints from the same Analysis. */
  const auto by_thread = run({CT_READER, "--by-thread", core});
  EXPECT_EQ(core_timeline::reader::render_text(*a, {.by_thread = true}), by_thread.out);
  /* The full document's events, made again from the compact one. */
  const auto full = run({CT_READER, "--json", core});
  const json f = json::parse(full.out);
  ASSERT_EQ(f["events"].size(), a->events.size());
  for (std::size_t i = 0; i < a->events.size(); ++i)
    EXPECT_EQ(core_timeline::reader::full_event(*a, a->events[i]), f["events"][i]) << "event " << i;
  EXPECT_EQ(core_timeline::reader::full_spans(*a), f["spans"]);
  EXPECT_EQ(core_timeline::reader::full_time(*a), f["time"]);
  /* One layout, whoever writes it: the reader streaming it, the document
   * module serializing a tree of it (the daemon). */
  EXPECT_EQ(core_timeline::document::compact::serialize(doc), compact.out);
  /* Plain JSON for jq: the events' kinds through the types table. */
  const auto jq = run({"/usr/bin/jq", "-r", ".tables.types as $t | [.events[] | $t[.[3]][1]] | join(\" \")",
                       s.path("compact.json")});
  ASSERT_TRUE(jq.ok()) << said(jq);
  EXPECT_EQ(jq.out, "LANE_CLAIM USER FREE USER CRASH\n");
}

// Guards against: an untrusted compact document whose indices point
// outside its tables reaching the renderer.
TEST(Compact, IndicesOutOfBoundsAreRefused) {
  Scratch s;
  const auto compact = run({CT_READER, "--format=compact", core_of(s)});
  ASSERT_TRUE(compact.ok()) << said(compact);
  const json doc = json::parse(compact.out);
  for (const std::size_t at : {core_timeline::document::compact::kThread, core_timeline::document::compact::kType,
                               core_timeline::document::compact::kLocation}) {
    json bad = doc;
    bad["events"][0][at] = 1000000;
    const auto a = core_timeline::reader::analysis_of_compact(bad);
    EXPECT_FALSE(a.ok()) << "position " << at;
  }
  json bad = doc;
  bad["spans"] = json::array({json::array({"0x1", "open", 1, 0, 99999, nullptr, nullptr, nullptr, nullptr, 0, 0,
                                           nullptr, 1, 0, 0})});
  EXPECT_FALSE(core_timeline::reader::analysis_of_compact(bad).ok());
}

// ---- read from the bytes, no tree of the events ---------------------------------

// Guards against: the streaming read (what ctl-query show takes) differing
// from the tree's: the same text, rows before the tables they refer to
// (a document not in write_compact()'s order), no events, faults.
TEST(Compact, ReadFromItsBytesGivesTheTreesAnalysis) {
  Scratch s;
  const std::string core = core_of(s);
  const auto text = run({CT_READER, core});
  const auto compact = run({CT_READER, "--format=compact", core});
  ASSERT_TRUE(text.ok() && compact.ok()) << said(text) << said(compact);
  namespace ctr = core_timeline::reader;
  auto streamed = ctr::read_compact_document(compact.out);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  ASSERT_TRUE(streamed->analysis);
  EXPECT_EQ(ctr::render_text(*streamed->analysis), text.out);
  EXPECT_EQ(streamed->rest["events"], json::array());
  EXPECT_TRUE(streamed->rest.contains("tables"));

  /* The events first: the rows wait for the tables. */
  const json doc = json::parse(compact.out);
  json reordered = {{"schema_version", 7}, {"events", doc["events"]}};
  for (const auto &[k, v] : doc.items())
    if (k != "events" && k != "schema_version") reordered[k] = v;
  auto late = ctr::read_compact_document(reordered.dump());
  ASSERT_TRUE(late.ok()) << late.error().message;
  EXPECT_EQ(ctr::render_text(*late->analysis), text.out);

  /* The head's members after the events (rings and tables before them):
   * read from the whole document all the same. */
  json head_last;
  for (const auto &[k, v] : doc.items())
    if (k != "source" && k != "reason") head_last[k] = v;
  for (const char *k : {"source", "reason"}) head_last[k] = doc[k];
  auto tail_head = ctr::read_compact_document(head_last.dump());
  ASSERT_TRUE(tail_head.ok()) << tail_head.error().message;
  const auto from_tree = ctr::analysis_of_compact(doc);
  ASSERT_TRUE(from_tree.ok());
  EXPECT_EQ(tail_head->analysis->source, from_tree->source);
  EXPECT_EQ(tail_head->analysis->process.pid, from_tree->process.pid);
  EXPECT_EQ(ctr::render_text(*tail_head->analysis), text.out);

  json none = doc;
  none.erase("events");
  auto undecoded = ctr::read_compact_document(none.dump());
  ASSERT_TRUE(undecoded.ok()) << undecoded.error().message;
  EXPECT_FALSE(undecoded->analysis);

  json bad = doc;
  bad["events"][0][core_timeline::document::compact::kType] = 1000000;
  auto refused = ctr::read_compact_document(bad.dump());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("out of bounds"), std::string::npos) << refused.error().message;
  std::string twice = compact.out;
  twice.insert(twice.rfind('}'), ",\"events\":[]");
  auto doubled = ctr::read_compact_document(twice);
  ASSERT_FALSE(doubled.ok());
  EXPECT_NE(doubled.error().message.find("\"events\" twice"), std::string::npos) << doubled.error().message;
  /* A table given again after the events would have them read against
   * the first and the rest against the second: refused. */
  std::string tables_twice = compact.out;
  tables_twice.insert(tables_twice.rfind('}'), ",\"tables\":{}");
  EXPECT_FALSE(ctr::read_compact_document(tables_twice).ok());
  EXPECT_FALSE(ctr::read_compact_document(compact.out.substr(0, compact.out.size() / 2)).ok());
  EXPECT_FALSE(ctr::read_compact_document(R"({"schema_version":6,"status":"ok","events":[]})").ok());
}

// Guards against: show parsing the timeline it selected twice, or a kept
// document being given for another file or given twice.
TEST(Compact, ACachedDocumentIsReadOnceForTheSamePath) {
  Scratch s;
  const auto compact = run({CT_READER, "--format=compact", core_of(s)});
  ASSERT_TRUE(compact.ok()) << said(compact);
  json doc = json::parse(compact.out);
  doc["coredump"] = {{"fields", json::object()}};  // as core-timelined stores it
  const std::string bytes = doc.dump();
  namespace ctlq = core_timeline::ctl_query;
  ctlq::ReadRequest summary;
  summary.compact_cache = std::make_shared<ctlq::CompactCache>();
  auto first = ctlq::parse_timeline(bytes, "/t/a.timeline.json", summary);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->event_count, doc["events"].size());
  ASSERT_TRUE(summary.compact_cache->doc);

  /* Bytes that do not parse: only the kept document can answer. */
  const std::string broken = R"({"schema_version":7, broken)";
  ctlq::ReadRequest text;
  text.want_text = true;
  text.compact_cache = summary.compact_cache;
  EXPECT_FALSE(ctlq::parse_timeline(broken, "/t/other.timeline.json", text).ok());
  auto second = ctlq::parse_timeline(broken, "/t/a.timeline.json", text);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_TRUE(second->text);
  EXPECT_EQ(*second->text, core_timeline::reader::render_text(*core_timeline::reader::analysis_of_compact(doc)));
  EXPECT_FALSE(summary.compact_cache->doc);
  EXPECT_FALSE(ctlq::parse_timeline(broken, "/t/a.timeline.json", text).ok());
}

// Guards against: the streaming parser keeping what it streams, losing a
// member, counting wrong when it only lexes, or nesting past the bound.
TEST(StreamParse, HandsOnEachElementAndKeepsTheRest) {
  namespace doc = core_timeline::document;
  static constexpr std::string_view kStreamed[] = {"events"};
  const std::string bytes = R"({"a":1,"events":[[1,{"x":[2]}],3,{"y":null}],"b":{"events":[9]},"c":"z"})";
  std::vector<std::string> seen;
  auto tree = doc::parse_streaming(bytes, kStreamed, [&](const json &so_far, std::string_view member, const json &e,
                                                         std::size_t i) -> std::optional<std::string> {
    EXPECT_EQ(member, "events");
    EXPECT_EQ(so_far["a"], 1);
    EXPECT_FALSE(so_far.contains("b"));
    seen.push_back(std::to_string(i) + ":" + e.dump());
    return std::nullopt;
  });
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  EXPECT_EQ(seen, (std::vector<std::string>{"0:[1,{\"x\":[2]}]", "1:3", "2:{\"y\":null}"}));
  EXPECT_EQ(tree->dump(), R"({"a":1,"events":[],"b":{"events":[9]},"c":"z"})");

  std::size_t counted = 0;
  auto lexed = doc::parse_streaming(
      bytes, kStreamed,
      [&](const json &, std::string_view, const json &e, std::size_t) -> std::optional<std::string> {
        EXPECT_TRUE(e.is_null());
        ++counted;
        return std::nullopt;
      },
      /*build=*/false);
  ASSERT_TRUE(lexed.ok()) << lexed.error().message;
  EXPECT_EQ(counted, 3u);
  EXPECT_EQ(lexed->dump(), tree->dump());

  const auto none = [](const json &, std::string_view, const json &, std::size_t) -> std::optional<std::string> {
    return std::nullopt;
  };
  auto scalar = doc::parse_streaming(R"({"events":5})", kStreamed, none);
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ((*scalar)["events"], 5);
  const std::string deep = R"({"events":[)" + std::string(100, '[') + std::string(100, ']') + "]}";
  for (const bool build : {true, false}) {
    auto too_deep = doc::parse_streaming(deep, kStreamed, none, build);
    ASSERT_FALSE(too_deep.ok());
    EXPECT_NE(too_deep.error().message.find("deeper than"), std::string::npos) << too_deep.error().message;
    EXPECT_FALSE(doc::parse_streaming(R"({"events":[1,)", kStreamed, none, build).ok());
  }
  auto stopped = doc::parse_streaming(bytes, kStreamed,
                                      [](const json &, std::string_view, const json &, std::size_t i) {
                                        return i == 1 ? std::optional<std::string>("no second") : std::nullopt;
                                      });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, "no second");
}

// ---- the schema-6 fixtures ------------------------------------------------------

/* The fixture's timeline file in a timeline directory of its own. */
std::string schema6_dir(const Scratch &s) {
  const std::string dir = s.path("timelines");
  fs::create_directories(dir);
  const json doc = json::parse(slurp(kSchema6Doc));
  std::string name = fs::path(doc["coredump"]["core_file"].get<std::string>()).filename().string();
  if (name.ends_with(".zst")) name.resize(name.size() - 4);
  fs::copy_file(kSchema6Doc, dir + "/" + name + ".timeline.json");
  return dir;
}

// Guards against: the compact document's readers losing the documents
// stored before it (schema_version 6).
TEST(Schema6, FileListsShowsEventsExportsAndDiffs) {
  Scratch s;
  const std::string dir = schema6_dir(s);
  ASSERT_EQ(json::parse(slurp(kSchema6Doc))["schema_version"], 6);
  const auto list = run({CT_CTL_QUERY, "-D", dir, "list"});
  ASSERT_TRUE(list.ok()) << said(list);
  EXPECT_NE(list.out.find("23318"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("ok"), std::string::npos) << list.out;

  const auto show = run({CT_CTL_QUERY, "-D", dir, "show", "--all"});
  ASSERT_TRUE(show.ok()) << said(show);
  EXPECT_EQ(show.out, slurp(kSchema6Text));

  const auto events = run({CT_CTL_QUERY, "-D", dir, "events"});
  ASSERT_TRUE(events.ok()) << said(events);
  EXPECT_NE(events.out.find("id=0x1003"), std::string::npos) << events.out;

  const auto trace = run({CT_CTL_QUERY, "-D", dir, "export", "--format=chrome-trace"});
  ASSERT_TRUE(trace.ok()) << said(trace);
  const json t = json::parse(trace.out);
  EXPECT_FALSE(t["traceEvents"].empty());

  /* The stored timeline against the core it was made from: the same
   * counts of every event. */
  const auto diff = run({CT_CTL_QUERY, "-D", dir, "diff", "23318", core_of(s)});
  ASSERT_TRUE(diff.ok()) << said(diff);
  EXPECT_NE(diff.out.find("A: 5 events"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("id=0x1003  user   1   - 1   - count x1.00"), std::string::npos) << diff.out;
}

// Guards against: the journal entries the daemon logged before the compact
// document (their CORE_TIMELINE_DOCUMENT schema 6) no longer read.
TEST(Schema6, JournalEntryListsAndShows) {
  Scratch s;
  fs::create_directories(s.path("journal"));
  const auto made = run({"/lib/systemd/systemd-journal-remote", "-o", s.path("journal/0.journal"), kSchema6Export});
  ASSERT_TRUE(made.ok()) << said(made);
  const auto list = run({CT_CTL_QUERY, "-D", s.path("journal"), "list"});
  ASSERT_TRUE(list.ok()) << said(list);
  EXPECT_NE(list.out.find("23318"), std::string::npos) << list.out;
  const auto show = run({CT_CTL_QUERY, "-D", s.path("journal"), "show", "--all"});
  ASSERT_TRUE(show.ok()) << said(show);
  EXPECT_NE(show.out.find("id=0x1003"), std::string::npos) << show.out;
}

// ---- the daemon's compact document ------------------------------------------------

#ifdef CT_DAEMON
// Guards against: a stored document whose text, rendered by ctl-query, is
// not what core-timeline-read prints for the core it was made from.
TEST(DaemonCompact, ShowOfTheStoredDocumentIsTheReadersText) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's decoder drops to the crashed user)";
  Scratch s;
  for (const char *d : {"journal", "coredump", "state", "out"}) fs::create_directories(s.path(d));
  spit(s.path("empty.conf"), "");
  /* The committed coredump entry, naming the core where it is now. */
  std::string entry = slurp(CT_FIXTURE_CORES "/crash_demo-a.export");
  const std::string key = "COREDUMP_FILENAME=";
  const auto at = entry.find(key);
  ASSERT_NE(at, std::string::npos);
  const auto eol = entry.find('\n', at);
  const std::string name = fs::path(entry.substr(at + key.size(), eol - at - key.size())).filename().string();
  fs::copy_file(CT_FIXTURE_CORES "/crash_demo-a.core.zst", s.path("coredump/" + name));
  entry.replace(at, eol - at, key + s.path("coredump/" + name));
  /* Sent by root, whom the daemon trusts as systemd-coredump on any machine
   * (the entry's own _UID is the systemd-coredump user of the machine that
   * made it, which on another machine may be no one's or someone else's). */
  const auto uid = entry.find("\n_UID=");
  ASSERT_NE(uid, std::string::npos);
  entry.replace(uid + 1, entry.find('\n', uid + 1) - uid - 1, "_UID=0");
  spit(s.path("entry.export"), entry);
  const auto made = run({"/lib/systemd/systemd-journal-remote", "-o", s.path("journal/0.journal"), s.path("entry.export")});
  ASSERT_TRUE(made.ok()) << said(made);
  const auto daemon = run({CT_DAEMON, "--state-dir", s.path("state"), "--first-start", "all", "--output-dir",
                           s.path("out"), "--log-target", "stderr", "--config", s.path("empty.conf"), "--once",
                           "--journal-directory", s.path("journal"), "--coredump-dir", s.path("coredump")});
  ASSERT_TRUE(daemon.ok()) << said(daemon);
  std::string stored;
  for (const auto &e : fs::directory_iterator(s.path("out")))
    if (e.path().string().ends_with(".timeline.json")) stored = e.path().string();
  ASSERT_FALSE(stored.empty()) << said(daemon);
  expect_valid(stored);
  const json doc = json::parse(slurp(stored));
  EXPECT_EQ(doc["schema_version"], 7);
  EXPECT_FALSE(doc.contains("text"));

  const std::string core = core_of(s);
  const auto text = run({CT_READER, core});
  ASSERT_TRUE(text.ok()) << said(text);
  const auto show = run({CT_CTL_QUERY, "-D", s.path("out"), "show", "--all"});
  ASSERT_TRUE(show.ok()) << said(show);
  EXPECT_EQ(show.out, text.out);

  const auto trace = run({CT_CTL_QUERY, "-D", s.path("out"), "export", "--format=chrome-trace"});
  const auto reader_trace = run({CT_READER, "--format=chrome-trace", core});
  ASSERT_TRUE(trace.ok()) << said(trace);
  ASSERT_TRUE(reader_trace.ok()) << said(reader_trace);
  json a = json::parse(trace.out), b = json::parse(reader_trace.out);
  EXPECT_EQ(a["traceEvents"], b["traceEvents"]);

  const auto diff = run({CT_CTL_QUERY, "-D", s.path("out"), "diff", "23318", core});
  ASSERT_TRUE(diff.ok()) << said(diff);
  EXPECT_NE(diff.out.find("id=0x1003  user   1   - 1   - count x1.00"), std::string::npos) << diff.out;

  /* list reads the stored document without its events' bulk: their count
   * and the last one's name, as the reader's full document has them. */
  const auto list = run({CT_CTL_QUERY, "-D", s.path("out"), "list", "--json"});
  ASSERT_TRUE(list.ok()) << said(list);
  const json row = json::parse(list.out.substr(0, list.out.find('\n')));
  const auto full = run({CT_READER, "--json", core});
  ASSERT_TRUE(full.ok()) << said(full);
  const json f = json::parse(full.out);
  EXPECT_EQ(row["events"], f["events"].size());
  ASSERT_GE(f["events"].size(), 2u);
  EXPECT_EQ(f["events"].back()["kind"], "CRASH");
  EXPECT_EQ(row["last_event"]["name"], f["events"][f["events"].size() - 2]["name"]) << row;  // the one before the CRASH
  const auto events = run({CT_CTL_QUERY, "-D", s.path("out"), "events"});
  ASSERT_TRUE(events.ok()) << said(events);
  EXPECT_NE(events.out.find("id=0x1003"), std::string::npos) << events.out;
}
#endif

}  // namespace
