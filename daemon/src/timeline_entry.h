/* SPDX-License-Identifier: MIT */
/*
 * timeline_entry.h - sending the timeline entry of a crash to the journal,
 * and finding out whether it was sent (docs/core-timelined.md, "The
 * timeline entry in the journal").  The entry's names and fields are the
 * document module's (core_timeline/document/journal_entry.h); this is how
 * the daemon delivers them.
 *
 * Who sends.  journald (SplitMode=uid, the default, with a persistent
 * journal) stores an entry in user-UID.journal when its sender's uid is
 * not a system uid (systemd 252 src/journal/journald-server.c,
 * find_journal() and uid_for_system_journal(): uid <= 999, dynamic users,
 * 65534 and container uids go to system.journal), and gives user UID read
 * access to that file; entries sent by root go to system.journal, which
 * only root and the groups adm, systemd-journal and wheel read.
 * systemd-coredump logs as the crashed user for that reason.  So the
 * daemon sends a crash's entry from a short-lived child that has dropped
 * to the crashed uid and gid (setgroups, setresgid, setresuid; a clone(2)
 * with CLONE_VM | CLONE_VFORK, so it costs tens of microseconds) when
 * send_as() says the crashed user may read the timeline file, and as
 * itself (root) otherwise.  The child needs CAP_SETUID and CAP_SETGID
 * (units/core-timeline.service gives both); the kernel attaches its
 * credentials to the datagram (SCM_CREDENTIALS), so journald records
 * _UID=COREDUMP_UID.  sd_journal_sendv(3) passes an entry too big for one
 * datagram in a sealed memfd, which journald accepts from any uid.
 *
 * Thread-safety: send_entry() clones a child that shares this process's
 * memory while this thread waits; call it from the daemon's one thread,
 * with no other thread running.
 * A TimelineEntries is used by one thread.
 */
#ifndef CORE_TIMELINE_DAEMON_TIMELINE_ENTRY_H
#define CORE_TIMELINE_DAEMON_TIMELINE_ENTRY_H

#include <sys/types.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include "core_timeline/document/document_entry.h"
#include "entry.h"
#include "files.h"
#include "log.h"
#include "util.h"

namespace core_timeline::daemon {

/** The credentials a child sends an entry with. */
struct SendAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

/** Whom crash `e`'s entry is sent as: its COREDUMP_UID and COREDUMP_GID
 *  (the uid when the gid is missing or malformed) when that uid is not a
 *  system uid (<= 999, 65534, or >= 2^32 - 1) and a file owned as `owner`
 *  (the timeline's) lets it read (grants_read()); nullopt (root, the
 *  system journal) otherwise. */
std::optional<SendAs> send_as(const CoredumpEntry &e, const FileOwner &owner);

/**
 * What a run of the daemon sent, for the runs after it: the file
 * <state dir>/sent, one line per timeline entry sent since the journal
 * cursor was last saved, "KEY SENDER_PID\n" (KEY: CoredumpEntry::key(),
 * boot.pid.timestamp; SENDER_PID: the process that sent it, which journald
 * records as the entry's _PID from the socket's SCM_CREDENTIALS, so no
 * other process can claim it).  The line is appended by the sending process
 * itself (the daemon, or its child dropped to the crashed user), with one
 * write(2), just before the entry is sent; the file is emptied once the
 * cursor is saved past those entries.  After a restart, an entry that comes
 * again has its line: its timeline entry is looked for by that _PID
 * (TimelineEntries::has_entry()), whatever uid or cgroup sent it, so a
 * daemon run by hand, in a container or under another unit knows its own
 * entries; and a crash whose timeline file is gone (the vacuum took it
 * with its core) is not done again as core_missing.
 * Lines that do not parse are ignored.  Thread-safety: one thread; the
 * descriptor is shared with the sending child (CLONE_FILES).
 */
class SentLog {
 public:
  /** Opens (creating, 0600) `state_dir`/sent and reads its lines.  Errors:
   *  open(2)'s, naming the file. */
  static Result<SentLog> open(const std::string &state_dir);
  /** The sender of crash `key`'s entry, as an earlier run recorded it. */
  std::optional<pid_t> earlier_sender(const std::string &key) const;
  /** The line for crash `key`, without the sender's pid and newline. */
  static std::string prefix(const std::string &key) { return key + " "; }
  int fd() const { return fd_.get(); }
  /** After the cursor was saved: empties the file; the earlier runs'
   *  lines are written again unless `forget_earlier` (once the backlog
   *  those runs may have handled has been read). */
  void cursor_saved(bool forget_earlier);
  /** Drops crash `key`'s lines, this run's and earlier ones: its timeline
   *  was removed (an fsync failed) and its entry is to be done again. */
  void forget(const std::string &key);

