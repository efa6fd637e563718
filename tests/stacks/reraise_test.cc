// SPDX-License-Identifier: MIT
//
// reraise_test - the crashing thread's whole stack from the core (libdwfl's
// unwind, beside the CRASH event's own walk), and a fault the program's own
// handler re-raised, read from the kernel's signal frame, on real cores of
// the real systemd-coredump pipeline:
//  - reraise_fixture (libtimeline.a, its own SIGSEGV handler installed after
//    tl_init) re-raises with raise() and with kill(): the reader reports the
//    original SEGV_ACCERR, its address and function, and the handler;
//  - python3 crashing in ctypes under LD_PRELOAD=libtimeline.so.1: the
//    crash stack is systemd-coredump's, frame for frame (its journal
//    entry's "Stack trace of thread" in MESSAGE), down to Py_BytesMain.
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
  std::string text;
};

Read crash_and_read(const std::vector<std::string> &argv, const ct::test::CrashOptions &opts = {}) {
  Read r;
  r.run = ct::test::run_and_collect_core(argv, opts);
  const ct::test::Ran ran = ct::test::run({CT_READER_BIN, "--format=json", r.run.core_path});
  EXPECT_EQ(ran.exit_code(), 0) << ran.err;
  r.doc = json::parse(ran.out);
  const ct::test::Ran text = ct::test::run({CT_READER_BIN, r.run.core_path});
  EXPECT_EQ(text.exit_code(), 0) << text.err;
  r.text = text.out;
  return r;
}

std::string fn(const json &frame) { return frame["function"].is_string() ? frame["function"].get<std::string>() : "?"; }

std::string shown(const json &frames) {
  std::string s;
  for (std::size_t i = 0; i < frames.size(); ++i)
    s += "#" + std::to_string(i) + " " + frames[i]["address"].get<std::string>() + " " + fn(frames[i]) + " [" +
         frames[i]["from"].get<std::string>() + "]\n";
  return s;
}

// `want` appear in `frames`, in this order, one right after the other.
void expect_run(const json &frames, const std::vector<std::string> &want) {
  for (std::size_t i = 0; i + want.size() <= frames.size(); ++i) {
    bool all = true;
    for (std::size_t k = 0; k < want.size() && all; ++k) all = fn(frames[i + k]) == want[k];
    if (all) return;
  }
  ADD_FAILURE() << "no run of the expected frames in:\n" << shown(frames);
}

void expect_reraised(const Read &r, const std::string &si_code, const std::string &raised_with) {
  const json &c = r.doc["crash"];
  EXPECT_EQ(c["signal_name"], "SIGSEGV") << c.dump();
  EXPECT_EQ(c["si_code_name"], si_code) << c.dump();
  EXPECT_EQ(c["sender_pid"], r.run.pid) << c.dump();
  EXPECT_FALSE(c["ring_slot"].get<bool>()) << "the fixture's handler replaced libtimeline's";
  ASSERT_TRUE(c["reraised"].is_object()) << c.dump(2);
  const json &o = c["reraised"];
  EXPECT_EQ(o["signal_name"], "SIGSEGV");
  EXPECT_EQ(o["si_code_name"], "SEGV_ACCERR");
  EXPECT_EQ(o["fault_address"], "0x10000040");
  EXPECT_EQ(o["location"]["function"], "fault_here") << o.dump(2);
  EXPECT_EQ(o["handler"]["function"], "on_segv") << o.dump(2);
  EXPECT_EQ(o["raised_with"], raised_with);
  EXPECT_EQ(o["pc"], o["location"]["address"]);

  // The whole stack: into the handler, through the signal frame, into the
  // faulting function and its callers.
  ASSERT_TRUE(c["stack"].is_object()) << c.dump(2);
  const json &frames = c["stack"]["frames"];
  expect_run(frames, {"on_segv", "__restore_rt", "fault_here", "f1", "main"});
  std::size_t signal_frames = 0;
  for (const auto &f : frames) {
    EXPECT_EQ(f["from"], "core") << "no CRASH event: every frame is the core's";
    if (f["signal_frame"].get<bool>()) {
      ++signal_frames;
      EXPECT_EQ(fn(f), "__restore_rt") << shown(frames);
    }
  }
  EXPECT_EQ(signal_frames, 1u) << shown(frames);

  // The warning says what the core shows, never that the handler was not
  // installed (the ring's header says it was).
  bool warned = false;
  for (const auto &w : r.doc["warnings"]) {
    const std::string s = w.get<std::string>();
    EXPECT_EQ(s.find("not installed"), std::string::npos) << s;
    if (s.rfind("no CRASH event in the ring: the program's own handler (on_segv) caught the original SIGSEGV", 0) == 0)
      warned = true;
  }
  EXPECT_TRUE(warned) << r.doc["warnings"].dump(2);

  const std::regex line("re-raised: the program's own handler \\(in on_segv, reraise_fixture\\) caught SIGSEGV "
                        "\\(SEGV_ACCERR\\) at addr=0x10000040 pc=0x[0-9a-f]+ in fault_here, reraise_fixture and "
                        "re-raised it with " + std::regex_replace(raised_with, std::regex("[()]"), "\\$&") + "\n");
  EXPECT_TRUE(std::regex_search(r.text, line)) << r.text;
  EXPECT_TRUE(std::regex_search(r.text, std::regex(R"(#\d+ +__restore_rt\+0x[0-9a-f]+ .*\(signal frame\)  \[core\])")))
      << r.text;
}

TEST(Reraised, WithRaise) {
  const Read r = crash_and_read({CT_RERAISE_FIXTURE, "raise"});
  expect_reraised(r, "SI_TKILL", "tgkill()");
}

