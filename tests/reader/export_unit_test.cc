// SPDX-License-Identifier: MIT
//
// The export module (core_timeline/reader/export.h) on hand-made Analyses
// and documents: the branches a real core cannot be made to show on
// demand (a span whose begin was lost, torn and invalid slots, the shared
// lane's losses, dropped events, events that cannot be placed in time),
// the document input's defences, and the command line's refusals.  The
// CTF traces made here are read back by the real babeltrace2.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/export.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "test_util.h"
#include "trace_checks.h"

namespace ctr = core_timeline::reader;
namespace f = core_timeline::format;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::uint32_t intern(ctr::Analysis &a, const std::string &s) {
  a.strings.push_back(s);
  return static_cast<std::uint32_t>(a.strings.size() - 1);
}

ctr::Event event(ctr::Analysis &a, std::uint16_t kind, const char *kind_name, const std::string &name,
                 std::uint32_t tid, std::uint64_t seq, std::optional<std::int64_t> age) {
  ctr::Event e;
  e.kind = kind;
  e.kind_name = intern(a, kind_name);
  e.name = intern(a, name);
  e.tid = tid;
  e.lane = tid == 10 ? 0 : 1;
  e.seq = seq;
  e.age_ns = age;
  return e;
}

/* Two threads: tid 10 (lane 0, named "worker") with a span whose begin
 * was lost (its duration known), another whose begin was lost (duration
 * unknown), and an event that cannot be placed in time; tid 11 (lane 1)
 * with a span whose end may be lost, and the CRASH.  Lane 0 has 2 torn
 * and 1 invalid slot; the shared lane overwrote 5; 4 events dropped. */
ctr::Analysis hand_made() {
  ctr::Analysis a;
  a.status = ctr::Status::kOk;
  a.source = ctr::TimelineSource::kCoreOnly;
  a.process.pid = 77;
  a.process.comm = "handmade";
  a.time.reference = ctr::TimeBase::Reference::kCrash;
  a.names[0x10] = {"JOB", "job_id", "", ctr::NameFrom::kCore};
  ctr::Event end1 = event(a, f::kKindSpanEnd, "SPAN_END", "JOB", 10, 5, -9000);
  end1.span = 0;
  end1.id = 0x10;
  end1.named = true;
  end1.name_from = ctr::NameFrom::kCore;
  end1.arg0 = 3;
  ctr::Event mark = event(a, f::kKindUser, "USER", "id=0x20", 10, 6, std::nullopt);
  mark.id = 0x20;
  mark.arg0 = 1;
  ctr::Event end2 = event(a, f::kKindSpanEnd, "SPAN_END", "SPAN_END", 10, 7, -8000);
  end2.span = 1;
  ctr::Event begin = event(a, f::kKindSpanBegin, "SPAN_BEGIN", "JOB", 11, 1, -7000);
  begin.span = 2;
  begin.id = 0x10;
  begin.named = true;
  begin.name_from = ctr::NameFrom::kCore;
  begin.arg0 = 42;
  ctr::Event crash = event(a, f::kKindCrash, "CRASH", "CRASH", 11, 2, 0);
  crash.id = 11;
  ctr::CrashSlot slot;
  slot.signo = 11;
  slot.signal_name = "SIGSEGV";
  slot.si_code = 1;
  slot.si_code_name = "SEGV_MAPERR";
  slot.fault_address = 0x10;
  a.crash_slots.push_back(slot);
  crash.crash = 0;
  a.events = {end1, mark, end2, begin, crash};
  a.time.reference_event = 4;
  ctr::Span s0;
  s0.state = ctr::Span::State::kBeginLost;
  s0.end = 0;
  s0.tid = 10;
  s0.duration_ns = 1500;
  s0.id = 0x10;
  ctr::Span s1 = s0;
  s1.end = 2;
  s1.duration_ns.reset();
  s1.id_known = false;
  ctr::Span s2;
  s2.state = ctr::Span::State::kOpenOrEndLost;
  s2.begin = 3;
  s2.tid = 11;
  s2.open_for_ns = 7000;
  s2.note = "torn slots could hold its end";
  a.spans = {s0, s1, s2};
  a.threads = {{10, "worker", 3, false, {}}, {11, "", 2, true, {2}}};
  ctr::RingReport r;
  r.state = ctr::RingReport::State::kValid;
  r.ring.emplace();
  r.ring->header.dropped = 4;
  ctr::LaneSummary l0;
  l0.index = 0;
  l0.owner_tid = 10;
  l0.torn = 2;
  l0.invalid = 1;
  ctr::LaneSummary shared;
  shared.index = 2;
  shared.shared = true;
  shared.overwritten = 5;
  shared.write_index = 5;  // used: the document lists it
  r.ring->lanes = {l0, shared};
  a.rings.push_back(std::move(r));
  a.crash = ctr::CrashFacts{};
  a.crash->signo = 11;
  a.crash->signal_name = "SIGSEGV";
  a.crash->si_code = 1;
  a.crash->si_code_name = "SEGV_MAPERR";
  a.crash->fault_address = 0x10;
  a.crash->tid = 11;
  a.crash->ring_slot = true;
  a.absence_proves_nothing = true;
  return a;
}

