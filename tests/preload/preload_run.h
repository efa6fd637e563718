// SPDX-License-Identifier: MIT
// preload_run.h - running a program under LD_PRELOAD with a timeout, and the
// preload orders the wrapper tests cover.  Paths come from CMake
// (tests/preload/CMakeLists.txt) as CT_* definitions.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "preload_victim.h"
#include "process.h"

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
// group after `timeout_s` seconds (ct::test::run).
inline RunResult run_with_preload(const std::vector<std::string> &argv,
                                  const std::vector<std::string> &preload, int timeout_s) {
  ct::test::ProcessOptions o;
  std::string ld;
  for (size_t i = 0; i < preload.size(); ++i) ld += (i ? " " : "") + preload[i];
  o.env["LD_PRELOAD"] = ld;
  o.err = ct::test::Stream::to_stdout();
  o.own_process_group = true;  // a timeout also kills children it forked
  o.timeout = std::chrono::seconds(timeout_s);
  const ct::test::Ran ran = ct::test::run(argv, o);
  return {ran.wait_status, ran.timed_out, ran.out};
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
