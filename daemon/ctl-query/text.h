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

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace core_timeline::ctlq {

/** Printable ASCII as is, anything else as \xNN.  With keep_lines, '\n' and
 *  '\t' are kept too (for the stored multi-line "text"). */
std::string printable(std::string_view s, bool keep_lines = false);

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

}  // namespace core_timeline::ctlq

#endif  // CORE_TIMELINE_CTL_QUERY_TEXT_H
