// SPDX-License-Identifier: MIT
// signal_chain_test - libtimeline-signal.so: a program's own SIGSEGV handler,
// installed after libtimeline's constructor, runs after libtimeline's crash
// handler instead of displacing it (signal_victim.c).  Each mode crashes
// through the real systemd-coredump pipeline (tests/support/crash_harness.h);
// the core's ring must hold the original fault's CRASH event, written before
// the program's handler ran (kCrashHanded) and the last one in the ring,
// after one CRASH event for each fault the program recovered from; the
// program must have seen what it asked for (its log), on the stack it asked
// for.  A handler that ends the process with _exit() leaves no core: its
// CRASH event is read from the sidecar.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "process.h"
#include "ring_view.h"

namespace {

namespace fmt = core_timeline::format;

constexpr uint64_t kFaultAddress = 0x1230;  // signal_victim.c

struct Mode {
  const char *name;
  bool signal_preload;         // libtimeline-signal.so after libtimeline.so.1
  int death_signal;            // what the process dies of
  int crash_signal;            // the CRASH event's signal (0: none expected)
  int crash_code;              // its si_code
  bool chained;                // kCrashChained (and kCrashHanded) in its handler_flags
  int recovered;               // handed CRASH events before it (faults recovered from)
  std::vector<std::string> log;  // the victim's log, line for line
};

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The reader's verdict on each CRASH event (docs/timeline-json.md, "A fault
// handed to the program's handler"): the recovered ones are handled faults,
// never the crash; the last is the crash.
void expect_reader_outcomes(const std::string &core_path, const Mode &m) {
  const ct::test::Ran ran = ct::test::run({CT_READER_BIN, "--format=json", core_path});
  ASSERT_EQ(ran.exit_code(), 0) << ran.err;
  const nlohmann::json doc = nlohmann::json::parse(ran.out);
  std::vector<nlohmann::json> crashes;
  for (const auto &e : doc["events"])
    if (e["kind"] == "CRASH") crashes.push_back(e["crash"]);
  ASSERT_EQ(crashes.size(), 1u + m.recovered);
  for (int i = 0; i < m.recovered; ++i) {
    EXPECT_TRUE(crashes[i]["handed"].get<bool>()) << crashes[i].dump(2);
    EXPECT_EQ(crashes[i]["handed_outcome"], "recovered") << crashes[i].dump(2);
  }
  EXPECT_EQ(crashes.back()["handed_outcome"], m.chained ? "crash" : "not_handed") << crashes.back().dump(2);
  const ct::test::Ran text = ct::test::run({CT_READER_BIN, core_path});
  ASSERT_EQ(text.exit_code(), 0) << text.err;
  std::size_t handled = 0;
  for (std::size_t at = 0; (at = text.out.find("a handled fault, not the crash", at)) != std::string::npos; ++at)
    ++handled;
  EXPECT_EQ(handled, static_cast<std::size_t>(m.recovered)) << text.out;
  if (m.chained) {
    EXPECT_NE(text.out.find("handed to the program's handler, which did not recover"), std::string::npos) << text.out;
  }
}

class SignalChainTest : public ::testing::TestWithParam<Mode> {};

TEST_P(SignalChainTest, OneCrashEventOfTheOriginalFaultAndTheProgramsHandlerRan) {
  const Mode &m = GetParam();
  std::string log_path = "/tmp/ct-signal-chain-" + std::to_string(getpid()) + "-" + m.name;
  unlink(log_path.c_str());
  std::string mode = m.name;
  mode = mode.substr(0, mode.find("_without"));
  ct::test::CrashOptions opts;
  opts.env["LD_PRELOAD"] = std::string(CT_LIBTIMELINE_SO) +
                           (m.signal_preload ? std::string(" ") + CT_PRELOAD_SIGNAL_SO : "");
  opts.timeout = std::chrono::seconds(60);
  ct::test::CrashRun run = ct::test::run_and_collect_core({CT_SIGNAL_VICTIM, mode, log_path}, opts);
  std::string log = read_file(log_path);
  unlink(log_path.c_str());

  ASSERT_TRUE(WIFSIGNALED(run.wait_status)) << "status " << run.wait_status;
  EXPECT_EQ(WTERMSIG(run.wait_status), m.death_signal);
  std::string want_log;
  for (const auto &l : m.log) want_log += l + "\n";
  EXPECT_EQ(log, want_log) << "the victim's log";

  ct_test::CoreRings core = ct_test::rings_in_core(run.core_path);
  ASSERT_EQ(core.rings.size(), 1u) << run.core_path;
  std::vector<fmt::Slot> crashes;
  for (const auto &e : core.rings[0].events())
    if (e.slot.kind == fmt::kKindCrash) crashes.push_back(e.slot);
  if (m.crash_signal == 0) {
    for (const auto &c : crashes)
      ADD_FAILURE() << "a CRASH event of signal " << c.id << " at addr 0x" << std::hex << c.arg0;
  } else {
    ASSERT_EQ(crashes.size(), 1u + m.recovered) << "CRASH events in the ring of " << run.core_path;
    for (int i = 0; i < m.recovered; ++i) {
      fmt::CrashInfo ci;
      std::memcpy(&ci, crashes[i].inline_data, sizeof ci);
      EXPECT_EQ(crashes[i].id, static_cast<uint32_t>(SIGSEGV)) << "recovered fault " << i;
      EXPECT_EQ(crashes[i].arg0, kFaultAddress) << "recovered fault " << i;
      EXPECT_EQ(ci.handler_flags, fmt::kCrashChained | fmt::kCrashHanded) << "recovered fault " << i;
    }
    const fmt::Slot &c = crashes.back();
    fmt::CrashInfo ci;
    std::memcpy(&ci, c.inline_data, sizeof ci);
    EXPECT_EQ(c.id, static_cast<uint32_t>(m.crash_signal));
    EXPECT_EQ(ci.code, m.crash_code);
    const bool overflow = std::string(m.name).rfind("overflow", 0) == 0;
    if (m.crash_code > 0) {
      if (overflow)
        EXPECT_LT(c.arg0 > c.arg1 ? c.arg0 - c.arg1 : c.arg1 - c.arg0, 65536u) << "the fault address, by the sp";
      else
        EXPECT_EQ(c.arg0, kFaultAddress) << "the fault address";
      EXPECT_NE(c.stack, 0) << "the CRASH event has a stack";
    }
    EXPECT_EQ((ci.handler_flags & fmt::kCrashChained) != 0, m.chained) << "flags " << ci.handler_flags;
    EXPECT_EQ((ci.handler_flags & fmt::kCrashHanded) != 0, m.chained) << "flags " << ci.handler_flags;
    expect_reader_outcomes(run.core_path, m);
  }
  if (!HasFailure()) unlink(run.core_path.c_str()); /* kept when a check failed */
}

const Mode kModes[] = {
    // redis's handler: SA_NODEFER|SA_RESETHAND, SIG_DFL then kill().
    {"reraise-nodefer", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "handler"}},
    // The kill() stays pending until the handler returns.
    {"reraise-blocked", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "handler"}},
    // raise(): tgkill, pending for the thread until the handler returns.
    {"reraise-raise", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "handler"}},
    // Returns after SA_RESETHAND: the store faults again, with SIG_DFL; the
    // CRASH event written before the call is that crash's.
    {"resethand", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "handler"}},
    // SIG_IGN ignores a kill(), not a fault.
    {"ignore", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, false, 0, {"old is mine", "survived kill"}},
    // Recovered by siglongjmp: its CRASH event is followed by the abort()'s.
    {"longjmp", true, SIGABRT, SIGABRT, SI_TKILL, false, 1, {"old is mine", "recovered"}},
    // Recovered, then killed by itself with SIG_DFL: that kill() is the
    // crash, not the fault recovered before.
    {"longjmp-kill", true, SIGSEGV, SIGSEGV, SI_USER, false, 1, {"old is mine", "recovered"}},
    // The handler calls abort(): the process dies of SIGABRT, the CRASH
    // event is the fault's (none for the abort() from inside the handler).
    {"abort", true, SIGABRT, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "handler"}},
    // The handler faults itself: the kernel kills (SIGSEGV blocked in it);
    // the CRASH event is the original fault's.
    {"fault-again", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "handler"}},
    // Without SA_ONSTACK the handler runs on the interrupted stack, not on
    // libtimeline's alternate stack.
    {"interrupted-stack", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "on the interrupted stack"}},
    // A stack overflow: the handler, without SA_ONSTACK, runs on the
    // exhausted stack and faults there as it would without libtimeline; the
    // kernel kills (SIGSEGV blocked in the handler) and the CRASH event is
    // the overflow's.
    {"overflow", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine"}},
    // The same with SA_NODEFER: the second fault comes to libtimeline's
    // handler from inside the program's, which writes no second CRASH event.
    {"overflow-nodefer", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine"}},
    // With SA_ONSTACK, on the alternate stack the program set itself.
    {"own-altstack", true, SIGSEGV, SIGSEGV, SEGV_MAPERR, true, 0, {"old is mine", "on its own alternate stack"}},
    // Without libtimeline-signal.so the program's handler displaces ours:
    // no CRASH event (the reader's fallback from the core is all there is).
    {"reraise-nodefer_without_signal_preload", false, SIGSEGV, 0, 0, false, 0, {"old is mine", "handler"}},
};

// A handler that ends the process with _exit(): no core, no re-raise; the
// CRASH event, written before the handler ran, is in the sidecar (which the
// crash handler brings up to date with pwrite(2)).
TEST(SignalChainExit, TheHandlersExitKeepsTheCrashEventInTheSidecar) {
  char tmpl[] = "/tmp/ct-signal-chain-exit-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string log_path = dir + "/log";
  std::string preload = std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_SIGNAL_SO;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("TL_SIDECAR_DIR", dir.c_str(), 1);
    execl(CT_SIGNAL_VICTIM, CT_SIGNAL_VICTIM, "exit", log_path.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(read_file(log_path), "old is mine\nhandler\n");
  std::vector<std::string> rings;
  if (DIR *d = opendir(dir.c_str())) {
    while (const dirent *e = readdir(d))
      if (std::string(e->d_name).rfind("core-timeline.", 0) == 0) rings.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  ASSERT_EQ(rings.size(), 1u) << "sidecars in " << dir;
  std::ifstream f(rings[0], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto side = ct_test::RingView::from_bytes(bytes);
  ASSERT_TRUE(side) << rings[0] << " does not hold a valid ring";
  std::vector<fmt::Slot> crashes;
  for (const auto &e : side->events())
    if (e.slot.kind == fmt::kKindCrash) crashes.push_back(e.slot);
  ASSERT_EQ(crashes.size(), 1u) << "CRASH events in " << rings[0];
  fmt::CrashInfo ci;
  std::memcpy(&ci, crashes[0].inline_data, sizeof ci);
  EXPECT_EQ(crashes[0].id, static_cast<uint32_t>(SIGSEGV));
  EXPECT_EQ(ci.code, SEGV_MAPERR);
  EXPECT_EQ(crashes[0].arg0, kFaultAddress);
  EXPECT_EQ(ci.handler_flags, fmt::kCrashChained | fmt::kCrashHanded);
  if (!HasFailure()) std::system(("rm -rf '" + dir + "'").c_str());
}

INSTANTIATE_TEST_SUITE_P(Modes, SignalChainTest, ::testing::ValuesIn(kModes), [](const auto &param_info) {
  std::string n = param_info.param.name;
  for (char &ch : n)
    if (ch == '-') ch = '_';
  return n;
});

}  // namespace
