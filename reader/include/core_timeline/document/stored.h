/* SPDX-License-Identifier: MIT */
/*
 * stored.h - the timeline document core-timelined stores for one coredump
 * journal entry (docs/core-timelined.md, "The document"), and the typed
 * view of the reader's document it is built from.
 *
 * A stored document is core-timeline-read's --json document
 * (docs/timeline-json.md) with, on top:
 *   "status"   possibly replaced by a daemon status (core_truncated, ...),
 *              and then "reason" by the daemon's;
 *   "coredump" the journal entry (Coredump), with "dumpable" from its
 *              COREDUMP_DUMPABLE (ids.h dumpable());
 *   "pids"     the crash's ids in the host's and in its own pid namespace
 *              (ids.h process_ids());
 *   "daemon"   how the entry was handled (DaemonFacts);
 *   "text"     what core-timeline-read prints for the core.
 * When nothing was decoded, only schema_version, status, reason, coredump,
 * pids, daemon and text are there.  docs/timeline.schema.json describes both
 * shapes; tests validate real stored documents against it.
 *
 * Errors: parse_reader_document() returns reader::Error (kBadData: not
 * JSON, nested too deep, not a timeline document; kNoMemory).  Nothing
 * else here fails.
 *
 * Thread-safety: plain values and pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_STORED_H
#define CORE_TIMELINE_DOCUMENT_STORED_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core_timeline/document/status.h"
#include "core_timeline/reader/result.h"

namespace core_timeline::document {

using Json = nlohmann::ordered_json;

/** Deepest nesting a document may have (the format needs 6).  A decoder
 *  taken over by a hostile core could send a million levels: nlohmann
 *  parses any depth with its own stack, but copying and dumping a value
 *  recurse once per level, so the daemon's stack would overflow, and again
 *  after each restart on the same entry. */
inline constexpr int kMaxDepth = 64;

/** What the daemon and ctl-query need of the reader's document, read once
 *  from it by summarize(). */
struct ReaderSummary {
  Status status = Status::kCoreUnreadable;
  std::optional<std::string> reason;  /**< null for ok */
  int exit_code = 3;                  /**< core-timeline-read's, 0..8 */
  bool core_truncated = false;        /**< core.truncated */
  std::size_t event_count = 0;        /**< events[] */
};

/** The reader's document: its JSON tree and the summary of it. */
struct ReaderDocument {
  Json tree;
  ReaderSummary summary;
};

/**
 * Parses the reader's --json document, `bytes` (untrusted: it comes from
 * the decoder child, which read a hostile core): valid JSON, an object
 * nested at most kMaxDepth deep (checked while parsing, by nlohmann's
 * parser callback: nothing deeper is built), with a "status" the reader
 * gives, an "exit_code" 0..8, and "core", "events" of the right types when
 * present.  Never throws.
 */
reader::Result<ReaderDocument> parse_reader_document(std::string_view bytes) noexcept;

/** Parses a stored document, `bytes` (untrusted: a timeline file, or a
 *  journal entry's CORE_TIMELINE_DOCUMENT): valid JSON, an object nested
 *  at most kMaxDepth deep (checked while parsing), with a "status"
 *  string.  kBadData says what is wrong; kNoMemory.  Never throws. */
reader::Result<Json> parse_stored_document(std::string_view bytes) noexcept;

/** What parse_streaming() calls with each element of a streamed array:
 *  the document as parsed so far (without the streamed elements; the
 *  members after this array are not there yet), the array's top-level
 *  member name, the element, its index in the array.  An error message
 *  stops the parse (parse_streaming() returns it as kBadData); nullopt
 *  goes on.  May throw std::bad_alloc only. */
using ElementFn = std::function<std::optional<std::string>(const Json &so_far, std::string_view member,
                                                           const Json &element, std::size_t index)>;

/** Parses `bytes` as parse_stored_document()'s first step does (valid
 *  JSON, nested at most kMaxDepth deep) but builds no tree of the
 *  elements of the top-level arrays named in `streamed` (a compact
 *  document's "events"): each is handed to `on_element` once it is parsed,
 *  then dropped, and the member stays in the tree as an empty array.  A
 *  streamed member that is not an array is kept as any other.  The rest of the tree is returned,
 *  not checked further (an object, "status": the caller's), except that a
 *  top-level member given twice is refused (kBadData; the tree's parser
 *  keeps the last).  Memory: the
 *  tree without the streamed elements, and one element.  With `build`
 *  false the elements are only lexed (valid JSON, depth), not built:
 *  on_element gets null for each, so it can count them.  kBadData,
 *  kNoMemory; never throws. */
