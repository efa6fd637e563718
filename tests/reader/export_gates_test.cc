// SPDX-License-Identifier: MIT
//
// The export checks on REAL kernel cores from the REAL
// systemd-coredump pipeline (tests/support/crash_harness.h), with the real
// third-party reader:
//  - babeltrace2 (Debian's) prints every event of crash_demo's CTF export
//    with the names, fields, threads, times and order of the reader's own
//    JSON document of the same core;
//  - the chrome-trace export of crash_demo, spans_three_threads (spans in
//    three threads) and big_ring_crasher with 8-slot lanes (it overwrites)
//    keeps the Trace Event Format's rules (trace_checks.h), places every
//    event at its age, draws each span with its state, and shows the
//    losses where they are;
//  - ctl-query export of a stored document (made as core-timelined makes
//    it: tests/ctl-query/test_timelines.h) is the reader's export, byte
//    for byte (chrome-trace) and event for event (ctf, read by babeltrace2).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "test_timelines.h"
#include "test_util.h"
#include "trace_checks.h"

using json = nlohmann::json;
using ct::test::Ran;
namespace fs = std::filesystem;

namespace {

const std::string kReader = CT_READER_BIN;
const std::string kCtlQuery = CT_CTL_QUERY;
const std::string kTlmap = CT_TLMAP;

struct Core {
  ct::test::CrashRun crash;
  json doc;  // the reader's --json document
};

Core crash(const std::vector<std::string> &argv) {
  Core c;
  c.crash = ct::test::run_and_collect_core(argv);
  const Ran r = ct::test::run({kReader, "--json", c.crash.core_path});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  c.doc = json::parse(r.out);
  return c;
}

std::string scratch_dir(const std::string &name) {
  const char *base = std::getenv("CT_TEST_CORE_DIR");
  fs::path p = fs::path(base ? base : "/tmp") / ("export-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

json chrome_trace(const std::string &core) {
  const Ran r = ct::test::run({kReader, "--format=chrome-trace", core});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out.substr(0, 2000);
  return doc;
}

std::string babeltrace2(const std::string &dir) {
  const std::string bt = ct::test::babeltrace2_path();
  const Ran r = ct::test::run({bt, "--clock-seconds", "--no-delta", dir});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  return r.out;
}

/* The TEF event of each timeline event, by (lane, seq). */
std::map<std::pair<std::uint64_t, std::uint64_t>, json> by_lane_seq(const json &trace) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, json> m;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] != "M" && e.contains("args") && e["args"].contains("seq"))
      m[{e["args"]["lane"].get<std::uint64_t>(), e["args"]["seq"].get<std::uint64_t>()}] = e;
  return m;
}

/* ts as the exporter writes it: (age - oldest age) us, 3 decimals. */
double ts_of(std::int64_t age, std::int64_t origin) { return static_cast<double>(age - origin) / 1000.0; }

std::int64_t oldest_age(const json &doc) {
  std::int64_t o = 0;
  for (const auto &e : doc["events"])
    if (e["age_ns"].is_number()) o = std::min(o, e["age_ns"].get<std::int64_t>());
  return o;
}

