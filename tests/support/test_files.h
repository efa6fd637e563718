// SPDX-License-Identifier: MIT
// test_files.h - the files of a test: a temporary directory removed at the
// end, and a whole file read into a string (tests only; header-only, no
// gtest).
#ifndef CORE_TIMELINE_TESTS_SUPPORT_TEST_FILES_H
#define CORE_TIMELINE_TESTS_SUPPORT_TEST_FILES_H

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ct::test {

/** A directory /tmp/STEM-XXXXXX (mkdtemp(3)), given mode `mode` (mkdtemp
 *  makes it 0700), removed with everything in it when the TempDir goes,
 *  unless `keep` was set by then.  Throws std::runtime_error when it cannot
 *  be made. */
struct TempDir {
  std::string path;
  bool keep = false;

  explicit TempDir(std::string_view stem = "ct-test", mode_t mode = 0700) {
    std::string t = "/tmp/" + std::string(stem) + "-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp " + t + " failed");
    path = t;
    if (mode != 0700) ::chmod(path.c_str(), mode);
  }
  ~TempDir() {
    std::error_code ec;
    if (!keep) std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

/** The whole content of the file at `path`; "" when it cannot be read. */
inline std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_SUPPORT_TEST_FILES_H
