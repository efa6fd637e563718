// SPDX-License-Identifier: MIT
//
// stacks_test - per-event and crash stacks on real cores (the real systemd-coredump
// pipeline): stack_fixture, built with .sframe, with frame pointers and
// with neither, records a stack at a known depth and crashes; the reader's
// JSON must name the fixture's own frames in order, end each walk with the
// reason its build allows, and match gdb's `bt` on the same core.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "process.h"

namespace {

using json = nlohmann::json;

struct Read {
  ct::test::CrashRun run;
  json doc;
};

Read crash_and_read(const std::string &exe, const std::string &mode) {
  Read r;
  r.run = ct::test::run_and_collect_core({exe, mode});
  const ct::test::Ran ran = ct::test::run({CT_READER_BIN, "--format=json", r.run.core_path, exe});
  EXPECT_EQ(ran.exit_code(), 0) << ran.err;
  r.doc = json::parse(ran.out);
  return r;
}

const json *event_named(const json &doc, const std::string &name) {
  for (const auto &e : doc["events"])
    if (e["name"] == name) return &e;
  return nullptr;
}

std::vector<std::string> functions(const json &e) {
  std::vector<std::string> out;
  for (const auto &f : e["stack"]["frames"]) out.push_back(f["function"].is_string() ? f["function"].get<std::string>() : "?");
  return out;
}

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// The first n entries of `got` are `want`.
void expect_prefix(const std::vector<std::string> &got, const std::vector<std::string> &want) {
  ASSERT_GE(got.size(), want.size()) << joined(got);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "frame " << i << " of " << joined(got);
}

class Unwindable : public ::testing::TestWithParam<const char *> {};

// The walk through the fixture's own frames, from tl_mark_stack (USER
// event MARK) and from the crash handler (CRASH), on both unwinding paths.
TEST_P(Unwindable, MarkAndCrashStacksNameTheCallers) {
  const Read r = crash_and_read(GetParam(), "mark");
  const json *mark = event_named(r.doc, "MARK");
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ((*mark)["location"]["function"], "f4");
  expect_prefix(functions(*mark), {"f3", "f2", "f1", "main"});
  const json *crash = event_named(r.doc, "CRASH");
  ASSERT_NE(crash, nullptr);
  ASSERT_TRUE(crash->contains("stack")) << crash->dump();
  expect_prefix(functions(*crash), {"f3", "f2", "f1", "main"});
}

// From a second thread: its stack's top is its thread pointer.
TEST_P(Unwindable, NonMainThread) {
  const Read r = crash_and_read(GetParam(), "thread");
  const json *mark = event_named(r.doc, "MARK");
  ASSERT_NE(mark, nullptr);
  expect_prefix(functions(*mark), {"f3", "f2", "f1", "thread_main"});
}

// Through a shared library's frames (built the same way).
TEST_P(Unwindable, ThroughASharedLibrary) {
  const Read r = crash_and_read(GetParam(), "shlib");
  const json *mark = event_named(r.doc, "MARK");
  ASSERT_NE(mark, nullptr);
  expect_prefix(functions(*mark), {"f3", "lib_inner", "stack_fixture_lib_call", "f2", "f1", "main"});
}

// From a signal handler: the handler's caller is glibc's __restore_rt (the
// signal frame), then the interrupted f4 and its callers.
TEST_P(Unwindable, ThroughASignalFrame) {
  const Read r = crash_and_read(GetParam(), "signal");
  const json *mark = event_named(r.doc, "MARK_SIGNAL");
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ((*mark)["location"]["function"], "on_usr1");
  const std::vector<std::string> got = functions(*mark);
  ASSERT_GE(got.size(), 6u) << mark->dump();
  /* glibc's trampoline: named when libc's symbols are there. */
  EXPECT_TRUE((*mark)["stack"]["frames"][0]["module"].get<std::string>().ends_with("/libc.so.6")) << mark->dump();
  if (got[0] != "?") {
    EXPECT_EQ(got[0], "__restore_rt");
  }
  expect_prefix({got.begin() + 1, got.end()}, {"f4", "f3", "f2", "f1", "main"});
}

// gdb's `bt` on a core, past main to the entry point: each frame's
// address (0 where gdb prints none, as for frame #0) and function.
std::vector<std::pair<std::uint64_t, std::string>> gdb_backtrace(const std::string &exe, const std::string &core) {
  const ct::test::Ran gdb = ct::test::run({"/usr/bin/gdb", "-batch", "-nx", "-ex", "set width 0", "-ex",
                                           "set backtrace past-main on", "-ex", "bt", exe, core});
  EXPECT_EQ(gdb.exit_code(), 0) << gdb.err;
  // "#1  0x000055d0c1e001a9 in f3 (x=...) at ..." (frame #0 may omit the address)
  const std::regex frame_re(R"(^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+) )");
  std::vector<std::pair<std::uint64_t, std::string>> bt;
  std::size_t pos = 0;
  while (pos < gdb.out.size()) {
    const std::size_t nl = gdb.out.find('\n', pos);
    const std::string line = gdb.out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? gdb.out.size() : nl + 1;
    std::smatch m;
    if (!std::regex_search(line, m, frame_re)) continue;
    if (m[1].str() == "0") bt.clear(); /* gdb prints frame #0 once before `bt` too */
    bt.emplace_back(m[2].matched ? std::stoull(m[2].str(), nullptr, 16) : 0, m[3].str());
  }
  return bt;
}

std::string shown(const std::vector<std::pair<std::uint64_t, std::string>> &bt) {
  std::string s;
  for (std::size_t i = 0; i < bt.size(); ++i) s += "#" + std::to_string(i) + " " + bt[i].second + "\n";
  return s;
}

// The CRASH event's first `n` frames are gdb's `bt` frames #1..n on the same
// core, address for address (gdb prints a caller frame's pc as its return
// address), and its location is gdb's frame #0, in function `top`.
void expect_crash_stack_is_gdbs(const std::string &exe, const std::string &mode, const std::string &top, std::size_t n) {
  const Read r = crash_and_read(exe, mode);
  const json *crash = event_named(r.doc, "CRASH");
  ASSERT_NE(crash, nullptr);
  const auto bt = gdb_backtrace(exe, r.run.core_path);
  ASSERT_GE(bt.size(), n + 1) << shown(bt);
  EXPECT_EQ(bt[0].second, top) << shown(bt);
  EXPECT_EQ((*crash)["location"]["function"], top) << crash->dump();
  ASSERT_TRUE(crash->contains("stack")) << crash->dump();
  const auto &frames = (*crash)["stack"]["frames"];
  ASSERT_GE(frames.size(), n) << crash->dump() << "\n" << shown(bt);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t ours = std::stoull(frames[i]["address"].get<std::string>(), nullptr, 16);
    EXPECT_EQ(ours, bt[i + 1].first) << "frame #" << i + 1 << " " << bt[i + 1].second << "\n" << shown(bt);
    EXPECT_EQ(frames[i]["function"], bt[i + 1].second) << shown(bt);
  }
}

