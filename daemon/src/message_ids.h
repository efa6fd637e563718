/* SPDX-License-Identifier: MIT */
/*
 * message_ids.h - the journal MESSAGE_IDs core-timelined sends.  Each has an entry
 * in units/core-timeline.catalog (journalctl -x shows it) and is described
 * in docs/core-timelined.md.  They were made once with
 * `journalctl --new-id128`-style random 128-bit ids; never change them:
 * people and ctl-query match on them.
 */
#ifndef CORE_TIMELINE_DAEMON_MESSAGE_IDS_H
#define CORE_TIMELINE_DAEMON_MESSAGE_IDS_H

#include <string_view>

#include "core_timeline/document/journal_entry.h"

namespace core_timeline::daemon {

/** PRIORITY=3: a process carried a ring but its mapping is not in the core
 *  (coredump_filter, MADV_DONTDUMP): the timeline is lost. */
inline constexpr std::string_view kMsgMappingAbsent = "2d6a53792c8b405fa4ed10165ba08998";
/** PRIORITY=3: a process loaded libtimeline but tl_init made no ring (bad
 *  TL_* variable (libtimeline(3)) or options, no memory): no timeline. */
inline constexpr std::string_view kMsgRingNotMade = "46caf83796c3406d9700e020b8795808";
/** PRIORITY=4: an entry that looks like systemd-coredump's was not written
 *  by it (or names a file it would not): ignored. */
inline constexpr std::string_view kMsgEntryRejected = "f6333bac94024bafb18b8f5b475c6502";
/** PRIORITY=4: an entry that only the crashed user vouches for was not
 *  corroborated (its core, or journald's cgroup of its sender: entry.h):
 *  not stored as a crash.  At most Daemon::kUnverifiedBurst at once and
 *  kUnverifiedPerMinute a minute; then one entry with
 *  CORE_TIMELINE_SUPPRESSED, the count left out. */
inline constexpr std::string_view kMsgEntryUnverified = "2012030c98a54f7dbc735d6ee42ffeea";
/** PRIORITY=3: an entry could not be processed for want of a resource (no
 *  space, no descriptors, no memory) after Daemon::kResourceAttempts
 *  attempts with backoff: stored as core_unreadable, saying so, and the
 *  daemon went on with later entries. */
inline constexpr std::string_view kMsgResourceGaveUp = "99703ef76b5949a28bbeea41cbd27980";
/** PRIORITY=6 (ok, no_ring) or 4 (any other status): the timeline entry,
 *  one per handled crash whatever its status, with the document
 *  (core_timeline/document/journal_entry.h, which defines the id). */
inline constexpr std::string_view kMsgTimelineWritten = core_timeline::document::journal::kTimelineMessageId;

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_MESSAGE_IDS_H
