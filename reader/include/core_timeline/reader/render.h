/* SPDX-License-Identifier: MIT */
/*
 * render.h - an Analysis as text (docs/design.md's example) or as JSON
 * (docs/timeline-json.md, validated by docs/timeline.schema.json).
 *
 * Strings from the core (paths, thread names) are untrusted bytes: text
 * output escapes anything outside printable ASCII as \xNN; JSON output
 * replaces invalid UTF-8.  Pointer snapshots are shown as hex bytes only.
 *
 * Thread-safety: pure functions of the Analysis.
 */
#ifndef CORE_TIMELINE_READER_RENDER_H
#define CORE_TIMELINE_READER_RENDER_H

#include <string>

#include <nlohmann/json.hpp>

#include "core_timeline/reader/analyze.h"

namespace core_timeline::reader {

/** Version of the JSON document's shape (docs/timeline-json.md). */
inline constexpr int kJsonSchemaVersion = document::kSchemaVersion;

struct TextOptions {
  /** Show each event's CLOCK_REALTIME time in the journalctl style
   *  ("Dec 01 14:59:51.123456", local time) instead of its age. */
  bool wall_clock = false;
  /** Group the events by thread (in the order of each thread's first
   *  event) instead of one list merged by time. */
  bool by_thread = false;
};

/** Text: a summary line, the time base, the rings, the spans open at the
 *  crash per thread (the headline), one line per event with its age
 *  ("-12.345ms": before the time reference, Analysis::time), the crash,
 *  warnings. */
std::string render_text(const Analysis &a, const TextOptions &options = {});

/** An age as the text shows it: "-12.345ms" under a second, "-1.234567s"
 *  from a second on, "+..." after the reference, "0.000ms" at it. */
std::string format_age(std::int64_t ns);
/** A duration likewise, without a sign: "1.234ms", "2.000001s". */
std::string format_duration(std::int64_t ns);

/** The JSON document as a value (ordered keys). */
nlohmann::ordered_json to_json(const Analysis &a);

/** The JSON document, indented by 2, ending in a newline.  Never throws on
 *  bad UTF-8 from the core (replaced by U+FFFD). */
std::string render_json(const Analysis &a);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_RENDER_H
