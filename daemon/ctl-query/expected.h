/* SPDX-License-Identifier: MIT */
/*
 * expected.h - ctl-query's errors are the project's (core_timeline/reader/
 * result.h): a Result holds a value or an Error whose message names the
 * thing that was wrong and is printed to the user as is, after
 * "ctl-query: ".  Bad command-line values are Errc::kInvalidArgument.
 *
 * Thread-safety: plain values.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_EXPECTED_H
#define CORE_TIMELINE_CTL_QUERY_EXPECTED_H

#include <string>

#include "core_timeline/reader/result.h"

namespace core_timeline::ctl_query {

using core_timeline::reader::Errc;
using core_timeline::reader::Error;
using core_timeline::reader::Result;

/** The Error of a value the user gave that cannot be used. */
inline Error invalid(std::string message) { return Error{Errc::kInvalidArgument, std::move(message)}; }

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_EXPECTED_H