/* What every chrome-trace export must show of its document. */
void expect_trace_shows(const json &doc, const json &trace) {
  EXPECT_EQ(ct::test::tef_errors(trace), "");
  const std::int64_t origin = oldest_age(doc);
  const auto events = by_lane_seq(trace);
  const std::uint64_t pid = doc["process"]["pid"];
  for (const auto &e : doc["events"]) {
    ASSERT_TRUE(e["age_ns"].is_number()) << "the fixture's events all have ages: " << e.dump();
    const std::string kind = e["kind"];
    const json *span = e["span"].is_number() ? &doc["spans"][e["span"].get<std::size_t>()] : nullptr;
    const auto it = events.find({e["lane"], e["seq"]});
    if (kind == "SPAN_END" && span && (*span)["state"] != "begin_lost" && (*span)["state"] != "no_begin") {
      EXPECT_EQ(it, events.end()) << "a span's end is its slice's end, not an event: " << e.dump();
      continue;
    }
    ASSERT_NE(it, events.end()) << "not exported: " << e.dump();
    const json &t = it->second;
    EXPECT_EQ(t["name"], e["name"]);
    EXPECT_EQ(t["pid"], pid);
    EXPECT_EQ(t["tid"], e["tid"]);
    EXPECT_EQ(t["args"]["kind"], e["kind"]);
    EXPECT_DOUBLE_EQ(t["ts"].get<double>(), ts_of(e["age_ns"], origin)) << t.dump();
    const json &names = e["arg_names"];
    const std::string a0 = names.is_array() && names[0].is_string() ? names[0].get<std::string>() : "arg0";
    EXPECT_EQ(t["args"][a0], e["args"][0]) << t.dump();
    if (kind == "SPAN_BEGIN") {
      ASSERT_TRUE(span);
      EXPECT_EQ(t["args"]["state"], (*span)["state"]);
      EXPECT_EQ(t["ph"], "X") << t.dump();
      const json &dur = (*span)["state"] == "closed" ? (*span)["duration_ns"] : (*span)["open_for_ns"];
      EXPECT_DOUBLE_EQ(t["dur"].get<double>(), dur.get<double>() / 1000.0) << t.dump();
    } else if (kind == "CRASH") {
      EXPECT_EQ(t["ph"], "i");
      EXPECT_EQ(t["s"], "p");
      EXPECT_EQ(t["args"]["signal_name"], "SIGSEGV");
      EXPECT_EQ(t["args"]["signal"], 11);
      EXPECT_EQ(t["args"]["si_code_name"], "SEGV_MAPERR");
      EXPECT_EQ(t["args"]["fault_address"], "0x0");
    } else {
      EXPECT_EQ(t["ph"], "i");
      EXPECT_EQ(t["s"], "t");
    }
  }
  // Threads are named tracks, with their names from the ring.
  std::map<std::uint64_t, json> thread_meta;
  for (const auto &t : trace["traceEvents"])
    if (t["ph"] == "M" && t["name"] == "thread_name") thread_meta[t["tid"]] = t["args"];
  for (const auto &th : doc["threads"]) {
    ASSERT_TRUE(thread_meta.count(th["tid"])) << th.dump();
    const std::string expected = th["name"].is_string() && !th["name"].get<std::string>().empty()
                                     ? th["name"].get<std::string>()
                                     : "tid " + std::to_string(th["tid"].get<std::uint64_t>());
    EXPECT_EQ(thread_meta[th["tid"]]["name"], expected);
  }
  EXPECT_EQ(trace["otherData"]["events"], doc["events"].size());
  EXPECT_EQ(trace["otherData"]["events_without_time"], 0);
}

