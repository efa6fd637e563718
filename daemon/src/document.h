/* SPDX-License-Identifier: MIT */
/*
 * document.h - what core-timelined stores for one coredump entry, in the
 * terms of the timeline document module (core_timeline/document/stored.h,
 * which owns the document's types, keys, JSON and file names).
 *
 * judge() decides the document's status; build_document() gathers the
 * entry, the extraction and the decoding into document::StoredParts.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DAEMON_DOCUMENT_H
#define CORE_TIMELINE_DAEMON_DOCUMENT_H

#include <cstdint>
#include <optional>
#include <string>

#include "core_timeline/document/stored.h"
#include "decode.h"
#include "entry.h"
#include "extract.h"
#include "stored_status.h"

namespace core_timeline::daemon {

using core_timeline::document::serialize;

struct Verdict {
  Status status = Status::kUndecodable;  /**< the document's status */
  std::string reason;                    /**< one line; "" for ok */
  std::optional<Status> reader_status;   /**< the reader's, if it ran */
};

/**
 * The status of a decoded (or not) entry:
 *  - not decoded (child crashed, timed out, ...): undecodable;
 *  - the core is truncated (the compressed stream ended early or was
 *    corrupt, COREDUMP_TRUNCATED=1, or the reader found segments cut off)
 *    and the reader did not recover a timeline: core_truncated;
 *  - otherwise the reader's status.
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

/** The stored document's JSON (document::stored_document()). */
core_timeline::document::Json build_document(const DocumentParts &parts);

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_DOCUMENT_H
