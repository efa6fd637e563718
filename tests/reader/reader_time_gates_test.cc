// SPDX-License-Identifier: MIT
//
// The acceptance checks of issue 13 on REAL cores from the REAL
// systemd-coredump pipeline (tests/support/crash_harness.h), read by the
// real core-timeline-read with no tlmap:
//
//  - the outside clock: clock_check (tests/lib/clock_check.c) prints its own
//    CLOCK_MONOTONIC reading at each mark; the reader's ages, from the
//    core alone, must agree with them.  Also for a process that crashes
//    within 1 ms of its start (--fast: no helper-thread anchor), whose
//    rate comes from the init and crash anchors only;
//  - spans and names: spans_three_threads (tests/lib/spans_three_threads.c),
//    one thread crashing inside two nested open spans, one with a span
//    open, one with only closed spans, and a span ended by another thread;
//  - bad settings: a TL_SLOTS that makes no ring, or is no number, gives a
//    core the reader reports as ring_not_made with libtimeline's reason,
//    never as "did not run with libtimeline"; TL_DISABLE=1 stops only the
//    constructor, so a program that calls tl_init still has its ring.
//
// This checks correctness, not speed: the bound is loose enough for a
// noisy VM (a fixture can be preempted between its mark and its
// clock_gettime), and stated with each check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "test_util.h"

using json = nlohmann::json;

