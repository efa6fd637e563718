// SPDX-License-Identifier: MIT
// In-process tests of libtimeline (static library): what tl_* write into the
// ring in this process's own memory.  Crashes and cores are in
// lib_crash_test.cc.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core_timeline/timeline.h"
#include "ring_view.h"

namespace {

using ct_test::Event;
using ct_test::own_ring;
namespace fmt = core_timeline::format;

std::string g_sidecar_dir;

std::vector<Event> events_with_id(const std::vector<Event> &all, uint32_t id, uint16_t kind) {
  std::vector<Event> out;
  for (const auto &e : all)
    if (e.slot.id == id && e.slot.kind == kind) out.push_back(e);
  return out;
}

__attribute__((noinline, noipa)) void mark_here(uint32_t id, uintptr_t arg) {
  tl_mark(id, arg);
  __asm__ __volatile__("" ::: "memory");  // no tail call: keep our return address
}

TEST(Init, SecondCallReturnsEalready) { EXPECT_EQ(tl_init(nullptr), -EALREADY); }

TEST(Ring, HeaderIsValidAndDescribesThisProcess) {
  auto ring = own_ring();
  ASSERT_TRUE(ring) << "no valid /memfd:core-timeline mapping in /proc/self/maps";
  const auto &h = ring->header;
  EXPECT_EQ(h.pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(h.slots_per_lane, 64u);
  EXPECT_EQ(h.lane_count, 9u);  // 8 lanes + overflow
  EXPECT_EQ(h.header_size, fmt::kHeaderSize);
  EXPECT_EQ(h.endian_marker, fmt::kEndianMarker);
  EXPECT_GT(h.build_id_len, 0u) << "the test binary is linked with a build-id";
  EXPECT_NE(h.process_start_ticks, 0u);
  EXPECT_NE(h.anchor_ticks, 0u);
  EXPECT_NE(h.anchor_realtime_ns, 0u);
  EXPECT_TRUE(h.compat_flags & fmt::kCompatHandlers);
  EXPECT_TRUE(ring->lane(h.lane_count - 1).flags & fmt::kLaneShared);
}

TEST(Record, MarkWritesOneCommittedSlotWithCallerAndThread) {
  mark_here(0xA001, 42);
  auto ring = own_ring();
  ASSERT_TRUE(ring);
  auto found = events_with_id(ring->events(), 0xA001, fmt::kKindUser);
  ASSERT_EQ(found.size(), 1u);
  const auto &s = found[0].slot;
  EXPECT_EQ(s.arg0, 42u);
  EXPECT_EQ(s.tid, static_cast<uint32_t>(syscall(SYS_gettid)));
  EXPECT_NE(s.timestamp, 0u);
  // Set at tl_init, before the helper's first refresh: never 0.
  EXPECT_NE(s.mmap_generation, 0u);
  // The return address lies inside mark_here (just after its call).
  auto fn = reinterpret_cast<uintptr_t>(&mark_here);
  EXPECT_GT(s.return_address, fn);
  EXPECT_LT(s.return_address, fn + 64);
}

TEST(Record, Mark2AndRecordKeepBothArguments) {
  tl_mark2(0xA002, 7, 9);
  tl_record(TL_KIND_MALLOC, 0, 0x1234, 128);
  tl_record(999, 0, 1, 2);  // unknown kind: ignored
  auto all = own_ring()->events();
  auto m2 = events_with_id(all, 0xA002, fmt::kKindUser);
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_EQ(m2[0].slot.arg1, 9u);
  bool malloc_seen = false, unknown_seen = false;
  for (const auto &e : all) {
    malloc_seen |= e.slot.kind == fmt::kKindMalloc && e.slot.arg0 == 0x1234 && e.slot.arg1 == 128;
    unknown_seen |= e.slot.kind == 999;
  }
  EXPECT_TRUE(malloc_seen);
  EXPECT_FALSE(unknown_seen);
}

TEST(Record, SequencesAreDenseAndWrapWithinTheLane) {
  for (int i = 0; i < 200; ++i) tl_mark(0xA003, static_cast<uintptr_t>(i));
  auto ring = own_ring();
  auto all = ring->events();
  EXPECT_EQ(ring->torn, 0u);
  auto found = events_with_id(all, 0xA003, fmt::kKindUser);
  // 64 slots per lane: only the newest 64 events of this lane survive, and
  // they are the last ones written, in order.
  ASSERT_FALSE(found.empty());
  EXPECT_LE(found.size(), 64u);
  for (size_t i = 1; i < found.size(); ++i) {
    EXPECT_EQ(found[i].seq, found[i - 1].seq + 1);
    EXPECT_EQ(found[i].slot.arg0, found[i - 1].slot.arg0 + 1);
  }
  EXPECT_EQ(found.back().slot.arg0, 199u);
}

TEST(Record, DisabledSourceRecordsNothing) {
  uint32_t before = tl_set_enabled(TL_SOURCE_ALL & ~TL_SOURCE_USER);
  EXPECT_EQ(before, static_cast<uint32_t>(TL_SOURCE_ALL));
  EXPECT_EQ(tl_enabled(), static_cast<uint32_t>(TL_SOURCE_ALL & ~TL_SOURCE_USER));
  tl_mark(0xA004, 1);
  tl_record(TL_KIND_FREE, 0, 0xA004, 0);  // ALLOC still on
  tl_set_enabled(TL_SOURCE_ALL);
  tl_mark(0xA004, 2);
  auto all = own_ring()->events();
  auto found = events_with_id(all, 0xA004, fmt::kKindUser);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].slot.arg0, 2u);
  bool free_seen = false;
  for (const auto &e : all) free_seen |= e.slot.kind == fmt::kKindFree && e.slot.arg0 == 0xA004;
  EXPECT_TRUE(free_seen);
}

