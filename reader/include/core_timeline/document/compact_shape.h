/* SPDX-License-Identifier: MIT */
/*
 * compact_shape.h - the compact document's shape (schema_version 7,
 * docs/timeline-json.md "The compact document"): the positions of an
 * event's and a span's members in their arrays, the layout it is written
 * in, and what the daemon and ctl-query do to one without the reader
 * (its journal copy: payload bytes left out, the oldest events cut).
 * core_timeline/reader/compact.h writes it from an Analysis and reads it
 * back into one; both use these positions.
 *
 * Layout (serialize()): one top-level member a line; the elements of
 * "rings", "threads", "spans" and "events", and of each member of
 * "tables", one a line; everything else as compact JSON.  "events" is the
 * last member, so the newest events are the document's last lines.
 *
 * Thread-safety: constants and pure functions.  Nothing here throws but
 * std::bad_alloc.
 */
#ifndef CORE_TIMELINE_DOCUMENT_COMPACT_SHAPE_H
#define CORE_TIMELINE_DOCUMENT_COMPACT_SHAPE_H

#include <cstddef>
#include <string>
#include <string_view>

#include "core_timeline/document/keys.h"
#include "core_timeline/document/stored.h"

namespace core_timeline::document {

/** Version of the compact document's shape: what core-timelined stores
 *  and core-timeline-read --format=compact prints.  The full document
 *  (core-timeline-read --json) is kSchemaVersion (status.h), 6; readers
 *  take both. */
inline constexpr int kCompactSchemaVersion = 7;

}  // namespace core_timeline::document

/* The compact document's own member names (the full document's are
 * keys.h's, and the compact document shares them). */
namespace core_timeline::document::key {

inline constexpr char anchors[] = "anchors";
inline constexpr char bytes[] = "bytes";
inline constexpr char crash_slots[] = "crash_slots";
inline constexpr char handler_flags[] = "handler_flags";
inline constexpr char hex[] = "hex";
inline constexpr char invalid_slots[] = "invalid_slots";
inline constexpr char live[] = "live";
inline constexpr char locations[] = "locations";
inline constexpr char mappings[] = "mappings";
inline constexpr char modules[] = "modules";
inline constexpr char pools[] = "pools";
inline constexpr char recorded[] = "recorded";
inline constexpr char reference_ring[] = "reference_ring";
inline constexpr char reference_ticks[] = "reference_ticks";
inline constexpr char sender_uid[] = "sender_uid";
inline constexpr char tables[] = "tables";
inline constexpr char torn_slots[] = "torn_slots";
inline constexpr char types[] = "types";
/* An event's extras (kExtras below). */
inline constexpr char x_ring[] = "r";
inline constexpr char x_source[] = "o";
inline constexpr char x_pointer[] = "p";
inline constexpr char x_bytes[] = "b";
inline constexpr char x_stack[] = "k";
inline constexpr char x_crash[] = "c";
inline constexpr char x_fd[] = "f";
inline constexpr char x_span[] = "s";

}  // namespace core_timeline::document::key

namespace core_timeline::document::compact {

/* An event: [lane, seq, thread, type, id, arg0, arg1, location, ticks
 * step] and, when it has any, an object of what few events have
 * (keys.h x_*). */
inline constexpr std::size_t kLane = 0, kSeq = 1, kThread = 2, kType = 3, kId = 4, kArg0 = 5, kArg1 = 6,
                             kLocation = 7, kTicks = 8, kExtras = 9;
/* tables.types: [kind number, kind name, name, named, name_from]. */
inline constexpr std::size_t kTypeKind = 0, kTypeKindName = 1, kTypeName = 2, kTypeNamed = 3, kTypeNameFrom = 4;
/* A span: [token, state, id, arg, begin, end, duration_ns, open_for_ns,
 * parent, depth, extra_ends, note, tid, end_tid, ring]. */
inline constexpr std::size_t kSpanToken = 0, kSpanState = 1, kSpanId = 2, kSpanArg = 3, kSpanBegin = 4, kSpanEnd = 5,
                             kSpanDuration = 6, kSpanOpenFor = 7, kSpanParent = 8, kSpanDepth = 9,
                             kSpanExtraEnds = 10, kSpanNote = 11, kSpanTid = 12, kSpanEndTid = 13, kSpanRing = 14;

/** Whether `doc` is a compact document (schema_version 7). */
bool is_compact(const Json &doc) noexcept;

/** The kind name ("MALLOC") and display name of event `e` of `doc`, from
 *  tables.types; nullptr for what the document does not hold. */
const std::string *event_kind(const Json &doc, const Json &e) noexcept;
const std::string *event_name(const Json &doc, const Json &e) noexcept;

/** A span's name: its begin's (else its end's) event name; nullptr when
 *  neither is in the document or its id is not known. */
const std::string *span_name(const Json &doc, const Json &span) noexcept;

/** The index in the whole document's "events" of `doc`'s events[0]: 0,
 *  or for a journal entry's cut copy events_total - events_kept. */
std::size_t first_event(const Json &doc) noexcept;

/** The document as written, in the layout above, invalid UTF-8 replaced
 *  by U+FFFD, ending in "\n". */
std::string serialize(const Json &doc);

/** One event's bytes in that layout, without the ",\n" after it. */
std::size_t event_size(const Json &e);

/** Leaves the payload bytes of READ, WRITE, RECV and SEND events out
 *  (their "b" becomes null, and a tables.bytes entry no other event uses
 *  becomes null); the number of events that lost theirs. */
std::size_t omit_payload(Json &doc);

/** Whether omit_payload() would take anything. */
bool has_payload(const Json &doc) noexcept;

/** Makes the first of `kept`, the newest events of a document whose
 *  events are `all`, carry its whole timestamp as its ticks step (the
 *  steps before it are left out with their events). */
void rebase_ticks(Json &kept, const Json &all);

}  // namespace core_timeline::document::compact

#endif  // CORE_TIMELINE_DOCUMENT_COMPACT_SHAPE_H