namespace {

const std::string kReader = CT_READER_BIN;

json read_json(const std::string &core) {
  const auto r = ct::testing::run({kReader, "--json", core}, 1ull << 30);
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  EXPECT_EQ(ct::testing::schema_errors(r.out), "");
  return doc;
}

std::string read_text(const std::string &core) { return ct::testing::run({kReader, core}, 1ull << 30).out; }

bool has(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

/* Runs `argv` with its stdout in a file (sh execs it: the same pid
 * crashes) and returns the crash and that output. */
struct Crashed {
  ct::test::CrashRun run;
  std::string out;
};
Crashed crash_capturing_stdout(const std::vector<std::string> &argv) {
  char tmpl[] = "/tmp/ct-clock-out-XXXXXX";
  const int fd = mkstemp(tmpl);
  EXPECT_GE(fd, 0);
  close(fd);
  std::string cmd = "exec";
  for (const auto &a : argv) cmd += " '" + a + "'";
  cmd += std::string(" > '") + tmpl + "'";
  Crashed c;
  c.run = ct::test::run_and_collect_core({"/bin/sh", "-c", cmd});
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  c.out = ss.str();
  unlink(tmpl);
  return c;
}

/* index -> CLOCK_MONOTONIC ns, from "mark 0x6001 INDEX MONO_NS" lines. */
std::map<std::uint64_t, std::int64_t> marks_of(const std::string &out) {
  std::map<std::uint64_t, std::int64_t> m;
  std::istringstream in(out);
  for (std::string word, id; in >> word;) {
    if (word != "mark") continue;
    std::uint64_t index = 0;
    std::int64_t mono = 0;
    in >> id >> index >> mono;
    m[index] = mono;
  }
  return m;
}

/* index -> age_ns of the CLOCK_MARK events in the document. */
std::map<std::uint64_t, std::int64_t> ages_of(const json &doc) {
  std::map<std::uint64_t, std::int64_t> m;
  for (const auto &e : doc["events"])
    if (e["name"] == "CLOCK_MARK" && !e["age_ns"].is_null())
      m[e["args"][0].get<std::uint64_t>()] = e["age_ns"].get<std::int64_t>();
  return m;
}

/* The reader's delta between marks and the fixture's own, within 1% of the
 * interval (the rate's bound is ~0.05%) plus 2 ms for preemption between a
 * mark and its clock_gettime on a shared VM. */
void expect_deltas_agree(const std::map<std::uint64_t, std::int64_t> &mono,
                         const std::map<std::uint64_t, std::int64_t> &age) {
  ASSERT_GE(mono.size(), 2u);
  ASSERT_EQ(age.size(), mono.size()) << "every mark must be placed in time";
  const auto first = mono.begin()->first;
  for (const auto &[index, ns] : mono) {
    const std::int64_t outside = ns - mono.at(first);
    const std::int64_t inside = age.at(index) - age.at(first);
    const double bound = 2e6 + 0.01 * static_cast<double>(std::llabs(outside));
    EXPECT_LE(std::fabs(static_cast<double>(inside - outside)), bound)
        << "mark " << index << ": the fixture's clock says +" << outside << " ns, the reader's ages +" << inside;
  }
}

}  // namespace

TEST(OutsideClock, AgesAgreeWithTheProcesssOwnMonotonicClock) {
  const Crashed c = crash_capturing_stdout({CT_CLOCK_CHECK});
  const auto mono = marks_of(c.out);
  ASSERT_EQ(mono.size(), 4u) << c.out;
  const json doc = read_json(c.run.core_path);
  ASSERT_EQ(doc["status"], "ok");
  EXPECT_EQ(doc["time"]["reference"], "crash");
  EXPECT_EQ(doc["time"]["rate_from"], "init_and_crash_anchors");
  ASSERT_TRUE(doc["time"]["rate_error"].is_number());
  EXPECT_LT(doc["time"]["rate_error"].get<double>(), 0.01);
  expect_deltas_agree(mono, ages_of(doc));
  /* The marks are 0, 20, 50, 120 ms apart: the last is before the crash,
   * the first 120 ms before it, give or take the bound. */
  const auto age = ages_of(doc);
  EXPECT_LT(age.rbegin()->second, 0);
  EXPECT_NEAR(static_cast<double>(age.begin()->second - age.rbegin()->second), -120e6, 2e6 + 1.2e6);
  const std::string text = read_text(c.run.core_path);
  EXPECT_TRUE(has(text, "time: ages relative to the CRASH event")) << text;
}

TEST(OutsideClock, AProcessThatCrashesWithinAMillisecondHasItsTimesFromTheCoreAlone) {
  const Crashed c = crash_capturing_stdout({CT_CLOCK_CHECK, "--fast"});
  const auto mono = marks_of(c.out);
  ASSERT_GE(mono.size(), 2u) << c.out;
  const json doc = read_json(c.run.core_path);
  ASSERT_EQ(doc["status"], "ok");
  /* No helper refresh could have happened: the crash anchor is all. */
  EXPECT_EQ(doc["time"]["rate_from"], "init_and_crash_anchors") << doc["time"].dump();
  ASSERT_TRUE(doc["time"]["ticks_per_second"].is_number()) << doc["time"].dump();
  for (const auto &e : doc["events"]) EXPECT_FALSE(e["age_ns"].is_null()) << e.dump();
  expect_deltas_agree(mono, ages_of(doc));
  /* Within 1 ms of its start: the first event (its lane claim, at
   * tl_init) is less than 1 ms before the crash, by the core's clock. */
  const auto &events = doc["events"];
  ASSERT_FALSE(events.empty());
  EXPECT_GT(events[0]["age_ns"].get<std::int64_t>(), -1'000'000) << events[0].dump();
}

TEST(Spans, ThreeThreadsShowTheirOpenAndClosedSpansWithNamesFromTheCore) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_SPANS_THREE_THREADS});
  const json doc = read_json(run.core_path);
  ASSERT_EQ(doc["status"], "ok");
  const auto &spans = doc["spans"];
  const auto name_of = [&](const json &i) { return spans[i.get<std::size_t>()]["name"].get<std::string>(); };
  std::map<std::string, json> thread;
  for (const auto &t : doc["threads"])
    if (t["name"].is_string()) thread[t["name"].get<std::string>()] = t;
  ASSERT_TRUE(thread.count("crasher") && thread.count("waiter") && thread.count("closer")) << doc["threads"].dump();

  /* The crasher: inside OUTER > INNER, both open, INNER inside OUTER. */
  const json &crasher = thread["crasher"];
  EXPECT_TRUE(crasher["crashed"].get<bool>());
  ASSERT_EQ(crasher["open_spans"].size(), 2u) << crasher.dump();
  EXPECT_EQ(name_of(crasher["open_spans"][0]), "OUTER");
  EXPECT_EQ(name_of(crasher["open_spans"][1]), "INNER");
  EXPECT_EQ(doc["crash"]["inside_spans"], crasher["open_spans"]);
  const json &inner = spans[crasher["open_spans"][1].get<std::size_t>()];
  EXPECT_EQ(inner["parent"], crasher["open_spans"][0]);
  EXPECT_EQ(inner["state"], "open");
  EXPECT_GT(inner["open_for_ns"].get<std::int64_t>(), 0);

  /* The waiter: WAIT open, for longer than the crasher's INNER. */
  const json &waiter = thread["waiter"];
  ASSERT_EQ(waiter["open_spans"].size(), 1u) << waiter.dump();
  const json &wait = spans[waiter["open_spans"][0].get<std::size_t>()];
  EXPECT_EQ(wait["name"], "WAIT");
  EXPECT_EQ(wait["state"], "open");
  EXPECT_FALSE(waiter["crashed"].get<bool>());

  /* The closer: none open; its STEP spans closed, each lasting about the
   * 5 ms it slept (at least that; a busy VM may stretch it). */
  EXPECT_TRUE(thread["closer"]["open_spans"].empty()) << thread["closer"].dump();
  int steps = 0;
  bool handoff = false;
  for (const auto &sp : spans) {
    if (sp["name"] == "STEP") {
      steps++;
      EXPECT_EQ(sp["state"], "closed");
      EXPECT_GE(sp["duration_ns"].get<std::int64_t>(), 5'000'000 - 100'000) << sp.dump();
    }
    if (sp["name"] == "HANDOFF") {
      handoff = true;
      EXPECT_EQ(sp["state"], "closed") << sp.dump();
      EXPECT_NE(sp["begin"]["tid"], sp["end"]["tid"]) << "HANDOFF is begun by one thread, ended by another";
    }
  }
  EXPECT_GE(steps, 2);
  EXPECT_TRUE(handoff);

  /* Names and argument names from the core: no tlmap was given. */
  for (const auto &n : doc["names"]) EXPECT_EQ(n["name_from"], "core");
  bool named_arg = false;
  for (const auto &e : doc["events"]) {
    if (e["kind"] == "SPAN_BEGIN") {
      EXPECT_TRUE(e["named"].get<bool>()) << e.dump();
      if (e["arg_names"].is_array() && e["arg_names"][0].is_string()) named_arg = true;
    }
    EXPECT_FALSE(e["age_ns"].is_null()) << "every event is placed in time: " << e.dump();
  }
  EXPECT_TRUE(named_arg);

  /* The text: the headline, per thread, then ages relative to the crash. */
  const std::string text = read_text(run.core_path);
  std::string crasher_line, waiter_line;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (has(l, "OUTER") && has(l, "<- crashed inside")) crasher_line = l;
    if (l.rfind("  tid ", 0) == 0 && has(l, "WAIT")) waiter_line = l;
  }
  EXPECT_TRUE(has(text, "open spans at the crash:")) << text;
  EXPECT_TRUE(has(crasher_line, "OUTER") && has(crasher_line, " > INNER")) << text;
  EXPECT_TRUE(has(waiter_line, "WAIT") && has(waiter_line, "(open ")) << text;
  EXPECT_TRUE(has(text, "STEP") && has(text, "end (lasted ")) << text;
  EXPECT_TRUE(has(text, "; inside OUTER")) << text;
}

