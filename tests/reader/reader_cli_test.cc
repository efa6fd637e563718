// SPDX-License-Identifier: MIT
//
// core-timeline-read's command line and exit codes, over cores built in the
// test (the real-core exit codes 0, 1, 2, 4 and 6 are in reader_gates_test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "core_builder.h"
#include "test_util.h"

using ct::testing::RingBuilder;
using ct::testing::RunResult;
using ct::testing::run;
using ct::testing::write_temp;

namespace {
const std::string kReader = CT_READER_BIN;

class Cli : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto &p : files_) unlink(p.c_str());
  }
  std::string file(const std::vector<std::uint8_t> &b, const std::string &stem) {
    files_.push_back(write_temp(b, stem));
    return files_.back();
  }
  std::string healthy_core() {
    RingBuilder r;
    r.add(0, 1, core_timeline::format::kKindUser, 0x1001, 41);
    return file(ct::testing::standard_core(r).build(), "core");
  }
  std::vector<std::string> files_;
};

TEST_F(Cli, HealthyCoreExitsZeroAndJsonIsValid) {
  const std::string core = healthy_core();
  RunResult t = run({kReader, "--no-symbols", core});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("core-timeline: core-only"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("id=0x1001"), std::string::npos) << t.out;
  EXPECT_EQ(t.err, "");
  RunResult j = run({kReader, "--json", "--no-symbols", core});
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_EQ(ct::testing::schema_errors(j.out), "");
}

TEST_F(Cli, UnreadableOrNonCoreExitsThree) {
  for (const auto &bytes : {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>{'#', '!', '/', 'b'}}) {
    const std::string p = file(bytes, "notcore");
    RunResult r = run({kReader, p});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_NE(r.err.find("core-timeline-read: cannot read the core"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line on stderr: " << r.err;
    RunResult j = run({kReader, "--json", p});
    EXPECT_EQ(j.exit_code, 3);
    EXPECT_EQ(ct::testing::schema_errors(j.out), "");
  }
  RunResult missing = run({kReader, "/nonexistent/core"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("No such file"), std::string::npos) << missing.err;
  RunResult exe = run({kReader, "/bin/true"});
  EXPECT_EQ(exe.exit_code, 3);
  EXPECT_NE(exe.err.find("not ET_CORE"), std::string::npos) << exe.err;
}

TEST_F(Cli, MismatchedExecutableIsRefusedWithFive) {
  RunResult r = run({kReader, "--json", healthy_core(), "/bin/true"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("is not the executable of this core"), std::string::npos) << r.err;
  EXPECT_EQ(ct::testing::schema_errors(r.out), "");
}

TEST_F(Cli, UsageErrorsExitSeven) {
  EXPECT_EQ(run({kReader}).exit_code, 7);
  EXPECT_EQ(run({kReader, "--bogus", "x"}).exit_code, 7);
  RunResult t = run({kReader, "--tlmap", "/nonexistent.tlmap", healthy_core()});
  EXPECT_EQ(t.exit_code, 7);
  EXPECT_NE(t.err.find("--tlmap"), std::string::npos) << t.err;
  /* "ID NAME [ARG0 [ARG1]]": a third argument name is a usage error. */
  const std::string bad = file({'1', ' ', 'a', ' ', 'b', ' ', 'c', ' ', 'd', '\n'}, "tlmap");
  EXPECT_EQ(run({kReader, "--tlmap", bad, healthy_core()}).exit_code, 7);
  RunResult h = run({kReader, "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--core-only"), std::string::npos);
}

TEST_F(Cli, TlmapNamesUserEvents) {
  const std::string map = file({'0', 'x', '1', '0', '0', '1', ' ', 'R', 'E', 'Q', '\n'}, "tlmap");
  RunResult r = run({kReader, "--no-symbols", "--tlmap", map, healthy_core()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find(" REQ "), std::string::npos) << r.out;
}

}  // namespace