TEST_P(Unwindable, CrashStackMatchesGdbBacktrace) { expect_crash_stack_is_gdbs(GetParam(), "mark", "f4", 4); }

// A crash in a leaf that set up no frame: the frame pointer is still its
// caller's, so the frame-pointer rule alone would skip that caller (f4);
// the interrupted frame's rule comes from .eh_frame instead, as gdb's does.
TEST_P(Unwindable, ACrashInALeafWithoutAFrameMatchesGdbBacktrace) {
  expect_crash_stack_is_gdbs(GetParam(), "leaf", "leaf_fault", 5);
}

// tl_options.stack_depth (TL_STACK_DEPTH for the shared library) gives a
// stack to every span begin and allocation event without asking: inline
// for SPAN_BEGIN and MALLOC, in the STACK slot after it for REALLOC (whose
// inline bytes are its old pointer), which the reader gives back to it.
TEST_P(Unwindable, TheSettingGivesSpanBeginsAndAllocationEventsAStack) {
  const Read r = crash_and_read(GetParam(), "depth");
  for (const char *kind : {"SPAN_BEGIN", "MALLOC", "REALLOC"}) {
    const json *e = nullptr;
    for (const auto &x : r.doc["events"])
      if (x["kind"] == kind) e = &x;
    ASSERT_NE(e, nullptr) << kind;
    EXPECT_EQ((*e)["location"]["function"], "f4") << kind;
    ASSERT_TRUE(e->contains("stack")) << e->dump();
    expect_prefix(functions(*e), {"f3", "f2", "f1", "main"});
  }
  for (const auto &x : r.doc["events"]) EXPECT_NE(x["kind"], "STACK") << "a STACK slot left unattached: " << x.dump();
}

INSTANTIATE_TEST_SUITE_P(Builds, Unwindable, ::testing::Values(CT_STACK_FIXTURE_SFRAME, CT_STACK_FIXTURE_FP),
                         [](const auto &param) { return std::string(param.index == 0 ? "sframe" : "frame_pointer"); });

