/* SPDX-License-Identifier: MIT */
/*
 * journal_entry.h - the journal entry core-timelined logs for each crash
 * it handles: the timeline entry (docs/core-timelined.md, "The timeline
 * entry in the journal").  The daemon writes it; ctl-query reads it, from
 * the local journal or from a central systemd-journal-remote directory.
 * These names are the one definition both use.
 *
 * One entry per handled crash, whatever its status, with MESSAGE_ID
 * kTimelineMessageId (catalogued in units/core-timeline.catalog).  Its
 * fields:
 *
 *   join keys, copied from the systemd-coredump entry (systemd-coredump(8))
 *     COREDUMP_PID, COREDUMP_UID, COREDUMP_GID, COREDUMP_SIGNAL,
 *     COREDUMP_SIGNAL_NAME, COREDUMP_EXE, COREDUMP_COMM,
 *     COREDUMP_TIMESTAMP, COREDUMP_FILENAME (those present);
 *     kBootId: the coredump entry's _BOOT_ID.  The entry's own _BOOT_ID is
 *     journald's (the daemon's boot), the same unless the daemon handled
 *     a crash of an earlier boot.
 *   summary, for filtering without the document
 *     kStatus, kSignal, kEvents, kLastEvent, kOpenSpans, kOpenSpan (one
 *     field per distinct open span name), kEventName (one field per
 *     distinct event name, so the journal's index finds the timelines that
 *     hold an event), kEventNamesComplete ("0" when not every name could
 *     be listed: such entries must be read whatever --name asks),
 *     kSchemaVersion, kTimelinePath (the file beside the core);
 *     the group signature's fields (group_keys.h: CORE_TIMELINE_GROUP...),
 *     when the document has a "group";
 *     kNamespacePid: the crash's pid in its own pid namespace ("pids.pid"),
 *     only when "pids.namespaced" is true (so that the journal's index
 *     answers a PID match on either pid).
 *   the document
 *     kDocument: the stored document's bytes, exactly the timeline file's
 *     content when it fits the daemon's --journal-document-max; else a
 *     cut document that says so inside itself (its top-level "cut" object:
 *     docs/timeline-json.md) and
 *     kDocumentCut "1".  kDocumentBytes: the size of the whole document
 *     (the timeline file's, whatever was left out of kDocument).
 *   payload bytes
 *     kPayload: "omitted" when the I/O events' payload bytes were left out
 *     of kDocument (omit_payload(); the daemon's default), with
 *     kPayloadOmitted the number of events that lost theirs; "kept" when
 *     the daemon was told to keep them (--journal-payload=yes).
 *
 * Field values are untrusted to a reader: any local user can log an
 * entry with this MESSAGE_ID.  A reader believes one only as far as
 * sender_trust() says (below): _UID 0, or _UID == COREDUMP_UID of a
 * non-system user (the daemon sends those from a child at that uid, so
 * that they land in the journal the crashed user can read) from the
 * daemon's cgroup; the same user from anywhere else only when corroborated.
 *
 * Errors: bound_document() returns reader::Error (kBadData).  Thread-safety:
 * constants and pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_JOURNAL_ENTRY_H
#define CORE_TIMELINE_DOCUMENT_JOURNAL_ENTRY_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core_timeline/document/stored.h"

namespace core_timeline::document::journal {

/** The timeline entry's MESSAGE_ID (also the daemon's "timeline written"
 *  notice before it carried the document; never changes). */
inline constexpr std::string_view kTimelineMessageId = "9d72af4745ac4dc29e0df9be4f6139df";
/** SYSLOG_IDENTIFIER of the daemon's entries. */
inline constexpr std::string_view kSyslogIdentifier = "core-timelined";

inline constexpr std::string_view kBootId = "CORE_TIMELINE_BOOT_ID";
inline constexpr std::string_view kStatus = "CORE_TIMELINE_STATUS";
inline constexpr std::string_view kSignal = "CORE_TIMELINE_SIGNAL";
inline constexpr std::string_view kEvents = "CORE_TIMELINE_EVENTS";
inline constexpr std::string_view kLastEvent = "CORE_TIMELINE_LAST_EVENT";
inline constexpr std::string_view kOpenSpans = "CORE_TIMELINE_OPEN_SPANS";
inline constexpr std::string_view kOpenSpan = "CORE_TIMELINE_OPEN_SPAN";
inline constexpr std::string_view kEventName = "CORE_TIMELINE_EVENT_NAME";
inline constexpr std::string_view kEventNamesComplete = "CORE_TIMELINE_EVENT_NAMES_COMPLETE";
inline constexpr std::string_view kSchemaVersion = "CORE_TIMELINE_SCHEMA_VERSION";
inline constexpr std::string_view kTimelinePath = "CORE_TIMELINE_TIMELINE";
inline constexpr std::string_view kNamespacePid = "CORE_TIMELINE_NAMESPACE_PID";
inline constexpr std::string_view kDocument = "CORE_TIMELINE_DOCUMENT";
inline constexpr std::string_view kDocumentCut = "CORE_TIMELINE_DOCUMENT_CUT";
inline constexpr std::string_view kDocumentBytes = "CORE_TIMELINE_DOCUMENT_BYTES";
inline constexpr std::string_view kPayload = "CORE_TIMELINE_PAYLOAD";
inline constexpr std::string_view kPayloadOmitted = "CORE_TIMELINE_PAYLOAD_OMITTED";

