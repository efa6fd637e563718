/* SPDX-License-Identifier: MIT */
/*
 * render.h - an Analysis as text (docs/design.md's example) or as JSON
 * (docs/timeline-json.md, validated by docs/timeline.schema.json).
 *
 * Strings from the core (paths, thread names) are untrusted bytes: text
 * output escapes anything outside printable ASCII as \xNN; JSON output
 * replaces invalid UTF-8.  Inline bytes that are a string (an OPEN's path,
 * a tl_mark_ptr snapshot, a thread name, an AF_UNIX sun_path) are shown as
 * path="..." when payload_text() (printable.h) finds them text, escaped by
 * printable()'s .quoted, the one escaper; in JSON that same string is the
 * event's "inline_text" beside its exact "inline_bytes".  Bytes that are
 * not text stay hex.
 *
 * Memory: write_text() and write_json() hand their output to an Output
 * piece by piece, each event as it is made (a JSON event object is built
 * with nlohmann for that object alone), so a document of a million events
 * is never held whole: what they hold at once is one event and a 64 KiB
 * buffer.  render_text(), render_json() and to_json() are the same
 * writers into a string or a tree, for small documents.
 *
 * Thread-safety: pure functions of the Analysis.
 */
#ifndef CORE_TIMELINE_READER_RENDER_H
#define CORE_TIMELINE_READER_RENDER_H

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

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

/** Where write_text() and write_json() put their output: called with each
 *  piece in order (pieces of about 64 KiB); returns false to stop (a write
 *  failed), and the writer then returns false without calling it again. */
using Output = std::function<bool(std::string_view)>;

/** An Output that fwrite()s to `f` (errno tells why it returned false). */
Output file_output(std::FILE *f);

/** Text: a summary line, the time base, the rings, the spans open at the
 *  crash per thread (the headline), one line per event with its age
 *  ("-12.345ms": before the time reference, Analysis::time), the crash,
 *  warnings.  False when `out` returned false. */
bool write_text(const Analysis &a, const Output &out, const TextOptions &options = {});

/** write_text() into a string. */
std::string render_text(const Analysis &a, const TextOptions &options = {});

/** An age as the text shows it: "-12.345ms" under a second, "-1.234567s"
 *  from a second on, "+..." after the reference, "0.000ms" at it. */
std::string format_age(std::int64_t ns);
/** A duration likewise, without a sign: "1.234ms", "2.000001s". */
std::string format_duration(std::int64_t ns);
/** A CLOCK_REALTIME time (ns since the epoch) as --wall-clock shows an
 *  event's: journalctl's short-precise style in local time, "Dec 01
 *  14:59:51.123456"; "?" when it cannot be converted.  Reentrant
 *  (localtime_r). */
std::string format_wall_clock(std::int64_t ns);

/** A source as people call it: "user marks and spans", "allocations",
 *  "I/O". */
std::string_view source_title(std::uint32_t source) noexcept;
/** One source's window in one sentence, as the "window:" lines and the
 *  JSON's windows[].says give it, e.g. "allocations: complete for the last
 *  2.601ms; not known before -2.601ms (5189 overwritten); 256 kept". */
std::string window_text(const SourceWindow &w);
/** What the absence of one source's events proves, for the warning:
 *  "allocations before -2.601ms are not known", "user marks and spans are
 *  complete since tl_init (58.204s)". */
std::string absence_text(const SourceWindow &w);

/** An event's inline bytes as the string the text shows between quotes
 *  and the JSON's "inline_text" holds (OPEN's path, USER_PTR's snapshot,
 *  THREAD_NAME's name, an AF_UNIX CONNECT's "unix:PATH"), or nullopt when
 *  its kind has none or the bytes are not text (printable.h
 *  payload_text()). */
std::optional<std::string> event_inline_text(const Analysis &a, const Event &e);

/** The JSON document, indented by 2, ending in a newline: the members in
 *  the order of docs/timeline-json.md, each array's elements written as
 *  they are made.  Byte for byte what nlohmann's dump(2) of the whole
 *  document gives.  Never throws on bad UTF-8 from the core (replaced by
 *  U+FFFD).  False when `out` returned false. */
bool write_json(const Analysis &a, const Output &out);

/** write_json() into a string. */
std::string render_json(const Analysis &a);

/** The JSON document as a value (ordered keys): render_json() parsed. */
nlohmann::ordered_json to_json(const Analysis &a);

/** The document's "crash" and "thread_stacks" members alone, as write_json()
 *  writes them: {"crash": {...} or null, "thread_stacks": [...]}.  What the
 *  exports read of the crash (export.h export_stacks_of_document()), so
 *  that they read the document rather than the Analysis's own structures.
 *  O(frames). */
nlohmann::ordered_json crash_document(const Analysis &a);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_RENDER_H
