/* SPDX-License-Identifier: MIT */
/*
 * cause_render.h - the cause section (cause.h) as text and as JSON
 * (private to the reader; render.cc writes them where
 * docs/timeline-json.md places them).
 */
#ifndef CORE_TIMELINE_READER_SRC_CAUSE_RENDER_H
#define CORE_TIMELINE_READER_SRC_CAUSE_RENDER_H

#include <string>

#include <nlohmann/json.hpp>

#include "core_timeline/reader/analyze.h"

namespace core_timeline::reader::detail {

/** The text's lines: "cause: ..." per claim (at most kMaxCauseLines, cause.h), each
 *  followed by "  relies on: WINDOW" when it has one, then "cause cannot
 *  be told: ..." lines; "" without a cause section.  Escaped (printable()). */
std::string cause_text(const Analysis &a);

/** The document's "cause" member: null, or {"causes": [...],
 *  "cannot_tell": [...]} (docs/timeline-json.md, "cause"). */
nlohmann::ordered_json cause_json(const Analysis &a);

}  // namespace core_timeline::reader::detail

#endif  // CORE_TIMELINE_READER_SRC_CAUSE_RENDER_H
