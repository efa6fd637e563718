// SPDX-License-Identifier: MIT
// libtimeline on real kernel cores from the real systemd-coredump pipeline:
// what each way of dying leaves in the core (signal, NT_SIGINFO, the ring,
// the CRASH slot), the fixture's two paths, the coredump_filter control, the
// fork/exec rules, and 8 writers racing a crash.
//
// The ring is decoded with the format header alone (ring_view.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "crasher_ids.h"
#include "process.h"
#include "ring_view.h"
#include "spans_ids.h"

namespace {

namespace fmt = core_timeline::format;
using ct_test::CoreRings;
using ct_test::Event;

std::string g_bin_dir;  // build/bin, from argv[0]

struct Crash {
  pid_t pid = 0;
  int wait_status = 0;
  CoreRings core;
  std::vector<Event> events;  // of the one ring, if there is exactly one
};

Crash decode(pid_t pid, int status, const std::string &core_path) {
  Crash c;
  c.pid = pid;
  c.wait_status = status;
  c.core = ct_test::rings_in_core(core_path);
  if (c.core.rings.size() == 1) c.events = c.core.rings[0].events();
  return c;
}

Crash crash(const std::string &program, std::vector<std::string> args,
            std::optional<unsigned> coredump_filter = std::nullopt,
            std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), g_bin_dir + "/" + program);
  ct::test::CrashOptions opts;
  opts.coredump_filter = coredump_filter;
  opts.env = std::move(env);
  ct::test::CrashRun run = ct::test::run_and_collect_core(args, opts);
  // systemd-coredump's size limits are machine-wide: say so plainly when a
  // core was cut (a ProcessSizeMax drop-in of another test run, say) rather
  // than leave a missing ring to puzzle over.
  auto truncated = run.journal_fields.find("COREDUMP_TRUNCATED");
  if (truncated != run.journal_fields.end())
    ADD_FAILURE() << "systemd-coredump truncated the core of pid " << run.pid
                  << " (COREDUMP_TRUNCATED=" << truncated->second
                  << "): is a coredump.conf.d drop-in lowering ProcessSizeMax?";
  return decode(run.pid, run.wait_status, run.core_path);
}

std::vector<Event> of_kind(const std::vector<Event> &events, uint16_t kind) {
  std::vector<Event> out;
  for (const auto &e : events)
    if (e.slot.kind == kind) out.push_back(e);
  return out;
}

std::vector<Event> user(const std::vector<Event> &events, uint32_t id) {
  std::vector<Event> out;
  for (const auto &e : of_kind(events, fmt::kKindUser))
    if (e.slot.id == id) out.push_back(e);
  return out;
}

std::string name_text(const fmt::NameEntry &e) {
  return std::string(e.name) + "|" + e.arg0 + "|" + e.arg1;
}

uint64_t realtime_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Slot-clock ticks per nanosecond, from the init anchor and the crash
// anchor: what a reader has to date events with from the core alone.
double ticks_per_ns(const fmt::RingHeader &h) {
  return double(h.crash_ticks - h.anchor_ticks) / double(h.crash_monotonic_ns - h.anchor_monotonic_ns);
}
// CLOCK_MONOTONIC of a slot timestamp, by those two anchors.
double monotonic_of(const fmt::RingHeader &h, uint64_t ticks) {
  return double(h.anchor_monotonic_ns) + (double(ticks) - double(h.anchor_ticks)) / ticks_per_ns(h);
}

fmt::CrashInfo crash_info(const Event &e) {
  fmt::CrashInfo ci;
  std::memcpy(&ci, e.slot.inline_data, sizeof ci);
  return ci;
}

// Each way of dying: the process dies of the original signal, the core's
// NT_SIGINFO has the kernel's si_code, and the ring holds one CRASH slot
// saying the same.
struct Death {
  const char *mode;
  int signo;
  int si_code;
};

class DeathInCore : public ::testing::TestWithParam<Death> {};

TEST_P(DeathInCore, CoreAndCrashSlotAgreeWithTheKernel) {
  const Death d = GetParam();
  const uint64_t before = realtime_now_ns();
  Crash c = crash("tl_crasher", {d.mode});
  const uint64_t after = realtime_now_ns();
  ASSERT_TRUE(WIFSIGNALED(c.wait_status)) << "status " << c.wait_status;
  EXPECT_EQ(WTERMSIG(c.wait_status), d.signo);
  EXPECT_EQ(c.core.signo, d.signo) << "NT_SIGINFO si_signo";
  EXPECT_EQ(c.core.si_code, d.si_code) << "NT_SIGINFO si_code";
  ASSERT_EQ(c.core.rings.size(), 1u);
  EXPECT_EQ(user(c.events, kMarkStart).size(), 1u);
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].slot.id, static_cast<uint32_t>(d.signo));
  EXPECT_EQ(crash_info(crashes[0]).code, d.si_code);
  EXPECT_EQ(crashes[0].slot.tid, static_cast<uint32_t>(c.pid)) << "the main thread crashed";
  EXPECT_NE(crashes[0].slot.return_address, 0u) << "pc";
  EXPECT_NE(crashes[0].slot.arg1, 0u) << "sp";
  // CRASH is the newest event of its lane but for the STACK slot that holds
  // its stack (ring format 4: CRASH's inline bytes are its CrashInfo).
  EXPECT_EQ(crashes[0].seq + 1, c.core.rings[0].lane(crashes[0].lane).write_index);
  auto stacks = of_kind(c.events, fmt::kKindStack);
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0].lane, crashes[0].lane);
  EXPECT_EQ(stacks[0].seq, crashes[0].seq + 1);
  EXPECT_EQ(stacks[0].slot.id, fmt::kKindCrash) << "the kind of the slot whose stack it holds";
  EXPECT_EQ(stacks[0].slot.arg0, crashes[0].seq);
  EXPECT_NE(crashes[0].slot.stack & fmt::kStackNext, 0) << "CRASH says its frames follow";
  // The crash clock anchor: complete, taken after the CRASH slot, on
  // clocks that moved forward since the init anchor.
  const auto &h = c.core.rings[0].header;
  EXPECT_EQ(h.crash_anchor_state, fmt::kAnchorComplete);
  EXPECT_GE(h.crash_ticks, crashes[0].slot.timestamp);
  EXPECT_GT(h.crash_monotonic_ns, h.anchor_monotonic_ns);
  EXPECT_GE(h.crash_realtime_ns, before);
  EXPECT_LE(h.crash_realtime_ns, after);
  EXPECT_GT(h.crash_spread_ticks, 0u);  // how few is not timed (the Clock tests bound with it)
}

