/* SPDX-License-Identifier: MIT */
/*
 * time_spec.h - the times --since and --until accept, and how ctl-query
 * prints a time.  A subset of systemd.time(7), the syntax coredumpctl and
 * journalctl take (docs/ctl-query.md lists it):
 *
 *   2026-11-30 06:25:26      local time; seconds, or the whole time, may be
 *   2026-11-30 06:25          left out (00:00:00); "T" may replace the space;
 *   2026-11-30                ".123456" may follow the seconds
 *   Mon 2026-11-30 06:25:26 UTC   a weekday (checked) and a zone: "UTC", "Z"
 *                             or the local zone's abbreviation -- so a time
 *                             copied from `ctl-query list` works as is
 *   06:25:26, 06:25           today at that time
 *   now, today, yesterday, tomorrow   (midnight for the last three)
 *   @1796020111               seconds since the epoch (fraction allowed)
 *   -1h, +30min, "2d 3h ago", "5min left"   relative to now; units us, ms,
 *                             s, m/min, h, d, w, M (months), y, and their
 *                             long forms (sec, seconds, minutes, hours...);
 *                             a number without unit is seconds
 *
 * Thread-safety: reentrant (localtime_r, mktime).
 */
#ifndef CORE_TIMELINE_CTL_QUERY_TIME_SPEC_H
#define CORE_TIMELINE_CTL_QUERY_TIME_SPEC_H

#include <cstdint>
#include <string>
#include <string_view>

#include "expected.h"

namespace core_timeline::ctl_query {

/** Parses a time as above into microseconds since the epoch.  `now_usec`
 *  is "now" (CLOCK_REALTIME) for the relative forms and for "today".  The
 *  error names the text and what was expected. */
Result<std::int64_t> parse_time_spec(std::string_view text, std::int64_t now_usec);

/** Parses a time span ("1h 30min", "2d", "90") into microseconds. */
Result<std::int64_t> parse_time_span(std::string_view text);

/** A time as coredumpctl prints it, in the local zone:
 *  "Mon 2026-11-30 06:25:26 UTC". */
std::string format_time(std::int64_t usec);

/** The same with the microseconds, as events prints an event's own time:
 *  "Mon 2026-11-30 06:25:26.123456 UTC" (accepted by --since as is). */
std::string format_time_usec(std::int64_t usec);

/** CLOCK_REALTIME now, in microseconds since the epoch. */
std::int64_t realtime_now_usec() noexcept;

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_TIME_SPEC_H