// Guards against: a CTF trace babeltrace2 cannot read, or reads with
// other names, fields, threads, times or order than the reader's own
// document says.
TEST(ExportGates, Babeltrace2PrintsEveryEventOfCrashDemoAsTheJsonDocumentHasIt) {
  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it): the CTF export "
                    "cannot be read back";
  const Core c = crash({CT_CRASH_DEMO, "--path=a"});
  const std::string dir = scratch_dir("ctf-demo");
  const Ran r = ct::test::run({kReader, "--format=ctf", "--output", dir, c.crash.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  std::string bad;
  const auto bt = ct::test::babeltrace2_events(babeltrace2(dir), &bad);
  EXPECT_EQ(bad, "");
  const json &events = c.doc["events"];
  ASSERT_EQ(bt.size(), events.size());
  // Each thread's events in its exact order; across threads by time.
  std::map<std::uint64_t, std::vector<const json *>> doc_by_tid;
  std::map<std::uint64_t, std::vector<const ct::test::BtEvent *>> bt_by_tid;
  for (const auto &e : events) doc_by_tid[e["tid"]].push_back(&e);
  for (const auto &e : bt) bt_by_tid[e.tid].push_back(&e);
  ASSERT_EQ(doc_by_tid.size(), bt_by_tid.size());
  const std::int64_t origin = oldest_age(c.doc);
  const std::int64_t zero = bt.front().ns;  // the oldest event is time 0
  std::map<std::uint64_t, std::string> names;
  for (const auto &th : c.doc["threads"]) names[th["tid"]] = th["name"];
  for (const auto &[tid, des] : doc_by_tid) {
    const auto &bes = bt_by_tid[tid];
    ASSERT_EQ(des.size(), bes.size()) << "tid " << tid;
    for (std::size_t i = 0; i < des.size(); ++i) {
      const json &e = *des[i];
      const ct::test::BtEvent &b = *bes[i];
      SCOPED_TRACE(b.line);
      EXPECT_EQ(b.name, e["name"].get<std::string>());
      EXPECT_EQ(b.thread_name, names[tid]);
      EXPECT_EQ(b.ns - zero, e["age_ns"].get<std::int64_t>() - origin);
      std::map<std::string, std::string> f(b.fields.begin(), b.fields.end());
      const json &an = e["arg_names"];
      const std::string a0 = an.is_array() && an[0].is_string() ? an[0].get<std::string>() : "arg0";
      const std::string a1 = an.is_array() && an[1].is_string() ? an[1].get<std::string>() : "arg1";
      EXPECT_EQ(f[a0], std::to_string(e["args"][0].get<std::uint64_t>()));
      EXPECT_EQ(f[a1], std::to_string(e["args"][1].get<std::uint64_t>()));
      std::size_t expected_fields = 2;
      if (e.contains("inline_text")) {
        EXPECT_EQ(f["text"], "\"" + e["inline_text"].get<std::string>() + "\"");
        ++expected_fields;
      }
      if (e["span"].is_number()) {
        EXPECT_EQ(f["span_state"], "\"" + c.doc["spans"][e["span"].get<std::size_t>()]["state"].get<std::string>() + "\"");
        ++expected_fields;
      }
      if (e["kind"] == "CRASH") {
        EXPECT_EQ(f["signal_name"], "\"SIGSEGV\"");
        EXPECT_EQ(f["signal"], "11");
        EXPECT_EQ(f["si_code_name"], "\"SEGV_MAPERR\"");
        EXPECT_EQ(f["fault_address"], "0x0");
        expected_fields += 5;
      }
      const bool whole = e["kind"] == "CRASH" && e["tid"] == c.doc["crash"]["tid"] && c.doc["crash"]["stack"].is_object();
      if (e.contains("stack")) {
        /* Ring format 4 (docs/export.md, "Stacks"): the walk's end and the
         * frames, the event's own location first; the crashing thread's
         * CRASH has the whole crash stack instead, and where each frame came
         * from ("The crash's whole stack"). */
        EXPECT_EQ(f["stack_end"], "\"" + e["stack"]["end"].get<std::string>() + "\"");
        EXPECT_EQ(f["stack_depth"], std::to_string(whole ? c.doc["crash"]["stack"]["frames"].size()
                                                         : e["stack"]["frames"].size() + 1));
        EXPECT_EQ(f["stack"].front(), '[') << f["stack"];
        EXPECT_EQ(f["stack_frames"].front(), '[') << f["stack_frames"];
        expected_fields += 4;
      }
      if (whole) {
        EXPECT_EQ(f["stack_from"].front(), '[') << f["stack_from"];
        EXPECT_EQ(f["core_end"], "\"complete\"");
        EXPECT_EQ(f["stack_agree"], std::to_string(c.doc["crash"]["stack"]["agree"].get<std::uint64_t>()));
        expected_fields += 4;
      }
      EXPECT_EQ(b.fields.size(), expected_fields);
    }
  }
  for (std::size_t i = 1; i < bt.size(); ++i) EXPECT_LE(bt[i - 1].ns, bt[i].ns) << bt[i].line;
  // crash_demo --path=a's story, in babeltrace2's words.
  std::vector<std::string> story;
  for (const auto &b : bt)
    if (b.name != "LANE_CLAIM") story.push_back(b.name);
  EXPECT_EQ(story, (std::vector<std::string>{"REQUEST", "REQ_PARSE", "FREE", "BEFORE_DIE", "CRASH"}));
}

// Guards against: a trace Perfetto or speedscope misreads (an event
// without ts/pid/tid, a B without E, a thread without a name), an event
// at another time than its age, a span drawn without its state.
TEST(ExportGates, ChromeTraceOfCrashDemoKeepsTheTraceEventFormat) {
  const Core c = crash({CT_CRASH_DEMO, "--path=a"});
  const json trace = chrome_trace(c.crash.core_path);
  expect_trace_shows(c.doc, trace);
  EXPECT_EQ(trace["otherData"]["lost"], 0);
}

TEST(ExportGates, ChromeTraceOfThreeThreadsShowsEachSpanWithItsState) {
  const Core c = crash({CT_SPANS_THREE_THREADS});
  const json trace = chrome_trace(c.crash.core_path);
  expect_trace_shows(c.doc, trace);
  std::map<std::string, std::string> state;
  std::set<std::uint64_t> tids;
  for (const auto &t : trace["traceEvents"]) {
    if (t["ph"] == "X") state[t["name"]] = t["args"]["state"];
    if (t["ph"] != "M") tids.insert(t["tid"].get<std::uint64_t>());
  }
  EXPECT_EQ(state["OUTER"], "open");
  EXPECT_EQ(state["INNER"], "open");
  EXPECT_EQ(state["WAIT"], "open");
  EXPECT_EQ(state["STEP"], "closed");
  EXPECT_EQ(state["HANDOFF"], "closed");
  EXPECT_EQ(tids.size(), 4u) << "main, waiter, closer, crasher";
}

// Guards against: losses that vanish in the export.  8-slot lanes of two
// workers that write 100 events each: each lane overwrote 92 or more.
TEST(ExportGates, ChromeTraceAndCtfShowTheLossesOnTheTrackTheyHit) {
  const Core c = crash({CT_BIG_RING_CRASHER, "2", "8", "100"});
  const json trace = chrome_trace(c.crash.core_path);
  expect_trace_shows(c.doc, trace);
  // The losses of each lane, by the thread of its oldest kept event.
  std::map<std::uint64_t, std::uint64_t> lost;
  std::uint64_t total = 0;
  for (const auto &ring : c.doc["rings"])
    for (const auto &l : ring["lanes"]) {
      const std::uint64_t n = l["overwritten"].get<std::uint64_t>() + l["torn"].get<std::uint64_t>() +
                              l["invalid"].get<std::uint64_t>() + l["missing"].get<std::uint64_t>();
      total += n;
      if (n == 0) continue;
      for (const auto &e : c.doc["events"])
        if (e["lane"] == l["lane"]) {
          lost[e["tid"]] += n;
          break;
        }
    }
  ASSERT_GE(lost.size(), 2u) << "both workers' lanes overwrote";
  EXPECT_EQ(trace["otherData"]["lost"], total);
  std::map<std::uint64_t, json> meta;
  std::map<std::uint64_t, json> marker;
  std::map<std::uint64_t, double> first_ts;
  for (const auto &t : trace["traceEvents"]) {
    if (t["ph"] == "M" && t["name"] == "thread_name") meta[t["tid"]] = t["args"];
    if (t.value("cat", "") == "LOSS") marker[t["tid"]] = t;
    else if (t["ph"] != "M" && (!first_ts.count(t["tid"]) || t["ts"].get<double>() < first_ts[t["tid"]]))
      first_ts[t["tid"]] = t["ts"];
  }
  for (const auto &[tid, n] : lost) {
    SCOPED_TRACE("tid " + std::to_string(tid));
    EXPECT_EQ(meta[tid]["lost"], n);
    ASSERT_TRUE(marker.count(tid));
    EXPECT_EQ(marker[tid]["name"], std::to_string(n) + " events lost before this");
    EXPECT_EQ(marker[tid]["ts"].get<double>(), first_ts[tid]);
  }
  EXPECT_TRUE(trace["otherData"]["absence_proves_nothing"].get<bool>());

  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it): the CTF "
                    "events_discarded cannot be read back";
  const std::string dir = scratch_dir("ctf-lossy");
  const Ran r = ct::test::run({kReader, "--format=ctf", "--output", dir, c.crash.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const Ran bt = ct::test::run({ct::test::babeltrace2_path(), dir});
  ASSERT_EQ(bt.exit_code(), 0) << bt.err;
  for (const auto &[tid, n] : lost)
    EXPECT_NE(bt.err.find("Tracer discarded " + std::to_string(n) + " events between") , std::string::npos)
        << "tid " << tid << ": " << bt.err;
}

// Guards against: a second exporter in ctl-query, or a stored document
// exported otherwise than the core it was made from.
TEST(ExportGates, CtlQueryExportsTheStoredDocumentAsTheReaderExportsItsCore) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_SPANS_THREE_THREADS});
  const auto t = ct::test::ctlq::build_test_timeline(run, kReader, kTlmap);
  const std::string dir = scratch_dir("stored");
  fs::create_directories(dir);
  ct::test::ctlq::write_test_timeline(dir, t);
  const std::string pid = std::to_string(run.pid);

  const Ran reader = ct::test::run({kReader, "--tlmap", kTlmap, "--format=chrome-trace", run.core_path});
  ASSERT_EQ(reader.exit_code(), 0) << reader.err;
  const Ran q = ct::test::run({kCtlQuery, "-D", dir, "export", "--format=chrome-trace", pid});
  ASSERT_EQ(q.exit_code(), 0) << q.err;
  EXPECT_EQ(q.out, reader.out);
  EXPECT_EQ(ct::test::tef_errors(json::parse(q.out)), "");

  const std::string out_file = dir + "/trace.json";
  const Ran qf = ct::test::run({kCtlQuery, "-D", dir, "export", "--format=chrome-trace", "--output",
                                         out_file, pid});
  ASSERT_EQ(qf.exit_code(), 0) << qf.err;
  EXPECT_EQ(ct::test::slurp(out_file), reader.out);

  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it)";
  const std::string from_reader = scratch_dir("ctf-reader"), from_query = scratch_dir("ctf-query");
  ASSERT_EQ(ct::test::run({kReader, "--tlmap", kTlmap, "--format=ctf", "--output", from_reader, run.core_path})
                .exit_code(),
            0);
  const Ran qc = ct::test::run({kCtlQuery, "-D", dir, "export", "--format=ctf", "--output", from_query, pid});
  ASSERT_EQ(qc.exit_code(), 0) << qc.err;
  const std::string a = babeltrace2(from_reader), b = babeltrace2(from_query);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  // An existing directory that is not empty is refused, and left alone.
  const Ran again = ct::test::run({kCtlQuery, "-D", dir, "export", "--format=ctf", "--output", from_query, pid});
  EXPECT_EQ(again.exit_code(), 2);
  EXPECT_NE(again.err.find("exists and is not empty"), std::string::npos) << again.err;
  EXPECT_EQ(babeltrace2(from_query), b);
}