std::string chrome_of(const ctr::Analysis &a) {
  std::string out;
  auto w = ctr::chrome_trace_writer(ctr::export_timeline_of(a), [&](std::string_view s) {
    out.append(s);
    return true;
  });
  EXPECT_TRUE(ctr::export_events(a, *w).ok());
  return out;
}

json named(const json &trace, const std::string &name, const std::string &ph) {
  for (const auto &e : trace["traceEvents"])
    if (e["name"] == name && e["ph"] == ph) return e;
  return nullptr;
}

std::string temp_dir(const std::string &name) {
  const fs::path p = fs::temp_directory_path() / ("ct-export-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

// Guards against: a span whose begin was lost drawn as if it were whole,
// or not at all.
TEST(ExportChrome, ASpanWhoseBeginWasLostSaysSoAndStartsNoEarlierThanItsRecordedBegin) {
  const json t = json::parse(chrome_of(hand_made()));
  EXPECT_EQ(ct::test::tef_errors(t), "");
  const json x = named(t, "JOB", "X");
  ASSERT_FALSE(x.is_null()) << t.dump(1);
  // Time 0 is where the first span's end says it began: -9000 - 1500.
  EXPECT_EQ(t["otherData"]["ts_zero_age_ns"], -10500);
  const json *lost = nullptr;
  for (const auto &e : t["traceEvents"])
    if (e["ph"] == "X" && e["args"]["state"] == "begin_lost") lost = &e;
  ASSERT_TRUE(lost) << "the begin_lost span with a known duration is a slice";
  EXPECT_DOUBLE_EQ((*lost)["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ((*lost)["dur"].get<double>(), 1.5);
  EXPECT_EQ((*lost)["args"]["token"], 3) << "an end's arguments are its own, not its span's";
  EXPECT_FALSE((*lost)["args"].contains("job_id"));
  EXPECT_NE((*lost)["args"]["span"].get<std::string>().find("begin was lost"), std::string::npos);
  std::size_t instants = 0;
  for (const auto &e : t["traceEvents"])
    if (e["ph"] == "i" && e.contains("args") && e["args"].value("state", "") == "begin_lost") {
      ++instants;
      EXPECT_NE(e["args"]["span"].get<std::string>().find("begin was lost"), std::string::npos);
    }
  EXPECT_EQ(instants, 1u) << "the begin_lost span without a duration is its end alone";
}

// Guards against: a begin (its end's age less its duration, both from the
// untrusted ring) more than 2^63 ns before the reference computed with a
// signed overflow (fuzz_recipe's finding of 2026-12-05,
// regressions/fuzz_recipe/span-begin-age-overflow), or placed anywhere;
// the same for the wall clock of age 0 (the reference event's wall clock
// less its age), which wrapped to a wrong time.
TEST(ExportTimeline, ASpanBeginTooFarBackToBeTimedMovesNothing) {
  ctr::Analysis a = hand_made();
  a.events[0].age_ns = INT64_MIN + 1000;
  a.spans[0].duration_ns = 1500;
  const ctr::ExportTimeline t = ctr::export_timeline_of(a);
  EXPECT_EQ(t.origin_age_ns, INT64_MIN + 1000) << "the oldest placed event is time 0";
  a.events[0].age_ns = -9000;
  a.spans[0].duration_ns = INT64_MAX;
  EXPECT_EQ(ctr::export_timeline_of(a).origin_age_ns, -9000) << "the end, not a begin that cannot be";
  a.events[4].age_ns = 10;
  a.events[4].realtime_ns = INT64_MIN + 5;
  EXPECT_FALSE(ctr::export_timeline_of(a).reference_realtime_ns) << "age 0's wall clock cannot be told";
  a.events[4].realtime_ns = 1'000'000;
  EXPECT_EQ(ctr::export_timeline_of(a).reference_realtime_ns, 1'000'000 - 10);
}

TEST(ExportChrome, ASpanWhoseEndMayBeLostRunsToTheReferenceAndSaysSo) {
  const json t = json::parse(chrome_of(hand_made()));
  json open;
  for (const auto &e : t["traceEvents"])
    if (e["ph"] == "X" && e["args"]["state"] == "open_or_end_lost") open = e;
  ASSERT_FALSE(open.is_null());
  EXPECT_EQ(open["tid"], 11);
  EXPECT_DOUBLE_EQ(open["ts"].get<double>(), 3.5);   // -7000 - (-10500) ns
  EXPECT_DOUBLE_EQ(open["dur"].get<double>(), 7.0);  // to the crash
  EXPECT_EQ(open["args"]["job_id"], 42);
  EXPECT_NE(open["args"]["ends"].get<std::string>().find("may have been lost"), std::string::npos);
  EXPECT_EQ(open["args"]["note"], "torn slots could hold its end");
}

// Guards against: torn slots, the shared lane's losses and dropped events
// that vanish from the export.
TEST(ExportChrome, TornSlotsSharedLaneAndDroppedEventsAreShown) {
  const json t = json::parse(chrome_of(hand_made()));
  json meta;
  for (const auto &e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 10) meta = e["args"];
  EXPECT_EQ(meta["name"], "worker");
  EXPECT_EQ(meta["torn"], 3);
  EXPECT_EQ(meta["lost"], 3);
  const json marker = named(t, "3 events lost before this", "i");
  ASSERT_FALSE(marker.is_null());
  EXPECT_EQ(marker["tid"], 10);
  EXPECT_EQ(marker["s"], "t");
  const json dropped = named(t, "4 events dropped (no lane: thread and time unknown)", "i");
  ASSERT_FALSE(dropped.is_null());
  EXPECT_EQ(dropped["s"], "p");
  const json &d = t["otherData"];
  EXPECT_EQ(d["dropped"], 4);
  EXPECT_EQ(d["shared_lane"]["overwritten"], 5);
  EXPECT_EQ(d["lost"], 3 + 5 + 4);
  EXPECT_EQ(d["losses_by_thread"][0]["tid"], 10);
  EXPECT_TRUE(d["absence_proves_nothing"].get<bool>());
  // tid 11 has no name in the ring: "tid 11".
  for (const auto &e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 11) {
      EXPECT_EQ(e["args"]["name"], "tid 11");
    }
}

// Guards against: an event that cannot be placed in time given a made-up
// time.
TEST(ExportChrome, EventsWithoutTimeAreCountedNotPlaced) {
  const json t = json::parse(chrome_of(hand_made()));
  for (const auto &e : t["traceEvents"]) {
    EXPECT_NE(e["name"], "id=0x20") << e.dump();
  }
  EXPECT_EQ(t["otherData"]["events_without_time"], 1);
  EXPECT_EQ(t["otherData"]["events"], 5);
  const json crash = named(t, "CRASH", "i");
  EXPECT_EQ(crash["s"], "p");
  EXPECT_EQ(crash["args"]["fault_address"], "0x10");
  EXPECT_DOUBLE_EQ(crash["ts"].get<double>(), 10.5);
}

// Guards against: two exporters.  The stored document of an Analysis
// exports exactly as the Analysis does.
TEST(ExportDocument, TheDocumentOfAnAnalysisExportsAsTheAnalysisDoes) {
  const ctr::Analysis a = hand_made();
  const auto doc = nlohmann::ordered_json::parse(ctr::render_json(a));
  ctr::DocumentEventScan scan;
  for (const auto &e : doc["events"]) scan.scan(e);
  std::string out;
  auto w = ctr::chrome_trace_writer(ctr::export_timeline_of_document(doc, scan), [&](std::string_view s) {
    out.append(s);
    return true;
  });
  for (const auto &e : doc["events"]) {
    auto x = ctr::export_event_of_json(e);
    ASSERT_TRUE(x);
    ASSERT_TRUE(w->event(*x).ok());
  }
  ASSERT_TRUE(w->finish().ok());
  EXPECT_EQ(out, chrome_of(a));
}

// Guards against: a document (untrusted) whose members have other types
// making the exporter throw or crash.
TEST(ExportDocument, MembersOfTheWrongTypeCountAsAbsent) {
  const auto junk = nlohmann::ordered_json::parse(R"({
    "process": [1], "status": 3, "crash": {"signal": "x", "fault_address": "0xzz", "tid": -1},
    "rings": [{"state": "valid", "dropped": -5, "lanes": [7, {"owner_tid": 1e30, "torn": "a"}]}, 4],
    "spans": [null, {"state": 1, "duration_ns": 18446744073709551615}], "threads": {"a": 1},
    "windows": [[]], "warnings": [1, "w"], "time": "now"})");
  ctr::DocumentEventScan scan;
  for (const char *e : {R"({"age_ns": "1"})", R"([1])", R"({"age_ns": -5, "time_ns": 1000, "ring": 0, "lane": 1, "tid": 3})"})
    scan.scan(nlohmann::ordered_json::parse(e));
  ctr::ExportTimeline t;
  EXPECT_NO_THROW(t = ctr::export_timeline_of_document(junk, scan));
  EXPECT_EQ(t.pid, 0u);
  EXPECT_EQ(t.dropped, 0u);
  EXPECT_EQ(t.origin_age_ns, -5);
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_FALSE(t.spans[1].duration_ns);
  ASSERT_TRUE(t.crash);
  EXPECT_FALSE(t.crash->fault_address);
  EXPECT_EQ(t.warnings, std::vector<std::string>{"w"});
  EXPECT_FALSE(ctr::export_event_of_json(nlohmann::ordered_json::parse(R"({"kind": 1, "name": "x", "tid": 1})")));
  EXPECT_FALSE(ctr::export_event_of_json(nlohmann::ordered_json::parse(R"({"kind": "USER", "name": "x"})")));
  const auto ok = nlohmann::ordered_json::parse(
      R"({"kind": "USER", "name": "x", "tid": 1, "args": [-1, 2], "arg_names": [5, "b"], "span": -3, "crash": 1})");
  const auto x = ctr::export_event_of_json(ok);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->args[0].value, 0u);
  EXPECT_EQ(x->args[0].name, "arg0");
  EXPECT_EQ(x->args[1].name, "b");
  EXPECT_FALSE(x->span);
  EXPECT_FALSE(x->signal);
  EXPECT_FALSE(x->age_ns);
}

// Guards against: an untrusted crash stack, re-raised fault or thread stack
// of the wrong shape making the exporter throw, or being half kept.
TEST(ExportDocument, CrashStacksOfTheWrongTypeCountAsAbsent) {
  const auto junk = nlohmann::ordered_json::parse(R"({
    "process": {"pid": 7}, "crash": {"signal": 11, "tid": 7,
      "stack": {"frames": [1, {"address": 5, "from": 3, "signal_frame": "yes"}, {"address": "0x10", "from": "core",
                "function": "f", "offset": "0x2", "module": "/lib/m.so", "file_offset": "0x7", "signal_frame": true}],
                "core_end": 4, "agree": -1, "note": null},
      "reraised": {"signal": "x", "fault_address": "0xzz", "location": [], "handler": {"address": "0x20"}}},
    "thread_stacks": [null, {"tid": "3"}, {"tid": 9, "frames": {"a": 1}, "end": 2}, {"tid": 8, "frames": [{}]}]})");
  ctr::ExportTimeline t;
  EXPECT_NO_THROW(t = ctr::export_timeline_of_document(junk, ctr::DocumentEventScan{}));
  ASSERT_TRUE(t.crash && t.crash->stack);
  const auto &frames = t.crash->stack->frames;
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].address, 0u);
  EXPECT_EQ(frames[0].from, "");
  EXPECT_FALSE(frames[0].signal_frame);
  EXPECT_EQ(frames[1].name, "f+0x2");
  EXPECT_EQ(frames[1].from, "core");
  EXPECT_TRUE(frames[1].signal_frame);
  EXPECT_EQ(ctr::frame_line(1, frames[1]), "#1  0x0000000000000010 f+0x2 in m.so  (signal frame)  [core]");
  EXPECT_EQ(t.crash->stack->core_end, "");
  EXPECT_EQ(t.crash->stack->agree, 0u);
  ASSERT_TRUE(t.crash->reraised);
  EXPECT_EQ(t.crash->reraised->signo, 0);
  EXPECT_FALSE(t.crash->reraised->fault_address);
  EXPECT_EQ(t.crash->reraised->at, "");
  EXPECT_EQ(t.crash->reraised->handler, "0x20");
  ASSERT_EQ(t.thread_stacks.size(), 2u);
  EXPECT_EQ(t.thread_stacks[0].tid, 9u);
  EXPECT_TRUE(t.thread_stacks[0].frames.empty());
  EXPECT_EQ(t.thread_stacks[1].frames.size(), 1u);
  // Both writers take it.
  std::string out;
  auto w = ctr::chrome_trace_writer(t, [&](std::string_view p) {
    out.append(p);
    return true;
  });
  ASSERT_TRUE(w->finish().ok());
  EXPECT_FALSE(json::parse(out, nullptr, false).is_discarded()) << out;
  auto c = ctr::ctf_writer(t, temp_dir("junk-stacks"));
  ASSERT_TRUE(c);
  EXPECT_TRUE((*c)->finish().ok());
}

