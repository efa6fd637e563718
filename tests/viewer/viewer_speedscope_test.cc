// SPDX-License-Identifier: MIT
//
// viewer_speedscope_test - speedscope, a real third-party viewer, reads the
// chrome-trace export of real crashes.
//
// Each test crashes a fixture through the real systemd-coredump pipeline
// (crash harness), exports its core with `core-timeline-read
// --format=chrome-trace`, and runs tests/viewer/speedscope-check.mjs on the
// export: speedscope's own static viewer (npm package speedscope) in
// Debian's /usr/bin/chromium (driven by the npm package playwright-core),
// served from 127.0.0.1 only.  What is checked is speedscope's DOM: its
// profile selector lists a profile for each thread that has spans, named
// after the thread, and its Sandwich view has a row, wider than zero, for
// each span the fixture opened.  A control runs the same check on the
// export with one open span's duration taken away and must fail: the check
// sees what speedscope draws, it does not just pass.
//
// The screenshots go to <build>/tests/viewer/artifacts/ (their paths are
// printed), for people to look at.
//
// Needs node and npm (the npm packages are installed by
// tests/viewer/install-modules into <build>/tests/viewer/node_modules with
// npm ci) and /usr/bin/chromium.  Without one of them, or when npm ci
// fails, every test is skipped, naming what is absent; under CI=true that
// is a failure instead (CI installs them: packaging/install-build-deps).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "process.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kReader = CT_READER_BIN;
const std::string kViewerSource = CT_VIEWER_SOURCE_DIR;
const std::string kViewerBuild = CT_VIEWER_BINARY_DIR;
const std::string kChromium = "/usr/bin/chromium";

bool has(const std::string &s, const std::string &what) { return s.find(what) != std::string::npos; }

// Runs argv (looked up in $PATH) and says whether it could be run at all.
bool runs(const std::vector<std::string> &argv) {
  try {
    ct::test::ProcessOptions o;
    o.search_path = true;
    o.timeout = std::chrono::seconds(60);
    return ct::test::run(argv, o).ok();
  } catch (const std::exception &) {
    return false;
  }
}

class Speedscope : public ::testing::Test {
 protected:
  // What is absent ("" when all is there), and where the npm packages are:
  // found once for all the tests.
  static void SetUpTestSuite() {
    if (!runs({"node", "--version"})) {
      absent_ = "node is missing (packaging/install-build-deps installs nodejs)";
    } else if (!runs({"npm", "--version"})) {
      absent_ = "npm is missing (packaging/install-build-deps installs npm where nodejs lacks it)";
    } else if (!fs::exists(kChromium)) {
      absent_ = kChromium + " is missing (packaging/install-build-deps installs chromium)";
    } else {
      ct::test::ProcessOptions o;
      o.timeout = std::chrono::minutes(5);
      const ct::test::Ran r = ct::test::run({kViewerSource + "/install-modules", kViewerBuild}, o);
      if (!r.ok()) {
        absent_ = "the npm packages speedscope and playwright-core could not be installed (" + kViewerSource +
                  "/install-modules " + kViewerBuild + " exited " + std::to_string(r.exit_code()) + "): " + r.err;
      } else {
        modules_ = r.out.substr(0, r.out.find('\n'));
      }
    }
  }

  void SetUp() override {
    if (absent_.empty()) return;
    const char *ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      FAIL() << "CI=true, and CI installs what this test needs, but " << absent_;
    }
    GTEST_SKIP() << "speedscope in headless Chromium cannot run here: " << absent_;
  }

  // The chrome-trace export of `core`, written to `out`.
  static void export_core(const std::string &core, const std::string &out) {
    ct::test::ProcessOptions o;
    o.out = ct::test::Stream::file(out);
    o.timeout = std::chrono::minutes(2);
    const ct::test::Ran r = ct::test::run({kReader, "--format=chrome-trace", core}, o);
    ASSERT_TRUE(r.ok()) << kReader << " --format=chrome-trace " << core << " exited " << r.exit_code() << ": "
                        << r.err;
    std::ifstream in(out);
    const json trace = json::parse(in, nullptr, false);
    ASSERT_FALSE(trace.is_discarded()) << out << " is not JSON";
    ASSERT_TRUE(trace.contains("traceEvents")) << out << " has no traceEvents";
  }

  // speedscope-check.mjs on `trace` with `args`; its output is printed.
  static ct::test::Ran check(const std::string &trace, const std::vector<std::string> &args) {
    std::vector<std::string> argv{"node", kViewerSource + "/speedscope-check.mjs", "--modules", modules_, "--trace",
                                  trace, "--chromium", kChromium};
    argv.insert(argv.end(), args.begin(), args.end());
    ct::test::ProcessOptions o;
    o.search_path = true;
    o.timeout = std::chrono::minutes(3);
    const ct::test::Ran r = ct::test::run(argv, o);
    std::cout << r.out << r.err;
    return r;
  }

  static std::string artifact(const std::string &name) {
    fs::create_directories(kViewerBuild + "/artifacts");
    return kViewerBuild + "/artifacts/" + name;
  }

  static inline std::string absent_;
  static inline std::string modules_;
};