// ---------------------------------------------------------------------
// The crash's whole stack (the CRASH walk merged with the reader's unwind
// of the core: the document's crash.stack) and the re-raised fault
// (crash.reraised) in every export and in ctl-query info.

/* A crash stack frame's function as the document names it, "" when none. */
std::string function_of(const json &frame) {
  return frame["function"].is_string() ? frame["function"].get<std::string>() : std::string();
}

/* The frames of a chrome-trace "sf", innermost first, through the
 * stackFrames tree's parents. */
std::vector<json> sf_chain(const json &trace, const json &sf) {
  std::vector<json> chain;
  if (!trace.contains("stackFrames") || sf.is_null()) return chain;
  std::string id = sf.is_string() ? sf.get<std::string>() : std::to_string(sf.get<std::int64_t>());
  while (!id.empty() && chain.size() < 10000) {
    if (!trace["stackFrames"].contains(id)) break;
    const json &f = trace["stackFrames"][id];
    chain.push_back(f);
    id = f.contains("parent") ? f["parent"].get<std::string>() : std::string();
  }
  return chain;
}

/* The crash's stack as the export must carry it: the document's frames. */
void expect_chrome_crash_stack(const json &doc, const json &trace, const std::string &who) {
  SCOPED_TRACE(who);
  const json &crash = doc["crash"];
  const json &frames = crash["stack"]["frames"];
  const json *ev = nullptr;
  for (const auto &t : trace["traceEvents"])
    if (t.value("cat", "") == "CRASH" && t["tid"] == crash["tid"]) ev = &t;
  ASSERT_NE(ev, nullptr) << "no CRASH instant on the crashing thread's track";
  // The stack frame tree: every frame, innermost first, each with where it
  // came from.
  ASSERT_TRUE(ev->contains("sf")) << ev->dump();
  const std::vector<json> chain = sf_chain(trace, (*ev)["sf"]);
  ASSERT_EQ(chain.size(), frames.size()) << ev->dump();
  for (std::size_t i = 0; i < chain.size(); ++i) {
    SCOPED_TRACE("frame #" + std::to_string(i) + " " + chain[i].dump());
    EXPECT_EQ(chain[i].value("from", ""), frames[i]["from"]);
    if (!function_of(frames[i]).empty()) {
      EXPECT_EQ(chain[i]["name"].get<std::string>().rfind(function_of(frames[i]) + "+0x", 0), 0u);
    }
  }
  // The details panel (Perfetto shows args, not stackFrames): one line a
  // frame, each saying where it came from.
  const json &args = (*ev)["args"];
  ASSERT_TRUE(args.contains("crash_stack")) << args.dump();
  const json &lines = args["crash_stack"]["frames"];
  ASSERT_EQ(lines.size(), frames.size()) << args.dump(2);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string l = lines[i];
    EXPECT_EQ(l.rfind("#" + std::to_string(i) + " ", 0), 0u) << l;
    EXPECT_NE(l.find(frames[i]["address"].get<std::string>().substr(2)), std::string::npos) << l;
    EXPECT_EQ(l.substr(l.size() - frames[i]["from"].get<std::string>().size() - 4),
              "  [" + frames[i]["from"].get<std::string>() + "]")
        << l;
  }
  if (crash["reraised"].is_object()) {
    ASSERT_TRUE(args.contains("reraised")) << args.dump(2);
    EXPECT_EQ(args["reraised"]["si_code_name"], crash["reraised"]["si_code_name"]);
    EXPECT_EQ(args["reraised"]["fault_address"], crash["reraised"]["fault_address"]);
    EXPECT_EQ(args["reraised"]["pc"], crash["reraised"]["pc"]);
    EXPECT_EQ(args["reraised"]["raised_with"], crash["reraised"]["raised_with"]);
  }
}