// Guards against: untrusted ages whose differences overflow int64 (age -1
// and INT64_MAX: age - origin wraps to INT64_MIN, which append_us writes as
// "--9223372036854775.(0(", so a chrome trace that is not JSON; an origin
// of INT64_MIN made the crash marker's ojson::parse throw).
TEST(ExportDocument, HugeAgesCountAsAbsentAndTheTraceStaysJson) {
  const auto doc = nlohmann::ordered_json::parse(R"({
    "process": {"pid": 7, "comm": "x"}, "crash": {"signal": 11, "tid": 7},
    "events": [
      {"kind": "USER", "name": "a", "tid": 7, "age_ns": -1, "time_ns": 9223372036854775807},
      {"kind": "USER", "name": "b", "tid": 7, "age_ns": 9223372036854775807},
      {"kind": "USER", "name": "c", "tid": 7, "age_ns": -9223372036854775808}]})");
  ctr::DocumentEventScan scan;
  for (const auto &e : doc["events"]) scan.scan(e);
  EXPECT_EQ(scan.oldest_age_ns, -1);
  EXPECT_FALSE(scan.reference_realtime_ns);
  std::string out;
  auto w = ctr::chrome_trace_writer(ctr::export_timeline_of_document(doc, scan), [&](std::string_view s) {
    out.append(s);
    return true;
  });
  for (const auto &e : doc["events"]) {
    auto x = ctr::export_event_of_json(e);
    ASSERT_TRUE(x);
    ASSERT_TRUE(w->event(*x).ok());
  }
  ASSERT_TRUE(w->finish().ok());
  const auto j = nlohmann::ordered_json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["otherData"]["events_without_time"], 2);
}