/** Most kEventName fields one entry carries; past it kEventNamesComplete
 *  is "0".  384, not the 1024 first chosen: sd_journal_sendv(3) sends an
 *  entry with one sendmsg(2) of two iovecs per field (five for a field
 *  holding a newline), and sendmsg refuses more than UIO_MAXIOV (1024)
 *  with EINVAL, which sd_journal_sendv does not retry through its memfd:
 *  measured here (systemd 252), 507 fields are sent and 511 are refused.
 *  journald then drops an entry of more than 1024 fields
 *  (ENTRY_FIELD_COUNT_MAX, src/journal/journald-native.c), and
 *  systemd-journal-remote aborts an upload's connection on one
 *  (src/journal-remote/journal-remote.c).  384 names, kMaxOpenSpanNames
 *  and the other fields (at most about 40) stay below 500. */
inline constexpr std::size_t kMaxEventNames = 384;
/** Most kOpenSpan fields one entry carries. */
inline constexpr std::size_t kMaxOpenSpanNames = 64;

/** The join keys copied from the systemd-coredump entry, those present. */
inline constexpr std::string_view kJoinKeys[] = {
    "COREDUMP_PID", "COREDUMP_UID",  "COREDUMP_GID",       "COREDUMP_SIGNAL",  "COREDUMP_SIGNAL_NAME",
    "COREDUMP_EXE", "COREDUMP_COMM", "COREDUMP_TIMESTAMP", "COREDUMP_FILENAME"};

/** --journal-document-max's default: 1 MiB (docs/core-timelined.md, "The
 *  timeline entry in the journal", says why). */
inline constexpr std::uint64_t kDefaultDocumentMax = 1ull << 20;
/** The smallest non-zero bound: a cut document keeps its small members
 *  whole (about 10 KiB without events, more with many rings or spans). */
inline constexpr std::uint64_t kMinDocumentMax = 64ull << 10;
/** coredump.fields values larger than this are left out of a cut
 *  document (COREDUMP_PROC_MAPS, _ENVIRON...: the coredump entry has them). */
inline constexpr std::size_t kCutFieldMax = 2048;

using Fields = std::vector<std::pair<std::string, std::string>>;

/** The document as it goes into an entry: `bytes` is the stored document
 *  itself (`cut` false) or a cut document (cut_document()). */
struct EntryDocument {
  std::string bytes;
  bool cut = false;
};

/**
 * The document bounded by `max_bytes` (> 0): the document's own bytes,
 * `whole_bytes` (serialize(doc): the timeline file's content), when they
 * fit; else a copy of `doc` cut to fit, serialized as stored documents
 * are (serialize()).  The cut keeps the newest events (the end of
 * "events"), replaces "text" by its last lines within an eighth of the
 * bound, leaves out coredump.fields values over kCutFieldMax bytes, and
 * adds a top-level "cut" object (docs/timeline-json.md, "cut"): limit,
 * document_bytes, events_total, events_kept, text_bytes, text_kept_bytes,
 * fields_left_out, kept (a sentence).  Spans and threads are kept whole, so
 * their indices still hold; a span's begin/end may name an event that was
 * cut.  Errors (reader::Errc::kBadData): `doc` is not an object, or even
 * without events, text and big fields it does not fit `max_bytes`.  Pure;
 * thread-safe.
 */
reader::Result<EntryDocument> bound_document(const Json &doc, std::string_view whole_bytes, std::uint64_t max_bytes);

/** Whether an event of kind `kind` (its "kind" member) carries payload
 *  bytes in its inline bytes: READ, WRITE, RECV and SEND (the bytes read,
 *  written, received or sent).  Not OPEN (a path), CONNECT and ACCEPT (a
 *  peer address), PREAD, PWRITE and SENDFILE (an offset).  Pure. */
bool is_payload_kind(std::string_view kind) noexcept;

/** The text omit_payload() puts in place of the payload in "text". */
inline constexpr std::string_view kPayloadOmittedText = "(omitted)";

/**
 * Leaves the payload bytes out of `doc` (a stored document): each event of
 * a payload kind (is_payload_kind()) with inline bytes gets "inline_bytes"
 * null and loses "inline_text" and "inline_cut"; in "text", each
 * ` data="INLINE_TEXT"` (with the "..." and "(N bytes kept; may be cut)"
 * after it) and ` data-bytes=[HEX]` of those events becomes
 * ` data=(omitted)`, and a first line says how many events lost their
 * bytes and that the timeline file has them.  Returns that number (0:
 * `doc` is unchanged).  Pure; thread-safe.
 */