TEST(Reraised, WithKill) {
  const Read r = crash_and_read({CT_RERAISE_FIXTURE, "kill"});
  expect_reraised(r, "SI_USER", "kill()");
}

// The handler returns without SA_NODEFER: the re-raised signal waits until
// sigreturn and is taken at the faulting instruction, so no signal frame is
// on the stack and the core cannot tell the fault; the reader says so.
TEST(Reraised, TakenAfterTheHandlerReturnedCannotBeTold) {
  const Read r = crash_and_read({CT_RERAISE_FIXTURE, "defer"});
  const json &c = r.doc["crash"];
  EXPECT_EQ(c["si_code_name"], "SI_TKILL") << c.dump();
  EXPECT_TRUE(c["reraised"].is_null()) << c.dump(2);
  ASSERT_TRUE(c.contains("reraised_note")) << c.dump(2);
  EXPECT_NE(c["reraised_note"].get<std::string>().find("passes through no signal frame"), std::string::npos);
  ASSERT_TRUE(c["stack"].is_object()) << c.dump(2);
  expect_run(c["stack"]["frames"], {"fault_here", "f1", "main"});
  for (const auto &w : r.doc["warnings"]) EXPECT_EQ(w.get<std::string>().find("not installed"), std::string::npos) << w;
}

// --all-threads: every other thread's stack too (main, waiting in
// pthread_join, and libtimeline's helper); without it, none.
TEST(AllThreads, EveryOtherThreadIsUnwound) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_RERAISE_FIXTURE, "thread"});
  const ct::test::Ran plain = ct::test::run({CT_READER_BIN, "--format=json", run.core_path});
  ASSERT_EQ(plain.exit_code(), 0) << plain.err;
  EXPECT_TRUE(json::parse(plain.out)["thread_stacks"].empty());
  const ct::test::Ran all = ct::test::run({CT_READER_BIN, "--format=json", "--all-threads", run.core_path});
  ASSERT_EQ(all.exit_code(), 0) << all.err;
  const json doc = json::parse(all.out);
  expect_run(doc["crash"]["stack"]["frames"], {"fault_here", "f1", "thread_main"});
  // main's thread, and libtimeline's helper thread.
  ASSERT_EQ(doc["thread_stacks"].size(), doc["process"]["threads"].size() - 1) << doc["thread_stacks"].dump(2);
  const json *main_thread = nullptr;
  for (const auto &x : doc["thread_stacks"])
    if (x["tid"] == run.pid) main_thread = &x;
  ASSERT_NE(main_thread, nullptr) << doc["thread_stacks"].dump(2);
  const json &t = *main_thread;
  bool in_main = false;
  for (const auto &f : t["frames"]) {
    in_main = in_main || fn(f) == "main";
    EXPECT_EQ(f["from"], "core");
  }
  EXPECT_TRUE(in_main) << shown(t["frames"]);
  const ct::test::Ran text = ct::test::run({CT_READER_BIN, "--all-threads", run.core_path});
  EXPECT_NE(text.out.find("stack of tid " + std::to_string(run.pid) + " (from the core's unwind):\n"), std::string::npos)
      << text.out;
}

// systemd-coredump names a frame by its DWARF subprogram where there is
// debug info (libc's "__libc_start_main_impl"), the reader by its ELF
// symbol ("__libc_start_main@@GLIBC_2.34", the exported alias at the same
// address): the same function when the names agree without the symbol
// version, or the symbol's name begins the subprogram's.
bool same_function(std::string ours, const std::string &theirs) {
  if (const std::size_t at = ours.find('@'); at != std::string::npos) ours.resize(at);
  return ours == theirs || (!ours.empty() && theirs.rfind(ours, 0) == 0);
}

TEST(WholeStack, Python3CtypesCrashIsSystemdCoredumpsStack) {
  ct::test::CrashOptions opts;
  opts.env["LD_PRELOAD"] = CT_TIMELINE_SO;
  const Read r = crash_and_read({"/usr/bin/python3", "-c", "import ctypes; ctypes.string_at(0)"}, opts);
  const auto it = r.run.journal_fields.find("MESSAGE");
  ASSERT_NE(it, r.run.journal_fields.end());
  const auto theirs = ct::test::coredump_stack(it->second);
  ASSERT_GE(theirs.size(), 10u) << it->second;
  const json &c = r.doc["crash"];
  ASSERT_TRUE(c["stack"].is_object()) << c.dump(2);
  const json &frames = c["stack"]["frames"];
  std::string both;
  for (std::size_t i = 0; i < theirs.size(); ++i)
    both += "#" + std::to_string(i) + " " + theirs[i].second + " | " +
            (i < frames.size() ? fn(frames[i]) + " " + frames[i]["from"].get<std::string>() : "-") + "\n";
  ASSERT_GE(frames.size(), theirs.size()) << both;
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    EXPECT_EQ(std::stoull(frames[i]["address"].get<std::string>(), nullptr, 16), theirs[i].first)
        << "frame #" << i << "\n" << both;
    if (theirs[i].second != "n/a") {
      EXPECT_TRUE(same_function(fn(frames[i]), theirs[i].second)) << "frame #" << i << "\n" << both;
    }
  }
  bool eval = false, bytes_main = false;
  for (const auto &f : frames) {
    eval = eval || fn(f) == "_PyEval_EvalFrameDefault";
    bytes_main = bytes_main || fn(f) == "Py_BytesMain";
  }
  EXPECT_TRUE(eval) << shown(frames);
  EXPECT_TRUE(bytes_main) << shown(frames);
  // libtimeline's crash handler ran: its walk and the core's agree where
  // both have frames, and the core's goes deeper.
  EXPECT_TRUE(c["ring_slot"].get<bool>()) << c.dump(2);
  EXPECT_GE(c["stack"]["agree"].get<int>(), 1) << shown(frames);
}

}  // namespace