// Guards against: a write error taken for success.
TEST(ExportChrome, AFailedWriteIsAnErrorAndStopsTheWriter) {
  const ctr::Analysis a = hand_made();
  std::size_t calls = 0;
  auto w = ctr::chrome_trace_writer(ctr::export_timeline_of(a), [&](std::string_view) {
    ++calls;
    errno = ENOSPC;
    return false;
  });
  const auto r = ctr::export_events(a, *w);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("No space left"), std::string::npos) << r.error().message;
  EXPECT_EQ(calls, 1u);
}

// Guards against: a CTF trace babeltrace2 cannot read, or that does not
// report the torn slots of a thread as discarded events.
TEST(ExportCtf, Babeltrace2ReadsTheHandMadeTraceWithItsLosses) {
  const std::string bt = ct::test::babeltrace2_path();
  if (bt.empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it): the CTF trace "
                    "cannot be read back";
  const ctr::Analysis a = hand_made();
  const std::string dir = temp_dir("hand");
  auto w = ctr::ctf_writer(ctr::export_timeline_of(a), dir);
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_TRUE(ctr::export_events(a, **w).ok());
  const auto r = ct::test::run({bt, "--clock-seconds", "--no-delta", dir});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  std::string bad;
  const auto events = ct::test::babeltrace2_events(r.out, &bad);
  EXPECT_EQ(bad, "");
  ASSERT_EQ(events.size(), 4u) << r.out;  // the one without time is left out
  EXPECT_EQ(events[0].name, "JOB");
  EXPECT_EQ(events[0].thread_name, "worker");
  EXPECT_EQ(events[0].fields[0], (std::pair<std::string, std::string>{"token", "3"}));
  EXPECT_EQ(events[0].fields[1].first, "begin_timestamp");
  EXPECT_EQ(events[0].fields[2], (std::pair<std::string, std::string>{"span_state", "\"begin_lost\""}));
  EXPECT_EQ(events[2].name, "JOB");
  EXPECT_EQ(events[2].thread_name, "tid 11");
  EXPECT_EQ(events[2].ns - events[0].ns, 2000);
  EXPECT_EQ(events[3].name, "CRASH");
  EXPECT_NE(r.err.find("Tracer discarded 3 events"), std::string::npos) << r.err;
  const std::string metadata = ct::test::slurp(dir + "/metadata");
  EXPECT_NE(metadata.find("events_without_time = 1;"), std::string::npos);
  EXPECT_NE(metadata.find("dropped = 4;"), std::string::npos);
  EXPECT_NE(metadata.find("shared_lane_lost = 5;"), std::string::npos);
  fs::remove_all(dir);
}

