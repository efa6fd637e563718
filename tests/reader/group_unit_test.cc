// SPDX-License-Identifier: MIT
//
// group_unit_test - the rules of the group signature (reader/include/
// core_timeline/reader/group.h, docs/grouping.md) on Analyses made in the
// test: what must not split a group (pids, tids, ASLR, times, arguments,
// allocation and I/O events, event counts, other threads), what must
// (the history, the stack, the signal), and the fallback to the stack
// alone.  The same rules on real crashes: tests/ctl-query/
// ctl_query_group_test.cc.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/group.h"
#include "core_timeline/ring_format.h"

namespace {

namespace f = core_timeline::format;
using namespace core_timeline::reader;

/* What varies between two crashes of the same bug. */
struct Variation {
  std::uint32_t pid = 4100, tid = 4100;
  std::uint64_t aslr = 0x555555554000;  // the executable's load address
  std::uint64_t arg = 41;               // the events' argument
  std::uint64_t t0 = 1000;              // first timestamp
  unsigned parse_repeats = 1;           // PARSE_BODY events in a row
  unsigned noise = 0;                   // MALLOC/FREE/READ events between
  unsigned other_thread = 0;            // events of another thread
  std::vector<std::string> marks{"PARSE_BODY", "STORE"};
  std::vector<std::string> spans{"REQUEST"};
  std::string function0 = "crash_helper";
};

struct Maker {
  Analysis a;
  std::uint64_t t = 0;
  std::uint32_t intern(const std::string &s) {
    a.strings.push_back(s);
    return static_cast<std::uint32_t>(a.strings.size() - 1);
  }
  Event &event(std::uint32_t tid, std::uint16_t kind, const std::string &name, std::uint64_t arg) {
    Event e;
    e.tid = tid;
    e.kind = kind;
    e.name = intern(name);
    e.arg0 = arg;
    e.timestamp = t += 7;
    e.seq = a.events.size();
    a.events.push_back(e);
    return a.events.back();
  }
  void noise(std::uint32_t tid, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
      event(tid, i % 3 == 0 ? f::kKindMalloc : i % 3 == 1 ? f::kKindFree : f::kKindRead,
            i % 3 == 0 ? "MALLOC" : i % 3 == 1 ? "FREE" : "READ", 0x7f0000001000 + i * 64);
  }
};

Location frame(const std::string &function, std::uint64_t address, const std::string &module) {
  Location l;
  l.address = address;
  l.function = function;
  l.function_offset = address & 0xff;
  l.in_module = true;
  l.module = module;
  return l;
}

Analysis crash(const Variation &v) {
  Maker m;
  m.t = v.t0;
  Analysis &a = m.a;
  a.status = Status::kOk;
  m.event(v.tid, f::kKindLaneClaim, "LANE_CLAIM", 0);
  m.noise(v.tid, v.noise);
  CrashFacts c;
  c.tid = v.tid;
  c.signo = 11;
  c.signal_name = "SIGSEGV";
  for (const auto &s : v.spans) {
    Event &b = m.event(v.tid, f::kKindSpanBegin, s, v.arg);
    Span sp;
    sp.state = Span::State::kOpen;
    sp.begin = a.events.size() - 1;
    sp.tid = v.tid;
    sp.open_for_ns = static_cast<std::int64_t>(v.t0);
    b.span = static_cast<std::uint32_t>(a.spans.size());
    c.inside_spans.push_back(static_cast<std::uint32_t>(a.spans.size()));
    a.spans.push_back(sp);
    m.noise(v.tid, v.noise);
  }
  for (std::size_t i = 0; i < v.marks.size(); ++i) {
    const unsigned times = i == 0 ? v.parse_repeats : 1;
    for (unsigned k = 0; k < times; ++k) m.event(v.tid, f::kKindUser, v.marks[i], v.arg + k);
    m.noise(v.tid, v.noise);
    for (unsigned k = 0; k < v.other_thread; ++k) m.event(v.tid + 1, f::kKindUser, "OTHER_" + std::to_string(k), k);
  }
  m.event(v.tid, f::kKindCrash, "CRASH", 0);
  CrashStack st;
  st.frames.push_back({frame(v.function0, v.aslr + 0x1139, "/usr/bin/dispatcher"), FrameFrom::kBoth, false});
  st.frames.push_back({frame("dispatch", v.aslr + 0x1200, "/usr/bin/dispatcher"), FrameFrom::kBoth, false});
  st.frames.push_back({frame("main", v.aslr + 0x1300, "/usr/bin/dispatcher"), FrameFrom::kBoth, false});
  st.frames.push_back({frame("__libc_start_call_main", 0x7f1234500000 + v.aslr % 0x1000000, "/lib/libc.so.6"),
                       FrameFrom::kBoth, false});
  c.stack = st;
  c.location = st.frames[0].location;
  c.pc = st.frames[0].location.address;
  a.crash = c;
  a.process.pid = v.pid;
  return a;
}

GroupSignature sig(const Variation &v) {
  auto g = group_signature(crash(v));
  EXPECT_TRUE(g.has_value());
  return g.value_or(GroupSignature{});
}

TEST(GroupSignature, WordsIdsAndPartsOfOneCrash) {
  const GroupSignature g = sig({});
  EXPECT_EQ(g.words, "SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST, after PARSE_BODY, STORE");
  EXPECT_EQ(g.stack_words, "SIGSEGV in crash_helper() <- dispatch() <- main()");
  EXPECT_TRUE(g.history_used);
  EXPECT_EQ(g.note, "");
  EXPECT_EQ(g.frames, (std::vector<std::string>{"crash_helper", "dispatch", "main"}));
  EXPECT_EQ(g.open_spans, std::vector<std::string>{"REQUEST"});
  EXPECT_EQ(g.last_events, (std::vector<std::string>{"PARSE_BODY", "STORE"}));
  for (const std::string *id : {&g.id, &g.stack_id, &g.history_id}) {
    EXPECT_EQ(id->size(), 16u) << *id;
    EXPECT_EQ(id->find_first_not_of("0123456789abcdef"), std::string::npos) << *id;
  }
  EXPECT_NE(g.id, g.stack_id);
  EXPECT_NE(g.id, g.history_id);
}

TEST(GroupSignature, PidsTidsAslrTimesAndArgumentsDoNotMatter) {
  const GroupSignature base = sig({});
  Variation v;
  v.pid = 977;
  v.tid = 981;
  v.aslr = 0x5600deadb000;
  v.arg = 123456;
  v.t0 = 99999999;
  const GroupSignature other = sig(v);
  EXPECT_EQ(other.id, base.id);
  EXPECT_EQ(other.stack_id, base.stack_id);
  EXPECT_EQ(other.history_id, base.history_id);
  EXPECT_EQ(other.words, base.words);
}

TEST(GroupSignature, NoiseDoesNotSplit) {
  const GroupSignature base = sig({});
  Variation v;
  v.noise = 5;           // allocations and I/O between every user event
  v.parse_repeats = 3;   // PARSE_BODY three times in a row
  v.other_thread = 4;    // another thread's marks in between
  const GroupSignature other = sig(v);
  EXPECT_EQ(other.id, base.id) << other.words;
  EXPECT_EQ(other.words, base.words);
}

TEST(GroupSignature, ADifferentHistorySplitsTheGroupNotTheStack) {
  const GroupSignature put = sig({});
  Variation get;
  get.marks = {"PARSE_HEADERS", "LOOKUP"};
  Variation admin;
  admin.spans = {"REQUEST", "ADMIN"};
  const GroupSignature g = sig(get), ad = sig(admin);
  EXPECT_NE(g.id, put.id);
  EXPECT_NE(ad.id, put.id);
  EXPECT_NE(ad.id, g.id);
  EXPECT_EQ(g.stack_id, put.stack_id);
  EXPECT_EQ(ad.stack_id, put.stack_id);
  EXPECT_EQ(ad.words, "SIGSEGV in crash_helper() <- dispatch() <- main() inside REQUEST > ADMIN, after PARSE_BODY, STORE");
}

TEST(GroupSignature, OnlyTheLastFewEventsCount) {
  Variation a, b;
  a.marks = {"OLD_A", "X", "Y", "Z"};
  b.marks = {"OLD_B", "X", "Y", "Z"};
  EXPECT_EQ(sig(a).id, sig(b).id);
  EXPECT_EQ(sig(a).last_events, (std::vector<std::string>{"X", "Y", "Z"}));
}

TEST(GroupSignature, ADifferentStackOrSignalSplits) {
  const GroupSignature base = sig({});
  Variation v;
  v.function0 = "other_helper";
  EXPECT_NE(sig(v).stack_id, base.stack_id);
  EXPECT_NE(sig(v).id, base.id);
  Analysis a = crash({});
  a.crash->signal_name = "SIGBUS";
  a.crash->signo = 7;
  const auto bus = group_signature(a);
  ASSERT_TRUE(bus);
  EXPECT_NE(bus->stack_id, base.stack_id);
  EXPECT_EQ(bus->history_id, base.history_id);
}

TEST(GroupSignature, NoUserEventsFallsBackToTheStackAndSaysSo) {
  Variation v;
  v.marks = {};
  v.spans = {};
  v.noise = 4;
  const GroupSignature g = sig(v);
  EXPECT_FALSE(g.history_used);
  EXPECT_EQ(g.id, g.stack_id);
  EXPECT_EQ(g.history_id, "");
  EXPECT_EQ(g.words, "SIGSEGV in crash_helper() <- dispatch() <- main()");
  EXPECT_NE(g.note.find("grouped by the stack alone"), std::string::npos) << g.note;
  EXPECT_EQ(g.stack_id, sig({}).stack_id);
}

TEST(GroupSignature, NoRingFallsBackToTheStackAndSaysWhy) {
  Analysis a = crash({});
  a.status = Status::kNoRing;
  const auto g = group_signature(a);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->history_used);
  EXPECT_EQ(g->id, sig({}).stack_id);
  EXPECT_NE(g->note.find("no_ring"), std::string::npos) << g->note;
}

