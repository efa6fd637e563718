/* SPDX-License-Identifier: MIT */
/*
 * document_entry.h - the timeline entry's document in a journal entry of
 * its own (docs/core-timelined.md, "The timeline entry in the journal").
 *
 * Why.  journald compresses every field larger than its Compress=
 * threshold (512 bytes by default), and sd-journal of systemd 252 makes a
 * new zstd context for each compressed field it reads or only steps over:
 * sd_journal_enumerate_data(3) and sd_journal_get_data(3) both visit every
 * field of an entry, and a data threshold does not spare that.  An entry
 * that carries the document costs that on every read, so `ctl-query list`
 * over many crashes spent most of its time there.  So a crash has two
 * entries, sent one after the other by the same process:
 *
 *   the document entry   MESSAGE_ID kDocumentMessageId, sent first:
 *     kDocumentId (a random 128-bit id, 32 lower-case hex digits: this
 *     entry's), kDocument, and of the timeline entry's fields those in
 *     kDocumentEntryCopies (the crash's join keys and timeline file, so
 *     that it reads alone, and COREDUMP_UID, which sender_trust() needs);
 *   the timeline entry   MESSAGE_ID kTimelineMessageId (journal_entry.h),
 *     sent second: every field entry_fields() gives but kDocument, and
 *     kDocumentId naming its document entry.  It holds no field long
 *     enough to be compressed (journal_entry.h bounds the summary).
 *
 * A reader finds the document through the journal's index: MESSAGE_ID
 * kDocumentMessageId and kDocumentId equal to the timeline entry's; of the
 * entries found (any user can log one with the id it read), only one sent
 * by the timeline entry's own sender counts: the same _PID and _BOOT_ID
 * (journald's, from the socket's credentials), and sender_trust() not
 * kNone.  A timeline entry without kDocumentId (those of earlier versions
 * of the daemon) carries its kDocument itself, or none.
 *
 * Exactly once.  The timeline entry is the one the daemon looks for after
 * a restart (its SentLog, TimelineEntries::has_entry()); the document
 * entry goes before it, so a timeline entry always has its document entry
 * in the journal.  A restart between the two sends both again, with a new
 * id: the first document entry is then named by nothing.
 *
 * Thread-safety: constants and pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_DOCUMENT_ENTRY_H
#define CORE_TIMELINE_DOCUMENT_DOCUMENT_ENTRY_H

#include <optional>
#include <string_view>

#include "core_timeline/document/journal_entry.h"

namespace core_timeline::document::journal {

/** The document entry's MESSAGE_ID (catalogued in units/core-timeline.catalog). */
inline constexpr std::string_view kDocumentMessageId = "fdd4b45325c349edbc4246673119f49d";
/** The id both entries of a crash carry (above). */
inline constexpr std::string_view kDocumentId = "CORE_TIMELINE_DOCUMENT_ID";

/** The timeline entry's fields the document entry carries too. */
inline constexpr std::string_view kDocumentEntryCopies[] = {
    "COREDUMP_PID", "COREDUMP_UID", "COREDUMP_TIMESTAMP", kBootId, kTimelinePath, kDocumentBytes, kDocumentCut,
    kPayload};

/** Whether `id` has the form of a kDocumentId value: 32 lower-case hex
 *  digits.  Pure. */
bool is_document_id(std::string_view id) noexcept;

/** A crash's two entries, as split_document() makes them. */
struct EntryPair {
  Fields timeline;                  /**< the timeline entry's fields */
  std::optional<Fields> document;   /**< the document entry's, MESSAGE_ID first; none without kDocument */
};

/**
 * Splits the fields of a timeline entry (entry_fields(), with or without
 * the sender's MESSAGE, PRIORITY...) into the timeline entry and its
 * document entry (this file's top): the kDocument field moves to the
 * document entry, which gets MESSAGE_ID kDocumentMessageId, kDocumentId
 * `id` and the kDocumentEntryCopies present; the timeline entry gets
 * kDocumentId `id`.  Without a kDocument field, `fields` are the timeline
 * entry as they are and there is no document entry.  `id` must pass
 * is_document_id() (else the same as without a document: the fields stay
 * whole, in one entry).  Pure.
 */
EntryPair split_document(Fields fields, std::string_view id);

}  // namespace core_timeline::document::journal

#endif  // CORE_TIMELINE_DOCUMENT_DOCUMENT_ENTRY_H