// Guards against: two argument names that identifier() and the renaming of
// fixed field names make one ("text" becomes "text_arg", as "text_arg"
// is), a struct with two fields of one name that no CTF reader accepts.
TEST(ExportCtf, ArgumentNamesStayDistinctAfterTheRenaming) {
  const std::string dir = temp_dir("names");
  ctr::ExportTimeline t;
  t.pid = 1;
  auto w = ctr::ctf_writer(t, dir);
  ASSERT_TRUE(w) << w.error().message;
  ctr::ExportEvent e;
  e.tid = 1;
  e.kind = "USER";
  e.name = "X";
  e.age_ns = 0;
  e.args[0].name = "text";
  e.args[1].name = "text_arg";
  ASSERT_TRUE((*w)->event(e).ok());
  ASSERT_TRUE((*w)->finish().ok());
  const std::string metadata = ct::test::slurp(dir + "/metadata");
  EXPECT_NE(metadata.find("uint64_t text_arg;"), std::string::npos) << metadata;
  EXPECT_NE(metadata.find("uint64_t text_arg_1;"), std::string::npos) << metadata;
  fs::remove_all(dir);
}

// Guards against: a byte outside printable ASCII in the metadata written as
// a hex escape that swallows the hex digit after it ("caf\xc3\xa9" + "1":
// \xa91 is one escape in C and in TSDL), so babeltrace2 reads other bytes
// than the document's, or refuses the metadata.  The process's name is
// escaped before that, as thread names are (printable_name()).
TEST(ExportCtf, BytesOutsideAsciiInTheMetadataReadBackAsThemselves) {
  const std::string bt = ct::test::babeltrace2_path();
  if (bt.empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it): the CTF trace "
                    "cannot be read back";
  const std::string dir = temp_dir("bytes");
  ctr::ExportTimeline t;
  t.pid = 1;
  t.comm = "caf\xc3\xa9" "1";
  t.status = "caf\xc3\xa9" "1";
  auto w = ctr::ctf_writer(t, dir);
  ASSERT_TRUE(w) << w.error().message;
  ctr::ExportEvent e;
  e.tid = 1;
  e.kind = "USER";
  e.name = "X";
  e.age_ns = 0;
  ASSERT_TRUE((*w)->event(e).ok());
  ASSERT_TRUE((*w)->finish().ok());
  const std::string metadata = ct::test::slurp(dir + "/metadata");
  EXPECT_NE(metadata.find("status = \"caf\\303\\2511\";"), std::string::npos) << metadata;
  EXPECT_NE(metadata.find("procname = \"caf\\134xc3\\134xa91\";"), std::string::npos) << metadata;
  const auto r = ct::test::run({bt, "-c", "sink.text.details", dir});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("status: caf\xc3\xa9" "1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("procname: caf\\xc3\\xa91\n"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// Guards against: an untrusted "cause" of the wrong shape making the
// exporter throw, or a malformed claim kept; and a section with nothing in
// it exported as if it had a cause.
TEST(ExportDocument, ACauseOfTheWrongShapeKeepsOnlyWhatIsWellFormed) {
  for (const char *none : {R"({"cause": null})", R"({"cause": [1]})", R"({"cause": {"causes": 3}})",
                           R"({"cause": {"causes": [{"kind": 1, "says": "x"}, {"says": "y"}], "cannot_tell": [7]}})",
                           R"({})"}) {
    ctr::ExportTimeline t;
    EXPECT_NO_THROW(t = ctr::export_timeline_of_document(nlohmann::ordered_json::parse(none), {}));
    EXPECT_FALSE(t.cause) << none;
  }
  const auto some = nlohmann::ordered_json::parse(R"({"cause": {"causes": [7, {"kind": "bad_fd", "says": "s",
      "window": 5}, {"kind": "use_after_free", "says": "u", "window": "w"}], "cannot_tell": ["c", null]}})");
  const ctr::ExportTimeline t = ctr::export_timeline_of_document(some, {});
  ASSERT_TRUE(t.cause);
  ASSERT_EQ(t.cause->causes.size(), 2u);
  EXPECT_EQ(t.cause->causes[0].kind, "bad_fd");
  EXPECT_EQ(t.cause->causes[0].window, "");
  EXPECT_EQ(t.cause->causes[1].window, "w");
  EXPECT_EQ(t.cause->cannot_tell, std::vector<std::string>{"c"});
  EXPECT_EQ(ctr::cause_lines(*t.cause), "cause: s\ncause: u\n  relies on: w\ncause cannot be told: c\n");
}

