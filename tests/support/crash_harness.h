// SPDX-License-Identifier: MIT
//
// crash_harness.h - real crashes, real cores, for the tests.
//
// Runs a program until it crashes and fetches its core the way production
// does: from systemd-coredump, through the journal (docs/platform.md §2).  Needs the
// pipeline to be running (ctest fixture "pipeline", or
// `tests/support/pipeline start`) and root, to read the stored cores.
//
// Test-only code: errors are thrown as std::runtime_error whose message names
// the pid and what was missing.  Nothing here is async-signal-safe.
#ifndef CORE_TIMELINE_TESTS_SUPPORT_CRASH_HARNESS_H
#define CORE_TIMELINE_TESTS_SUPPORT_CRASH_HARNESS_H

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ct::test {

// MESSAGE_ID of the journal entry systemd-coredump writes for each crash.
inline constexpr const char kCoredumpMessageId[] = "fc2e22bc6ee647b6b90729ab34a250b1";

struct CrashOptions {
  // Set in the child's environment on top of (or replacing) the parent's.
  std::map<std::string, std::string> env;
  // Removed from the child's environment (applied before `env`).
  std::vector<std::string> unset_env;
  // Written (as hex) to /proc/self/coredump_filter in the child before exec;
  // it is inherited across exec and changes only that process.
  std::optional<unsigned> coredump_filter;
  // How long to wait for the child to die; then, again, how long to wait for
  // its journal entry (systemd-coredump writes it after storing the core).
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  // Where the decompressed core is written; created if missing.
  // Empty: default_core_dir().
  std::string output_dir;
};

struct CrashRun {
  pid_t pid = -1;
  int wait_status = 0;       // as from waitpid(2): WTERMSIG, WCOREDUMP...
  std::string core_path;     // the decompressed core (an ELF ET_CORE file)
  // Every field of the systemd-coredump journal entry (COREDUMP_SIGNAL,
  // COREDUMP_EXE, COREDUMP_FILENAME, COREDUMP_TRUNCATED, _UID, ...), except
  // the COREDUMP= field itself (the core is in core_path).  A field that
  // occurs twice keeps its first value.
  std::map<std::string, std::string> journal_fields;
};

// Fork, exec argv (argv[0] is a path, not looked up in $PATH), wait for the
// child to die of a signal with a core, then fetch that core as
// fetch_core_for_pid does.  The child gets default dispositions and an empty
// mask for the core-dumping signals.  Throws if exec fails, if the child
// exits or is killed without a core, if it outlives opts.timeout (it is then
// killed), or if its core cannot be found and decompressed within a further
// opts.timeout.
CrashRun run_and_collect_core(const std::vector<std::string>& argv,
                              const CrashOptions& opts = {});

// For tests that start the child themselves: waits (up to `timeout`) for the
// systemd-coredump journal entry of `pid` for a crash after `not_before`
// (take it just before the fork: pids are reused), writes the decompressed
// core into `output_dir` (empty: default_core_dir()) and returns its path.
// Fills *journal_fields when it is not null.
//
// "After not_before" means: the entry was written at or after not_before
// (__REALTIME_TIMESTAMP), and its COREDUMP_TIMESTAMP is at most one second
// before it (the kernel stamps crashes in whole seconds from a clock that
// lags the realtime clock by up to a tick).  Entries not written by root or
// the systemd-coredump user are ignored.
std::string fetch_core_for_pid(
    pid_t pid, std::chrono::system_clock::time_point not_before,
    const std::string& output_dir = "",
    std::chrono::milliseconds timeout = std::chrono::seconds(30),
    std::map<std::string, std::string>* journal_fields = nullptr);

// Only the journal entry, without touching the core (for tests of code that
// reads the core itself, e.g. the daemon).  Same matching and errors as
// fetch_core_for_pid.
std::map<std::string, std::string> wait_for_coredump_entry(
    pid_t pid, std::chrono::system_clock::time_point not_before,
    std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A marker entry sent to journald's native socket, waited for (up to
// `timeout`, which bounds a hang) until a reader sees it.  journald reads
// that datagram socket in order, so every entry any process sent there
// before this call (the daemon's timeline entries and log lines, a test's
// own) is in the journal when it returns: a test that checks an entry did
// NOT come calls it after the moment the entry would have been sent, and
// then looks.  Throws if the marker cannot be sent or never shows.
void journal_barrier(std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Decompress a core stored by systemd-coredump (suffix .zst, .lz4, .xz, or
// none: copied) into `out_path`.  Throws naming the file on any error.
void decompress_core_file(const std::string& stored_path,
                          const std::string& out_path);

// systemd-coredump's stack of the crashing thread, from its journal
// entry's MESSAGE ("Stack trace of thread N:" then "#0  0x... fn (mod +
// 0x...)" lines; systemd 252's elf-util.c, dwfl_getthread_frames, 64
// frames at most): (pc, function or "n/a"), empty without that list.
std::vector<std::pair<std::uint64_t, std::string>> coredump_stack(const std::string& message);

// $CT_TEST_CORE_DIR (ct_add_pipeline_test sets it to <build>/test-cores),
// else /tmp/core-timeline-test-cores.
std::string default_core_dir();

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_SUPPORT_CRASH_HARNESS_H
