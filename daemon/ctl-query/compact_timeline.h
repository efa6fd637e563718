/* SPDX-License-Identifier: MIT */
/*
 * compact_timeline.h - a compact document (schema_version 7,
 * core_timeline/reader/compact.h) read into a Timeline (document.h) as the
 * full document's reader fills one: its members kept, "events" handed to
 * on_event one full event object at a time, "spans" and "time" in the
 * full document's shape when a path asks for them, and "text" rendered
 * from the document (what core-timeline-read printed for the core).
 *
 * Thread-safety: as parse_timeline().
 */
#ifndef CORE_TIMELINE_CTL_QUERY_COMPACT_TIMELINE_H
#define CORE_TIMELINE_CTL_QUERY_COMPACT_TIMELINE_H

#include <optional>
#include <string>
#include <string_view>

#include "core_timeline/reader/compact.h"
#include "document_reader.h"

namespace core_timeline::ctl_query {

/** A compact document read whole, kept for one more read of the same path
 *  (ReadRequest::compact_cache).  Not thread-safe: one reader at a time. */
struct CompactCache {
  std::string path;                          /**< Timeline::path of the document */
  std::optional<reader::CompactDocument> doc;  /**< taken by the next read */
};

/** Fills `t` (its path and name already set) from the compact document
 *  `bytes`; nullopt when done, else what makes it malformed.  Throws
 *  std::bad_alloc. */
std::optional<std::string> read_compact(std::string_view bytes, const ReadRequest &request, Timeline &t);

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_COMPACT_TIMELINE_H
