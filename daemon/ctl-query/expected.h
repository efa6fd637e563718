/* SPDX-License-Identifier: MIT */
/*
 * expected.h - a value or a one-line error message, for ctl-query's
 * internals (GCC 12 has no std::expected).  The message names the thing that
 * was wrong and is printed to the user as is, after "ctl-query: ".
 *
 * Thread-safety: plain values.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_EXPECTED_H
#define CORE_TIMELINE_CTL_QUERY_EXPECTED_H

#include <string>

#include "core_timeline/reader/result.h"

namespace core_timeline::ctlq {

/** The error half of an Expected: a message for people. */
struct Failure {
  std::string message;
};

/** A T or an E (by default a Failure): the reader's Result
 *  (core_timeline/reader/result.h) with a message-only error. */
template <class T, class E = Failure>
using Expected = core_timeline::reader::Result<T, E>;

}  // namespace core_timeline::ctlq

#endif  // CORE_TIMELINE_CTL_QUERY_EXPECTED_H
