// SPDX-License-Identifier: MIT
// preload_run.h - running a program under LD_PRELOAD with a timeout, and the
// preload orders the wrapper tests cover.  Paths come from CMake
// (tests/preload/CMakeLists.txt) as CT_* definitions.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "preload_victim.h"

extern char **environ;

namespace ct_test {

struct Preload {
  const char *name;
  std::vector<std::string> preload;  // LD_PRELOAD, in order
  bool alloc_recorded;               // libtimeline-alloc.so's wrappers are reached
  bool io_recorded;                  // libtimeline-io.so's wrappers are reached

  std::string ld_preload() const {
    std::string s;
    for (const auto &p : preload) s += (s.empty() ? "" : " ") + p;
    return s;
  }
};

// For GoogleTest's test names and messages (and so ctest's).
inline void PrintTo(const Preload &p, std::ostream *os) { *os << "LD_PRELOAD=" << p.ld_preload(); }

// Every order the tests run.  With jemalloc preloaded BEFORE the wrapper,
// the dynamic linker binds malloc and free to jemalloc's definitions, which
// come first: the wrapper's are never called, so nothing is recorded (and
// nothing must break).  After it, the wrapper forwards to jemalloc.
inline std::vector<Preload> preload_configs() {
  const std::string alloc = CT_PRELOAD_ALLOC_SO, io = CT_PRELOAD_IO_SO, je = CT_JEMALLOC_SO;
  return {
      {"alloc", {alloc}, true, false},
      {"io", {io}, false, true},
      {"alloc_io", {alloc, io}, true, true},
      {"jemalloc_then_alloc", {je, alloc}, false, false},
      {"alloc_then_jemalloc", {alloc, je}, true, false},
      {"jemalloc_then_alloc_io", {je, alloc, io}, false, true},
      {"io_alloc_then_jemalloc", {io, alloc, je}, true, true},
  };
}

struct RunResult {
  int status = -1;         // waitpid(2) status
  bool timed_out = false;  // killed with SIGKILL after the timeout
  std::string output;      // stdout and stderr, interleaved
};

// Run argv[0] with LD_PRELOAD set to `preload` (and the rest of this
// process's environment), collecting its output; SIGKILL it and its process
// group after `timeout_s` seconds.
inline RunResult run_with_preload(const std::vector<std::string> &argv,
                                  const std::vector<std::string> &preload, int timeout_s) {
  RunResult r;
  std::vector<std::string> env_storage;
  for (char **e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_storage.push_back(*e);
  std::string ld = "LD_PRELOAD=";
  for (size_t i = 0; i < preload.size(); ++i) ld += (i ? " " : "") + preload[i];
  env_storage.push_back(ld);
  std::vector<char *> envp, args;
  for (auto &s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto &s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.output = "pipe2 failed";
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  /* Its own process group, so a timeout also kills children it forked. */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    r.output = std::string("posix_spawn ") + args[0] + ": " + std::strerror(rc);
    return r;
  }

  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  char buf[4096];
  for (;;) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    long left_ms = timeout_s * 1000L - elapsed_ms;
    if (left_ms <= 0) {
      kill(-pid, SIGKILL);
      r.timed_out = true;
      break;
    }
    struct pollfd pfd = {out[0], POLLIN, 0};
    int n = poll(&pfd, 1, static_cast<int>(left_ms));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    ssize_t got = read(out[0], buf, sizeof buf);
    if (got <= 0) break; /* EOF: the child (and any child of it) closed the pipe */
    r.output.append(buf, static_cast<size_t>(got));
  }
  close(out[0]);
  while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

// A temporary file of kDataBytes bytes for preload_victim, removed with it.
class DataFile {
 public:
  DataFile() {
    char tmpl[] = "/tmp/ct-preload-data-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) {
      std::string bytes(kDataBytes, 'd');
      ssize_t n = write(fd, bytes.data(), bytes.size());
      (void)n;
      close(fd);
      path_ = tmpl;
    }
  }
  ~DataFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  DataFile(const DataFile &) = delete;
  DataFile &operator=(const DataFile &) = delete;
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ct_test
