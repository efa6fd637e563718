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

#include <nlohmann/json.hpp>

#include "core_builder.h"
#include "process.h"
#include "test_files.h"

namespace ct::testing {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

using ct::test::slurp;

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

/** "" if `doc` is byte for byte what nlohmann's dump(2) of the whole
 *  document writes (render.h: the reader writes its document member by
 *  member, event by event, and promises that), else where it differs. */
inline std::string differs_from_whole_dump(const std::string &doc) {
  const auto parsed = nlohmann::ordered_json::parse(doc, nullptr, false);
  if (parsed.is_discarded()) return "not JSON";
  const std::string whole = parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (whole == doc) return "";
  std::size_t at = 0;
  while (at < doc.size() && at < whole.size() && doc[at] == whole[at]) ++at;
  return "the document differs from its whole dump(2) at byte " + std::to_string(at) + ": \"" +
         doc.substr(at > 40 ? at - 40 : 0, 80) + "\" against \"" + whole.substr(at > 40 ? at - 40 : 0, 80) + "\"";
}

/** Validates `doc` against docs/timeline.schema.json with Debian's
 *  python3-jsonschema, and that it is written as a whole dump(2) of it
 *  would be (differs_from_whole_dump).  Returns "" if valid, else the
 *  validator's message. */
inline std::string schema_errors(const std::string &doc) {
  if (std::string d = differs_from_whole_dump(doc); !d.empty()) return d;
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