/* The elements of a babeltrace2 array as printed: [ [0] = "a", [1] = "b" ]. */
std::vector<std::string> bt_array(const std::string &v) {
  std::vector<std::string> out;
  const std::regex element(R"(\[\d+\] = ("(?:[^"\\]|\\.)*"|[^,\] ]+))");
  for (auto it = std::sregex_iterator(v.begin(), v.end(), element); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

void expect_ctf_crash_stack(const json &doc, const std::string &dir, const std::string &who) {
  SCOPED_TRACE(who);
  std::string bad;
  const auto bt = ct::test::babeltrace2_events(babeltrace2(dir), &bad);
  EXPECT_EQ(bad, "");
  const json &crash = doc["crash"];
  const json &frames = crash["stack"]["frames"];
  const ct::test::BtEvent *ev = nullptr;
  for (const auto &b : bt)
    if (b.name == "CRASH" && b.tid == crash["tid"].get<std::uint64_t>()) ev = &b;
  ASSERT_NE(ev, nullptr) << "no CRASH event in the crashing thread's stream";
  std::map<std::string, std::string> f(ev->fields.begin(), ev->fields.end());
  SCOPED_TRACE(ev->line);
  EXPECT_EQ(f["stack_depth"], std::to_string(frames.size()));
  const auto addresses = bt_array(f["stack"]), from = bt_array(f["stack_from"]), names = bt_array(f["stack_frames"]);
  ASSERT_EQ(addresses.size(), frames.size());
  ASSERT_EQ(from.size(), frames.size());
  ASSERT_EQ(names.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(std::stoull(addresses[i], nullptr, 16), std::stoull(frames[i]["address"].get<std::string>(), nullptr, 16));
    EXPECT_EQ(from[i], "\"" + frames[i]["from"].get<std::string>() +
                           (frames[i]["signal_frame"].get<bool>() ? " signal_frame" : "") + "\"");
    if (!function_of(frames[i]).empty()) {
      EXPECT_EQ(names[i].rfind("\"" + function_of(frames[i]) + "+0x", 0), 0u);
    }
  }
  if (crash["reraised"].is_object()) {
    EXPECT_EQ(f["reraised_si_code_name"], "\"" + crash["reraised"]["si_code_name"].get<std::string>() + "\"");
    EXPECT_EQ(f["reraised_fault_address"], crash["reraised"]["fault_address"]);
    EXPECT_EQ(f["reraised_with"], "\"" + crash["reraised"]["raised_with"].get<std::string>() + "\"");
  }
}

/* ctl-query info of the stored timeline: the fault, the re-raised fault,
 * and "Stack trace of thread N:" with every frame and where it came from. */
void expect_info_crash_stack(const json &doc, const std::string &dir, const std::string &pid) {
  const Ran q = ct::test::run({kCtlQuery, "-D", dir, "info", pid});
  ASSERT_EQ(q.exit_code(), 0) << q.err;
  const json &crash = doc["crash"];
  const json &frames = crash["stack"]["frames"];
  const std::string head = "Stack trace of thread " + std::to_string(crash["tid"].get<std::uint64_t>()) + ":\n";
  const std::size_t at = q.out.find(head);
  ASSERT_NE(at, std::string::npos) << q.out;
  std::istringstream in(q.out.substr(at + head.size()));
  std::string line;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    ASSERT_TRUE(std::getline(in, line)) << q.out;
    SCOPED_TRACE(line);
    const std::string from = frames[i]["from"];
    EXPECT_TRUE(std::regex_search(line, std::regex("^ {16}#" + std::to_string(i) + " +0x0*" +
                                                   frames[i]["address"].get<std::string>().substr(2) + " ")));
    if (!function_of(frames[i]).empty()) {
      EXPECT_NE(line.find(" " + function_of(frames[i]) + "+0x"), std::string::npos);
    }
    EXPECT_EQ(line.substr(line.size() - from.size() - 4), "  [" + from + "]");
  }
  // --json: the document's crash and thread_stacks, as stored.
  const Ran qj = ct::test::run({kCtlQuery, "-D", dir, "--json", "info", pid});
  ASSERT_EQ(qj.exit_code(), 0) << qj.err;
  const json j = json::parse(qj.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << qj.out;
  EXPECT_EQ(j["crash"], crash);
  if (crash["reraised"].is_object()) {
    EXPECT_NE(q.out.find("   Re-raised: " + crash["reraised"]["signal_name"].get<std::string>() + " (" +
                         crash["reraised"]["si_code_name"].get<std::string>() + ") at addr=" +
                         crash["reraised"]["fault_address"].get<std::string>()),
              std::string::npos)
        << q.out;
  }
}

/* The whole check: the reader's exports of the core, and ctl-query's
 * export and info of its stored document. */
void expect_crash_stack_everywhere(const ct::test::CrashRun &run, const std::string &name) {
  const auto t = ct::test::ctlq::build_test_timeline(run, kReader, kTlmap);
  const json doc = json::parse(t.document.dump());
  ASSERT_TRUE(doc["crash"]["stack"].is_object()) << doc["crash"].dump(2);
  const json &frames = doc["crash"]["stack"]["frames"];
  // Deeper than the 8 frames the CRASH walk used to stop at, with frames
  // only the core's unwind holds.
  ASSERT_GT(frames.size(), 8u);
  std::size_t core_only = 0;
  for (const auto &f : frames) core_only += f["from"] == "core" ? 1 : 0;
  ASSERT_GT(core_only, 0u);

  const std::string dir = scratch_dir("stack-" + name);
  fs::create_directories(dir);
  ct::test::ctlq::write_test_timeline(dir, t);
  const std::string pid = std::to_string(run.pid);

  const Ran reader = ct::test::run({kReader, "--tlmap", kTlmap, "--format=chrome-trace", run.core_path});
  ASSERT_EQ(reader.exit_code(), 0) << reader.err;
  const json trace = json::parse(reader.out);
  EXPECT_EQ(ct::test::tef_errors(trace), "");
  expect_chrome_crash_stack(doc, trace, "core-timeline-read --format=chrome-trace");
  const Ran q = ct::test::run({kCtlQuery, "-D", dir, "export", "--format=chrome-trace", pid});
  ASSERT_EQ(q.exit_code(), 0) << q.err;
  expect_chrome_crash_stack(doc, json::parse(q.out), "ctl-query export --format=chrome-trace");
  EXPECT_EQ(q.out, reader.out);

  expect_info_crash_stack(doc, dir, pid);

  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it)";
  const std::string from_reader = scratch_dir("stack-ctf-reader-" + name);
  ASSERT_EQ(ct::test::run({kReader, "--tlmap", kTlmap, "--format=ctf", "--output", from_reader, run.core_path})
                .exit_code(),
            0);
  expect_ctf_crash_stack(doc, from_reader, "core-timeline-read --format=ctf");
  const std::string from_query = scratch_dir("stack-ctf-query-" + name);
  const Ran qc = ct::test::run({kCtlQuery, "-D", dir, "export", "--format=ctf", "--output", from_query, pid});
  ASSERT_EQ(qc.exit_code(), 0) << qc.err;
  expect_ctf_crash_stack(doc, from_query, "ctl-query export --format=ctf");
}

// Guards against: an export or ctl-query that shows only the CRASH walk's
// frames (or, with no CRASH event, no stack at all) and loses the fault the
// program's own handler re-raised.  reraise_fixture's handler replaced
// libtimeline's and re-raised with raise(): no CRASH event, every frame the
// core's, through the kernel's signal frame.
TEST(ExportGates, TheReraisedFaultAndItsWholeStackReachEveryExportAndCtlQueryInfo) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_RERAISE_FIXTURE, "raise"});
  expect_crash_stack_everywhere(run, "reraise");
}