TEST(Record, PointerSnapshotCopiesBytesAndSurvivesABadPointer) {
  const char text[] = "hello, ring";
  tl_mark_ptr(0xA005, text, sizeof text);
  tl_mark_ptr(0xA006, reinterpret_cast<const void *>(16), 32);  // unmapped
  tl_mark_ptr(0xA007, text, 1000);                             // capped at 64
  auto all = own_ring()->events();
  auto good = events_with_id(all, 0xA005, fmt::kKindUserPtr);
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].slot.inline_len, sizeof text);
  EXPECT_EQ(std::memcmp(good[0].slot.inline_data, text, sizeof text), 0);
  EXPECT_EQ(good[0].slot.arg0, reinterpret_cast<uintptr_t>(text));
  auto bad = events_with_id(all, 0xA006, fmt::kKindUserPtr);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].slot.inline_len, 0u);
  auto capped = events_with_id(all, 0xA007, fmt::kKindUserPtr);
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_LE(capped[0].slot.inline_len, fmt::kInlineBytes);
}

TEST(Lanes, EachThreadWritesItsOwnLaneAndReleasesItAtExit) {
  std::vector<uint32_t> lanes_seen;
  std::vector<uint32_t> tids(4);
  std::vector<std::thread> threads;
  std::atomic<int> marked{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &tids, &marked] {
      tids[t] = static_cast<uint32_t>(syscall(SYS_gettid));
      tl_thread_name(("worker-" + std::to_string(t)).c_str());
      for (int i = 0; i < 10; ++i) tl_mark(0xB000 + t, static_cast<uintptr_t>(i));
      // Stay alive until all four have their lane, so no lane is reused.
      marked.fetch_add(1);
      while (marked.load() < 4) usleep(100);
    });
  for (auto &th : threads) th.join();
  auto ring = own_ring();
  auto all = ring->events();
  for (int t = 0; t < 4; ++t) {
    auto found = events_with_id(all, 0xB000 + t, fmt::kKindUser);
    ASSERT_EQ(found.size(), 10u);
    for (const auto &e : found) {
      EXPECT_EQ(e.lane, found[0].lane) << "one thread, one lane";
      EXPECT_EQ(e.slot.tid, tids[t]);
    }
    EXPECT_NE(found[0].lane, ring->header.lane_count - 1) << "not the overflow lane";
    lanes_seen.push_back(found[0].lane);
    // Released at thread exit.
    EXPECT_EQ(ring->lane(found[0].lane).owner_tid, 0u);
  }
  std::sort(lanes_seen.begin(), lanes_seen.end());
  EXPECT_EQ(std::unique(lanes_seen.begin(), lanes_seen.end()), lanes_seen.end());
  // Thread names were recorded as events.
  int names = 0;
  for (const auto &e : all)
    if (e.slot.kind == fmt::kKindThreadName &&
        std::string(reinterpret_cast<const char *>(e.slot.inline_data), e.slot.inline_len)
                .rfind("worker-", 0) == 0)
      ++names;
  EXPECT_EQ(names, 4);
}

TEST(Lanes, AFullTableSendsNewThreadsToTheSharedOverflowLane) {
  // 8 per-thread lanes: the main thread holds one; hold 8 more threads alive.
  std::atomic<int> ready{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 10; ++t)
    threads.emplace_back([t, &ready, &release] {
      tl_mark(0xC000, static_cast<uintptr_t>(t));
      ready.fetch_add(1);
      while (!release.load()) usleep(1000);
    });
  while (ready.load() < 10) usleep(1000);
  auto ring = own_ring();
  auto found = events_with_id(ring->events(), 0xC000, fmt::kKindUser);
  release = true;
  for (auto &th : threads) th.join();
  ASSERT_EQ(found.size(), 10u);
  int in_overflow = 0;
  for (const auto &e : found) in_overflow += e.lane == ring->header.lane_count - 1;
  EXPECT_GE(in_overflow, 3) << "10 threads + main thread, 8 lanes";
}

