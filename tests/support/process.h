// SPDX-License-Identifier: MIT
//
// process.h - the one way the tests (and bench_daemon) run a program.
//
//   spawn(argv, opts)  fork and exec; returns the pid, does not wait
//   run(argv, opts)    spawn, collect what it prints, wait; returns Ran
//
// argv[0] is a path (looked up in $PATH only with search_path).  Each of
// the child's standard streams is inherited, captured (run only), read from
// or written to a file, or (stderr) sent where stdout goes.  `in_child`
// runs in the child after the redirections and just before exec, to drop
// privileges, reset signals and the like; it may only make system calls,
// and reports a failure with child_failed(), which makes spawn/run throw
// with its words and errno.  An exec that fails throws the same way, so a
// missing program is never taken for a program that exited 127.
//
// Test-only code: errors are thrown as std::runtime_error.
#ifndef CORE_TIMELINE_TESTS_SUPPORT_PROCESS_H
#define CORE_TIMELINE_TESTS_SUPPORT_PROCESS_H

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ct::test {

// Where one of a child's standard streams goes (or, for stdin, comes from).
struct Stream {
  enum class Kind { inherit, capture, file, append, to_stdout };
  Kind kind = Kind::inherit;
  std::string path;
  mode_t mode = 0644;  // of a file the child's output creates

  static Stream inherit() { return {Kind::inherit, {}}; }
  static Stream capture() { return {Kind::capture, {}}; }  // run() only
  // stdin: read from `p`; stdout, stderr: written to `p`, truncated first.
  static Stream file(std::string p, mode_t m = 0644) { return {Kind::file, std::move(p), m}; }
  static Stream append(std::string p, mode_t m = 0644) { return {Kind::append, std::move(p), m}; }
  static Stream null() { return file("/dev/null"); }
  static Stream to_stdout() { return {Kind::to_stdout, {}}; }  // stderr only
};

struct ProcessOptions {
  Stream in = Stream::inherit();
  Stream out = Stream::capture();
  Stream err = Stream::capture();
  // The child's environment: the parent's, without the names in unset_env
  // (a name ending in '*' removes every name it begins), with env on top.
  std::map<std::string, std::string> env;
  std::vector<std::string> unset_env;
  std::function<void()> in_child;
  bool search_path = false;
  // The child leads a process group of its own, and a timeout kills the
  // whole group (what it forked too).
  bool own_process_group = false;
  // run(): the child is killed (SIGKILL) once it has run this long; Ran
  // says so.  None: run() waits as long as it takes.
  std::optional<std::chrono::milliseconds> timeout;
  // run(): called whenever a wait of run() is interrupted by a signal
  // (EINTR).  If it throws, the child is killed and reaped, then the
  // exception goes on (bench_daemon's SIGINT).
  std::function<void()> on_interrupt;
};

struct Ran {
  pid_t pid = -1;
  int wait_status = 0;  // as from waitpid(2)
  bool timed_out = false;
  std::string out, err;  // what was captured
  // WEXITSTATUS, or 128 + the signal that killed it.
  int exit_code() const;
  bool ok() const { return exit_code() == 0; }
};

// In `in_child` only: reports `what` and errno to the parent and ends the
// child; spawn/run then throw "<argv[0]>: <what>: <strerror(errno)>".
// `what` must outlive the fork (a string literal).
[[noreturn]] void child_failed(const char *what);

pid_t spawn(const std::vector<std::string> &argv, const ProcessOptions &opts = {});
Ran run(const std::vector<std::string> &argv, const ProcessOptions &opts = {});

// Until `done` holds (asked every 10 ms): true; false once `timeout` has
// passed without it.  For a wait on an event itself (a file, a line, a
// count, a process state); the timeout only bounds a hang, so make it
// generous: its passing means the event never came, not that it was slow.
bool wait_until(const std::function<bool()> &done, std::chrono::milliseconds timeout);

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_SUPPORT_PROCESS_H
