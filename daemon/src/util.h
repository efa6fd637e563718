/* SPDX-License-Identifier: MIT */
/*
 * util.h - small building blocks of core-timelined: errors as values, an
 * owning file descriptor, and clocks.
 *
 * Errors: daemon internals return Result<T> (a T or an Error, the
 * project's: core_timeline/reader/result.h).  An Error carries a code, the
 * errno it came from (sys_errno, 0 if none) and a one-line message that
 * names the thing (path, pid, field) and, where there is one, what to do.
 * Nothing here throws, except std::bad_alloc from std::string.
 *
 * Thread-safety: plain values; Fd is a move-only owner.
 */
#ifndef CORE_TIMELINE_DAEMON_UTIL_H
#define CORE_TIMELINE_DAEMON_UTIL_H

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/result.h"

namespace core_timeline::daemon {

/* The project's errors (core_timeline/reader/result.h). */
using core_timeline::reader::Errc;
using core_timeline::reader::Error;
template <class T>
using Result = core_timeline::reader::Result<T>;

/** An Error from errno value `err` (> 0): "<what>: <strerror(err)>"
 *  (reader::system_error()). */
inline Error errno_error(int err, std::string_view what) { return core_timeline::reader::system_error(err, what); }

/** An Error whose message is `message` as given and whose sys_errno is
 *  `err`, with the code that fits it: kBadData for 0 (a rule of the input
 *  was broken), kInvalidArgument for EINVAL, kNoMemory for ENOMEM,
 *  kCancelled for ECANCELED, kIo otherwise. */
Error error_of(int err, std::string message);

/** An owned file descriptor (core_timeline/reader/fd.h). */
using Fd = core_timeline::reader::Fd;

/** CLOCK_REALTIME in microseconds since the epoch. */
std::uint64_t realtime_usec() noexcept;
/** CLOCK_MONOTONIC in microseconds. */
std::uint64_t monotonic_usec() noexcept;

/** Writes all of `data` to `fd` (retrying EINTR and short writes). */
Result<void> write_all(int fd, std::string_view data, std::string_view what);

/** `s` with bytes outside printable ASCII shown as \xNN: for log lines
 *  that quote untrusted strings (journal fields, paths). */
std::string printable(std::string_view s, std::size_t max_len = 256);

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_UTIL_H
