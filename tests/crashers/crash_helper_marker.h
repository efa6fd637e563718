/* SPDX-License-Identifier: MIT */
/* The marker crash_helper writes into its shared page (C and C++). */
#ifndef CORE_TIMELINE_TESTS_CRASHERS_CRASH_HELPER_MARKER_H
#define CORE_TIMELINE_TESTS_CRASHERS_CRASH_HELPER_MARKER_H

#define CT_MARKER_LEN 4096u

/* A byte sequence that occurs nowhere else in the helper's memory. */
static inline unsigned char ct_marker_byte(unsigned i) {
  return (unsigned char)(((i * 7u + 13u) % 251u) ^ 0xA5u);
}

#endif
