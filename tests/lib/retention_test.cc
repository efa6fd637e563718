// SPDX-License-Identifier: MIT
//
// retention_test - "keep the last minute" on real crashes (ring format 3):
// the wrappers' events never evict a mark, one busy thread keeps most of
// the ring, 64 threads still get a lane each, and the reader says how far
// back each source reaches.  Real processes, real cores from
// systemd-coredump (pipeline fixture); the ring is read with ring_view.h,
// independently of the reader, and then by core-timeline-read itself.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "process.h"
#include "retention_ids.h"
#include "ring_view.h"

namespace {

namespace fmt = core_timeline::format;

std::string g_bin_dir;  // build/bin, from argv[0]

struct Crashed {
  ct::test::CrashRun run;
  ct_test::CoreRings core;
  std::vector<ct_test::Event> events;
};

Crashed crash(std::vector<std::string> argv, std::map<std::string, std::string> env = {}) {
  ct::test::CrashOptions opts;
  opts.env = std::move(env);
  opts.unset_env = {"TL_*"};
  Crashed c;
  c.run = ct::test::run_and_collect_core(argv, opts);
  c.core = ct_test::rings_in_core(c.run.core_path);
  if (c.core.rings.size() == 1) c.events = c.core.rings[0].events();
  return c;
}

std::vector<ct_test::Event> marks(const std::vector<ct_test::Event> &all, uint32_t id) {
  std::vector<ct_test::Event> out;
  for (const auto &e : all)
    if (e.slot.kind == fmt::kKindUser && e.slot.id == id) out.push_back(e);
  return out;
}

// core-timeline-read's text for the core.
std::string read_text(const Crashed &c) {
  const ct::test::Ran r = ct::test::run({g_bin_dir + "/core-timeline-read", "--no-symbols", c.run.core_path});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  return r.out;
}

std::string line_with(const std::string &text, const std::string &needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return {};
  const auto begin = text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

uint64_t slot_capacity(const ct_test::RingView &ring) {
  uint64_t slots = uint64_t(ring.header.lane_count) * ring.header.slots_per_lane;
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c) slots += ring.source(c).pool_slots;
  return slots;
}

// The case: one mark, then 100,000 allocations recorded by the
// wrapper, then the crash.  Before lanes by source the frees pushed the
// mark out within 256 events.
TEST(Retention, AMarkSurvivesAHundredThousandAllocations) {
  Crashed c = crash({g_bin_dir + "/retention_crasher", "mark-then-allocs", "100000"},
                    {{"LD_PRELOAD", g_bin_dir + "/../lib/libtimeline-alloc.so"}});
  ASSERT_TRUE(WIFSIGNALED(c.run.wait_status));
  ASSERT_EQ(c.core.rings.size(), 1u);
  const auto &ring = c.core.rings[0];
  ASSERT_EQ(marks(c.events, RETENTION_ONCE).size(), 1u) << "the mark was evicted";
  EXPECT_EQ(marks(c.events, RETENTION_ONCE)[0].slot.arg0, 42u);
  // The wrapper was seen at tl_init and given its share; its lane grew
  // through its pool, then by a segment of the user pool, and wrapped.
  EXPECT_TRUE(ring.source(fmt::kSourceAlloc).flags & fmt::kSourcePresent);
  EXPECT_GT(ring.source(fmt::kSourceAlloc).pool_slots, 0u);
  uint64_t alloc_written = 0, alloc_kept = 0;
  for (const auto &e : c.events) alloc_kept += fmt::source_of_kind(e.slot.kind) == fmt::kSourceAlloc;
  const auto &a = ring.source(fmt::kSourceAlloc);
  for (uint32_t l = a.first_lane; l < a.first_lane + a.lane_count; ++l) alloc_written += ring.lane(l).write_index;
  EXPECT_GE(alloc_written, 200000u) << "a malloc and a free per round";
  EXPECT_LT(alloc_kept, alloc_written) << "the allocation lane never wrapped: the test shows nothing";
  // Its whole pool, and a second segment as big lent by the user pool,
  // which one mark leaves idle (split lanes, ring format 6).
  EXPECT_EQ(ring.source(fmt::kSourceUser).lent, a.pool_slots) << "the idle user pool lends the allocation lane a segment of its size";
  EXPECT_EQ(alloc_kept, 2ull * a.pool_slots) << "one busy allocating thread keeps its whole pool and the segment lent";

  const std::string text = read_text(c);
  EXPECT_NE(text.find("id=0x7102"), std::string::npos) << text.substr(0, 2000);
  const std::string user = line_with(text, "window: user marks and spans:");
  EXPECT_NE(user.find("complete since tl_init"), std::string::npos) << user;
  const std::string alloc = line_with(text, "window: allocations:");
  EXPECT_NE(alloc.find("complete for the last"), std::string::npos) << alloc;
  EXPECT_NE(alloc.find("not known before -"), std::string::npos) << alloc;
  const std::string warning = line_with(text, "proves nothing");
  EXPECT_NE(warning.find("allocations before -"), std::string::npos) << warning;
  EXPECT_NE(warning.find("user marks and spans are complete since tl_init"), std::string::npos) << warning;
}

// One thread records 200,000 marks with the default ring: its lane grows
// through the user pool and keeps at least 90 % of the ring's slots (256
// before pools: one lane of 65).
TEST(Retention, OneBusyThreadKeepsNinetyPercentOfTheRing) {
  Crashed c = crash({g_bin_dir + "/retention_crasher", "marks", "200000"});
  ASSERT_TRUE(WIFSIGNALED(c.run.wait_status));
  ASSERT_EQ(c.core.rings.size(), 1u);
  const auto &ring = c.core.rings[0];
  const auto kept = marks(c.events, RETENTION_MARK);
  const uint64_t capacity = slot_capacity(ring);
  EXPECT_GE(kept.size(), capacity * 9 / 10) << kept.size() << " of " << capacity << " slots";
  ASSERT_FALSE(kept.empty());
  // The newest ones, without a hole.
  EXPECT_EQ(kept.back().slot.arg0, 199999u);
  for (size_t i = 1; i < kept.size(); ++i) ASSERT_EQ(kept[i].slot.arg0, kept[i - 1].slot.arg0 + 1) << i;
  std::printf("200000 marks: %zu kept of %llu slots (%.1f %%)\n", kept.size(),
              static_cast<unsigned long long>(capacity), 100.0 * double(kept.size()) / double(capacity));
  const std::string user = line_with(read_text(c), "window: user marks and spans:");
  EXPECT_NE(user.find("complete for the last"), std::string::npos) << user;
}

// 64 threads alive at the crash: each has a lane of its own (not the
// shared overflow lane), whatever the first busy thread took.
TEST(Retention, SixtyFourThreadsGetALaneEach) {
  Crashed c = crash({g_bin_dir + "/retention_crasher", "threads", "64"});
  ASSERT_TRUE(WIFSIGNALED(c.run.wait_status));
  ASSERT_EQ(c.core.rings.size(), 1u);
  const auto &ring = c.core.rings[0];
  const auto found = marks(c.events, RETENTION_THREAD);
  ASSERT_EQ(found.size(), 64u);
  std::set<uint32_t> lanes, args;
  for (const auto &e : found) {
    EXPECT_NE(e.lane, ring.overflow_lane()) << "thread " << e.slot.arg0 << " went to the overflow lane";
    EXPECT_LT(e.lane, ring.source(fmt::kSourceUser).first_lane + ring.source(fmt::kSourceUser).lane_count);
    lanes.insert(e.lane);
    args.insert(static_cast<uint32_t>(e.slot.arg0));
  }
  EXPECT_EQ(lanes.size(), 64u) << "two threads shared a lane";
  EXPECT_EQ(args.size(), 64u);
}

// The issue's own command: python3 under all three libraries, a mark made
// through ctypes, a file read, then SIGSEGV.  The mark is kept and the
// reader says how deep the allocation window is.
TEST(Retention, PythonUnderTheWrappersKeepsItsMark) {
  const std::string lib = g_bin_dir + "/../lib/";
  Crashed c = crash({"/usr/bin/python3", "-c",
                     "import os,signal,json,ctypes\n"
                     "ctypes.CDLL('libtimeline.so.1').tl_mark(0x7104, 7)\n"
                     "open('/etc/hostname').read(); json.dumps({'a':[1]*100})\n"
                     "for i in range(20000): json.loads(json.dumps({'k': [i] * 50}))\n"
                     "os.kill(os.getpid(), signal.SIGSEGV)\n"},
                    {{"LD_PRELOAD", lib + "libtimeline.so.1 " + lib + "libtimeline-alloc.so " + lib +
                                        "libtimeline-io.so"}});
  ASSERT_TRUE(WIFSIGNALED(c.run.wait_status));
  ASSERT_EQ(c.core.rings.size(), 1u);
  ASSERT_EQ(marks(c.events, 0x7104).size(), 1u) << "the ctypes mark was evicted";
  const std::string text = read_text(c);
  const std::string alloc = line_with(text, "window: allocations:");
  EXPECT_NE(alloc.find("complete for the last"), std::string::npos) << alloc;
  EXPECT_NE(line_with(text, "window: I/O:").find("kept"), std::string::npos) << text.substr(0, 1500);
  EXPECT_NE(text.find("path=\"/etc/hostname\""), std::string::npos) << "the OPEN path is not shown as text";
  std::printf("%s\n%s\n", line_with(text, "window: user").c_str(), alloc.c_str());
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string self = argv[0];
  g_bin_dir = self.substr(0, self.rfind('/'));
  return RUN_ALL_TESTS();
}
