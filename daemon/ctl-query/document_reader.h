/* SPDX-License-Identifier: MIT */
/*
 * document_reader.h - reading one timeline document (docs/ctl-query.md,
 * "The stored document"), an untrusted file.
 *
 * A document is core-timeline-read's --json document plus "coredump",
 * "daemon" and "text" (written by core-timelined; its types, keys and file
 * names are the document module's, core_timeline/document/).  Listing
 * 10,000 of them must stay interactive, so ctl-query builds only what it
 * uses: nlohmann::json parses the whole document (every byte is checked
 * to be JSON), and its parser callback, told the depth and each member
 * name, keeps only the small top-level values (status, reason, process,
 * crash, daemon...), coredump's own members, the coredump.fields asked
 * for, and either hands each element of "events" to on_event or keeps
 * only the last ones (last_event).  The rest ("rings", other journal
 * fields, other events, "text" unless asked for) is parsed and dropped.
 *
 * Limits: a file larger than max_bytes is not read ("too large"); nesting
 * deeper than document::kMaxDepth, more than kMaxEvents events, a top
 * level that is not an object, "events" that is not an array of objects,
 * a missing "status" string or "coredump" object with a "fields" object,
 * and any JSON error make the document "malformed".  Nothing in a document
 * can make the reader throw or crash, build anything nested deeper than
 * kMaxDepth, or keep more than a bounded part of "events" (besides what
 * on_event keeps).
 *
 * Thread-safety: read_timeline() and parse_timeline() share no state; the
 * on_event callback runs on the calling thread.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_DOCUMENT_READER_H
#define CORE_TIMELINE_CTL_QUERY_DOCUMENT_READER_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "expected.h"
#include "core_timeline/document/names.h"

namespace core_timeline::ctl_query {

/** Most events a document may hold (the default ring holds at most
 *  137,312; a 64 MiB document, about 200,000; a bigger TL_BUDGET can make
 *  rings that hold more, whose documents are then refused as too big). */
inline constexpr std::size_t kMaxEvents = 1u << 20;
/** Default size cap of one document (--max-size). */
inline constexpr std::uint64_t kDefaultMaxBytes = 64ull << 20;

/** The coredump.fields every read keeps (what list and events print). */
inline constexpr const char *kListFields[] = {"COREDUMP_PID",    "COREDUMP_UID",         "COREDUMP_GID",
                                              "COREDUMP_SIGNAL", "COREDUMP_SIGNAL_NAME", "COREDUMP_EXE",
                                              "COREDUMP_COMM",   "COREDUMP_TIMESTAMP",   "_BOOT_ID"};

/** What kind of problem a read's Error is, as the summary counts it:
 *  "permission denied" (Errc::kPermissionDenied), "vanished" (kNotFound:
 *  listed, then gone; not reported), "not a regular file"
 *  (kNotRegularFile), "too large" (kTooLarge: larger than max_bytes),
 *  "malformed" (kBadData: not JSON, or not a timeline document), else
 *  "I/O error".  The Error's message names the file and what was wrong
 *  (e.g. the byte offset of a syntax error). */
std::string_view problem_name(Errc code) noexcept;

/** What a read keeps besides the summary. */
struct CompactCache;
struct ViewEvent;

