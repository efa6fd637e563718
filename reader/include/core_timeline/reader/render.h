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

/** Text: a summary line, one line per event, the crash, warnings. */
std::string render_text(const Analysis &a);

/** The JSON document as a value (ordered keys). */
nlohmann::ordered_json to_json(const Analysis &a);

/** The JSON document, indented by 2, ending in a newline.  Never throws on
 *  bad UTF-8 from the core (replaced by U+FFFD). */
std::string render_json(const Analysis &a);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_RENDER_H
