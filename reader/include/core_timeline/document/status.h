/* SPDX-License-Identifier: MIT */
/*
 * status.h - the status of a timeline document, its "status" member.
 *
 * The first eight are core-timeline-read's (its exit codes 0..7, in that
 * order; docs/timeline-json.md, "status"), and so is kRingNotMade (exit
 * code 8, added in schema version 2); the other three only
 * core-timelined writes, when there was no core to decode or decoding it
 * failed (docs/core-timelined.md, "Statuses").
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_STATUS_H
#define CORE_TIMELINE_DOCUMENT_STATUS_H

#include <optional>
#include <string_view>

namespace core_timeline::document {

/** Version of the document's shape ("schema_version"). */
inline constexpr int kSchemaVersion = 6;

enum class Status {
  kOk,                /**< "ok": a timeline was recovered */
  kNoRing,            /**< "no_ring" */
  kMappingAbsent,     /**< "mapping_absent" */
  kCoreUnreadable,    /**< "core_unreadable" (the reader's, and the daemon's
                           when the core file cannot be opened or extracted) */
  kRingInvalid,       /**< "ring_invalid" */
  kExecutableRefused, /**< "executable_refused" */
  kSidecarMismatch,   /**< "sidecar_mismatch" */
  kUsage,             /**< "usage" (the command line; never stored) */
  kCoreMissing,       /**< "core_missing": no core file to decode */
  kCoreTruncated,     /**< "core_truncated": cut short, no timeline recovered */
  kUndecodable,       /**< "undecodable": the decoder failed (crashed, timed
                           out, wrote something malformed) */
  kRingNotMade,       /**< "ring_not_made": libtimeline was loaded but made
                           no ring; its ring-less header says why */
};

/** The name written in documents ("ok", "no_ring", ...). */
std::string_view status_name(Status s) noexcept;

/** The Status named `name`, or nullopt for a name no document has. */
std::optional<Status> parse_status(std::string_view name) noexcept;

/** True for the statuses core-timeline-read itself gives (kOk..kUsage and
 *  kRingNotMade). */
constexpr bool is_reader_status(Status s) noexcept { return s <= Status::kUsage || s == Status::kRingNotMade; }

}  // namespace core_timeline::document

#endif  // CORE_TIMELINE_DOCUMENT_STATUS_H