void *mark_then_vanish(void *) {
  tl_mark(0xC100, 0);
  // Exit without running any thread-exit destructor, as a thread killed
  // in the middle of its work would: the lane stays owned by a dead tid.
  syscall(SYS_exit, 0);
  return nullptr;
}

TEST(Lanes, ALaneWhoseOwnerDiedWithoutReleasingItIsTakenOver) {
  std::vector<pthread_t> threads(8);
  for (auto &t : threads) ASSERT_EQ(pthread_create(&t, nullptr, mark_then_vanish, nullptr), 0);
  for (auto &t : threads) pthread_join(t, nullptr);  // the kernel clears the tid
  std::thread fresh([] { tl_mark(0xC101, 0); });
  fresh.join();
  auto ring = own_ring();
  auto all = ring->events();
  auto found = events_with_id(all, 0xC101, fmt::kKindUser);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].lane, ring->header.lane_count - 1) << "went to the overflow lane";
  // Its LANE_CLAIM names the dead previous owner.
  bool takeover = false;
  for (const auto &e : all)
    takeover |= e.slot.kind == fmt::kKindLaneClaim && e.slot.tid == found[0].slot.tid &&
                e.slot.arg0 == found[0].lane && e.slot.arg1 != 0;
  EXPECT_TRUE(takeover);
}


TEST(Fork, ChildWritesItsOwnRingNeverTheParents) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    tl_mark(0xD001, 1);
    auto ring = own_ring();
    // One ring, the child's: its pid, its own event, none of the parent's.
    int ok = ring && ring->header.pid == static_cast<uint32_t>(getpid()) &&
             events_with_id(ring->events(), 0xD001, fmt::kKindUser).size() == 1 &&
             events_with_id(ring->events(), 0xA001, fmt::kKindUser).empty();
    int rings = 0;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) rings += line.find("/memfd:core-timeline") != std::string::npos;
    // And its own helper thread (threads do not survive fork).
    bool helper = false;
    for (int i = 0; i < 100 && !helper; ++i) {
      for (const auto &n : ct_test::thread_names()) helper |= n == "tl-helper";
      if (!helper) usleep(1000);
    }
    char verdict = (ok && rings == 1) ? (helper ? 'y' : 'h') : 'n';
    (void)!write(pipefd[1], &verdict, 1);
    _exit(0);
  }
  close(pipefd[1]);
  char verdict = 0;
  ASSERT_EQ(read(pipefd[0], &verdict, 1), 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_NE(verdict, 'n') << "the child saw the parent's ring or its own was wrong";
  EXPECT_NE(verdict, 'h') << "the child has no helper thread";
  EXPECT_EQ(verdict, 'y');
  auto ring = own_ring();
  EXPECT_TRUE(events_with_id(ring->events(), 0xD001, fmt::kKindUser).empty())
      << "the child's event landed in the parent's ring";
}

TEST(Sidecar, IsANewPrivateFileMirroringTheRing) {
  auto ring = own_ring();
  ASSERT_TRUE(ring->header.compat_flags & fmt::kCompatSidecar);
  std::string name = g_sidecar_dir + "/core-timeline." + std::to_string(getpid()) + "." +
                     std::to_string(ring->header.process_start_ticks) + ".ring";
  struct stat sb;
  ASSERT_EQ(lstat(name.c_str(), &sb), 0) << name;
  EXPECT_TRUE(S_ISREG(sb.st_mode));
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  EXPECT_EQ(sb.st_ino, ring->header.sidecar_ino);
  tl_mark(0xE001, 5);
  ASSERT_EQ(tl_flush_async(), 0);
  // The helper thread syncs within its interval; wait for our event.
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::ifstream f(name, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto side = ct_test::RingView::from_bytes(bytes);
    seen = side && !events_with_id(side->events(), 0xE001, fmt::kKindUser).empty();
    if (!seen) usleep(10000);
  }
  EXPECT_TRUE(seen) << "sidecar never showed the event";
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  char tmpl[] = "/tmp/tl-sidecar-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  g_sidecar_dir = tmpl;
  struct tl_options opts;
  std::memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  opts.slots_per_lane = 64;
  opts.lanes = 8;
  opts.sync_interval_ms = 10;
  opts.sidecar_dir = g_sidecar_dir.c_str();
  int rc = tl_init(&opts);
  if (rc != 0) {
    fprintf(stderr, "tl_init: %s\n", strerror(-rc));
    return 2;
  }
  int result = RUN_ALL_TESTS();
  // Best-effort cleanup of the sidecar directory.
  if (DIR *d = opendir(tmpl)) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(tmpl);
  }
  return result;
}