TEST_F(Speedscope, CrashDemoPathAIsItsThreadsProfileWithTheOpenRequestSpan) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=a"});
  const std::string trace = artifact("crash_demo-a.trace.json");
  ASSERT_NO_FATAL_FAILURE(export_core(run.core_path, trace));
  const ct::test::Ran r = check(trace, {"--thread", "crash_demo", "--span", "REQUEST", "--screenshot",
                                        artifact("speedscope-crash_demo-a.png")});
  EXPECT_TRUE(r.ok()) << "speedscope-check exited " << r.exit_code();
  EXPECT_TRUE(has(r.out, "ok: a profile for thread crash_demo")) << r.out;
  EXPECT_TRUE(has(r.out, "ok: span REQUEST lasts more than zero")) << r.out;
}

TEST_F(Speedscope, CrashDemoPathBHasTheOpenReloadSpanAndNoRequest) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=b"});
  const std::string trace = artifact("crash_demo-b.trace.json");
  ASSERT_NO_FATAL_FAILURE(export_core(run.core_path, trace));
  const ct::test::Ran r = check(trace, {"--thread", "crash_demo", "--span", "RELOAD", "--screenshot",
                                        artifact("speedscope-crash_demo-b.png")});
  EXPECT_TRUE(r.ok()) << "speedscope-check exited " << r.exit_code();
  EXPECT_TRUE(has(r.out, "ok: span RELOAD lasts more than zero")) << r.out;
  // Path b never begins REQUEST: the two paths stay apart in the viewer.
  const ct::test::Ran other = check(trace, {"--span", "REQUEST"});
  EXPECT_EQ(other.exit_code(), 1);
  EXPECT_TRUE(has(other.out, "FAIL: span REQUEST is a row of the Sandwich view")) << other.out;
}

TEST_F(Speedscope, ThreeThreadsAreThreeProfilesWithTheirOpenAndClosedSpans) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_SPANS_THREE_THREADS});
  const std::string trace = artifact("spans_three_threads.trace.json");
  ASSERT_NO_FATAL_FAILURE(export_core(run.core_path, trace));
  const ct::test::Ran r =
      check(trace, {"--thread", "waiter", "--thread", "closer", "--thread", "crasher", "--span", "OUTER", "--span",
                    "INNER", "--span", "WAIT", "--span", "STEP", "--span", "HANDOFF", "--screenshot",
                    artifact("speedscope-spans_three_threads.png"), "--screenshot-thread", "crasher"});
  EXPECT_TRUE(r.ok()) << "speedscope-check exited " << r.exit_code();
  for (const char *t : {"waiter", "closer", "crasher"}) {
    EXPECT_TRUE(has(r.out, std::string("ok: a profile for thread ") + t)) << r.out;
  }
  for (const char *s : {"OUTER", "INNER", "WAIT", "STEP", "HANDOFF"}) {
    EXPECT_TRUE(has(r.out, std::string("ok: span ") + s + " lasts more than zero")) << r.out;
  }
}

// The control: the same export with REQUEST's slice made a begin without an
// end (ph "B", no dur), which speedscope closes at the thread's last slice
// event, here its own begin: zero wide, and the check must say so.
TEST_F(Speedscope, ControlAnOpenSpanWithoutItsDurationIsZeroWideAndTheCheckFails) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({CT_CRASH_DEMO, "--path=a"});
  const std::string trace = artifact("crash_demo-a.control.trace.json");
  ASSERT_NO_FATAL_FAILURE(export_core(run.core_path, trace));
  json doc;
  {
    std::ifstream in(trace);
    doc = json::parse(in);
  }
  int changed = 0;
  for (auto &e : doc["traceEvents"]) {
    if (e.value("name", "") == "REQUEST" && e.value("ph", "") == "X") {
      e["ph"] = "B";
      e.erase("dur");
      ++changed;
    }
  }
  ASSERT_EQ(changed, 1) << "the export of crash_demo --path=a has one REQUEST slice";
  std::ofstream(trace) << doc.dump();
  const ct::test::Ran r = check(trace, {"--thread", "crash_demo", "--span", "REQUEST"});
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_TRUE(has(r.out, "ok: span REQUEST is a row of the Sandwich view")) << r.out;
  EXPECT_TRUE(has(r.out, "FAIL: span REQUEST lasts more than zero")) << r.out;
}

}  // namespace