// Guards against: the cause's words losing bytes or breaking a format on
// the way out: a quote, a backslash, a byte outside ASCII and a newline in
// the claim (an abort message is the program's own bytes) stay valid JSON
// in chrome-trace and readable CTF, escaped as the text escapes them.
TEST(ExportCtf, TheCauseIsAnEventBabeltrace2ReadsAndAnInstantInChromeTrace) {
  const std::string bt = ct::test::babeltrace2_path();
  if (bt.empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it): the CTF trace "
                    "cannot be read back";
  ctr::ExportTimeline t;
  t.pid = 5;
  t.origin_age_ns = -10;
  t.crash = ctr::ExportCrash{};
  t.crash->tid = 5;
  t.crash->signo = 6;
  t.crash->signal_name = "SIGABRT";
  t.cause = ctr::ExportCause{{{"abort_message", "abort message: \"q\" \\ caf\xc3\xa9\n", ""},
                              {"double_free", "double free: 0x10", "allocations are complete since tl_init (1.000ms)"}},
                             {"one undecided thing"}};
  ctr::ExportEvent e;
  e.tid = 5;
  e.kind = "USER";
  e.name = "X";
  e.age_ns = -10;
  std::string out;
  auto c = ctr::chrome_trace_writer(t, [&](std::string_view s) {
    out.append(s);
    return true;
  });
  ASSERT_TRUE(c->event(e).ok());
  ASSERT_TRUE(c->finish().ok());
  const json trace = json::parse(out);
  const json i = named(trace, "cause: abort_message", "i");
  ASSERT_TRUE(i.is_object()) << out;
  EXPECT_EQ(i["cat"], "CAUSE");
  EXPECT_EQ(i["s"], "p");
  EXPECT_EQ(i["tid"], 5);
  EXPECT_EQ(i["ts"], 0.01);  /* the time reference: 10 ns after the oldest event */
  EXPECT_EQ(i["args"]["says"], "abort message: \"q\" \\ caf\xc3\xa9\n");
  EXPECT_EQ(i["args"]["relies_on"], nullptr);
  EXPECT_EQ(i["args"]["causes"][1]["window"], "allocations are complete since tl_init (1.000ms)");
  EXPECT_EQ(i["args"]["cannot_tell"], json::array({"one undecided thing"}));
  EXPECT_EQ(trace["otherData"]["cause"]["causes"].size(), 2u);
  const std::string dir = temp_dir("cause");
  auto w = ctr::ctf_writer(t, dir);
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_TRUE((*w)->event(e).ok());
  ASSERT_TRUE((*w)->finish().ok());
  const auto r = ct::test::run({bt, "--clock-seconds", "--no-delta", dir});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  std::string bad;
  const auto events = ct::test::babeltrace2_events(r.out, &bad);
  EXPECT_EQ(bad, "");
  ASSERT_EQ(events.size(), 5u) << r.out;  // X, the CRASH from the notes, three CAUSE
  EXPECT_EQ(events[1].name, "CRASH");
  for (std::size_t n = 0; n < 3; ++n) {
    const auto &x = events[2 + n];
    EXPECT_EQ(x.name, "CAUSE") << x.line;
    EXPECT_EQ(x.ns, events[1].ns) << "at the crash";
    ASSERT_EQ(x.fields.size(), 5u) << x.line;
    EXPECT_EQ(x.fields[0], (std::pair<std::string, std::string>{"line", std::to_string(n)}));
    EXPECT_EQ(x.fields[1], (std::pair<std::string, std::string>{"lines", "3"}));
  }
  EXPECT_EQ(events[2].fields[2].second, "\"abort_message\"");
  /* printable()'s escapes, which babeltrace2 prints with its own. */
  EXPECT_NE(events[2].line.find(R"(says = "abort message: \"q\" \\ caf\\xc3\\xa9\\x0a")"), std::string::npos)
      << events[2].line;
  EXPECT_EQ(events[3].fields[4].second, "\"allocations are complete since tl_init (1.000ms)\"");
  EXPECT_EQ(events[4].fields[2].second, "\"cannot_tell\"");
  EXPECT_EQ(events[4].fields[3].second, "\"one undecided thing\"");
  const std::string metadata = ct::test::slurp(dir + "/metadata");
  EXPECT_NE(metadata.find("cause_1_kind = \"double_free\";"), std::string::npos) << metadata;
  EXPECT_NE(metadata.find("cause_1_relies_on = \"allocations are complete since tl_init (1.000ms)\";"),
            std::string::npos);
  EXPECT_EQ(metadata.find("cause_0_relies_on"), std::string::npos) << "the core alone: no window";
  EXPECT_NE(metadata.find("cause_cannot_tell_0 = \"one undecided thing\";"), std::string::npos);
  const auto d = ct::test::run({bt, "-c", "sink.text.details", dir});
  ASSERT_EQ(d.exit_code(), 0) << d.err;
  EXPECT_NE(d.out.find("cause_1: double free: 0x10\n"), std::string::npos) << d.out;
  fs::remove_all(dir);
  /* Without a cause: nothing of it. */
  t.cause.reset();
  out.clear();
  auto n = ctr::chrome_trace_writer(t, [&](std::string_view s) {
    out.append(s);
    return true;
  });
  ASSERT_TRUE(n->event(e).ok());
  ASSERT_TRUE(n->finish().ok());
  EXPECT_EQ(out.find("CAUSE"), std::string::npos) << out;
  EXPECT_FALSE(json::parse(out)["otherData"].contains("cause"));
}

// Guards against: a trace written over another one's streams.
TEST(ExportCtf, ANonEmptyDirectoryIsRefusedAndLeftAlone) {
  const std::string dir = temp_dir("full");
  fs::create_directories(dir);
  std::ofstream(dir + "/keep") << "mine";
  auto w = ctr::ctf_writer(ctr::export_timeline_of(hand_made()), dir);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ctr::Errc::kInvalidArgument);
  EXPECT_NE(w.error().message.find("exists and is not empty"), std::string::npos);
  EXPECT_EQ(ct::test::slurp(dir + "/keep"), "mine");
  fs::remove_all(dir);
  // An empty one is used.
  fs::create_directories(dir);
  EXPECT_TRUE(ctr::ctf_writer(ctr::export_timeline_of(hand_made()), dir));
  fs::remove_all(dir);
}