// Neither .sframe nor frame pointers: tl_mark_stack's walk stops at once,
// saying why, and the event and its location are still there.
TEST(NoUnwindInfo, WalkEndsWithNoUnwindInformation) {
  const Read r = crash_and_read(CT_STACK_FIXTURE_NONE, "mark");
  const json *mark = event_named(r.doc, "MARK");
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ((*mark)["location"]["function"], "f4");
  ASSERT_TRUE(mark->contains("stack"));
  EXPECT_EQ((*mark)["stack"]["end"], "no_unwind_info") << mark->dump();
}

// The crash handler's walk takes each such frame's rule from .eh_frame:
// the whole stack, as gdb's `bt` gives it past main, through libc's frames
// to _start (whose CFI says nothing called it: complete).
TEST(NoUnwindInfo, TheCrashHandlersWalkTakesEveryFramesRuleFromEhFrame) {
  const Read r = crash_and_read(CT_STACK_FIXTURE_NONE, "mark");
  const json *crash = event_named(r.doc, "CRASH");
  ASSERT_NE(crash, nullptr);
  ASSERT_TRUE(crash->contains("stack")) << crash->dump();
  const auto bt = gdb_backtrace(CT_STACK_FIXTURE_NONE, r.run.core_path);
  const auto &frames = (*crash)["stack"]["frames"];
  EXPECT_EQ((*crash)["stack"]["end"], "complete") << crash->dump() << "\n" << shown(bt);
  ASSERT_EQ(frames.size() + 1, bt.size()) << crash->dump() << "\n" << shown(bt);
  expect_prefix(functions(*crash), {"f3", "f2", "f1", "main"});
  for (std::size_t i = 0; i < frames.size(); ++i)
    EXPECT_EQ(std::stoull(frames[i]["address"].get<std::string>(), nullptr, 16), bt[i + 1].first)
        << "frame #" << i + 1 << " " << bt[i + 1].second << "\n" << shown(bt);
}

// And a crash in a leaf of that build, the same way.
TEST(NoUnwindInfo, ACrashInALeafMatchesGdbBacktraceToo) {
  expect_crash_stack_is_gdbs(CT_STACK_FIXTURE_NONE, "leaf", "leaf_fault", 5);
}

// A crash 38 frames deep (stack_fixture deep: main, 31 frames of deep(),
// f1, f2, f3, the crash in f4): the crash handler's walk keeps the whole
// stack in the ring (ring format 5's chain of STACK slots after the CRASH
// slot, 8 frames a slot), not the first 8, address for address gdb's `bt`
// on the same core, and the reader's crash stack holds every frame from
// the ring as well as from the core ("ring+core"), none from the core only.
// Each build: the crash handler's walk takes .sframe, frame pointers or
// .eh_frame, as the code has.
void expect_whole_deep_crash_stack(const char *exe) {
  const Read r = crash_and_read(exe, "deep");
  const json *crash = event_named(r.doc, "CRASH");
  ASSERT_NE(crash, nullptr);
  ASSERT_TRUE(crash->contains("stack")) << crash->dump();
  const auto bt = gdb_backtrace(exe, r.run.core_path);
  const auto &frames = (*crash)["stack"]["frames"];
  ASSERT_EQ(bt.size(), 39u) << shown(bt);  // f4, then the 38 callers
  ASSERT_EQ(frames.size(), 38u) << crash->dump() << "\n" << shown(bt);
  EXPECT_EQ((*crash)["stack"]["end"], "complete") << crash->dump();
  std::vector<std::string> want = {"f3", "f2", "f1"};
  want.insert(want.end(), 31, "deep");
  want.push_back("main");
  expect_prefix(functions(*crash), want);
  for (std::size_t i = 0; i < frames.size(); ++i)
    EXPECT_EQ(std::stoull(frames[i]["address"].get<std::string>(), nullptr, 16), bt[i + 1].first)
        << "frame #" << i + 1 << " " << bt[i + 1].second << "\n" << shown(bt);
  const json &whole = r.doc["crash"]["stack"];
  ASSERT_EQ(whole["frames"].size(), 39u) << whole.dump();
  std::size_t from_ring = 0;
  for (const auto &f : whole["frames"]) from_ring += f["from"] == "ring" || f["from"] == "ring+core";
  EXPECT_EQ(from_ring, 39u) << whole.dump();
  EXPECT_EQ(whole["agree"], 39) << whole.dump();
  EXPECT_EQ(whole["ring_end"], "complete") << whole.dump();
  // The text says the same under the CRASH event.
  const ct::test::Ran text = ct::test::run({CT_READER_BIN, r.run.core_path, exe});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_NE(text.out.find("(crash stack: 39 frames; 39 in both the CRASH walk and the core's unwind, 0 from the "
                          "core's unwind only, 0 from the CRASH walk only; core unwind complete; CRASH walk complete)"),
            std::string::npos)
      << text.out;
}

