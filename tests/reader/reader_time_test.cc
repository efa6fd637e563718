// SPDX-License-Identifier: MIT
//
// Unit tests of what ring format version 2 lets the reader say from the core
// alone: times (ages relative to the crash, the slot clock's rate from the
// init and crash anchors), spans (open, closed, begin lost, end possibly
// lost), names from the ring's name table, and the ring-less header of a
// tl_init that made no ring.  Rings and cores are built in the test
// (core_builder.h); the real-process versions are in tests/lib.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core_builder.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/ring.h"
#include "core_timeline/reader/tlmap.h"
#include "test_util.h"

namespace ctr = core_timeline::reader;
namespace fmtx = core_timeline::format;
using ct::test::RingBuilder;

namespace {

ctr::Analysis analyze_ring(RingBuilder &r, ctr::ReadOptions opts = {}) {
  auto core = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "test-core");
  EXPECT_TRUE(core);
  opts.symbolize = false;
  ctr::Analysis a = ctr::analyze(*core, opts);
  EXPECT_EQ(ct::test::schema_errors(ctr::render_json(a)), "");
  return a;
}

bool has(const std::string &text, const std::string &what) { return text.find(what) != std::string::npos; }

/* A ring whose rate is known only from the init and crash anchors:
 * 2.5 GHz, anchors 1 ms apart with 40-tick read spreads. */
RingBuilder crash_anchored(std::uint32_t names = 0) {
  RingBuilder r(3, 8, 4242, {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04}, names);
  auto &h = r.header();
  h.ticks_per_second = 0;
  h.anchor_spread_ticks = 40;
  h.crash_anchor_state = fmtx::kAnchorComplete;
  h.crash_ticks = h.anchor_ticks + 2'500'000;
  h.crash_monotonic_ns = h.anchor_monotonic_ns + 1'000'000;
  h.crash_realtime_ns = h.anchor_realtime_ns + 1'000'000;
  h.crash_spread_ticks = 40;
  r.seal();
  return r;
}

constexpr std::uint64_t kT0 = 1'000'000;  // the builder's anchor_ticks

}  // namespace

/* ---------------------------------------------------------------- time */