TEST(GroupSignature, NoCrashNoSignature) {
  Analysis a = crash({});
  a.crash.reset();
  EXPECT_FALSE(group_signature(a));
  Analysis live = crash({});
  live.snapshot = LiveSnapshotNote{};
  EXPECT_FALSE(group_signature(live));
}

TEST(GroupSignature, FrameRules) {
  EXPECT_EQ(group_frame_name(frame("__libc_start_main@@GLIBC_2.34", 0x1, "/lib/libc.so.6")), "__libc_start_main");
  Location raw;
  raw.address = 0x7f00;
  raw.in_module = true;
  raw.module = "/opt/app/bin/server";
  EXPECT_EQ(group_frame_name(raw), "?? (server)");
  EXPECT_EQ(group_frame_name(Location{}), "??");

  /* raise()/abort() frames are passed over; frames past a signal frame
   * (the program's own handler above it) are the interrupted stack. */
  Analysis a = crash({});
  auto &fr = a.crash->stack->frames;
  const StackFrame handler{frame("on_fault", 0x10, "/usr/bin/dispatcher"), FrameFrom::kCore, false};
  const StackFrame restorer{frame("__restore_rt", 0x20, "/lib/libc.so.6"), FrameFrom::kCore, true};
  fr.insert(fr.begin(), {handler, restorer});
  EXPECT_EQ(group_signature(a)->stack_id, sig({}).stack_id);
  Analysis b = crash({});
  auto &fb = b.crash->stack->frames;
  fb.insert(fb.begin(), {StackFrame{frame("__pthread_kill_implementation", 1, "/lib/libc.so.6")},
                         StackFrame{frame("raise", 2, "/lib/libc.so.6")}, StackFrame{frame("abort", 3, "/lib/libc.so.6")}});
  b.crash->signal_name = "SIGSEGV";
  EXPECT_EQ(group_signature(b)->frames, (std::vector<std::string>{"crash_helper", "dispatch", "main"}));

  /* Not below main; libc's start frames never count. */
  Analysis c = crash({});
  c.crash->stack->frames.erase(c.crash->stack->frames.begin());  // dispatch <- main <- __libc_start_call_main
  EXPECT_EQ(group_signature(c)->frames, (std::vector<std::string>{"dispatch", "main"}));
}

TEST(GroupSignature, TheRuleIsInTheIds) {
  /* make_signature() is the rule: the same parts, the same ids. */
  const GroupSignature g = make_signature("SIGSEGV", {"die", "path_a", "main"}, {"REQUEST"}, {"REQ_PARSE", "BEFORE_DIE"},
                                          true, "");
  EXPECT_EQ(g.words, "SIGSEGV in die() <- path_a() <- main() inside REQUEST, after REQ_PARSE, BEFORE_DIE");
  EXPECT_EQ(g.stack_id, group_hash("core-timeline group rule 1\nstack\nsignal SIGSEGV\nframes\ndie\npath_a\nmain"));
  /* A name that holds the separator cannot make two parts one. */
  EXPECT_NE(make_signature("SIGSEGV", {"a", "b"}, {}, {"x"}, true, "").id,
            make_signature("SIGSEGV", {"a"}, {}, {"b", "x"}, true, "").id);
}

}  // namespace
