// SPDX-License-Identifier: MIT
//
// schema_check.h - a timeline document against docs/timeline.schema.json,
// by Debian's python3-jsonschema (Draft 2020-12), for the tests that hold
// a document made from a real crash.
//
// Thread-safety: as run() (process.h).
#ifndef CORE_TIMELINE_TESTS_SCHEMA_CHECK_H
#define CORE_TIMELINE_TESTS_SCHEMA_CHECK_H

#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "process.h"

namespace ct::test {

// "" when the JSON document in the file `path` validates against the
// schema at `schema_path`, else what the validator said (or why it could
// not run).
inline std::string schema_errors_of_file(const std::string &path, const std::string &schema_path) {
  const Ran r = run({"/usr/bin/python3", "-c",
                     "import json,sys,jsonschema\n"
                     "jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))"
                     ".validate(json.load(open(sys.argv[2])))\n",
                     schema_path, path});
  if (r.exit_code() == 0) return "";
  return "schema validation failed (exit " + std::to_string(r.exit_code()) + "): " + r.err.substr(0, 4000);
}

// The same for the document `bytes` (written to a temporary file).
inline std::string schema_errors_of(std::string_view bytes, const std::string &schema_path) {
  char path[] = "/tmp/ct-schema-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "cannot make a temporary file for the document";
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done != bytes.size()) {
    ::unlink(path);
    return "cannot write the document to a temporary file";
  }
  std::string errors = schema_errors_of_file(path, schema_path);
  ::unlink(path);
  return errors;
}

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_SCHEMA_CHECK_H
