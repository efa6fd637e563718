/* SPDX-License-Identifier: MIT */
/*
 * status.h - the status of a timeline document, its "status" member.
 *
 * One enum for the reader (core_timeline::reader::Status is this one),
 * the daemon and ctl-query.  The first eight and kRingNotMade are
 * core-timeline-read's, each with its exit code (exit_code(): 0..7 in
 * that order, 8 for kRingNotMade; docs/timeline-json.md, "Exit codes");
 * the other three only core-timelined writes, when there was no core to
 * decode or decoding it failed (docs/core-timelined.md, "Statuses").
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_STATUS_H
#define CORE_TIMELINE_DOCUMENT_STATUS_H

#include <array>
#include <optional>
#include <string_view>

namespace core_timeline::document {

/** Version of the document's shape ("schema_version"). */
inline constexpr int kSchemaVersion = 6;

enum class Status {
  kOk,                /**< "ok", exit 0: a timeline was recovered */
  kNoRing,            /**< "no_ring", exit 1: no CTLN mapping found (the
                           process did not run with libtimeline) */
  kMappingAbsent,     /**< "mapping_absent", exit 2: NT_FILE lists the ring,
                           its bytes are not in the core (excluded, or cut
                           off by truncation); or no ring was found in a
                           core cut off where one could be, without NT_FILE
                           to list it: whether libtimeline was used cannot
                           be told */
  kCoreUnreadable,    /**< "core_unreadable", exit 3: not an ELF core,
                           unreadable, empty; or nothing to read: no
                           PT_LOAD, and no PT_NOTE or no NT_FILE (also the
                           daemon's, when the core file cannot be opened or
                           extracted) */
  kRingInvalid,       /**< "ring_invalid", exit 4: a ring is there but none
                           validates or belongs to this process */
  kExecutableRefused, /**< "executable_refused", exit 5: the EXECUTABLE's
                           build-id contradicts the core */
  kSidecarMismatch,   /**< "sidecar_mismatch", exit 6: the sidecar's
                           pid/build-id/header contradict the core (normal
                           mode only) */
  kUsage,             /**< "usage", exit 7: bad command line, unreadable
                           --tlmap, unusable --output or --save (never
                           stored) */
  kCoreMissing,       /**< "core_missing": no core file to decode */
  kCoreTruncated,     /**< "core_truncated": cut short, no timeline recovered */
  kUndecodable,       /**< "undecodable": the decoder failed (crashed, timed
                           out, wrote something malformed) */
  kRingNotMade,       /**< "ring_not_made", exit 8: libtimeline was loaded
                           but made no ring; its ring-less header (ring
                           format 2) says why */
};
/** The name written in documents ("ok", "no_ring", ...). */
std::string_view status_name(Status s) noexcept;

/** The Status named `name`, or nullopt for a name no document has. */
std::optional<Status> parse_status(std::string_view name) noexcept;

/** True for the statuses core-timeline-read itself gives (kOk..kUsage and
 *  kRingNotMade). */
constexpr bool is_reader_status(Status s) noexcept { return s <= Status::kUsage || s == Status::kRingNotMade; }

/** core-timeline-read's statuses, in the order of their exit codes. */
inline constexpr std::array<Status, 9> kReaderStatuses{
    Status::kOk,           Status::kNoRing,           Status::kMappingAbsent,
    Status::kCoreUnreadable, Status::kRingInvalid,    Status::kExecutableRefused,
    Status::kSidecarMismatch, Status::kUsage,         Status::kRingNotMade};

/** core-timeline-read's exit code for a status it gives (0..8, as listed
 *  above); -1 for the three only core-timelined writes, which are no exit
 *  of core-timeline-read. */
int exit_code(Status s) noexcept;

/** What exit code exit_code(s) means, in a few words, as
 *  core-timeline-read --help lists it ("timeline printed", "no CTLN
 *  mapping found", ...); "" for the daemon's own three. */
std::string_view exit_meaning(Status s) noexcept;

}  // namespace core_timeline::document

#endif  // CORE_TIMELINE_DOCUMENT_STATUS_H
