/* SPDX-License-Identifier: MIT */
/*
 * status.h - the status of a stored timeline (docs/core-timelined.md,
 * "Statuses"): the reader's (core_timeline::reader::Status, without its
 * command-line-only "usage") and the daemon's own, for cores it could not
 * hand to the reader or whose decoding failed.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DAEMON_STATUS_H
#define CORE_TIMELINE_DAEMON_STATUS_H

#include <optional>
#include <string_view>

namespace ctd {

enum class Status {
  /* The reader's. */
  kOk,
  kNoRing,
  kMappingAbsent,
  kCoreUnreadable,  /**< also the daemon's: a core it cannot open or that holds no data */
  kRingInvalid,
  kExecutableRefused,
  kSidecarMismatch,
  /* The daemon's. */
  kCoreMissing,
  kCoreTruncated,
  kUndecodable,
};

/** Its name in documents and log fields: "ok", "no_ring", "mapping_absent",
 *  "core_unreadable", "ring_invalid", "executable_refused",
 *  "sidecar_mismatch", "core_missing", "core_truncated", "undecodable". */
std::string_view status_name(Status s) noexcept;

/** The Status that status_name() names `name`; nullopt for any other
 *  string (the reader's "usage" included). */
std::optional<Status> status_from_name(std::string_view name) noexcept;

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_STATUS_H
