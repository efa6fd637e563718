// SPDX-License-Identifier: MIT
//
// Tests of the crash harness itself, on real crashes through the real
// systemd-coredump pipeline.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lz4frame.h>
#include <lzma.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "crash_harness.h"
#include "crash_helper_marker.h"

extern char** environ;

namespace {

using ct::test::CrashOptions;
using ct::test::CrashRun;
using ct::test::fetch_core_for_pid;
using ct::test::run_and_collect_core;
using namespace std::chrono_literals;

const std::string kHelper = CT_CRASH_HELPER;  // set by CMake

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The ELF header of a file, or a failure naming what is wrong.
testing::AssertionResult IsElfCore(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return testing::AssertionFailure() << path << ": cannot open";
  Elf64_Ehdr eh{};
  in.read(reinterpret_cast<char*>(&eh), sizeof eh);
  if (in.gcount() != sizeof eh) return testing::AssertionFailure() << path << ": shorter than an ELF header";
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return testing::AssertionFailure() << path << ": no ELF magic";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return testing::AssertionFailure() << path << ": not ELFCLASS64";
  if (eh.e_type != ET_CORE) return testing::AssertionFailure() << path << ": e_type " << eh.e_type << ", not ET_CORE";
  if (eh.e_phnum == 0) return testing::AssertionFailure() << path << ": no program headers";
  return testing::AssertionSuccess();
}

std::string marker() {
  std::string m(CT_MARKER_LEN, '\0');
  for (unsigned i = 0; i < CT_MARKER_LEN; i++) m[i] = static_cast<char>(ct_marker_byte(i));
  return m;
}

CrashOptions with_timeout(std::chrono::milliseconds t) {
  CrashOptions o;
  o.timeout = t;
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

// Guards against: a harness that returns any file, or the core of another
// process (wrong pid, wrong signal).
TEST(CrashHarness, AbortLeavesAnElfCoreWithSigabrt) {
  CrashRun run = run_and_collect_core({kHelper, "abort"});
  ASSERT_TRUE(WIFSIGNALED(run.wait_status));
  EXPECT_EQ(WTERMSIG(run.wait_status), SIGABRT);
  EXPECT_TRUE(WCOREDUMP(run.wait_status));
  EXPECT_TRUE(IsElfCore(run.core_path));
  EXPECT_EQ(run.journal_fields["COREDUMP_SIGNAL"], std::to_string(SIGABRT));
  EXPECT_EQ(run.journal_fields["COREDUMP_PID"], std::to_string(run.pid));
  EXPECT_EQ(run.journal_fields["COREDUMP_EXE"], std::filesystem::canonical(kHelper).string());
  EXPECT_EQ(run.journal_fields["MESSAGE_ID"], ct::test::kCoredumpMessageId);
  EXPECT_EQ(run.journal_fields.count("COREDUMP"), 0u);
  EXPECT_EQ(std::filesystem::path(run.core_path).parent_path(), ct::test::default_core_dir());
}

TEST(CrashHarness, NullDereferenceLeavesAnElfCoreWithSigsegv) {
  std::string dir = ct::test::default_core_dir() + "/segv";
  CrashOptions opts;
  opts.output_dir = dir;
  CrashRun run = run_and_collect_core({kHelper, "segv"}, opts);
  ASSERT_TRUE(WIFSIGNALED(run.wait_status));
  EXPECT_EQ(WTERMSIG(run.wait_status), SIGSEGV);
  EXPECT_TRUE(IsElfCore(run.core_path));
  EXPECT_EQ(run.journal_fields["COREDUMP_SIGNAL"], std::to_string(SIGSEGV));
  EXPECT_EQ(run.journal_fields["COREDUMP_SIGNAL_NAME"], "SIGSEGV");
  EXPECT_EQ(std::filesystem::path(run.core_path).parent_path(), dir);
}

// Guards against: a coredump_filter option that is silently ignored, and a
// core that is not the decompressed memory of the process.  Under the
// default filter (0x33) a shared anonymous page is in the core; with bit 1
// cleared (0x31) it is not (docs/platform.md §1).
TEST(CrashHarness, CoredumpFilterIsAppliedToTheChildOnly) {
  const std::string m = marker();
  std::string before = read_file("/proc/self/coredump_filter");

  CrashRun with_page = run_and_collect_core({kHelper, "shared"});
  EXPECT_TRUE(IsElfCore(with_page.core_path));
  EXPECT_NE(read_file(with_page.core_path).find(m), std::string::npos)
      << "the shared page is missing from " << with_page.core_path;

  CrashOptions opts;
  opts.coredump_filter = 0x31;
  CrashRun without_page = run_and_collect_core({kHelper, "shared"}, opts);
  EXPECT_TRUE(IsElfCore(without_page.core_path));
  EXPECT_EQ(read_file(without_page.core_path).find(m), std::string::npos)
      << "coredump_filter 0x31 did not exclude the shared page from " << without_page.core_path;

  EXPECT_EQ(read_file("/proc/self/coredump_filter"), before);
}

TEST(CrashHarness, EnvironmentReachesTheChild) {
  CrashOptions opts;
  opts.env["CT_HARNESS_PROBE"] = "42";
  CrashRun run = run_and_collect_core({kHelper, "abort"}, opts);
  // systemd-coredump records the crashed process's environment.
  EXPECT_NE(run.journal_fields["COREDUMP_ENVIRON"].find("CT_HARNESS_PROBE=42\n"), std::string::npos)
      << run.journal_fields["COREDUMP_ENVIRON"];
}

// For tests that start the child themselves.  Guards against: matching an
// older crash of a reused pid.
TEST(CrashHarness, FetchCoreForPidOfAChildWeSpawned) {
  const auto before = std::chrono::system_clock::now();
  pid_t pid;
  const char* argv[] = {kHelper.c_str(), "segv", nullptr};
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  std::map<std::string, std::string> fields;
  std::string core = fetch_core_for_pid(pid, before, "", 30s, &fields);
  EXPECT_TRUE(IsElfCore(core));
  EXPECT_EQ(fields["COREDUMP_PID"], std::to_string(pid));
  EXPECT_EQ(fields["COREDUMP_SIGNAL"], std::to_string(SIGSEGV));

  // The same pid, but only crashes from two seconds on: the entry above is
  // too old and must not be taken.
  std::string err = error_of([&] { fetch_core_for_pid(pid, std::chrono::system_clock::now() + 2s, "", 500ms); });
  EXPECT_NE(err.find("pid " + std::to_string(pid)), std::string::npos) << err;
  // At least the entry above; pids are reused (pid_max is 32768 here), so
  // older crashes of the same pid may be in the journal too.
  EXPECT_TRUE(err.find("1 older entry") != std::string::npos ||
              err.find(" older entries of that pid ignored") != std::string::npos)
      << err;
}

// The failures say what happened and name the pid.
TEST(CrashHarness, CleanExitIsReportedNotWaitedFor) {
  std::string err = error_of([] { run_and_collect_core({kHelper, "exit", "3"}, with_timeout(5s)); });
  EXPECT_NE(err.find("exited with status 3 instead of crashing"), std::string::npos) << err;
}

TEST(CrashHarness, HangingChildIsKilledAtTheTimeout) {
  std::string err = error_of([] { run_and_collect_core({kHelper, "hang"}, with_timeout(300ms)); });
  EXPECT_NE(err.find("did not die within 300 ms; killed it"), std::string::npos) << err;
  // It says so at once, without then waiting for a journal entry of the
  // child it killed (that failure would name the entry).
  EXPECT_EQ(err.find("journal entry"), std::string::npos) << err;
}

TEST(CrashHarness, ExecFailureIsReported) {
  std::string err = error_of([] { run_and_collect_core({"/nonexistent/ct-no-such-program"}); });
  EXPECT_NE(err.find("cannot exec /nonexistent/ct-no-such-program"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
}

TEST(CrashHarness, SignalWithoutCoreIsReported) {
  // SIGKILL never dumps core; the harness must not wait for a journal entry.
  std::string err = error_of([] { run_and_collect_core({"/bin/sh", "-c", "kill -KILL $$"}, with_timeout(5s)); });
  EXPECT_NE(err.find("killed by SIGKILL but the kernel dumped no core"), std::string::npos) << err;
}

TEST(CrashHarness, MissingEntryNamesThePid) {
  // Our own pid has not crashed.
  std::string err = error_of([] { ct::test::wait_for_coredump_entry(getpid(), std::chrono::system_clock::now(), 200ms); });
  EXPECT_NE(err.find("pid " + std::to_string(getpid()) + ": no systemd-coredump journal entry"), std::string::npos)
      << err;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string lz4_frame(const std::string& in) {
  std::string out(LZ4F_compressFrameBound(in.size(), nullptr), '\0');
  size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
  if (LZ4F_isError(n)) throw std::runtime_error("LZ4F_compressFrame failed");
  out.resize(n);
  return out;
}

std::string xz_stream(const std::string& in) {
  std::string out(lzma_stream_buffer_bound(in.size()), '\0');
  size_t pos = 0;
  if (lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(in.data()), in.size(),
                              reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()) != LZMA_OK)
    throw std::runtime_error("lzma_easy_buffer_encode failed");
  out.resize(pos);
  return out;
}

// systemd-coredump stores cores as .zst here, but .lz4 or .xz (or plain)
// elsewhere, depending on how systemd was built.  Guards against: a decoder
// that is never exercised, or that accepts a cut-off file as a short core.
TEST(CrashHarness, DecompressesEveryStorageFormatAndRejectsTruncation) {
  CrashRun run = run_and_collect_core({kHelper, "abort"});
  const std::string stored = run.journal_fields["COREDUMP_FILENAME"];
  const std::string core = read_file(run.core_path);
  ASSERT_TRUE(IsElfCore(run.core_path));
  const std::string dir = ct::test::default_core_dir() + "/formats";
  std::filesystem::create_directories(dir);

  std::map<std::string, std::string> compressed = {
      {".zst", read_file(stored)}, {".lz4", lz4_frame(core)}, {".xz", xz_stream(core)}, {"", core}};
  ASSERT_TRUE(stored.ends_with(".zst")) << stored;
  for (const auto& [suffix, bytes] : compressed) {
    SCOPED_TRACE("suffix '" + suffix + "'");
    const std::string in = dir + "/core" + suffix, out = dir + "/out" + suffix;
    write_file(in, bytes);
    ct::test::decompress_core_file(in, out);
    EXPECT_TRUE(read_file(out) == core) << out << " differs from " << run.core_path;
    if (suffix.empty()) continue;

    write_file(in, bytes.substr(0, bytes.size() / 2));
    std::filesystem::remove(out);
    std::string err = error_of([&] { ct::test::decompress_core_file(in, out); });
    EXPECT_NE(err.find(in), std::string::npos) << err;
    EXPECT_NE(err.find("truncated"), std::string::npos) << err;
    EXPECT_FALSE(std::filesystem::exists(out)) << "a partial core was left at " << out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
