/* SPDX-License-Identifier: MIT */
/* Event ids of spans_three_threads and clock_check, shared with
 * lib_crash_test (C and C++). */
#ifndef CORE_TIMELINE_TESTS_CRASHERS_SPANS_IDS_H
#define CORE_TIMELINE_TESTS_CRASHERS_SPANS_IDS_H

enum {
  SPANS_OUTER = 0x5001,
  SPANS_INNER = 0x5002,
  SPANS_WAIT = 0x5003,
  SPANS_STEP = 0x5004,
  SPANS_HANDOFF = 0x5005,
  CLOCK_MARK = 0x6001,
};
/* How long each of closer's STEP spans sleeps. */
#define SPANS_STEP_MS 5

#endif
