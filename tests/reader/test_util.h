// SPDX-License-Identifier: MIT
// test_util.h - validating core-timeline-read's JSON (tests only); run it
// with ct::test::run (process.h).
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

namespace ct::test {

/** Options for run() (process.h): the child gets at most `bytes` of
 *  address space (RLIMIT_AS), so a reader that allocates without bound
 *  fails instead of taking the machine's memory. */
inline ProcessOptions address_space_limit(unsigned long long bytes) {
  ProcessOptions o;
  o.in_child = [bytes] {
    struct rlimit rl = {bytes, bytes};
    setrlimit(RLIMIT_AS, &rl);
  };
  return o;
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
  const Ran r = run({"/usr/bin/python3", "-c",
                     "import json,sys,jsonschema\n"
                     "s=json.load(open(sys.argv[1]))\n"
                     "jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker())"
                     ".validate(json.load(open(sys.argv[2])))\n",
                     CT_SCHEMA_PATH, path});
  unlink(path.c_str());
  if (r.exit_code() == 0) return "";
  return "schema validation failed (exit " + std::to_string(r.exit_code()) + "): " + r.err;
}

}  // namespace ct::test

#endif