INSTANTIATE_TEST_SUITE_P(
    EachHandledSignal, DeathInCore,
    ::testing::Values(Death{"segv-null", SIGSEGV, SEGV_MAPERR}, Death{"abort", SIGABRT, SI_TKILL},
                      Death{"bus-mmap", SIGBUS, BUS_ADRERR}, Death{"ill", SIGILL, ILL_ILLOPN},
                      Death{"fpe", SIGFPE, FPE_INTDIV}),
    [](const auto &param_info) {
      std::string n = param_info.param.mode;
      for (auto &ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

TEST(CrashSlot, NullWriteRecordsFaultAddressZero) {
  Crash c = crash("tl_crasher", {"segv-null"});
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].slot.arg0, 0u);
}

TEST(CrashSlot, KillFromAnotherProcessKeepsTheSendersSiginfo) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  auto not_before = std::chrono::system_clock::now();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    std::string exe = g_bin_dir + "/tl_crasher";
    execl(exe.c_str(), exe.c_str(), "wait-for-kill", static_cast<char *>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char buf[6] = {0};
  ASSERT_EQ(read(out[0], buf, 6), 6) << "tl_crasher never said ready";
  close(out[0]);
  ASSERT_EQ(kill(pid, SIGSEGV), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  Crash c = decode(pid, status, ct::test::fetch_core_for_pid(pid, not_before));
  EXPECT_EQ(c.core.signo, SIGSEGV);
  EXPECT_EQ(c.core.si_code, SI_USER) << "the core keeps kill()'s siginfo";
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crash_info(crashes[0]).code, SI_USER);
  EXPECT_EQ(crash_info(crashes[0]).sender_pid, getpid());
}

TEST(CrashSlot, StackOverflowInASecondThreadIsRecordedOnItsAlternateStack) {
  Crash c = crash("tl_crasher", {"overflow-thread"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  auto started = user(c.events, kThreadStarted);
  ASSERT_EQ(started.size(), 1u);
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].slot.tid, started[0].slot.arg0) << "the overflowing thread";
  EXPECT_NE(crashes[0].slot.tid, static_cast<uint32_t>(c.pid));
}

// A crash far deeper than 64 frames (the stack overflow: thousands of
// recurse() frames), in a lane of 1024 slots: the CRASH walk fills the room
// of ring format 5's chain, 64 frames in 8 STACK slots right after the
// CRASH slot in its lane, as ring_format.h's "the stack chain" lays them
// out, and ends depth_limit in the last.
TEST(CrashSlot, ADeepCrashStackFillsItsChainOfStackSlotsAfterTheCrashSlot) {
  Crash c = crash("tl_crasher", {"overflow-thread"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  const Event &crash = crashes[0];
  ASSERT_EQ(fmt::crash_stack_room(1024), 64u);
  constexpr uint32_t kParts = 8;
  EXPECT_EQ(crash.slot.stack, fmt::kStackNext | fmt::make_stack(8, fmt::kStackNone)) << "part 0's byte, continued";
  EXPECT_EQ(c.core.rings[0].lane(crash.lane).write_index, crash.seq + kParts) << "the chain is the lane's last slots";
  std::vector<Event> parts;
  for (const auto &e : of_kind(c.events, fmt::kKindStack))
    if (e.lane == crash.lane) parts.push_back(e);
  std::sort(parts.begin(), parts.end(), [](const Event &a, const Event &b) { return a.seq < b.seq; });
  ASSERT_EQ(parts.size(), kParts);
  for (uint32_t k = 0; k < kParts; ++k) {
    const fmt::Slot &s = parts[k].slot;
    EXPECT_EQ(parts[k].seq, crash.seq + 1 + k) << k;
    EXPECT_EQ(s.tid, crash.slot.tid) << k;
    EXPECT_EQ(s.id, fmt::kKindCrash) << k;
    EXPECT_EQ(s.arg0, crash.seq) << k;
    EXPECT_EQ(s.arg1, 8u * k) << k << ": the walk's index of its first frame";
    EXPECT_EQ(s.stack, fmt::stack_part_byte(64, fmt::kStackDepthLimit, k)) << k;
    EXPECT_EQ(s.inline_len, 64u) << k;
    for (uint32_t i = 0; i < 8; ++i) {
      uint64_t frame;
      memcpy(&frame, s.inline_data + 8 * i, 8);
      EXPECT_NE(frame, 0u) << "part " << k << " frame " << i;
    }
  }
}

TEST(Chaining, AHandlerInstalledBeforeRunsFirstAndTheCrashIsStillRecorded) {
  Crash c = crash("tl_crasher", {"handler-before"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  EXPECT_EQ(c.core.si_code, SEGV_MAPERR);
  EXPECT_EQ(user(c.events, kHandlerRan).size(), 1u) << "the program's handler ran once";
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  // Written before the program's handler ran; the fault that repeated when
  // it returned killed without a second CRASH slot.
  EXPECT_EQ(crash_info(crashes[0]).handler_flags, fmt::kCrashChained | fmt::kCrashHanded);
}

class RecoveredFault : public ::testing::TestWithParam<const char *> {};

// A handler installed before tl_init is called by libtimeline's, after
// the CRASH slot of the fault handed to it (kCrashHanded: the reader calls
// it handled once a later CRASH slot follows); one installed after tl_init
// (no libtimeline-signal.so here) replaces libtimeline's, which never sees
// the fault.  Either way the abort() after the recovery is the last CRASH
// slot, not handed.
TEST_P(RecoveredFault, TheAbortAfterItIsTheLastCrashSlot) {
  const bool before = std::string(GetParam()) == "recover-before";
  Crash c = crash("tl_crasher", {GetParam()});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGABRT) << "it recovered, then aborted";
  EXPECT_EQ(user(c.events, kRecovered).size(), 1u);
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), before ? 2u : 1u);
  if (before) {
    EXPECT_EQ(crashes[0].slot.id, static_cast<uint32_t>(SIGSEGV));
    EXPECT_EQ(crash_info(crashes[0]).handler_flags, fmt::kCrashChained | fmt::kCrashHanded);
  }
  EXPECT_EQ(crashes.back().slot.id, static_cast<uint32_t>(SIGABRT));
  EXPECT_EQ(crash_info(crashes.back()).handler_flags, 0u);
}

INSTANTIATE_TEST_SUITE_P(HandlerInstalledBeforeOrAfterTlInit, RecoveredFault,
                         ::testing::Values("recover-before", "recover-after"),
                         [](const auto &param_info) {
                           return std::string(param_info.param) == "recover-before" ? "before"
                                                                              : "after";
                         });

TEST(Exec, TheNewImageStartsWithACleanRing) {
  Crash c = crash("tl_crasher", {"exec"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  ASSERT_EQ(c.core.rings.size(), 1u) << "one ring after exec";
  EXPECT_EQ(user(c.events, kAfterExec).size(), 1u);
  EXPECT_TRUE(user(c.events, kExecBefore).empty()) << "an event from before exec";
}

TEST(Contention, EightWritersAndACrashLeaveOnlyFullyWrittenSlots) {
  Crash c = crash("tl_crasher", {"hammer"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  ASSERT_EQ(c.core.rings.size(), 1u);
  std::set<uint32_t> lanes;
  size_t checked = 0;
  for (const auto &e : of_kind(c.events, fmt::kKindUser)) {
    if (e.slot.id < kHammer || e.slot.id >= kHammer + kHammerThreads) continue;
    ++checked;
    lanes.insert(e.lane);
    ASSERT_EQ(e.slot.arg1, hammer_check(e.slot.id - kHammer, e.slot.arg0))
        << "accepted slot lane " << e.lane << " seq " << e.seq << " was not fully written";
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_EQ(lanes.size(), kHammerThreads) << "each writer had its own lane";
  EXPECT_EQ(of_kind(c.events, fmt::kKindCrash).size(), 1u);
  EXPECT_EQ(c.core.rings[0].header.crash_anchor_state, fmt::kAnchorComplete);
}

// The two-path fixture of docs/design.md: the NT_FILE note lists the
// memfd, its PT_LOAD has bytes, and each path's events are in them.
struct PathExpect {
  const char *path;
  uint32_t span_id;  // the span the path crashes in
  uint32_t first_id;
  uint64_t first_arg;
  uint16_t heap_kind;
  uint64_t before_die_arg;
};

class CrashDemo : public ::testing::TestWithParam<PathExpect> {};

TEST_P(CrashDemo, RingInTheCoreHoldsThePathsEvents) {
  const PathExpect p = GetParam();
  Crash c = crash("crash_demo", {std::string("--path=") + p.path});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  EXPECT_EQ(c.core.nt_file_ring_mappings, 1) << "NT_FILE lists /memfd:core-timeline";
  EXPECT_EQ(c.core.empty_ring_segments, 0);
  ASSERT_EQ(c.core.rings.size(), 1u);
  // The events in order, built-in lane claims excluded.  The heap event is
  // in the thread's allocation lane, the others in its user lane (ring
  // format 3): each source's events in the lane's order, and the two
  // lanes' merged by the slot clock (one thread, so one clock).
  const auto &hdr = c.core.rings[0].header;
  const auto source_of_lane = [&](uint32_t lane) {
    return lane / (hdr.lane_count / fmt::kSourceCount);
  };
  std::vector<Event> seq;
  for (const auto &e : c.events) {
    if (e.slot.kind == fmt::kKindLaneClaim) continue;
    EXPECT_EQ(source_of_lane(e.lane), fmt::source_of_kind(e.slot.kind))
        << "kind " << e.slot.kind << " in lane " << e.lane;
    EXPECT_NE(e.slot.timestamp, 0u);
    seq.push_back(e);
  }
  std::stable_sort(seq.begin(), seq.end(),
                   [](const Event &a, const Event &b) { return a.slot.timestamp < b.slot.timestamp; });
  ASSERT_EQ(seq.size(), 6u);
  EXPECT_EQ(seq[0].slot.kind, fmt::kKindSpanBegin);  // never ended: the crash is inside it
  EXPECT_EQ(seq[0].slot.id, p.span_id);
  EXPECT_EQ(seq[0].slot.arg0, p.first_arg);
  EXPECT_EQ(seq[1].slot.kind, fmt::kKindUser);
  EXPECT_EQ(seq[1].slot.id, p.first_id);
  EXPECT_EQ(seq[1].slot.arg0, p.first_arg);
  EXPECT_EQ(seq[2].slot.kind, p.heap_kind);
  if (p.heap_kind == fmt::kKindMalloc) {
    EXPECT_EQ(seq[2].slot.arg1, 128u);
  }
  EXPECT_EQ(seq[3].slot.id, 0x1003u);  // BEFORE_DIE
  EXPECT_EQ(seq[3].slot.arg0, p.before_die_arg);
  EXPECT_EQ(seq[4].slot.kind, fmt::kKindCrash);
  EXPECT_EQ(seq[4].slot.id, static_cast<uint32_t>(SIGSEGV));
  EXPECT_EQ(seq[4].slot.arg0, 0u) << "fault address";
  EXPECT_EQ(seq[5].slot.kind, fmt::kKindStack) << "the CRASH event's stack, in the slot after it";
  EXPECT_EQ(seq[5].slot.arg0, seq[4].seq);
  // The ids are named in the core, TL_NAME's constructors having run
  // before tl_init (the static library kept them).
  const auto &ring = c.core.rings[0];
  const std::map<uint32_t, std::string> names = {
      {0x1001, "REQ_PARSE|request_id|"}, {0x1002, "CONFIG_RELOAD|generation|"}, {0x1003, "BEFORE_DIE|code|"},
      {0x1004, "REQUEST|request_id|"},   {0x1005, "RELOAD|generation|"}};
  for (const auto &[id, text] : names) {
    auto e = ring.name_of(id);
    ASSERT_TRUE(e) << std::hex << id << " not named in the ring";
    EXPECT_EQ(name_text(*e), text);
  }
}

INSTANTIATE_TEST_SUITE_P(BothPaths, CrashDemo,
                         ::testing::Values(PathExpect{"a", 0x1004, 0x1001, 41, fmt::kKindFree, 1001},
                                           PathExpect{"b", 0x1005, 0x1002, 7, fmt::kKindMalloc, 2002}),
                         [](const auto &param_info) { return std::string("path_") + param_info.param.path; });

TEST(CrashDemo, BothPathsDieAtTheSameInstruction) {
  Crash a = crash("crash_demo", {"--path=a"});
  Crash b = crash("crash_demo", {"--path=b"});
  auto ca = of_kind(a.events, fmt::kKindCrash), cb = of_kind(b.events, fmt::kKindCrash);
  ASSERT_EQ(ca.size(), 1u);
  ASSERT_EQ(cb.size(), 1u);
  // The pc relative to the executable's load base (NT_FILE, file offset 0)
  // is the same in both cores, although the paths differ before it.
  auto base = [](const Crash &c) {
    for (const auto &f : c.core.files)
      if (f.page_offset == 0 && f.name.size() >= 10 &&
          f.name.compare(f.name.size() - 10, 10, "crash_demo") == 0)
        return f.start;
    return uint64_t(0);
  };
  ASSERT_NE(base(a), 0u);
  ASSERT_NE(base(b), 0u);
  EXPECT_EQ(ca[0].slot.return_address - base(a), cb[0].slot.return_address - base(b))
      << "not the same crashing instruction";
  EXPECT_NE(user(a.events, 0x1003)[0].slot.return_address - base(a),
            user(b.events, 0x1003)[0].slot.return_address - base(b))
      << "BEFORE_DIE was recorded from two different places";
}

TEST(CrashDemo, WithoutHandlersThePreCrashMarkersSurviveAndCrashIsAbsent) {
  Crash c = crash("crash_demo", {"--path=a", "--no-handlers"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  ASSERT_EQ(c.core.rings.size(), 1u);
  EXPECT_EQ(user(c.events, 0x1001).size(), 1u);
  EXPECT_EQ(user(c.events, 0x1003).size(), 1u);
  EXPECT_TRUE(of_kind(c.events, fmt::kKindCrash).empty());
}

TEST(CrashDemo, CoredumpFilterWithoutSharedAnonymousBitLeavesAnEmptyRingSegment) {
  Crash c = crash("crash_demo", {"--path=a"}, 0x31);
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(c.core.nt_file_ring_mappings, 1) << "NT_FILE still lists the memfd";
  EXPECT_EQ(c.core.empty_ring_segments, 1) << "its PT_LOAD has p_filesz 0";
  EXPECT_TRUE(c.core.rings.empty());
}

TEST(CrashDemo, WithoutTheLibraryThereIsNoRing) {
  Crash c = crash("crash_demo_nolib", {"--path=a"});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  EXPECT_EQ(c.core.nt_file_ring_mappings, 0);
  EXPECT_TRUE(c.core.rings.empty());
}

// The shared library under LD_PRELOAD sets up a default ring from its
// constructor: a program that never heard of libtimeline still gets its
// CRASH event in the core.
TEST(Preload, SharedLibraryConstructorGivesAnUnmodifiedProgramARing) {
  Crash c = crash("crash_demo_nolib", {"--path=a"}, std::nullopt,
                  {{"LD_PRELOAD", g_bin_dir + "/../lib/libtimeline.so"}});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  ASSERT_EQ(c.core.rings.size(), 1u);
  EXPECT_EQ(c.core.rings[0].header.pid, static_cast<uint32_t>(c.pid));
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].slot.id, static_cast<uint32_t>(SIGSEGV));
}

TEST(Preload, TlDisableKeepsTheLibraryOut) {
  Crash c = crash("crash_demo_nolib", {"--path=a"}, std::nullopt,
                  {{"LD_PRELOAD", g_bin_dir + "/../lib/libtimeline.so"}, {"TL_DISABLE", "1"}});
  EXPECT_EQ(c.core.nt_file_ring_mappings, 0);
  EXPECT_TRUE(c.core.rings.empty());
}

// Guards against: a TL_SLOTS or TL_LANES that makes no ring, or is no
// number, being ignored in silence (the defaults used, or no ring and no
// word of it).  One line on stderr names the variable, the value and the
// limit; no ring is made.  A real process each time, and a real core.
TEST(Preload, BadTlSlotsOrTlLanesIsSaidOnStderrAndMakesNoRing) {
  const std::string lib = g_bin_dir + "/../lib/libtimeline.so";
  struct Case {
    std::map<std::string, std::string> env;
    std::string says;  // "" : nothing on stderr
  };
  const std::vector<Case> cases = {
      {{{"TL_SLOTS", "abc"}}, "libtimeline: TL_SLOTS=abc is not a number: no ring made"},
      {{{"TL_SLOTS", "-8"}}, "libtimeline: TL_SLOTS=-8 is not a number: no ring made"},
      {{{"TL_LANES", "8x"}}, "libtimeline: TL_LANES=8x is not a number: no ring made"},
      // 3 sources x 65 lanes x 128 MiB (TL_SLOTS without TL_BUDGET: no pools).
      {{{"TL_SLOTS", "1048576"}}, "libtimeline: TL_SLOTS=1048576 with 64 lanes needs 24.38 GiB; the ring is at most "
                                  "4 GiB (1048576 slots allow at most 9 lanes): no ring made"},
      // The most lanes 1048576 slots allow, and one more: 3 x 10 lanes of
      // 128 MiB are 3.75 GiB, 3 x 11 are 4.13 GiB.
      {{{"TL_SLOTS", "1048576"}, {"TL_LANES", "10"}},
       "libtimeline: TL_SLOTS=1048576 TL_LANES=10 needs 4.13 GiB; the ring is at most 4 GiB (1048576 slots allow "
       "at most 9 lanes): no ring made"},
      {{{"TL_SLOTS", "1048576"}, {"TL_LANES", "9"}}, ""},
      {{{"TL_SLOTS", "1000"}}, "libtimeline: TL_SLOTS=1000 is not a power of two from 8 to 1048576: no ring made"},
      // 3 x (1364 + 1) lanes is 4095, the most below kMaxLanes.
      {{{"TL_LANES", "1365"}}, "libtimeline: TL_LANES=1365 is not from 1 to 1364: no ring made"},
      {{{"TL_LANES", "1364"}}, ""},
      {{{"TL_SLOTS", "8192"}, {"TL_LANES", "16"}}, ""},
      {{{"TL_SLOTS", "010"}},  // decimal, not octal 8
       "libtimeline: TL_SLOTS=10 is not a power of two from 8 to 1048576: no ring made"},
      {{{"TL_SLOTS", "0x400"}}, ""},
      // The budget and the shares (ring format 3).
      {{{"TL_BUDGET", "16X"}},
       "libtimeline: TL_BUDGET=16X is not a size (bytes, or a number with K, M or G): no ring made"},
      {{{"TL_BUDGET", "5G"}}, "libtimeline: TL_BUDGET=5368709120 is more than the ring's 4 GiB: no ring made"},
      {{{"TL_BUDGET", "64M"}}, ""},
      {{{"TL_BUDGET", "64MiB"}}, ""},
      {{{"TL_BUDGET", "0"}}, ""},
      {{{"TL_SHARES", "user=60,alloc=50"}},
       "libtimeline: TL_SHARES: the shares add up to 110; they are percent of the budget, at most 100 in all: no "
       "ring made"},
      {{{"TL_SHARES", "cpu=5"}},
       "libtimeline: TL_SHARES=cpu=5 is not user=N,alloc=N,io=N (percent, 0 to 100): no ring made"},
      {{{"TL_SHARES", "user=0"}},
       "libtimeline: TL_SHARES=user=0 gives every source 0 (use TL_BUDGET=0 for no pools): no ring made"},
      {{{"TL_SHARES", "user=25,alloc=75"}}, ""},
  };
  for (const auto &c : cases) {
    ct::test::ProcessOptions o;
    o.env = c.env;
    o.env["LD_PRELOAD"] = lib;
    const ct::test::Ran r = ct::test::run({"/bin/true"}, o);
    EXPECT_TRUE(r.ok()) << r.err;
    if (c.says.empty())
      EXPECT_EQ(r.err, "") << c.env.begin()->first << "=" << c.env.begin()->second;
    else  // the one line, whole, newline included
      EXPECT_EQ(r.err, c.says + "\n");
  }
  // In the core: no ring, but the no-ring page, with the errno and the
  // same reason as the stderr line.
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> crashes = {
      {{{"TL_SLOTS", "1048576"}},
       "TL_SLOTS=1048576 with 64 lanes needs 24.38 GiB; the ring is at most 4 GiB (1048576 slots allow at most 9 "
       "lanes)"},
      {{{"TL_LANES", "8x"}}, "TL_LANES=8x is not a number"},
  };
  for (const auto &[env, says] : crashes) {
    auto crash_env = env;
    crash_env["LD_PRELOAD"] = lib;
    Crash c = crash("crash_demo_nolib", {"--path=a"}, std::nullopt, crash_env);
    ASSERT_TRUE(WIFSIGNALED(c.wait_status));
    EXPECT_TRUE(c.core.rings.empty()) << "a ring was made although the constructor said none was";
    EXPECT_EQ(c.core.nt_file_ring_mappings, 1) << "NT_FILE lists the no-ring page's memfd";
    ASSERT_EQ(c.core.no_rings.size(), 1u) << "no valid no-ring header in the core";
    const auto &h = c.core.no_rings[0];
    EXPECT_EQ(h.pid, static_cast<uint32_t>(c.pid));
    EXPECT_EQ(h.init_error, EINVAL);
    EXPECT_EQ(std::string(h.init_error_text, strnlen(h.init_error_text, sizeof h.init_error_text)), says);
    EXPECT_NE(h.anchor_monotonic_ns, 0u);
  }
}

// TL_STACK_DEPTH takes the rule TL_SLOTS, TL_LANES, TL_BUDGET and TL_SHARES
// take (libtimeline(3), ENVIRONMENT): not a number makes no ring, said on
// stderr and in the core's no-ring page.  Its one limit is none: more than
// 8, however large the number, is 8 (once "not a number" above 2^32 - 1,
// which made no ring).  A number too big for a uint32_t is still a number:
// TL_SLOTS and TL_LANES then get their limits, not "not a number"; blanks
// and signs, which strtoull would skip, are no number.
// Guards against: a malformed TL_STACK_DEPTH and one above 2^32 - 1 told apart
// from the others' rule, in what they do or what they say.
TEST(Preload, TlStackDepthFollowsTheRuleOfTheOtherNumbers) {
  const std::string lib = g_bin_dir + "/../lib/libtimeline.so";
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"TL_STACK_DEPTH", "abc"}}, "libtimeline: TL_STACK_DEPTH=abc is not a number: no ring made"},
      {{{"TL_STACK_DEPTH", "-1"}}, "libtimeline: TL_STACK_DEPTH=-1 is not a number: no ring made"},
      {{{"TL_STACK_DEPTH", " 4"}}, "libtimeline: TL_STACK_DEPTH= 4 is not a number: no ring made"},
      {{{"TL_STACK_DEPTH", "+4"}}, "libtimeline: TL_STACK_DEPTH=+4 is not a number: no ring made"},
      {{{"TL_STACK_DEPTH", "0x"}}, "libtimeline: TL_STACK_DEPTH=0x is not a number: no ring made"},
      {{{"TL_STACK_DEPTH", "8"}}, ""},
      {{{"TL_STACK_DEPTH", "9"}}, ""},
      {{{"TL_STACK_DEPTH", "0x10"}}, ""},
      {{{"TL_STACK_DEPTH", "4294967296"}}, ""},
      {{{"TL_STACK_DEPTH", "99999999999999999999999"}}, ""},
      {{{"TL_SLOTS", "4294967296"}},
       "libtimeline: TL_SLOTS=4294967296 is not a power of two from 8 to 1048576: no ring made"},
      {{{"TL_LANES", "0x100000000"}}, "libtimeline: TL_LANES=0x100000000 is not from 1 to 1364: no ring made"},
      {{{"TL_LANES", "+8"}}, "libtimeline: TL_LANES=+8 is not a number: no ring made"},
  };
  for (const auto &[env, says] : cases) {
    ct::test::ProcessOptions o;
    o.env = env;
    o.env["LD_PRELOAD"] = lib;
    const ct::test::Ran r = ct::test::run({"/bin/true"}, o);
    EXPECT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.err, says.empty() ? "" : says + "\n") << env.begin()->first << "=" << env.begin()->second;
  }
  // In the core: the no-ring page for the malformed one; for the huge one
  // a ring whose allocation events (the alloc wrappers') carry a stack.
  Crash bad = crash("crash_demo_nolib", {"--path=a"}, std::nullopt,
                    {{"LD_PRELOAD", lib}, {"TL_STACK_DEPTH", "abc"}});
  ASSERT_TRUE(WIFSIGNALED(bad.wait_status));
  EXPECT_TRUE(bad.core.rings.empty()) << "a ring was made although the constructor said none was";
  ASSERT_EQ(bad.core.no_rings.size(), 1u) << "no valid no-ring header in the core";
  const auto &h = bad.core.no_rings[0];
  EXPECT_EQ(h.init_error, EINVAL);
  EXPECT_EQ(std::string(h.init_error_text, strnlen(h.init_error_text, sizeof h.init_error_text)),
            "TL_STACK_DEPTH=abc is not a number");
  Crash huge = crash("crash_demo_nolib", {"--path=b"}, std::nullopt,
                     {{"LD_PRELOAD", lib + " " + g_bin_dir + "/../lib/libtimeline-alloc.so"},
                      {"TL_STACK_DEPTH", "4294967296"}});
  ASSERT_EQ(huge.core.rings.size(), 1u) << "TL_STACK_DEPTH=4294967296 made no ring";
  const auto mallocs = of_kind(huge.events, fmt::kKindMalloc);
  const Event *demo_malloc = nullptr;  // path b's malloc(128)
  for (const auto &m : mallocs)
    if (m.slot.arg1 == 128) demo_malloc = &m;
  ASSERT_NE(demo_malloc, nullptr) << "no MALLOC of 128 bytes in the ring";
  EXPECT_NE(demo_malloc->slot.stack, 0) << "the MALLOC has no stack: the depth was not taken as 8";
}

// The sidecar: created fresh and private, holds the CRASH slot the handler
// wrote with pwrite(2), and is never a file someone planted.
class SidecarDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tl-sidecar-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    chmod(dir_.c_str(), 01777);  // world-writable and sticky, like /tmp
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(SidecarDir, HoldsTheRingAndItsCrashSlot) {
  Crash c = crash("crash_demo_nolib", {"--path=a"}, std::nullopt,
                  {{"LD_PRELOAD", g_bin_dir + "/../lib/libtimeline.so"},
                   {"TL_SIDECAR_DIR", dir_}});
  ASSERT_EQ(c.core.rings.size(), 1u);
  const auto &h = c.core.rings[0].header;
  ASSERT_TRUE(h.compat_flags & fmt::kCompatSidecar);
  std::string name = dir_ + "/core-timeline." + std::to_string(c.pid) + "." +
                     std::to_string(h.process_start_ticks) + ".ring";
  struct stat sb;
  ASSERT_EQ(lstat(name.c_str(), &sb), 0) << name;
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  EXPECT_EQ(sb.st_ino, h.sidecar_ino);
  std::ifstream f(name, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto side = ct_test::RingView::from_bytes(bytes);
  ASSERT_TRUE(side) << "the sidecar does not hold a valid ring";
  EXPECT_EQ(side->header.pid, static_cast<uint32_t>(c.pid));
  // The helper had no time to sync before the crash; the handler's pwrite of
  // the CRASH slot put it there.
  auto crashes = of_kind(side->events(), fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].slot.id, static_cast<uint32_t>(SIGSEGV));
}

TEST_F(SidecarDir, APlantedSymlinkIsNeverFollowed) {
  // Start the child stopped before exec, so its pid and start time (which
  // name the sidecar) are known, and plant a symlink under that name.
  std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "untouched"; }
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  auto not_before = std::chrono::system_clock::now();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(go[1]);
    char x;
    if (read(go[0], &x, 1) != 1) _exit(126);
    std::string exe = g_bin_dir + "/crash_demo_nolib";
    std::string preload = "LD_PRELOAD=" + g_bin_dir + "/../lib/libtimeline.so";
    std::string sidecar = "TL_SIDECAR_DIR=" + dir_;
    char *envp[] = {preload.data(), sidecar.data(), nullptr};
    execle(exe.c_str(), exe.c_str(), "--path=a", static_cast<char *>(nullptr), envp);
    _exit(127);
  }
  close(go[0]);
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat_line((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat_line.substr(stat_line.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;  // field 22: starttime
  std::string name = dir_ + "/core-timeline." + std::to_string(pid) + "." + field + ".ring";
  ASSERT_EQ(symlink(victim.c_str(), name.c_str()), 0);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  close(go[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  Crash c = decode(pid, status, ct::test::fetch_core_for_pid(pid, not_before));
  ASSERT_EQ(c.core.rings.size(), 1u) << "the ring works without its sidecar";
  EXPECT_FALSE(c.core.rings[0].header.compat_flags & fmt::kCompatSidecar);
  std::ifstream v(victim);
  std::string content((std::istreambuf_iterator<char>(v)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "untouched");
  struct stat sb;
  ASSERT_EQ(lstat(name.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISLNK(sb.st_mode)) << "the planted link was replaced";
}

// Spans open in three threads at a crash (tests/crashers/spans_three_threads.c):
// what the core holds for each, and the names of their ids.
TEST(Spans, ThreeThreadsCrashWithTheirSpansOpenOrClosedAsTheyLeftThem) {
  Crash c = crash("spans_three_threads", {});
  ASSERT_TRUE(WIFSIGNALED(c.wait_status));
  EXPECT_EQ(WTERMSIG(c.wait_status), SIGSEGV);
  ASSERT_EQ(c.core.rings.size(), 1u);
  const auto &ring = c.core.rings[0];
  const auto &h = ring.header;
  ASSERT_EQ(h.crash_anchor_state, fmt::kAnchorComplete);
  const std::map<uint32_t, std::string> names = {{SPANS_OUTER, "OUTER|request_id|"},
                                                 {SPANS_INNER, "INNER|step|"},
                                                 {SPANS_WAIT, "WAIT|lock_id|"},
                                                 {SPANS_STEP, "STEP|index|"},
                                                 {SPANS_HANDOFF, "HANDOFF|job_id|"}};
  for (const auto &[id, text] : names) {
    auto e = ring.name_of(id);
    ASSERT_TRUE(e) << std::hex << id << " not named in the ring";
    EXPECT_EQ(name_text(*e), text);
  }
  // Each begin by its token; each end by the token it carries.
  std::map<uint64_t, Event> begins;
  std::map<uint64_t, std::vector<Event>> ends;
  for (const auto &e : of_kind(c.events, fmt::kKindSpanBegin)) begins[fmt::span_token(e.lane, e.seq)] = e;
  for (const auto &e : of_kind(c.events, fmt::kKindSpanEnd)) ends[e.slot.arg0].push_back(e);
  auto begun = [&](uint32_t id) {
    std::vector<std::pair<uint64_t, Event>> out;
    for (const auto &[token, e] : begins)
      if (e.slot.id == id) out.emplace_back(token, e);
    return out;
  };
  auto lane_named = [&](uint32_t lane) { return std::string(ring.lane(lane).owner_name); };
  // crasher: OUTER, then INNER, open, then the CRASH, all in its lane.
  auto outer = begun(SPANS_OUTER), inner = begun(SPANS_INNER), wait = begun(SPANS_WAIT);
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(outer[0].second.slot.arg0, 42u);
  EXPECT_EQ(inner[0].second.slot.arg0, 1u);
  EXPECT_EQ(lane_named(outer[0].second.lane), "crasher");
  EXPECT_EQ(inner[0].second.lane, outer[0].second.lane);
  EXPECT_EQ(inner[0].second.seq, outer[0].second.seq + 1) << "INNER begun inside OUTER";
  EXPECT_FALSE(ends.count(outer[0].first)) << "OUTER was ended";
  EXPECT_FALSE(ends.count(inner[0].first)) << "INNER was ended";
  auto crashes = of_kind(c.events, fmt::kKindCrash);
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].lane, inner[0].second.lane);
  EXPECT_EQ(crashes[0].seq, inner[0].second.seq + 1) << "the crash right after INNER began";
  // waiter: WAIT open.
  ASSERT_EQ(wait.size(), 1u);
  EXPECT_EQ(lane_named(wait[0].second.lane), "waiter");
  EXPECT_EQ(wait[0].second.slot.arg0, 7u);
  EXPECT_FALSE(ends.count(wait[0].first)) << "WAIT was ended";
  // closer: three STEPs, each ended once with the begin's id and timestamp,
  // after at least its sleep.
  auto steps = begun(SPANS_STEP);
  ASSERT_EQ(steps.size(), 3u);
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto &[token, b] = steps[i];
    EXPECT_EQ(lane_named(b.lane), "closer");
    ASSERT_EQ(ends[token].size(), 1u) << "STEP " << i;
    const Event &e = ends[token][0];
    EXPECT_EQ(e.lane, b.lane);
    EXPECT_EQ(e.slot.id, static_cast<uint32_t>(SPANS_STEP));
    EXPECT_EQ(e.slot.arg1, b.slot.timestamp);
    const double ms = (monotonic_of(h, e.slot.timestamp) - monotonic_of(h, b.slot.timestamp)) / 1e6;
    EXPECT_GE(ms, SPANS_STEP_MS - 0.1) << "STEP " << i << " lasted " << ms << " ms";
    // Ended before the next STEP began (the closer runs them one after
    // another): an order, where an upper bound on the sleep would be a time.
    if (i + 1 < steps.size()) {
      EXPECT_LT(e.slot.timestamp, steps[i + 1].second.slot.timestamp) << "STEP " << i;
    }
  }
  // HANDOFF: begun by main, ended by closer, with main's id and timestamp.
  auto handoff = begun(SPANS_HANDOFF);
  ASSERT_EQ(handoff.size(), 1u);
  EXPECT_EQ(lane_named(handoff[0].second.lane), "main");
  EXPECT_EQ(handoff[0].second.slot.tid, static_cast<uint32_t>(c.pid));
  ASSERT_EQ(ends[handoff[0].first].size(), 1u);
  const Event &handoff_end = ends[handoff[0].first][0];
  EXPECT_EQ(lane_named(handoff_end.lane), "closer");
  EXPECT_EQ(handoff_end.slot.id, static_cast<uint32_t>(SPANS_HANDOFF));
  EXPECT_EQ(handoff_end.slot.arg1, handoff[0].second.slot.timestamp);
}

// clock_check's own CLOCK_MONOTONIC readings beside each mark's time as
// the core's anchors give it.
struct ClockRun {
  pid_t pid = 0;
  int wait_status = 0;
  std::map<uint64_t, uint64_t> printed;  // mark index -> CLOCK_MONOTONIC ns just after it
  std::map<uint64_t, uint64_t> before;   // mark index -> CLOCK_MONOTONIC ns just before it
  uint64_t before_init = 0;              // CLOCK_MONOTONIC ns before tl_init
  Crash crash;
};

// How far the anchors' dating of a moment between them may be from
// CLOCK_MONOTONIC, by what the core itself says, in ns: each anchor's
// ticks are the midpoint of reads `spread` ticks apart (half of that
// each way, and interpolation stays within the larger); CLOCK_MONOTONIC
// may be slewed against the tick counter by up to 500 ppm (the kernel's
// limit on an adjtimex frequency) over the anchors' distance; and 1 us for
// the tick read, which the CPU may run a little out of order with the
// clock reads around it.  A bound of the method, not a time the test
// expects anything to take.
double dating_bound_ns(const fmt::RingHeader &h) {
  const double spread = double(std::max(h.anchor_spread_ticks, h.crash_spread_ticks)) / 2 / ticks_per_ns(h);
  return spread + 500e-6 * double(h.crash_monotonic_ns - h.anchor_monotonic_ns) + 1000;
}

// Each mark is dated between the readings clock_check took around it,
// give or take dating_bound_ns: however long the process was preempted
// there, which only widens the bracket.
void expect_marks_bracketed(const ClockRun &run, const fmt::RingHeader &h, const std::vector<Event> &marks,
                            const char *label) {
  const double bound = dating_bound_ns(h);
  for (const auto &m : marks) {
    ASSERT_TRUE(run.printed.count(m.slot.arg0) && run.before.count(m.slot.arg0)) << "mark " << m.slot.arg0;
    const double at = monotonic_of(h, m.slot.timestamp);
    const double lo = double(run.before.at(m.slot.arg0)), hi = double(run.printed.at(m.slot.arg0));
    std::printf("%s mark %llu: dated %.3f us after clock_check's reading before it, %.3f us before its reading "
                "after it (bound %.3f us)\n",
                label, static_cast<unsigned long long>(m.slot.arg0), (at - lo) / 1e3, (hi - at) / 1e3, bound / 1e3);
    EXPECT_GE(at, lo - bound) << "mark " << m.slot.arg0 << ": the anchors date it before the process made it";
    EXPECT_LE(at, hi + bound) << "mark " << m.slot.arg0 << ": the anchors date it after the process made it";
  }
}

ClockRun run_clock_check(const std::vector<std::string> &args) {
  ClockRun out;
  std::vector<std::string> argv = {g_bin_dir + "/clock_check"};
  argv.insert(argv.end(), args.begin(), args.end());
  ct::test::ProcessOptions o;
  o.timeout = std::chrono::seconds(30);
  const auto not_before = std::chrono::system_clock::now();
  const ct::test::Ran r = ct::test::run(argv, o);
  out.pid = r.pid;
  out.wait_status = r.wait_status;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream l(line);
    std::string word, id;
    uint64_t index = 0, after = 0, before = 0;
    if (l >> word && word == "init") l >> out.before_init;
    if (word == "mark" && l >> id >> index >> after >> before && id == "0x6001") {
      out.printed[index] = after;
      out.before[index] = before;
    }
  }
  if (WIFSIGNALED(r.wait_status))
    out.crash = decode(r.pid, r.wait_status, ct::test::fetch_core_for_pid(r.pid, not_before));
  return out;
}

// Guards against: anchors that do not put the events where the process saw
// them on CLOCK_MONOTONIC (a wrong midpoint, a crash anchor taken from the
// wrong clock, the anchors' ticks and times taken at different moments).
TEST(Clock, TheInitAndCrashAnchorsDateEachMarkAsTheProcessSawIt) {
  ClockRun run = run_clock_check({});
  ASSERT_TRUE(WIFSIGNALED(run.wait_status)) << "status " << run.wait_status;
  EXPECT_EQ(WTERMSIG(run.wait_status), SIGSEGV);
  ASSERT_EQ(run.printed.size(), 4u) << "clock_check printed " << run.printed.size() << " marks";
  ASSERT_EQ(run.crash.core.rings.size(), 1u);
  const auto &h = run.crash.core.rings[0].header;
  ASSERT_EQ(h.crash_anchor_state, fmt::kAnchorComplete);
  EXPECT_GT(h.anchor_spread_ticks, 0u);
  EXPECT_GT(h.crash_spread_ticks, 0u);
  // The latest anchor is whole (an even seqlock: no refresh cut short).
  // Whether the helper refreshed it within the 120 ms is the scheduler's
  // affair; that it refreshes it, lib_unit_test waits for
  // (Ring.TheHelperThreadRefreshesTheLatestAnchor).
  EXPECT_EQ(h.latest_anchor_seq % 2, 0u);
  auto marks = user(run.crash.events, CLOCK_MARK);
  ASSERT_EQ(marks.size(), 4u);
  expect_marks_bracketed(run, h, marks, "");
  EXPECT_GE((run.printed[1] - run.printed[0]) / 1e6, 20.0) << "the marks were not 20 ms apart";
  EXPECT_GE((run.printed[3] - run.printed[0]) / 1e6, 120.0) << "the marks were not 120 ms apart";
}

// Guards against: a process that dies before the helper thread's first
// refresh leaving nothing to date its events with but the init anchor.
TEST(Clock, AProcessDeadWithinAMillisecondStillHasTwoAnchors) {
  ClockRun run = run_clock_check({"--fast"});
  ASSERT_TRUE(WIFSIGNALED(run.wait_status)) << "status " << run.wait_status;
  ASSERT_EQ(run.printed.size(), 2u);
  ASSERT_EQ(run.crash.core.rings.size(), 1u);
  const auto &h = run.crash.core.rings[0].header;
  EXPECT_EQ(h.latest_anchor_seq, 0u) << "the helper refreshed the anchor: not the case this tests";
  EXPECT_EQ(h.latest_ticks, h.anchor_ticks) << "the latest anchor is still the init anchor";
  ASSERT_EQ(h.crash_anchor_state, fmt::kAnchorComplete);
  // The init anchor was read inside tl_init, after the process's reading
  // before it, and the crash anchor after its last mark.
  ASSERT_NE(run.before_init, 0u) << "clock_check printed no init line";
  EXPECT_GE(h.anchor_monotonic_ns, run.before_init);
  EXPECT_GE(h.crash_monotonic_ns, run.printed[1]);
  std::printf("clock_check --fast crashed %.3f ms after its init anchor\n",
              double(h.crash_monotonic_ns - h.anchor_monotonic_ns) / 1e6);
  auto marks = user(run.crash.events, CLOCK_MARK);
  ASSERT_EQ(marks.size(), 2u);
  for (const auto &m : marks) {
    EXPECT_GE(m.slot.timestamp, h.anchor_ticks);
    EXPECT_LE(m.slot.timestamp, h.crash_ticks);
  }
  expect_marks_bracketed(run, h, marks, "--fast");
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string self = argv[0];
  g_bin_dir = self.substr(0, self.rfind('/'));
  return RUN_ALL_TESTS();
}
