// SPDX-License-Identifier: MIT
// GoogleTest death tests: with libtimeline's handlers installed, each handled
// signal still kills the process with that same signal, whichever way it was
// raised.  (What the CRASH slot and the core hold is lib_crash_test's job.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core_timeline/timeline.h"

namespace {

__attribute__((noinline, noipa)) void write_null() { *(volatile int *)nullptr = 1; }

__attribute__((noinline, noipa)) int read_past_end_of_file() {
  char path[] = "/tmp/tl-death-bus-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, 4096) != 0) return -1;
  auto *p = static_cast<volatile char *>(mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0));
  unlink(path);
  return p == MAP_FAILED ? -1 : p[4096];
}

__attribute__((noinline, noipa)) int divide(int a, int b) { return a / b; }

class CrashPathDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(CrashPathDeathTest, NullWriteDiesOfSigsegv) {
  EXPECT_EXIT(write_null(), ::testing::KilledBySignal(SIGSEGV), "");
}

TEST_F(CrashPathDeathTest, AbortDiesOfSigabrt) {
  EXPECT_EXIT(abort(), ::testing::KilledBySignal(SIGABRT), "");
}

TEST_F(CrashPathDeathTest, ReadPastEndOfMappedFileDiesOfSigbus) {
  EXPECT_EXIT(read_past_end_of_file(), ::testing::KilledBySignal(SIGBUS), "");
}

TEST_F(CrashPathDeathTest, IllegalInstructionDiesOfSigill) {
  EXPECT_EXIT(__builtin_trap(), ::testing::KilledBySignal(SIGILL), "");
}

TEST_F(CrashPathDeathTest, IntegerDivisionByZeroDiesOfSigfpe) {
  EXPECT_EXIT(divide(1, 0), ::testing::KilledBySignal(SIGFPE), "");
}

TEST_F(CrashPathDeathTest, SignalSentByAProcessDiesOfThatSignal) {
  EXPECT_EXIT(kill(getpid(), SIGSEGV), ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(kill(getpid(), SIGBUS), ::testing::KilledBySignal(SIGBUS), "");
}

TEST_F(CrashPathDeathTest, HandlersAreInstalledOnAnAlternateStack) {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    struct sigaction sa;
    ASSERT_EQ(sigaction(sig, nullptr, &sa), 0);
    EXPECT_TRUE(sa.sa_flags & SA_ONSTACK) << strsignal(sig);
    EXPECT_TRUE(sa.sa_flags & SA_SIGINFO) << strsignal(sig);
  }
  stack_t ss;
  ASSERT_EQ(sigaltstack(nullptr, &ss), 0);
  EXPECT_FALSE(ss.ss_flags & SS_DISABLE);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.sidecar_dir = "";
  if (tl_init(&o) != 0) return 2;
  return RUN_ALL_TESTS();
}
