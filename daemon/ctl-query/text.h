/* SPDX-License-Identifier: MIT */
/*
 * text.h - how ctl-query turns untrusted document values into text.
 *
 * Every string a timeline document carries came from a crashed process or
 * from a file someone copied: it reaches the terminal only through
 * printable(), which keeps printable ASCII and writes every other byte as
 * \xNN -- the same rule core-timeline-read applies to its own text, so the
 * stored "text" of an honest document prints unchanged.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_TEXT_H
#define CORE_TIMELINE_CTL_QUERY_TEXT_H

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace core_timeline::ctl_query {

/** Printable ASCII as is, anything else as \xNN.  With keep_lines, '\n' and
 *  '\t' are kept too (for the stored multi-line "text"). */
std::string printable(std::string_view s, bool keep_lines = false);

/** `s` written to `out` as printable() makes it, without a copy when it
 *  has nothing to escape (show's text: tens of megabytes). */
void write_printable(std::ostream &out, std::string_view s, bool keep_lines = false);

/** A JSON value as one short line of text: a string printable(), a number in
 *  decimal, true/false, "-" for null or a missing value, and "?" for an
 *  object or array. */
std::string scalar_text(const nlohmann::ordered_json *v);

/** An event's arguments as core-timeline-read writes them ("arg=1001",
 *  "ptr=0x... size=128", "sig=SIGSEGV code=SEGV_MAPERR addr=0x0",
 *  "result=3 path=\"/etc/hostname\"" from the event's "inline_text"), from
 *  the event object of a timeline document (docs/timeline-json.md).
 *  Missing or mistyped values print as "?"; inline bytes that are not text
 *  are left out. */
std::string event_args_text(const nlohmann::ordered_json &event);

/** An event's "location" as core-timeline-read writes it:
 *  "path_a+0x5b (crash_demo.c:74) in crash_demo", "libfoo.so+0x1234", or
 *  the bare address; "-" when the event has no location. */
std::string location_text(const nlohmann::ordered_json &event);

/** Writes a table as ctl-query's commands print them: each column padded
 *  to its widest cell (the header's included, so --no-legend changes
 *  nothing but the header line), right-aligned where `right` says, one
 *  space between columns, the last column not padded, no trailing blanks.
 *  `legend`: print the header line.  Nothing at all when `cells` is empty
 *  (like coredumpctl: no header over nothing).  Cells beyond the header's
 *  columns are not printed.  The cells must already be printable(). */
void print_table(std::ostream &out, const std::vector<std::string> &header, const std::vector<bool> &right,
                 const std::vector<std::vector<std::string>> &cells, bool legend);

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_TEXT_H