struct ReadRequest {
  std::uint64_t max_bytes = kDefaultMaxBytes;
  bool want_text = false;     /**< keep the stored "text" */
  bool keep_raw = false;      /**< keep the file's bytes (show --json) */
  /** The coredump.fields to keep; the others are skipped.  kListFields are
   *  always kept. */
  std::vector<std::string> fields;
  bool all_fields = false;    /**< keep every coredump.fields member */
  /** Timeline::last_event may be a bookkeeping event (LANE_CLAIM, STACK:
   *  document::is_bookkeeping_event()); by default those are passed over,
   *  as the CRASH slot is. */
  bool bookkeeping = false;
  /** Find Timeline::last_event.  False lets a compact document's summary
   *  read (compact_timeline.h) lex its events without building them
   *  (Timeline::event_count is still counted, last_event stays null):
   *  for those who print no LAST EVENT (show, info, export). */
  bool last_event = true;
  /** When set, a compact document is read whole (its Analysis) and kept
   *  here, and the next read with the same cache of the same path takes
   *  it from here instead of parsing the file again (compact_timeline.h):
   *  `show` of the one timeline it selected parses it once. */
  std::shared_ptr<CompactCache> compact_cache;
  /** Dotted paths the caller will look up (Timeline::lookup): the
   *  top-level value each begins with is kept whole in Timeline::top
   *  ("events" and "text" too), and so is the coredump.fields member that
   *  a "coredump.fields.NAME" path names. */
  std::vector<std::string> paths;
  /** Called for each element of "events", in document order, with its
   *  0-based index.  Each event is an object (else the document is
   *  malformed and the read fails after the calls already made). */
  std::function<void(const nlohmann::ordered_json &event, std::size_t index)> on_event;
  /** For show's view (view.h): a compact document (compact_timeline.h)
   *  appends each event's ViewEvent here, made straight from its
   *  Analysis, and does not call on_event; a full document calls on_event
   *  all the same (its caller makes the ViewEvents, ViewEvent::of). */
  std::vector<ViewEvent> *view_events = nullptr;
  /** The `events` command's --name and --kind: a compact document calls
   *  on_event only for the events of this "name" and "kind" (an event
   *  object is made for those alone); a full document calls it for all. */
  std::optional<std::string> event_name, event_kind;
  /** Called with the top-level "process" object once it is parsed: in
   *  the reader's documents it comes before "events", so on_event can use
   *  process.pid (the crash's own pid namespace's).  Not called for a
   *  "process" that is not an object. */
  std::function<void(const nlohmann::ordered_json &process)> on_process;
};

/** One timeline, as far as ctl-query reads it. */
struct Timeline {
  std::string path;                  /**< as found (directory + name) */
  std::optional<core_timeline::document::TimelineName> name;  /**< from the file name, if it parses */
  /** The top-level values kept: "schema_version", "status", "exit_code",
   *  "reason", "source", "process", "crash", "coredump", "pids", "daemon" (those
   *  present) and those that ReadRequest::paths begin with.  "status" is
   *  a string and "coredump" an object whose "fields" holds only the
   *  fields asked for (ReadRequest::fields, ReadRequest::paths). */
  nlohmann::ordered_json top = nlohmann::ordered_json::object();
  bool has_events = false;           /**< the document has "events" */
  std::size_t event_count = 0;
  /** The last event whose kind is not CRASH (the crash itself is in
   *  "crash") and that is not bookkeeping (unless ReadRequest::bookkeeping),
   *  among the last 64 events; null when there is none.  Of a compact
   *  document read without events (no on_event, text or path into them),
   *  only its "kind" and "name". */
  nlohmann::ordered_json last_event;
  std::optional<std::string> text;   /**< with want_text, if a string */
  std::string raw;                   /**< with keep_raw */

  /** Crash time: COREDUMP_TIMESTAMP, else coredump.realtime_usec, else
   *  the file name's usec, else 0 (unknown). */
  std::uint64_t time_usec = 0;
  /** The journal entry's time (coredump.realtime_usec), else time_usec. */
  std::uint64_t realtime_usec = 0;

  /** The document's "status". */
  const std::string &status() const;
  /** coredump.fields[key] when it is a string, else nullptr. */
  const std::string *field(std::string_view key) const;
  /** A value by dotted path below the kept top-level values
   *  ("status", "coredump.boot_id", "process.exe", "events.0.kind": a
   *  part that is a decimal number indexes an array), or nullptr. */
  const nlohmann::ordered_json *lookup(std::string_view dotted) const;
};

/** Parses a document held in memory; `path` names it in messages and is
 *  stored in the result.  Never throws. */
Result<Timeline> parse_timeline(std::string_view bytes, const std::string &path,
                                             const ReadRequest &request) noexcept;

/** Opens `name` in the directory `dirfd` (openat, O_NOFOLLOW: a symbolic
 *  link is not followed), checks it is a regular file of at most
 *  request.max_bytes, reads and parses it.  `dir` is used for the path in
 *  messages.  Never throws. */
Result<Timeline> read_timeline(int dirfd, const std::string &dir, const std::string &name,
                                            const ReadRequest &request) noexcept;

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_DOCUMENT_READER_H