std::size_t omit_payload(Json &doc);

/** What entry_fields() is given. */
struct EntryInput {
  const Json *document = nullptr;           /**< the stored document's tree */
  std::string_view document_bytes;          /**< its bytes, serialize(*document) */
  const std::map<std::string, std::string> *coredump_fields = nullptr;  /**< the coredump entry's */
  std::string coredump_boot_id;             /**< its _BOOT_ID */
  std::string timeline_path;                /**< the file beside the core */
  std::uint64_t document_max = kDefaultDocumentMax;  /**< 0: no kDocument */
  bool keep_payload = false;                /**< false: omit_payload() on kDocument */
};

/**
 * The timeline entry's fields for one crash (this file's top), without
 * MESSAGE, MESSAGE_ID, PRIORITY and SYSLOG_IDENTIFIER (the sender's).
 * Summary fields come from the document: kStatus its "status"; kSignal
 * crash.signal_name, else COREDUMP_SIGNAL_NAME (absent if neither);
 * kEvents the length of "events" (0 without); kLastEvent the "name" of the
 * last event that is neither CRASH nor bookkeeping (stored.h
 * is_bookkeeping_event(); absent if none); kOpenSpans the
 * number of spans whose state is "open" or "open_or_end_lost", kOpenSpan
 * their distinct names (at most kMaxOpenSpanNames); kEventName each
 * distinct event name in order of first appearance (at most
 * kMaxEventNames; kEventNamesComplete "0" past it); kNamespacePid
 * pids.pid when pids.namespaced is true.  kDocument, kDocumentCut
 * as bound_document() gives them, of the document after omit_payload()
 * unless `keep_payload`; kDocumentBytes the whole stored document's size;
 * kPayload and kPayloadOmitted as this file's top says.
 * A document that cannot be bounded goes without kDocument, with
 * kDocumentCut "1" (`*note` says why).  Field values are bytes as they are
 * (the journal takes any); names are valid journal field names.
 * Pure; thread-safe.
 */
Fields entry_fields(const EntryInput &in, std::string *note = nullptr);

/** The sender's trusted fields of a timeline entry, as read. */
struct Sender {
  std::optional<std::string_view> uid;           /**< _UID */
  std::optional<std::string_view> transport;     /**< _TRANSPORT */
  std::optional<std::string_view> coredump_uid;  /**< COREDUMP_UID (the entry's own field) */
  std::optional<std::string_view> cgroup;        /**< _SYSTEMD_CGROUP */
};

/** The cgroup core-timelined runs in under systemd (units/core-timeline.service):
 *  journald records it as the _SYSTEMD_CGROUP of every entry the daemon
 *  or its children send (read from /proc/PID/cgroup of the sender: no
 *  user can move a process into it, its cgroup.procs is root's). */
inline constexpr std::string_view kDaemonCgroup = "/system.slice/core-timeline.service";

/** How far the journal's own fields vouch for a timeline entry. */
enum class Trust {
  kNone,    /**< not core-timelined's: ignore it (and count it) */
  kUser,    /**< sent by the crashed, non-system user U itself: core-timelined
                sends such entries from a child at uid U, so that they land
                in user-U.journal, but U can send the same bytes.  Believe it
                only when something U cannot make backs it (ctl-query: a
                root-owned timeline file of that very crash,
                journal_source.cc corroborated()) */
  kDaemon,  /**< sent by root, or by uid U from core-timelined's cgroup */
};

/**
 * Whether a timeline entry was sent by core-timelined, as far as the
 * journal can tell.  _TRANSPORT must be "journal" (not a stream or syslog
 * line).  kDaemon: _UID is "0" (root: the system journal), or _UID equals
 * COREDUMP_UID of a non-system user (1000..65533 and above 65534) and
 * _SYSTEMD_CGROUP is kDaemonCgroup.  kUser: the same uid rule in any other
 * cgroup (no systemd as PID 1, or a forger: a user U can speak only of
 * crashes of U).  Else kNone; a missing field is untrusted.  _EXE is not
 * checked: journald may not record it (the child has exited), and U can
 * run core-timelined itself.  Source: journald sets _UID, _TRANSPORT and
 * _SYSTEMD_CGROUP itself (systemd.journal-fields(7)); it caches them per
 * sender pid for 1-5 s (journald-context.c), so a pid reused within that
 * time inherits them: docs/ctl-query.md, "Trust".  Pure; thread-safe.
 */
Trust sender_trust(const Sender &s) noexcept;

}  // namespace core_timeline::document::journal

#endif  // CORE_TIMELINE_DOCUMENT_JOURNAL_ENTRY_H
