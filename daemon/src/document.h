/* SPDX-License-Identifier: MIT */
/*
 * document.h - the timeline document core-timelined writes for one
 * coredump entry (docs/core-timelined.md, "The document").
 *
 * It is the reader's --json document (docs/timeline-json.md) with, on top:
 *   "status"   possibly replaced by a daemon status (core_missing, ...),
 *   "coredump" the journal entry: cursor, boot id, realtime_usec, core_file,
 *              storage and every field but COREDUMP=,
 *   "daemon"   version, decoded_usec, duration_ms and how the core was
 *              extracted and decoded,
 *   "text"     what core-timeline-read prints for the core.
 * When there was nothing to decode, only schema_version, status, reason,
 * coredump, daemon and text are there.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DAEMON_DOCUMENT_H
#define CORE_TIMELINE_DAEMON_DOCUMENT_H

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "decode.h"
#include "entry.h"
#include "extract.h"
#include "status.h"

namespace ctd {

struct Verdict {
  Status status = Status::kUndecodable;  /**< final status (status.h) */
  std::string reason;                    /**< one line; "" for ok */
  std::optional<Status> reader_status;   /**< the reader's; unset if it did not run */
};

/**
 * The status of a decoded (or not) entry:
 *  - not decoded (child crashed, timed out, ...): undecodable;
 *  - the core is truncated (the compressed stream ended early or was
 *    corrupt, COREDUMP_TRUNCATED=1, or the reader found segments cut off)
 *    and the reader did not recover a timeline: core_truncated;
 *  - otherwise the reader's status (a status the daemon does not know:
 *    undecodable).
 */
Verdict judge(const CoredumpEntry &entry, const DecodeResult &decoded, const std::optional<ExtractStats> &extract);

struct DocumentParts {
  const CoredumpEntry *entry = nullptr;
  Verdict verdict;
  const DecodeResult *decoded = nullptr;     /**< null: nothing was decoded */
  std::optional<ExtractStats> extract;
  bool prepared_before_entry = false;        /**< prepared.h */
  std::uint64_t decoded_usec = 0;            /**< CLOCK_REALTIME, usec */
  double duration_ms = 0;                    /**< time spent on the entry */
};

nlohmann::ordered_json build_document(const DocumentParts &parts);

/** The document as written: indented by 2, invalid UTF-8 replaced, "\n". */
std::string serialize(const nlohmann::ordered_json &doc);

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_DOCUMENT_H
