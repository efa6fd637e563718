// SPDX-License-Identifier: MIT
//
// Times, spans and names checked on REAL cores from the REAL
// systemd-coredump pipeline (tests/support/crash_harness.h), read by the
// real core-timeline-read with no tlmap:
//
//  - the outside clock: clock_check (tests/crashers/clock_check.c) prints its own
//    CLOCK_MONOTONIC readings just before and just after each mark; the
//    reader's ages, from the core alone, must fall between them.  Also for
//    a process that crashes right after its start (--fast: no helper-thread
//    anchor), whose rate comes from the init and crash anchors only;
//  - spans and names: spans_three_threads (tests/crashers/spans_three_threads.c),
//    one thread crashing inside two nested open spans, one with a span
//    open, one with only closed spans, and a span ended by another thread;
//  - bad settings: a TL_SLOTS that makes no ring, or is no number, gives a
//    core the reader reports as ring_not_made with libtimeline's reason,
//    never as "did not run with libtimeline"; TL_DISABLE=1 stops only the
//    constructor, so a program that calls tl_init still has its ring.
//
// This checks correctness, not speed: a fixture preempted around a mark
// only widens the bracket of readings around it, and the bound on top is
// the reader's own (its rate_error), stated with each check.
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
  const auto r = ct::test::run({kReader, "--json", core}, ct::test::address_space_limit(1ull << 30));
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  EXPECT_EQ(ct::test::schema_errors(r.out), "");
  return doc;
}

std::string read_text(const std::string &core) { return ct::test::run({kReader, core}, ct::test::address_space_limit(1ull << 30)).out; }

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

/* index -> CLOCK_MONOTONIC ns just before the mark, from the same lines'
 * fifth number ("mark 0x6001 INDEX AFTER_NS BEFORE_NS"). */
std::map<std::uint64_t, std::int64_t> befores_of(const std::string &out) {
  std::map<std::uint64_t, std::int64_t> m;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string word, id;
    std::uint64_t index = 0;
    std::int64_t after = 0, before = 0;
    if (l >> word >> id >> index >> after >> before && word == "mark") m[index] = before;
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

/* The reader's delta between each mark and the first lies within what the
 * fixture's readings around the two marks allow (from its reading before
 * the first mark to its reading after this one, and the other way round):
 * preemption around a mark only widens that.  On top, the reader's own
 * bound on its rate (rate_error: the anchors' spreads and a 500 ppm slew
 * over their span), CLOCK_MONOTONIC's possible slew within the interval
 * itself (500 ppm more, the kernel's adjtimex limit), and 1 us for each
 * mark's tick read, which the CPU may run a little out of order with the
 * clock reads around it. */
void expect_deltas_agree(const std::string &out, const std::map<std::uint64_t, std::int64_t> &age,
                         double rate_error) {
  const auto after = marks_of(out), before = befores_of(out);
  ASSERT_GE(after.size(), 2u);
  ASSERT_EQ(before.size(), after.size()) << out;
  ASSERT_EQ(age.size(), after.size()) << "every mark must be placed in time";
  const auto first = after.begin()->first;
  for (const auto &[index, ns] : after) {
    const double lo = static_cast<double>(before.at(index) - after.at(first));
    const double hi = static_cast<double>(ns - before.at(first));
    const double inside = static_cast<double>(age.at(index) - age.at(first));
    const double bound = (rate_error + 500e-6) * std::fabs(hi) + 2000;
    EXPECT_GE(inside, lo - bound) << "mark " << index << ": the fixture's clock says +" << lo << " to +" << hi
                                  << " ns, the reader's ages +" << inside << " (bound " << bound << ")";
    EXPECT_LE(inside, hi + bound) << "mark " << index << ": the fixture's clock says +" << lo << " to +" << hi
                                  << " ns, the reader's ages +" << inside << " (bound " << bound << ")";
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
  expect_deltas_agree(c.out, ages_of(doc), doc["time"]["rate_error"].get<double>());
  /* The last mark is before the crash (the marks were slept to at 0, 20, 50
   * and 120 ms: expect_deltas_agree has their distances). */
  const auto age = ages_of(doc);
  EXPECT_LT(age.rbegin()->second, 0);
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
  ASSERT_TRUE(doc["time"]["rate_error"].is_number()) << doc["time"].dump();
  expect_deltas_agree(c.out, ages_of(doc), doc["time"]["rate_error"].get<double>());
  /* The first event (its lane claim, at tl_init) comes after the fixture's
   * reading before tl_init and before its first mark, by the core's clock
   * (the same bounds as expect_deltas_agree's). */
  const auto &events = doc["events"];
  ASSERT_FALSE(events.empty());
  std::istringstream lines(c.out);
  std::string word;
  std::int64_t before_init = 0;
  ASSERT_TRUE(lines >> word >> before_init && word == "init") << c.out;
  const auto after = marks_of(c.out);
  const double first_age = events[0]["age_ns"].get<double>(), mark0_age = static_cast<double>(ages_of(doc).at(0));
  const double span = static_cast<double>(after.at(0) - before_init);
  const double bound = (doc["time"]["rate_error"].get<double>() + 500e-6) * span + 2000;
  EXPECT_LE(first_age, mark0_age) << events[0].dump();
  EXPECT_GE(first_age, mark0_age - span - bound) << events[0].dump() << "; " << span << " ns from before tl_init "
                                                 << "to after the first mark";
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
    const auto r = ct::test::run({kReader, "--json", run.core_path}, ct::test::address_space_limit(1ull << 30));
    EXPECT_EQ(r.exit_code(), 8) << r.err;
    EXPECT_EQ(ct::test::schema_errors(r.out), "");
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
  EXPECT_EQ(ct::test::run({kReader, none.core_path}, ct::test::address_space_limit(1ull << 30)).exit_code(), 1);
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
