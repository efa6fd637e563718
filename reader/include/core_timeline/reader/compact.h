/* SPDX-License-Identifier: MIT */
/*
 * compact.h - the compact timeline document (schema_version 7,
 * docs/timeline-json.md "The compact document"): what core-timelined
 * stores and core-timeline-read --format=compact prints, and the way back
 * from it to an Analysis.
 *
 * The compact document holds what the full one (render.h write_json(),
 * schema_version 6) holds, once: what events share is in "tables"
 * (threads, event types, modules, locations, pointer mappings, inline
 * bytes, CRASH slots), each event is one array that refers to them, a
 * span refers to its begin and end events by index, and ages and
 * wall-clock times are not stored: they follow from the timestamps and
 * the rings' clocks ("time.reference_ticks", "rings[].anchors",
 * "rings[].header.ticks_per_second") by the reader's own arithmetic
 * (ring.h ticks_delta_ns(), ticks_to_realtime_ns()).  The text is not
 * stored either: analysis_of_compact() gives back the Analysis that
 * render_text() (render.h) prints, byte for byte as core-timeline-read
 * prints it for the same core.
 *
 * Memory: write_compact() writes each event as it is made (no tree of the
 * document); analysis_of_compact() takes a parsed tree (one array of
 * numbers per event) and makes an Analysis of the same size as the
 * reader's.
 *
 * Errors: analysis_of_compact() returns kBadData naming the member that
 * is missing, of the wrong type, or an index out of its table's bounds
 * (the document is untrusted: a timeline file or a journal entry), and
 * kNoMemory.  Nothing here throws.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_READER_COMPACT_H
#define CORE_TIMELINE_READER_COMPACT_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

/** The compact document of `a`, one top-level member a line, each table
 *  entry, span and event a line of its own, ending in a newline.  Invalid
 *  UTF-8 from the core is replaced by U+FFFD (inline bytes never are: they
 *  are kept exact, as a string when they are valid UTF-8, else as hex).
 *  False when `out` returned false. */
bool write_compact(const Analysis &a, const Output &out);

/** write_compact() into a string. */
std::string render_compact(const Analysis &a);

/** Whether `doc` is a compact document: an object whose "schema_version"
 *  is 7.  Never throws. */
bool is_compact(const nlohmann::ordered_json &doc) noexcept;

/** Whether the document's bytes begin as write_compact() begins one
 *  ({"schema_version":7,): a cheap look before parsing. */
bool looks_compact(std::string_view bytes) noexcept;

/** The Analysis a compact document was made from, as far as the document
 *  holds it: everything render_text() and the full document's members
 *  (render_parts.h) read.  A journal entry's cut copy ("cut",
 *  docs/timeline-json.md) holds only the newest events: indices into the
 *  events left out become "none" (a span's begin or end, an fd's origin,
 *  the time reference), and spans whose begin is left out are not listed
 *  as open in threads[].open_spans and crash.inside_spans. */
Result<Analysis> analysis_of_compact(const nlohmann::ordered_json &doc) noexcept;

/** A compact document read by read_compact_document(). */
struct CompactDocument {
  /** The document without its events: "events", when there, is an empty
   *  array. */
  nlohmann::ordered_json rest;
  /** analysis_of_compact() of the document, when it has "events" (a
   *  document of a core that was not decoded has none). */
  std::optional<Analysis> analysis;
};

/** The document's bytes (untrusted) as parse_stored_document() (stored.h)
 *  and then analysis_of_compact() take them, without a tree of the
 *  events: each "events" row becomes an Event as it is parsed, when the
 *  members it refers to came before it (write_compact()'s order; else the
 *  rows are kept until the end).  Same checks and errors as those two;
 *  never throws.  Memory: the Analysis and the document's other members;
 *  for a redis crash's 7.6 MB document, about half the time of the tree,
 *  analysis_of_compact() and freeing the tree. */
Result<CompactDocument> read_compact_document(std::string_view bytes) noexcept;

/* The full document's members (schema_version 6) of an Analysis, for
 * readers of those members: one event ("events" element), "spans" and
 * "time" (whose reference_event is an object there). */
nlohmann::ordered_json full_event(const Analysis &a, const Event &e);
nlohmann::ordered_json full_spans(const Analysis &a);
nlohmann::ordered_json full_time(const Analysis &a);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_COMPACT_H