// Guards against: export options that are silently ignored or that clash.
TEST(ExportCli, FormatsAndOutputAreChecked) {
  const std::string r = CT_READER_BIN;
  const auto ctf = ct::test::run({r, "--format=ctf", "/nonexistent.core"});
  EXPECT_EQ(ctf.exit_code(), 7);
  EXPECT_NE(ctf.err.find("--format=ctf needs --output"), std::string::npos) << ctf.err;
  const auto clash = ct::test::run({r, "--json", "--format=chrome-trace", "/nonexistent.core"});
  EXPECT_EQ(clash.exit_code(), 7);
  EXPECT_NE(clash.err.find("--json is --format=json"), std::string::npos) << clash.err;
  const auto bogus = ct::test::run({r, "--format=perfetto", "/nonexistent.core"});
  EXPECT_EQ(bogus.exit_code(), 7);
  EXPECT_NE(bogus.err.find("--format"), std::string::npos) << bogus.err;
  // --json=--format=json, to a file: the same document.
  const std::string out = temp_dir("out.json");
  const auto a = ct::test::run({r, "--format=json", "--output", out, "/nonexistent.core"});
  const auto b = ct::test::run({r, "--json", "/nonexistent.core"});
  EXPECT_EQ(a.exit_code(), 3);
  EXPECT_EQ(b.exit_code(), 3);
  EXPECT_EQ(a.out, "");
  EXPECT_EQ(ct::test::slurp(out), b.out);
  // --output naming the CORE (through another name) is refused, and the
  // core is left as it was.
  const std::string core = temp_dir("a.core"), alias = temp_dir("alias.core");
  {
    std::ofstream(core) << "not a core, but an input all the same";
  }
  fs::create_symlink(core, alias);
  const auto self = ct::test::run({r, "--format=chrome-trace", "--output", alias, core});
  EXPECT_EQ(self.exit_code(), 7);
  EXPECT_NE(self.err.find("is an input"), std::string::npos) << self.err;
  EXPECT_EQ(ct::test::slurp(core), "not a core, but an input all the same");
  fs::remove(alias);
  fs::remove(core);
  fs::remove(out);
}

}  // namespace