TEST(BadSettings, ARingThatCouldNotBeMadeIsSaidFromTheCoreNotTakenForNoLibrary) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1048576", "TL_SLOTS=1048576 with 64 lanes needs 24.38 GiB; the ring is at most 4 GiB (1048576 slots allow "
                  "at most 9 lanes)"},
      {"abc", "TL_SLOTS=abc is not a number"},
  };
  for (const auto &[slots, says] : cases) {
    ct::test::CrashOptions o;
    o.env = {{"LD_PRELOAD", CT_LIBTIMELINE}, {"TL_SLOTS", slots}};
    const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_CRASH_DEMO_NOLIB, "--path=a"}, o);
    const auto r = ct::testing::run({kReader, "--json", run.core_path}, 1ull << 30);
    EXPECT_EQ(r.exit_code, 8) << r.err;
    EXPECT_EQ(ct::testing::schema_errors(r.out), "");
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded());
    EXPECT_EQ(doc["status"], "ring_not_made");
    const std::string reason = doc["reason"];
    EXPECT_TRUE(has(reason, "libtimeline was loaded but made no ring: EINVAL")) << reason;
    EXPECT_TRUE(has(reason, says)) << reason;
    EXPECT_FALSE(has(r.err + r.out, "did not run with libtimeline"));
    EXPECT_TRUE(has(r.err, "core-timeline-read: libtimeline was loaded but made no ring")) << r.err;
  }
  /* The control: the same program without the library is no_ring (exit 1). */
  const ct::test::CrashRun none = ct::test::run_and_collect_core({CT_CRASH_DEMO_NOLIB, "--path=a"});
  EXPECT_EQ(ct::testing::run({kReader, none.core_path}, 1ull << 30).exit_code, 1);
}

TEST(BadSettings, TlDisableStopsTheConstructorOnlyNotAnExplicitTlInit) {
  ct::test::CrashOptions o;
  o.env = {{"TL_DISABLE", "1"}};
  /* crash_demo links the static library and calls tl_init itself. */
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=a"}, o);
  const json doc = read_json(run.core_path);
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_FALSE(doc["events"].empty());
}