reader::Result<Json> parse_streaming(std::string_view bytes, std::span<const std::string_view> streamed,
                                     const ElementFn &on_element, bool build = true) noexcept;

/** Whether an event object of a timeline document ("events" element,
 *  docs/timeline-json.md) is bookkeeping: of a kind that only libtimeline's
 *  own machinery writes, never a call of the program -- LANE_CLAIM (a
 *  thread's first slot in a lane, ring_format.h kKindLaneClaim) and STACK
 *  (the frames of a slot whose event is gone, kKindStack).  ctl-query and
 *  the timeline entry's CORE_TIMELINE_LAST_EVENT leave them out of what a
 *  person reads first.  False for anything that is not such an object.
 *  Pure; never throws. */
bool is_bookkeeping_event(const Json &event) noexcept;

/** Whether `kind`, an event's "kind", is one is_bookkeeping_event() names
 *  (LANE_CLAIM, STACK).  Pure; never throws. */
bool is_bookkeeping_kind(std::string_view kind) noexcept;

/** The summary of a reader's document tree; kBadData names the member
 *  that is missing or of the wrong type. */
reader::Result<ReaderSummary> summarize(const Json &reader_document);

/** "coredump": the journal entry a stored timeline is for. */
struct Coredump {
  std::string journal_cursor;
  std::string boot_id;                  /**< _BOOT_ID */
  std::uint64_t realtime_usec = 0;      /**< __REALTIME_TIMESTAMP */
  std::optional<std::string> core_file; /**< COREDUMP_FILENAME */
  std::string storage;                  /**< "external", "journal", "none" */
  /** The first value of every field but COREDUMP= (untrusted bytes;
   *  invalid UTF-8 is replaced when the document is serialized). */
  std::map<std::string, std::string> fields;
};

/** "daemon.extraction": how the stored core was made readable. */
struct Extraction {
  std::string compression;          /**< "zstd", "lz4", "xz", "none" */
  std::uint64_t input_bytes = 0;    /**< bytes read from the stored core */
  std::uint64_t core_bytes = 0;     /**< decompressed size (= the file's) */
  std::uint64_t kept_bytes = 0;     /**< bytes written (not holes) */
  bool sparse = false;              /**< some bytes were left as holes */
  bool budget_exhausted = false;    /**< the extraction budget was reached */
  bool stream_truncated = false;    /**< the input ended early or was corrupt */
  std::string stream_error;         /**< the decompressor's words ("": none) */
};

/** "daemon.decoder.run_as": whose rights the decoder had (the daemon's
 *  decode.h, "Whose rights"). */
struct DecoderRunAs {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  /** Why: "crashed_user" (COREDUMP_UID/GID), "dedicated_user"
   *  (core-timeline-decoder, for root and system users), "fallback_user"
   *  (nobody: that user does not exist). */
  std::string as;
};

/** "daemon.decoder": how the decoder child ran. */
struct DecoderFacts {
  double duration_ms = 0;
  std::uint64_t max_rss_kb = 0;     /**< VmHWM */
  std::uint64_t anon_kb = 0;        /**< RssAnon */
  bool timed_out = false;
  bool via_server = false;
  int landlock_abi = 0;             /**< 0: not confined by Landlock */
  bool seccomp = false;
  std::optional<std::string> failure;  /**< why nothing was decoded */
  /** The credentials it was given (decoded: it confirmed them). */
  std::optional<DecoderRunAs> run_as;
};

/** "daemon": how core-timelined handled the entry. */
struct DaemonFacts {
  std::string version;
  std::uint64_t decoded_usec = 0;   /**< CLOCK_REALTIME when done, usec */
  double duration_ms = 0;           /**< time spent on the entry */
  /** decoded_usec - coredump.realtime_usec, in ms; 0 when either is
   *  unknown or the clock went back. */
  double latency_ms = 0;
  std::optional<Status> reader_status;  /**< null: the reader did not run */
  bool prepared_before_entry = false;
  std::optional<Extraction> extraction;
  std::optional<DecoderFacts> decoder;
};

/** What a stored document is made of.  `reader` null: nothing was
 *  decoded.  `status` and `reason` are the document's; when `reader` is
 *  given and status is its own, the reader's reason is kept. */
struct StoredParts {
  const ReaderDocument *reader = nullptr;
  Status status = Status::kUndecodable;
  std::string reason;
  Coredump coredump;
  DaemonFacts daemon;
  std::string text;
};

/** The stored document's JSON value. */
Json stored_document(const StoredParts &parts);

/** The document as written: indented by 2, invalid UTF-8 replaced by
 *  U+FFFD, ending in "\n". */
std::string serialize(const Json &doc);

}  // namespace core_timeline::document

#endif  // CORE_TIMELINE_DOCUMENT_STORED_H