// python3 crashing in ctypes under the preload: a CRASH event whose walk
// ends in libffi, merged with the core's unwind down to Py_BytesMain.
TEST(ExportGates, ACrashStackFromTheRingAndTheCoreReachesEveryExportAndCtlQueryInfo) {
  ct::test::CrashOptions opts;
  opts.env["LD_PRELOAD"] = CT_TIMELINE_SO;
  const ct::test::CrashRun run =
      ct::test::run_and_collect_core({"/usr/bin/python3", "-c", "import ctypes; ctypes.string_at(0)"}, opts);
  expect_crash_stack_everywhere(run, "python3");
}

// --all-threads: each other thread's stack unwound from the core is on its
// track (chrome-trace) and in its stream (ctf), at the crash.
TEST(ExportGates, OtherThreadsStacksReachBothExports) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_RERAISE_FIXTURE, "thread"});
  const Ran r = ct::test::run({kReader, "--json", "--all-threads", run.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_FALSE(doc["thread_stacks"].empty());
  const Ran c = ct::test::run({kReader, "--format=chrome-trace", "--all-threads", run.core_path});
  ASSERT_EQ(c.exit_code(), 0) << c.err;
  const json trace = json::parse(c.out);
  EXPECT_EQ(ct::test::tef_errors(trace), "");
  for (const auto &ts : doc["thread_stacks"]) {
    SCOPED_TRACE("tid " + ts["tid"].dump());
    const json *ev = nullptr;
    for (const auto &t : trace["traceEvents"])
      if (t.value("cat", "") == "STACK" && t["tid"] == ts["tid"]) ev = &t;
    ASSERT_NE(ev, nullptr);
    const std::vector<json> chain = sf_chain(trace, (*ev)["sf"]);
    ASSERT_EQ(chain.size(), ts["frames"].size());
    for (const auto &f : chain) EXPECT_EQ(f.value("from", ""), "core");
  }
  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it)";
  const std::string dir = scratch_dir("thread-stacks");
  ASSERT_EQ(ct::test::run({kReader, "--format=ctf", "--all-threads", "--output", dir, run.core_path}).exit_code(), 0);
  std::string bad;
  const auto bt = ct::test::babeltrace2_events(babeltrace2(dir), &bad);
  EXPECT_EQ(bad, "");
  for (const auto &ts : doc["thread_stacks"]) {
    const ct::test::BtEvent *ev = nullptr;
    for (const auto &b : bt)
      if (b.name == "THREAD_STACK" && b.tid == ts["tid"].get<std::uint64_t>()) ev = &b;
    ASSERT_NE(ev, nullptr) << "tid " << ts["tid"];
    std::map<std::string, std::string> f(ev->fields.begin(), ev->fields.end());
    EXPECT_EQ(f["stack_depth"], std::to_string(ts["frames"].size())) << ev->line;
  }
}

}  // namespace