 private:
  Fd fd_;
  std::string path_;
  std::map<std::string, pid_t> earlier_;
};

/** A SentLog line to write before sending: `prefix` then the sender's pid. */
struct SentRecord {
  int fd = -1;
  std::string prefix;
};

/** Sends one journal entry of `fields` (each "NAME=VALUE"; MESSAGE,
 *  PRIORITY and the rest included) with sd_journal_sendv(3): from this
 *  process, or, with `as`, from a child that drops to it first and exits
 *  once sent.  With `record`, the sending process first appends its line
 *  to the SentLog (a failed write is not an error: the entry matters more).
 *  Errors: sd_journal_sendv's errno; clone(2); the child's
 *  setgroups/setresgid/setresuid (EPERM without CAP_SETUID/CAP_SETGID). */
Result<void> send_entry(const log::Fields &fields, const std::optional<SendAs> &as,
                        const std::optional<SentRecord> &record = std::nullopt);
/** send_entry() of several entries, in order, from the one sending
 *  process (so journald gives them all the same _PID), which writes the
 *  SentLog line once, before the first.  It stops at the first that
 *  fails: the ones before it are in the journal.  Errors: send_entry()'s. */
Result<void> send_entries(std::initializer_list<const log::Fields *> entries, const std::optional<SendAs> &as,
                          const std::optional<SentRecord> &record = std::nullopt);

/** The fields `timeline` of a timeline entry (entry_fields() and the
 *  sender's MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, MESSAGE_ID) as the two
 *  entries document_entry.h describes (split_document()), with a fresh
 *  random id (sd_id128_randomize(3)); the document entry gets PRIORITY 7,
 *  the timeline entry's SYSLOG_IDENTIFIER and a MESSAGE saying whose
 *  document it is (`message`: the timeline entry's).  When no random id
 *  can be had, one entry with the document, as split_document() leaves
 *  it. */
core_timeline::document::journal::EntryPair split_for_journal(log::Fields timeline, const std::string &message);

/** The local journal's timeline entries, looked up through its index. */
class TimelineEntries {
 public:
  /** Whether the local journal (sd_journal_open(SD_JOURNAL_LOCAL_ONLY):
   *  system.journal and every user-UID.journal) holds a timeline entry of
   *  crash `e` (MESSAGE_ID, COREDUMP_PID, COREDUMP_TIMESTAMP and
   *  CORE_TIMELINE_BOOT_ID matching) that core-timelined itself sent:
   *  its _PID is `sender` (SentLog: an earlier run recorded that it sent
   *  it from that pid), or document::journal::sender_trust() says kDaemon.
   *  An entry only the crashed user vouches for (kUser) from another pid
   *  does not count: that user may have logged it first to have the real
   *  one left out.  Opens the journal for each
   *  call (only a restart's first entries ask).  A journal file truncated
   *  under the read (sigbus.h: its pages read as zeros, which could hide
   *  the entry) makes it read once more; truncated again, it is an EIO
   *  error, not a "no".  Errors: sd-journal's errno, naming the call. */
  Result<bool> has_entry(const CoredumpEntry &e, std::optional<pid_t> sender = std::nullopt);

 private:
  Result<bool> has_entry_once(const CoredumpEntry &e, std::optional<pid_t> sender);
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_TIMELINE_ENTRY_H
