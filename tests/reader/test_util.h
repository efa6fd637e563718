// SPDX-License-Identifier: MIT
// test_util.h - running core-timeline-read and validating its JSON (tests only).
#ifndef CORE_TIMELINE_TESTS_READER_TEST_UTIL_H
#define CORE_TIMELINE_TESTS_READER_TEST_UTIL_H

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core_builder.h"
#include "process.h"

namespace ct::testing {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/** Runs argv (argv[0] a path) with stdout/stderr captured (ct::test::run);
 *  with `as_limit` bytes of address space at most (RLIMIT_AS) when nonzero. */
inline RunResult run(const std::vector<std::string> &argv, unsigned long long as_limit = 0) {
  ct::test::ProcessOptions o;
  if (as_limit != 0)
    o.in_child = [as_limit] {
      struct rlimit rl = {as_limit, as_limit};
      setrlimit(RLIMIT_AS, &rl);
    };
  const ct::test::Ran ran = ct::test::run(argv, o);
  RunResult r;
  r.exit_code = ran.exit_code();
  r.out = ran.out;
  r.err = ran.err;
  return r;
}

/** Validates `doc` against docs/timeline.schema.json with Debian's
 *  python3-jsonschema.  Returns "" if valid, else the validator's message. */
inline std::string schema_errors(const std::string &doc) {
  const std::string path = write_temp(std::vector<std::uint8_t>(doc.begin(), doc.end()), "json");
  RunResult r = run({"/usr/bin/python3", "-c",
                     "import json,sys,jsonschema\n"
                     "s=json.load(open(sys.argv[1]))\n"
                     "jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker())"
                     ".validate(json.load(open(sys.argv[2])))\n",
                     CT_SCHEMA_PATH, path});
  unlink(path.c_str());
  if (r.exit_code == 0) return "";
  return "schema validation failed (exit " + std::to_string(r.exit_code) + "): " + r.err;
}

}  // namespace ct::testing

#endif
