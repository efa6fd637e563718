// SPDX-License-Identifier: MIT
// preload_core_test - preload_victim crashes under each LD_PRELOAD order of
// the wrappers (preload_run.h); its core, fetched from the real
// systemd-coredump pipeline (tests/support/crash_harness.h), must hold the
// heap and I/O events the victim saw in its own ring just before, exactly,
// from its own thread, followed by its CRASH event.  The ring is read twice:
// with the format header alone (tests/lib/ring_view.h) and by the reader
// (ct::reader), which must also name the kinds.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "crash_harness.h"
#include "preload_expect.h"
#include "preload_run.h"
#include "ring_view.h"

namespace {

namespace fmt = core_timeline::format;
namespace rd = core_timeline::reader;
using ct_test::Expected;
using ct_test::Preload;
using ct_test::Seen;

std::string join(const std::vector<std::string> &lines) {
  std::string s;
  for (const auto &l : lines) s += l + "\n";
  return s;
}

// The family checks of preload_victim, on events decoded from the core.
std::vector<std::string> check_families(const Preload &p, const std::vector<Expected> &want,
                                        const std::vector<Seen> &seen) {
  std::vector<Expected> heap, io;
  for (const Expected &e : want) (ct_test::is_alloc_kind(e.event.kind) ? heap : io).push_back(e);
  std::vector<std::string> problems =
      p.alloc_recorded ? ct_test::check_exactly(heap, ct_test::is_alloc_kind, seen)
                       : ct_test::check_absent(ct_test::is_alloc_kind, "heap", seen);
  auto more = p.io_recorded ? ct_test::check_exactly(io, ct_test::is_io_kind, seen)
                            : ct_test::check_absent(ct_test::is_io_kind, "I/O", seen);
  problems.insert(problems.end(), more.begin(), more.end());
  if (p.alloc_recorded && heap.empty()) problems.push_back("the victim expected no heap event");
  if (p.io_recorded && io.empty()) problems.push_back("the victim expected no I/O event");
  return problems;
}

// What the reader must call each built-in kind (ring_format.h, enum Kind).
const std::map<uint16_t, std::string> kKindNames = {
    {fmt::kKindMalloc, "MALLOC"}, {fmt::kKindFree, "FREE"},       {fmt::kKindCalloc, "CALLOC"},
    {fmt::kKindRealloc, "REALLOC"}, {fmt::kKindOpen, "OPEN"},     {fmt::kKindRead, "READ"},
    {fmt::kKindWrite, "WRITE"},   {fmt::kKindConnect, "CONNECT"}, {fmt::kKindClose, "CLOSE"},
    {fmt::kKindAccept, "ACCEPT"}, {fmt::kKindRecv, "RECV"},       {fmt::kKindSend, "SEND"},
    {fmt::kKindPread, "PREAD"},   {fmt::kKindPwrite, "PWRITE"},   {fmt::kKindSendfile, "SENDFILE"},
    {fmt::kKindSocket, "SOCKET"}, {fmt::kKindFsync, "FSYNC"},     {fmt::kKindDup, "DUP"},
};

class PreloadCoreTest : public ::testing::TestWithParam<Preload> {};

TEST_P(PreloadCoreTest, CoreHoldsTheEventsTheVictimRecordedBeforeItCrashed) {
  const Preload &p = GetParam();
  ct_test::DataFile data;
  std::string expect_path = "/tmp/ct-preload-expect-" + std::to_string(getpid()) + "-" + p.name;
  std::vector<std::string> argv = {CT_PRELOAD_VICTIM, data.path(), "--crash", "--expect-out",
                                   expect_path};
  if (p.alloc_recorded) argv.push_back("--expect-alloc");
  if (p.io_recorded) argv.push_back("--expect-io");
  ct::test::CrashOptions opts;
  opts.env["LD_PRELOAD"] = p.ld_preload();
  opts.timeout = std::chrono::seconds(60);  // a hang is reported as a failure

  ct::test::CrashRun run = ct::test::run_and_collect_core(argv, opts);
  ASSERT_TRUE(WIFSIGNALED(run.wait_status)) << "status " << run.wait_status;
  EXPECT_EQ(WTERMSIG(run.wait_status), SIGSEGV);

  uint32_t tid = 0;
  std::vector<Expected> want;
  bool read_ok = ct_test::read_expectations(expect_path, &tid, &want);
  unlink(expect_path.c_str());
  ASSERT_TRUE(read_ok) << "the victim wrote no expectations to " << expect_path
                       << ": it did not get as far as its crash";

  // 1. The format header alone.
  ct_test::CoreRings core = ct_test::rings_in_core(run.core_path);
  ASSERT_EQ(core.rings.size(), 1u) << run.core_path;
  EXPECT_EQ(core.rings[0].header.pid, static_cast<uint32_t>(run.pid));
  // The victim's events are in one lane per source (ring format 3: its
  // heap events in an allocation lane, its I/O in an I/O lane, the CRASH
  // in a user lane), so sequence numbers order them only within a lane;
  // across lanes the slot clock does (one thread, one clock).
  std::vector<Seen> mine;
  std::optional<fmt::Slot> crash;
  std::optional<uint64_t> last_call_ticks;
  for (const auto &e : core.rings[0].events()) {
    if (e.slot.tid != tid) continue;
    mine.push_back({e.slot.kind, e.slot.id, e.slot.arg0, e.slot.arg1});
    if (e.slot.kind == fmt::kKindCrash) {
      crash = e.slot;
    } else if (!want.empty() && ct_test::same(mine.back(), want.back().event)) {
      last_call_ticks = e.slot.timestamp;
    }
  }
  std::vector<std::string> problems = check_families(p, want, mine);
  EXPECT_TRUE(problems.empty()) << "in the core (format header): " << join(problems);
  ASSERT_TRUE(crash) << "no CRASH event from the victim's thread " << tid;
  EXPECT_EQ(crash->id, static_cast<uint32_t>(SIGSEGV));
  if (last_call_ticks) {  // none when the victim's last call was not recorded (check_families says)
    EXPECT_NE(*last_call_ticks, 0u);
    EXPECT_GT(crash->timestamp, *last_call_ticks) << "the CRASH event comes after the victim's last call";
  }

  // 2. The reader.
  auto file = rd::CoreFile::open(run.core_path);
  ASSERT_TRUE(file) << run.core_path;
  rd::ReadOptions ro;
  ro.core_only = true;
  ro.symbolize = false;
  rd::Analysis a = rd::analyze(*file, ro);
  ASSERT_EQ(a.status, rd::Status::kOk) << a.reason;
  std::vector<Seen> read_back;
  for (const auto &e : a.events) {
    if (e.tid != tid) continue;
    read_back.push_back({e.kind, e.id, e.arg0, e.arg1});
    auto name = kKindNames.find(e.kind);
    if (name != kKindNames.end()) {
      EXPECT_EQ(a.kind_name_of(e), name->second) << "the reader's name for kind " << e.kind;
    }
  }
  problems = check_families(p, want, read_back);
  EXPECT_TRUE(problems.empty()) << "in the reader's timeline: " << join(problems);

  if (!HasFailure()) unlink(run.core_path.c_str()); /* kept when a check failed */
}

INSTANTIATE_TEST_SUITE_P(Orders, PreloadCoreTest, ::testing::ValuesIn(ct_test::preload_configs()),
                         [](const auto &param_info) { return param_info.param.name; });

}  // namespace