TEST(Time, RateFromTheInitAndCrashAnchorsGivesAgesRelativeToTheCrash) {
  RingBuilder r = crash_anchored();
  r.add(0, 1, fmtx::kKindUser, 0x1001, 1, 0, 4242, kT0 + 100);
  r.add(0, 2, fmtx::kKindUser, 0x1002, 2, 0, 4242, kT0 + 2'250'000);  // 100 us before the crash
  r.add(0, 3, fmtx::kKindCrash, 11, 0, 0, 4242, kT0 + 2'500'000);
  ctr::Analysis a = analyze_ring(r);
  ASSERT_EQ(a.events.size(), 3u);
  EXPECT_EQ(a.time.reference, ctr::TimeBase::Reference::kCrash);
  EXPECT_EQ(a.time.rate_from, ctr::SlotClock::Rate::kInitAndCrash);
  EXPECT_NEAR(a.time.ticks_per_second, 2.5e9, 1);
  ASSERT_TRUE(a.time.rate_error);
  /* (40 + 40) / 2 / 2.5M ticks, plus 500 ppm of CLOCK_MONOTONIC slew. */
  EXPECT_NEAR(*a.time.rate_error, 80.0 / 2 / 2.5e6 + 500e-6, 1e-9);
  ASSERT_TRUE(a.events[1].age_ns);
  EXPECT_EQ(*a.events[1].age_ns, -100'000);
  EXPECT_EQ(*a.events[2].age_ns, 0);
  /* Wall clock from the anchor nearest each event: the crash's for the
   * crash. */
  ASSERT_TRUE(a.events[2].realtime_ns);
  EXPECT_EQ(*a.events[2].realtime_ns, static_cast<std::int64_t>(r.header().crash_realtime_ns));
  const std::string text = ctr::render_text(a);
  EXPECT_TRUE(has(text, "-0.100ms tid 4242")) << text;
  EXPECT_TRUE(has(text, "0.000ms tid 4242")) << text;
  EXPECT_TRUE(has(text, "tl_init and crash anchors")) << text;
  const std::string wall = ctr::render_text(a, {.wall_clock = true});
  EXPECT_FALSE(has(wall, "-0.100ms")) << wall;
}

TEST(Time, OnlyTheInitAnchorMeansNoAgesAndSaysWhy) {
  RingBuilder r;
  r.header().ticks_per_second = 0;
  r.seal();
  r.add(0, 1, fmtx::kKindUser, 0x1001, 1);
  r.add(0, 2, fmtx::kKindCrash, 11, 0);
  ctr::Analysis a = analyze_ring(r);
  ASSERT_EQ(a.events.size(), 2u);
  EXPECT_FALSE(a.events[0].age_ns);
  EXPECT_FALSE(a.events[0].realtime_ns);
  EXPECT_EQ(a.time.ticks_per_second, 0);
  EXPECT_TRUE(has(a.time.note, "only its tl_init anchor")) << a.time.note;
  const std::string text = ctr::render_text(a);
  EXPECT_TRUE(has(text, "time: cannot be told")) << text;
  EXPECT_FALSE(has(text, "ms tid")) << text;  // no made-up age
}

TEST(Time, AnchorsTooCloseForTheirSpreadsGiveNoRate) {
  RingBuilder r = crash_anchored();
  auto &h = r.header();
  h.crash_ticks = h.anchor_ticks + 250'000;        // 100 us at 2.5 GHz
  h.crash_monotonic_ns = h.anchor_monotonic_ns + 100'000;
  h.anchor_spread_ticks = 5'000;                   // 2 us reads: 2% error
  h.crash_spread_ticks = 5'000;
  r.seal();
  r.add(0, 1, fmtx::kKindCrash, 11, 0, 0, 4242, kT0 + 250'000);
  ctr::Analysis a = analyze_ring(r);
  EXPECT_EQ(a.time.ticks_per_second, 0);
  EXPECT_TRUE(has(a.time.note, "too close")) << a.time.note;
  EXPECT_FALSE(a.events[0].age_ns);
}

TEST(Time, WithoutACrashEventAgesAreRelativeToTheNewestEvent) {
  RingBuilder r;
  r.add(0, 1, fmtx::kKindUser, 0x1001, 1, 0, 4242, kT0 + 1000);
  r.add(1, 1, fmtx::kKindUser, 0x1002, 2, 0, 4243, kT0 + 3000);
  ctr::Analysis a = analyze_ring(r);
  EXPECT_EQ(a.time.reference, ctr::TimeBase::Reference::kNewestEvent);
  EXPECT_EQ(*a.events[0].age_ns, -2000);
  EXPECT_EQ(ctr::format_age(-2000), "-0.002ms");
  EXPECT_EQ(ctr::format_age(-12'345'678), "-12.345ms");
  EXPECT_EQ(ctr::format_age(-2'000'001'000), "-2.000001s");
  EXPECT_EQ(ctr::format_age(1'000), "+0.001ms");
}

/* ---------------------------------------------------------------- spans */

TEST(Spans, OpenClosedNestedAndCrossThreadSpansAreShownAtTheCrash) {
  RingBuilder r(3, 8, 4242, {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04}, 8);
  r.name(0, 0x10, "REQUEST", "request_id");
  r.name(1, 0x11, "PARSE", "bytes");
  r.name(2, 0x12, "HANDOFF");
  r.seal();
  /* tid 4242 (lane 0): REQUEST 41 { PARSE 512 { crash } }; it begins
   * HANDOFF, which tid 4243 (lane 1) ends. */
  r.add(0, 1, fmtx::kKindSpanBegin, 0x10, 41, 0, 4242, kT0 + 1'000);
  r.add(0, 2, fmtx::kKindSpanBegin, 0x12, 0, 0, 4242, kT0 + 2'000);
  r.add(1, 1, fmtx::kKindSpanEnd, 0x12, fmtx::span_token(0, 2), kT0 + 2'000, 4243, kT0 + 5'000);
  r.add(0, 3, fmtx::kKindSpanBegin, 0x11, 512, 0, 4242, kT0 + 6'000);
  r.add(0, 4, fmtx::kKindCrash, 11, 0, 0, 4242, kT0 + 10'000);
  ctr::Analysis a = analyze_ring(r);
  ASSERT_EQ(a.spans.size(), 3u);
  const ctr::Span &request = a.spans[0], &handoff = a.spans[1], &parse = a.spans[2];
  EXPECT_EQ(request.state, ctr::Span::State::kOpen);
  EXPECT_EQ(*request.open_for_ns, 9'000);
  EXPECT_EQ(handoff.state, ctr::Span::State::kClosed);
  EXPECT_EQ(handoff.tid, 4242u);
  EXPECT_EQ(handoff.end_tid, 4243u);
  EXPECT_EQ(*handoff.duration_ns, 3'000);
  EXPECT_EQ(parse.state, ctr::Span::State::kOpen);
  EXPECT_EQ(*parse.parent, 0u);
  EXPECT_EQ(parse.depth, 1u);
  ASSERT_TRUE(a.crash);
  EXPECT_EQ(a.crash->inside_spans, (std::vector<std::uint32_t>{0, 2}));
  const std::string text = ctr::render_text(a);
  EXPECT_TRUE(has(text, "open spans at the crash:\n  tid 4242")) << text;
  EXPECT_TRUE(has(text, "REQUEST request_id=41 (open 0.009ms) > PARSE bytes=512 (open 0.004ms)  <- crashed inside"))
      << text;
  EXPECT_TRUE(has(text, "HANDOFF          end (lasted 0.003ms)")) << text;
  EXPECT_TRUE(has(text, "; inside REQUEST request_id=41")) << text;
}

TEST(Spans, AnEndWhoseBeginWasOverwrittenIsBeginLostNotAFreshSpan) {
  RingBuilder r;
  /* Lane 0 wrote 12 events in 8 slots: seqs 1..4 are overwritten; seq 2
   * was a SPAN_BEGIN whose end (in lane 1) copied its id and time. */
  for (std::uint64_t s = 5; s <= 12; ++s) r.add(0, s, fmtx::kKindUser, 0x1, s, 0, 4242, kT0 + s * 100);
  r.add(1, 1, fmtx::kKindSpanEnd, 0x77, fmtx::span_token(0, 2), kT0 + 200, 4243, kT0 + 2'000);
  ctr::Analysis a = analyze_ring(r);
  ASSERT_EQ(a.spans.size(), 1u);
  const ctr::Span &sp = a.spans[0];
  EXPECT_EQ(sp.state, ctr::Span::State::kBeginLost);
  EXPECT_EQ(sp.id, 0x77u);
  EXPECT_EQ(*sp.duration_ns, 1'800);
  EXPECT_TRUE(has(sp.note, "was overwritten")) << sp.note;
  EXPECT_TRUE(a.threads.empty() || a.threads[0].open_spans.empty());
  EXPECT_TRUE(has(ctr::render_text(a), "end (ended; begin lost, it had begun 0.001ms earlier)"))
      << ctr::render_text(a);
}

TEST(Spans, ABeginWithNoEndIsOpenOnlyIfNoEventThatCouldBeItsEndWasLost) {
  RingBuilder r;
  r.add(0, 1, fmtx::kKindSpanBegin, 0x10, 1, 0, 4242, kT0 + 100);
  /* Lane 1 (tid 4243) lost seqs 1..4, and its oldest surviving event is
   * after the begin: the lost ones may hold the end. */
  for (std::uint64_t s = 5; s <= 12; ++s) r.add(1, s, fmtx::kKindUser, 0x1, s, 0, 4243, kT0 + 1'000 + s);
  ctr::Analysis a = analyze_ring(r);
  ASSERT_EQ(a.spans.size(), 1u);
  EXPECT_EQ(a.spans[0].state, ctr::Span::State::kOpenOrEndLost);
  EXPECT_TRUE(has(a.spans[0].note, "4 events of 1 other lanes were overwritten")) << a.spans[0].note;

  RingBuilder quiet;
  quiet.add(0, 1, fmtx::kKindSpanBegin, 0x10, 1, 0, 4242, kT0 + 100);
  quiet.add(1, 1, fmtx::kKindUser, 0x1, 1, 0, 4243, kT0 + 1'000);
  ctr::Analysis b = analyze_ring(quiet);
  EXPECT_EQ(b.spans[0].state, ctr::Span::State::kOpen);
}

/* ---------------------------------------------------------------- names */

TEST(Names, TheRingsNameTableNamesEventsAndArgumentsAndATlmapOverridesIt) {
  RingBuilder r(3, 8, 4242, {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04}, 4);
  r.name(0, 0x1001, "OLD_NAME");
  r.name(1, 0x1001, "REQ_PARSE", "request_id", "bytes");  // the newest entry wins
  r.name(2, 0x1002, "has space");                          // not valid: skipped
  r.seal();
  r.add(0, 1, fmtx::kKindUser, 0x1001, 41, 512);
  r.add(0, 2, fmtx::kKindUser, 0x1002, 7);
  ctr::Analysis a = analyze_ring(r);
  ASSERT_EQ(a.events.size(), 2u);
  EXPECT_EQ(a.name_of(a.events[0]), "REQ_PARSE");
  EXPECT_EQ(a.events[0].name_from, ctr::NameFrom::kCore);
  EXPECT_EQ(a.name_of(a.events[1]), "id=0x1002");
  EXPECT_EQ(a.rings[0].ring->names_rejected, 1u);
  EXPECT_TRUE(has(ctr::render_text(a), "REQ_PARSE        request_id=41 bytes=512")) << ctr::render_text(a);

  auto map = ctr::TlMap::parse("0x1001 PARSED req\n", "test");
  ASSERT_TRUE(map);
  ctr::ReadOptions o;
  o.tlmap = &*map;
  ctr::Analysis b = analyze_ring(r, o);
  EXPECT_EQ(b.name_of(b.events[0]), "PARSED");
  EXPECT_EQ(b.events[0].name_from, ctr::NameFrom::kTlmap);
  /* The tlmap names arg0; arg1 keeps the core's name. */
  EXPECT_TRUE(has(ctr::render_text(b), "PARSED           req=41 bytes=512")) << ctr::render_text(b);
}

TEST(Names, ANameTableThatDoesNotFollowTheSlotsIsRefused) {
  RingBuilder r(3, 8, 4242, {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04}, 4);
  r.header().names_offset += 128;
  r.seal();
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_FALSE(d);
  EXPECT_TRUE(has(d.error().message, "names_offset")) << d.error().message;
}

/* ---------------------------------------------------------- ring-less */

TEST(NoRing, ARingLessHeaderIsRingNotMadeWithItsReasonNotNoRing) {
  RingBuilder r(3, 8);
  auto &h = r.header();
  h.incompat_flags = fmtx::kIncompatNoRing;
  h.lane_count = 0;
  h.slots_per_lane = 0;
  h.lanes_offset = 0;
  h.region_size = 4096;
  h.init_error = EINVAL;
  std::strcpy(h.init_error_text, "TL_SLOTS=1048576 with 64 lanes: the ring would exceed 4 GiB");
  r.seal();
  r.bytes().resize(4096);
  ctr::Analysis a = analyze_ring(r);
  EXPECT_EQ(a.status, ctr::Status::kRingNotMade);
  EXPECT_EQ(ctr::exit_code(a.status), 8);
  EXPECT_EQ(ctr::status_name(a.status), "ring_not_made");
  EXPECT_TRUE(has(a.reason, "libtimeline was loaded but made no ring: EINVAL")) << a.reason;
  EXPECT_TRUE(has(a.reason, "TL_SLOTS=1048576")) << a.reason;
  EXPECT_FALSE(has(ctr::render_text(a), "did not run with libtimeline"));

  /* Version 1 defined no incompatible flag: the same bit there is refused. */
  h.version = 1;
  r.seal();
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ctr::Errc::kUnsupported);
}
