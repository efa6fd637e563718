// SPDX-License-Identifier: MIT
// preload_test - runs preload_victim and preload_stress under LD_PRELOAD of
// the wrappers, alone, together, and next to jemalloc in both orders, each
// with a timeout: a run that outlives it has hung (deadlock or recursion)
// and fails.  What the crashed victim leaves in a real core is checked by
// preload_core_test.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "preload_run.h"

namespace {

using ct_test::Preload;
using ct_test::preload_configs;
using ct_test::RunResult;
using ct_test::run_with_preload;

class PreloadTest : public ::testing::TestWithParam<Preload> {};

TEST_P(PreloadTest, VictimRunsAndRecordsWhatItShould) {
  const Preload &p = GetParam();
  ct_test::DataFile data;
  std::vector<std::string> argv = {CT_PRELOAD_VICTIM, data.path()};
  if (p.alloc_recorded) argv.push_back("--expect-alloc");
  if (p.io_recorded) argv.push_back("--expect-io");
  RunResult r = run_with_preload(argv, p.preload, 60);
  ASSERT_FALSE(r.timed_out) << "hung under LD_PRELOAD=" << p.ld_preload() << "\n" << r.output;
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
      << "status " << r.status << " under LD_PRELOAD=" << p.ld_preload() << "\n"
      << r.output;
}

TEST_P(PreloadTest, ThreadedStressFinishesWithoutHangOrHeapDamage) {
  const Preload &p = GetParam();
  std::vector<std::string> argv = {CT_PRELOAD_STRESS};
  if (p.alloc_recorded) argv.push_back("--expect-alloc");
  if (p.io_recorded) argv.push_back("--expect-io");
  RunResult r = run_with_preload(argv, p.preload, 120);
  ASSERT_FALSE(r.timed_out) << "hung under LD_PRELOAD=" << p.ld_preload() << "\n" << r.output;
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
      << "status " << r.status << " under LD_PRELOAD=" << p.ld_preload() << "\n"
      << r.output;
}

INSTANTIATE_TEST_SUITE_P(Orders, PreloadTest, ::testing::ValuesIn(preload_configs()),
                         [](const auto &param_info) { return param_info.param.name; });

// The bootstrap arena: a dlsym that allocates (as glibc's did before 2.34)
// re-enters the wrapper before it knows the next allocator.
TEST(PreloadBootstrap, AllocationsInsideDlsymComeFromTheArenaAndLeaveIt) {
  RunResult r = run_with_preload({CT_PRELOAD_VICTIM, "--arena-check"},
                                 {CT_PRELOAD_ALLOC_SO, CT_DLSYM_SHIM_SO}, 60);
  ASSERT_FALSE(r.timed_out) << "hung\n" << r.output;
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
      << "status " << r.status << "\n" << r.output;
}

}  // namespace

// TL_IO_BYTES: each READ, WRITE, RECV and SEND event keeps exactly the
// payload's first N bytes (send, recv, sendto, recvfrom, sendmsg, recvmsg,
// write, read, writev, readv); unset or 0, none.
static RunResult run_io_bytes_victim(const char *io_bytes, const char *expected) {
  ct::test::ProcessOptions o;
  o.env["LD_PRELOAD"] = CT_PRELOAD_IO_SO;
  if (io_bytes != nullptr) o.env["TL_IO_BYTES"] = io_bytes;
  o.err = ct::test::Stream::to_stdout();
  o.own_process_group = true;
  o.timeout = std::chrono::seconds(60);
  const ct::test::Ran ran = ct::test::run({CT_IO_BYTES_VICTIM, expected}, o);
  return {ran.wait_status, ran.timed_out, ran.out};
}

TEST(PreloadIoBytes, EightKeepsExactlyTheFirstEightBytesOfEachPayload) {
  RunResult r = run_io_bytes_victim("8", "8");
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << "status " << r.status << "\n" << r.output;
}

TEST(PreloadIoBytes, ZeroOrUnsetKeepsNone) {
  for (const char *v : {"0", static_cast<const char *>(nullptr)}) {
    RunResult r = run_io_bytes_victim(v, "0");
    ASSERT_FALSE(r.timed_out) << r.output;
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
        << "TL_IO_BYTES=" << (v ? v : "(unset)") << ": status " << r.status << "\n" << r.output;
  }
}
