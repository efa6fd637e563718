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
 *     kSchemaVersion, kTimelinePath (the file beside the core).
 *   the document
 *     kDocument: the stored document's bytes, exactly the timeline file's
 *     content when it fits the daemon's --journal-document-max; else a
 *     cut document that says so inside itself (its top-level "cut" object:
 *     docs/timeline-json.md) and
 *     kDocumentCut "1".  kDocumentBytes: the size of the whole document.
 *
 * Field values are untrusted to a reader: any local user can log an
 * entry with this MESSAGE_ID.  A reader checks the sender (_UID=0,
 * _COMM/SYSLOG_IDENTIFIER) before it believes one, as the daemon does for
 * systemd-coredump's entries.
 */
#ifndef CORE_TIMELINE_DOCUMENT_JOURNAL_ENTRY_H
#define CORE_TIMELINE_DOCUMENT_JOURNAL_ENTRY_H

#include <cstddef>
#include <string_view>

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
inline constexpr std::string_view kDocument = "CORE_TIMELINE_DOCUMENT";
inline constexpr std::string_view kDocumentCut = "CORE_TIMELINE_DOCUMENT_CUT";
inline constexpr std::string_view kDocumentBytes = "CORE_TIMELINE_DOCUMENT_BYTES";

/** Most kEventName fields one entry carries; past it kEventNamesComplete
 *  is "0". */
inline constexpr std::size_t kMaxEventNames = 1024;
/** Most kOpenSpan fields one entry carries. */
inline constexpr std::size_t kMaxOpenSpanNames = 64;

}  // namespace core_timeline::document::journal

#endif  // CORE_TIMELINE_DOCUMENT_JOURNAL_ENTRY_H
