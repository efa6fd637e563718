// SPDX-License-Identifier: MIT
#include "instructions.h"

#include "process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define CT_HAVE_CALLGRIND 1
#else
#define CT_HAVE_CALLGRIND 0
#endif

namespace ct::test {

namespace {

constexpr std::string_view kWhy = "these checks count the reader's instructions with callgrind";

#if CT_HAVE_CALLGRIND
namespace fs = std::filesystem;

/* In the child's environment: the directory callgrind writes its dumps to. */
constexpr char kDirVar[] = "CT_INSTRUCTIONS_DIR";
/* The label of work i's dump is kLabel + i. */
constexpr std::string_view kLabel = "ct-work ";

/* In the child: instrumentation is on only around each work, so building
 * the inputs costs no more than running them uninstrumented, and each dump
 * holds exactly one work's count.  Each work has run once before, so no
 * count holds what only a first call costs (binding symbols, initializing
 * statics).  Then exit before the rest of the test: the parent runs it. */
[[noreturn]] void count_and_exit(const std::vector<std::function<void()>> &works) {
  for (const auto &work : works) work();
  for (std::size_t i = 0; i < works.size(); ++i) {
    const std::string label = std::string(kLabel) + std::to_string(i);
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    works[i]();
    CALLGRIND_DUMP_STATS_AT(label.c_str());
    CALLGRIND_STOP_INSTRUMENTATION;
  }
  std::fflush(nullptr);
  _exit(0);
}

/* The child runs with the parent's environment without what would make it
 * write the parent's test reports or run another shard's tests, plus
 * kDirVar. */
ct::test::ProcessOptions child_options(const std::string &dir, const fs::path &log) {
  ct::test::ProcessOptions o;
  o.unset_env = {"GTEST_*", "TEST_PREMATURE_EXIT_FILE", "TEST_SHARD_STATUS_FILE", "TEST_TOTAL_SHARDS",
                 "TEST_SHARD_INDEX", "XML_OUTPUT_FILE"};
  o.env[kDirVar] = dir;
  o.in = ct::test::Stream::null();
  o.out = ct::test::Stream::file(log.string());
  o.err = ct::test::Stream::to_stdout();
  o.search_path = true;
  return o;
}

std::string tail_of(const fs::path &path, std::size_t max) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > max ? "..." + s.substr(s.size() - max) : s;
}

/* Work index -> count, from the dumps callgrind wrote to `dir`: each holds
 * "desc: Trigger: Client Request: <label>" and "totals: <Ir>". */
std::map<std::size_t, std::uint64_t> read_dumps(const fs::path &dir) {
  constexpr std::string_view kTrigger = "desc: Trigger: Client Request: ", kTotals = "totals: ";
  std::map<std::size_t, std::uint64_t> counts;
  for (const auto &entry : fs::directory_iterator(dir)) {
    if (!entry.path().filename().string().starts_with("callgrind.out.")) continue;
    std::ifstream in(entry.path());
    std::optional<std::size_t> work;
    std::optional<std::uint64_t> total;
    for (std::string line; std::getline(in, line);) {
      const std::string_view l = line;
      if (l.starts_with(kTrigger) && l.substr(kTrigger.size()).starts_with(kLabel))
        work = std::stoul(std::string(l.substr(kTrigger.size() + kLabel.size())));
      else if (l.starts_with(kTotals))
        total = std::stoull(std::string(l.substr(kTotals.size())));
    }
    if (work && total) counts[*work] = *total;
  }
  return counts;
}
#endif

}  // namespace

std::vector<std::uint64_t> instructions_of(const std::vector<std::function<void()>> &works) {
  if (!kCountsInstructions) {
    for (const auto &work : works) work();
    return {};
  }
#if !CT_HAVE_CALLGRIND
  (void)works;
  ADD_FAILURE() << "this test was built without <valgrind/callgrind.h>: install valgrind "
                   "(packaging/install-build-deps lists it) and rebuild; " << kWhy;
  return {};
#else
  if (std::getenv(kDirVar) != nullptr) {
    if (RUNNING_ON_VALGRIND == 0) {
      ADD_FAILURE() << kDirVar << " is set, but this process does not run under callgrind";
      return {};
    }
    count_and_exit(works);
  }
  if (RUNNING_ON_VALGRIND != 0) {
    ADD_FAILURE() << "instructions_of() starts callgrind itself: run this test without valgrind";
    return {};
  }
  const ::testing::TestInfo *test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test == nullptr) {
    ADD_FAILURE() << "instructions_of() is called from outside a test";
    return {};
  }
  const std::string filter = std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name();

  const char *tmp = std::getenv("TMPDIR");
  std::string dir_template = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ct-instructions-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << dir_template << ": " << std::strerror(errno);
    return {};
  }
  const fs::path dir = dir_template;
  const fs::path log = dir / "child.log";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    ADD_FAILURE() << "readlink /proc/self/exe: " << ec.message();
    fs::remove_all(dir, ec);
    return {};
  }

  std::vector<std::string> args = {"valgrind",
                                   "-q",
                                   "--tool=callgrind",
                                   "--instr-atstart=no",
                                   "--callgrind-out-file=" + (dir / "callgrind.out").string(),
                                   exe.string(),
                                   filter};
  int status = 0;
  try {
    status = ct::test::run(args, child_options(dir.string(), log)).wait_status;
  } catch (const std::runtime_error &e) {
    if (std::string_view(e.what()).find(std::strerror(ENOENT)) != std::string_view::npos)
      ADD_FAILURE() << "valgrind is not in PATH: install it (packaging/install-build-deps lists it); " << kWhy;
    else ADD_FAILURE() << "cannot start valgrind: " << e.what();
    fs::remove_all(dir, ec);
    return {};
  }

  const auto counts = read_dumps(dir);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < works.size() && counts.count(i) != 0; ++i) out.push_back(counts.at(i));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.size() != works.size()) {
    ADD_FAILURE() << "the callgrind run of " << filter << " (valgrind --tool=callgrind, wait status " << status
                  << ") counted " << out.size() << " of " << works.size()
                  << " works; its output:\n" << tail_of(log, 4000);
    out.clear();
  }
  fs::remove_all(dir, ec);
  return out;
#endif
}

}  // namespace ct::test