TEST_P(Unwindable, ACrashDeeperThanOneStackSlotKeepsItsWholeStackInTheRing) {
  expect_whole_deep_crash_stack(GetParam());
}

TEST(NoUnwindInfo, ACrashDeeperThanOneStackSlotKeepsItsWholeStackInTheRing) {
  expect_whole_deep_crash_stack(CT_STACK_FIXTURE_NONE);
}

// The text output shows the stack under its event.
TEST(Text, StackUnderItsEvent) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_STACK_FIXTURE_SFRAME, "mark"});
  const ct::test::Ran ran = ct::test::run({CT_READER_BIN, run.core_path, CT_STACK_FIXTURE_SFRAME});
  ASSERT_EQ(ran.exit_code(), 0) << ran.err;
  EXPECT_TRUE(std::regex_search(ran.out, std::regex(R"(MARK .*at f4\+0x[0-9a-f]+.*\n +from f3\+0x[0-9a-f]+.*\n +from f2\+)")))
      << ran.out;
  EXPECT_TRUE(std::regex_search(ran.out, std::regex(R"(\(stack: [4-8] frames, )"))) << ran.out;
}

// The exports attach the stack to the instant: chrome-trace through "sf"
// into stackFrames (innermost first, each naming its caller as parent),
// CTF as fields babeltrace2 reads back.
TEST(Exports, ChromeTraceAndCtfCarryTheStack) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_STACK_FIXTURE_SFRAME, "mark"});
  const ct::test::Ran chrome =
      ct::test::run({CT_READER_BIN, "--format=chrome-trace", run.core_path, CT_STACK_FIXTURE_SFRAME});
  ASSERT_EQ(chrome.exit_code(), 0) << chrome.err;
  const json trace = json::parse(chrome.out);
  const json *mark = nullptr;
  for (const auto &e : trace["traceEvents"])
    if (e["name"] == "MARK") mark = &e;
  ASSERT_NE(mark, nullptr);
  ASSERT_TRUE(mark->contains("sf")) << mark->dump();
  std::vector<std::string> chain;
  std::string id = std::to_string((*mark)["sf"].get<long long>());
  while (!id.empty() && chain.size() < 16) {
    const json &f = trace["stackFrames"][id];
    chain.push_back(f["name"].get<std::string>());
    id = f.contains("parent") ? f["parent"].get<std::string>() : "";
  }
  ASSERT_GE(chain.size(), 5u);  // its location, f3, f2, f1, main at least
  // Symbolized as the text and JSON are (docs/export.md, "Stacks").
  const char *const expected[] = {"f4+0x", "f3+0x", "f2+0x", "f1+0x", "main+0x"};
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_EQ(chain[i].rfind(expected[i], 0), 0u) << i << ": " << chain[i];
  EXPECT_NE(chain[0].find("stack_fixture.c:"), std::string::npos) << chain[0];
  EXPECT_EQ((*mark)["args"]["stack_end"], "no_unwind_info");

  char dir[] = "/tmp/stacks-ctf-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string out = std::string(dir) + "/trace";
  const ct::test::Ran ctf =
      ct::test::run({CT_READER_BIN, "--format=ctf", "--output", out, run.core_path, CT_STACK_FIXTURE_SFRAME});
  ASSERT_EQ(ctf.exit_code(), 0) << ctf.err;
  const ct::test::Ran bt = ct::test::run({"/usr/bin/babeltrace2", out});
  ASSERT_EQ(bt.exit_code(), 0) << bt.err;
  EXPECT_TRUE(std::regex_search(bt.out, std::regex(R"(MARK: .*stack_end = "no_unwind_info", stack_depth = [5-9], stack = \[ \[0\] = 0x)")))
      << bt.out;
  EXPECT_TRUE(std::regex_search(bt.out, std::regex(R"re(MARK: .*stack_frames = \[ \[0\] = "f4\+0x[0-9a-f]+ \(.*stack_fixture\.c:[0-9]+\)", \[1\] = "f3\+0x)re")))
      << bt.out;
  ct::test::run({"/bin/rm", "-rf", dir});
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
