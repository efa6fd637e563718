// SPDX-License-Identifier: MIT
//
// test_timelines.h - TEST HELPER, not core-timelined: the timeline documents
// ctl-query reads, made the honest way until the daemon writes them.
//
// build_test_timeline() takes a real crash (ct::test::run_and_collect_core:
// a real process, the real systemd-coredump, the real journal), decodes its
// core with the real core-timeline-read (--json for the document, plain for
// "text"), and wraps the result with that crash's journal entry into a
// document of exactly the shape core-timelined is specified to write
// (docs/ctl-query.md "The stored document"):
//
//   reader's --json document
//   + "coredump": {journal_cursor, boot_id, realtime_usec, core_file,
//                  storage, fields: {every COREDUMP_* field, _BOOT_ID}}
//   + "daemon":   {version: "test-helper", decoded_usec, duration_ms}
//   + "text":     core-timeline-read's text output
//
// Nothing here is the daemon's code: when the daemon lands, its documents
// are tested end to end instead (ctl_query_pipeline_test).
//
// Test-only: errors throw std::runtime_error naming what failed.
#ifndef CORE_TIMELINE_TESTS_CTL_QUERY_TEST_TIMELINES_H
#define CORE_TIMELINE_TESTS_CTL_QUERY_TEST_TIMELINES_H

#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "process.h"

namespace ct::test::ctlq {

/** A document built by build_test_timeline(), and the name core-timelined
 *  gives it: the core's file name without .zst/.lz4/.xz, plus
 *  ".timeline.json". */
struct TestTimeline {
  std::string file_name;
  nlohmann::ordered_json document;
  ct::test::CrashRun crash;
};

/** Builds the document for a real crash (see the header comment).
 *  `reader` is core-timeline-read, `tlmap` the event names to give it. */
TestTimeline build_test_timeline(const ct::test::CrashRun &crash, const std::string &reader,
                                 const std::string &tlmap);

/** Writes the document into `dir` under its file name, with `mode`;
 *  returns the path. */
std::string write_test_timeline(const std::string &dir, const TestTimeline &t, mode_t mode = 0644);

}  // namespace ct::test::ctlq

#endif  // CORE_TIMELINE_TESTS_CTL_QUERY_TEST_TIMELINES_H
