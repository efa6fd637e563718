/* SPDX-License-Identifier: MIT */
/*
 * journal_source.h - ctl-query's journal source: the timeline entries core-timelined
 * logs (core_timeline/document/journal_entry.h; docs/ctl-query.md,
 * "Sources"), read through sd-journal(3) and its index.
 *
 * A query never walks the whole journal: it asks the journal's index for
 * MESSAGE_ID=kTimelineMessageId together with the fields its matches name
 * (sd_journal_add_match(3)), and of each entry found keeps only the
 * summary fields (kSummaryFields, in one sd_journal_enumerate_data(3)
 * pass); the document is read only for the entries a command needs it of
 * (document()), from the document entry the timeline entry names
 * (core_timeline/document/document_entry.h), or, in an entry of an
 * earlier daemon, from the entry itself (sd-journal of systemd 252
 * decompresses such a document during the pass too: the data threshold
 * does not bound it, measured in bench_query).
 *
 * Every entry's fields are untrusted (any local user can log an entry with
 * this MESSAGE_ID): scan() hands on the entries core-timelined sent
 * (document::journal::sender_trust() kDaemon, journal_entry.h) and those
 * only their crashed user vouches for (kUser), marked unverified unless
 * corroborated() backs them; it counts the others (docs/ctl-query.md,
 * "Trust").
 *
 * Journal files are read through mmap(2), and journald truncates a file
 * when it archives it at rotation: each call below holds a
 * common/sigbus.h Scope, so a page past a file's new end reads as zeros
 * instead of killing ctl-query with SIGBUS, and a call during which that
 * happened fails (EIO, "run the query again") rather than answer from
 * zeros; scan() stops before handing on an entry read then.
 *
 * Errors: Result errors carry sd-journal's errno text and what was opened.
 * Thread-safety: a Journal is one sd_journal handle, which sd-journal
 * allows to be used by one thread at a time; separate Journals are
 * independent.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_JOURNAL_SOURCE_H
#define CORE_TIMELINE_CTL_QUERY_JOURNAL_SOURCE_H

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "expected.h"

typedef struct sd_journal sd_journal;

namespace core_timeline::ctl_query {

/** Which journal files to open. */
struct JournalSpec {
  enum class Kind {
    kLocal,   /**< the local journal, as coredumpctl and journalctl without
                   -D/--file/-M (SD_JOURNAL_LOCAL_ONLY: this machine's
                   system and user files the caller may read) */
    kFiles,   /**< exactly `files` (sd_journal_open_files(3)) */
    kMachine, /**< the journal of the container `machine`, as journalctl
                   -M opens it: systemd-machined's OpenMachineRootDirectory
                   over the system bus, then sd_journal_open_directory_fd()
                   with SD_JOURNAL_OS_ROOT (needs machined to know it) */
  };
  Kind kind = Kind::kLocal;
  std::vector<std::string> files;
  std::string machine;
};

/** Whether `dir` is a journal directory: it holds *.journal or *.journal~
 *  files directly, or in subdirectories named by a 128-bit id (32
 *  lower-case hex digits), as journald (/var/log/journal/MACHINE-ID) and
 *  systemd-journal-remote make them.  The paths of those files are
 *  appended to *files (sorted).  A directory that cannot be listed is not
 *  one (the caller reports it as a timeline directory would be). */
bool journal_files_in(const std::string &dir, std::vector<std::string> *files);

/** The journal files of `spec` this process cannot read (access(2) R_OK
 *  fails with EACCES or EPERM): for kLocal, those of this machine
 *  (/etc/machine-id) under /var/log/journal and /run/log/journal; for
 *  kFiles, of `files`; none for kMachine.  sd-journal skips such files
 *  without a word (journalctl only hints at them), so a query that found
 *  nothing must say that these were not searched: another user's crashes
 *  are in user-UID.journal and system.journal, which that user, root and
 *  the groups systemd-journal and adm read. */
std::vector<std::string> unreadable_journal_files(const JournalSpec &spec);


/** The fields scan() reads of each entry (besides the document, which it
 *  only notes the presence of). */
extern const std::vector<std::string> kSummaryFields;

/** The index of `name` in kSummaryFields, or kSummaryFields.size() when
 *  it is not one of them (for JournalEntry::value(), which needs no
 *  look-up of the name). */
std::size_t summary_field(std::string_view name);

/** One trusted timeline entry, as far as scan() read it. */
struct JournalEntry {
  std::string cursor;                 /**< sd_journal_get_cursor(3) */
  std::uint64_t realtime_usec = 0;    /**< __REALTIME_TIMESTAMP */
  /** The kSummaryFields, by their index there: the first value of each
   *  (at most kSummaryValueMax bytes: longer ones are cut there), "" when
   *  absent. */
  std::vector<std::string> values;
  /** It has a CORE_TIMELINE_DOCUMENT field, or names its document entry
   *  (document_id). */
  bool has_document = false;
  /** Its CORE_TIMELINE_DOCUMENT_ID (document/document_entry.h): its
   *  document is in the document entry of that id sent by the same process
   *  (sender_pid, sender_boot_id, sender_uid: journald's _PID, _BOOT_ID and
   *  _UID of this entry); "" when it carries the document itself, or none. */
  std::string document_id, sender_pid, sender_boot_id, sender_uid;
  /** Only its crashed user vouches for it (sender_trust() kUser), whether
   *  or not corroborated: of two entries for one crash, core-timelined's wins. */
  bool user_vouched = false;
  /** user_vouched and not corroborated(): ctl-query shows it only when
   *  asked to (--unverified), and counts it. */
  bool unverified = false;

  /** The value of the summary field `name` (one of kSummaryFields), or ""
   *  when absent or not a summary field. */
  const std::string &get(std::string_view name) const;
  /** The value of the summary field of index `field` (summary_field()),
   *  or "" when absent or past kSummaryFields. */
  const std::string &value(std::size_t field) const;
  /** Drops every value but those named (to keep less of many entries). */
  void keep_only(std::initializer_list<std::string_view> names);
};

/** Most bytes kept of one summary field (the journal's data threshold
 *  while scanning; a longer value, e.g. a path of more than 4 KiB, is
 *  cut). */
inline constexpr std::size_t kSummaryValueMax = 8192;

/** This machine's id (/etc/machine-id, 32 lower-case hex digits), or ""
 *  when it cannot be read or has another form. */
std::string local_machine_id();

/**
 * Whether a timeline entry only its crashed user U vouches for
 * (sender_trust() kUser) is backed by what U cannot make: the timeline
 * file core-timelined wrote for that very crash.  All of:
 *  - the entry's _MACHINE_ID (journald's) is `machine_id`, this machine's;
 *  - its CORE_TIMELINE_TIMELINE is an absolute path whose file name is
 *    that crash's (document/names.h parse_timeline_name(): COREDUMP_UID,
 *    CORE_TIMELINE_BOOT_ID, COREDUMP_PID and COREDUMP_TIMESTAMP all
 *    agree);
 *  - its directory is owned by root and writable by neither group nor
 *    other, so no user linked or renamed anything into it;
 *  - the file (not a symlink) is a regular file owned by root with one
 *    link and exactly CORE_TIMELINE_DOCUMENT_BYTES bytes.
 * Only stat(2)s, never reads the file: the caller needs search permission
 * on the directory (core-timelined's are 0755).  A check that cannot be
 * made fails.  The entry's other fields are still U's own words about a
 * crash that did happen.  Thread-safe.
 */
bool corroborated(const JournalEntry &e, const std::string &machine_id);

/** A conjunction: for each field, any of the values (the journal's own
 *  matching: sd_journal_add_match(3)). */
using JournalTerm = std::vector<std::pair<std::string, std::vector<std::string>>>;

class Journal {
 public:
  /** Opens the files of `spec`.  Fails with the errno sd-journal gave. */
  static Result<std::unique_ptr<Journal>> open(const JournalSpec &spec);
  ~Journal();
  Journal(const Journal &) = delete;
  Journal &operator=(const Journal &) = delete;

  /** The boot ids of the journal's entries (_BOOT_ID), oldest first by
   *  each boot's first entry, as journalctl --list-boots orders them. */
  Result<std::vector<std::string>> boots();

  /** Calls fn, in journal order, for every entry with MESSAGE_ID
   *  kTimelineMessageId that meets any of `terms` (alternatives; an empty
   *  vector means no further condition) that core-timelined sent or its
   *  crashed user did (user_vouched; unverified unless corroborated():
   *  the caller leaves those out or marks them).  fn may move from the
   *  entry: scan() reads the next one into the same object.  Returns how
   *  many entries it left out as not core-timelined's at all (kNone).
   *  Every 4096 entries, and at the end, it lets go of the journal pages
   *  it touched (they stay in the page cache; resident set size counts
   *  only those mapped since). */
  Result<std::size_t> scan(const std::vector<JournalTerm> &terms, const std::function<void(JournalEntry &&)> &fn);

  /** A crash of `uid` that systemd-coredump's own entry (MESSAGE_ID
   *  fc2e22bc6ee647b6b90729ab34a250b1) says was not dumpable for its user
   *  (COREDUMP_DUMPABLE other than 1).  Its timeline and its timeline
   *  entry are root's (docs/core-timelined.md, "Owner and mode"); the
   *  entry is in the user's own journal, where systemd-coredump logs as
   *  that user.  Only COREDUMP_UID == uid counts: a user's journal holds
   *  only what that user sent and root's, so nobody else can plant one. */
  struct Withheld {
    std::string pid, exe, comm, dumpable;
    std::uint64_t time_usec = 0;  /**< COREDUMP_TIMESTAMP, else the entry's time */
  };
  /** Those among the entries that meet `term` (alternatives per field, as
   *  scan()). */
  Result<std::vector<Withheld>> withheld(std::uint64_t uid, const JournalTerm &term);

  /** The document of timeline entry `e` (as scan() gave it): with a
   *  document_id, the CORE_TIMELINE_DOCUMENT of its document entry, found
   *  through the index (MESSAGE_ID and CORE_TIMELINE_DOCUMENT_ID) among
   *  those of e's own sender (the same _PID, _BOOT_ID and _UID) that
   *  sender_trust() does not refuse, the first in journal order; else the
   *  CORE_TIMELINE_DOCUMENT of the entry at e.cursor itself.  nullopt when
   *  there is none; an error when an entry cannot be found (again) or the
   *  document is larger than max_bytes.  The entry at e.cursor is that
   *  very one (sd_journal_test_cursor(3)), also among several hosts' files
   *  with entries of the same __REALTIME_TIMESTAMP (then it is looked for
   *  in each file alone). */
  Result<std::optional<std::string>> document(const JournalEntry &e, std::uint64_t max_bytes);

  /** The timeline entry at `cursor` (sd_journal_get_cursor(3)) read again,
   *  as scan() gave it: for a caller that kept only the cursor of an entry
   *  (ctl-query list keeps its rows, not the entries).  Found as
   *  document() finds the entry at e.cursor.  An error when it cannot be
   *  found, or when nobody vouches for it (sender_trust() kNone, which
   *  scan() never hands on). */
  Result<JournalEntry> entry_at(const std::string &cursor);

 private:
  /* Calls fn with a journal at the entry `cursor` names: this one, or, when
   * its merged view does not give that entry back, one of files_ alone
   * (document()).  1: fn was called; 0: not found; < 0: an errno. */
  int at_entry(const std::string &cursor, const std::function<void(sd_journal *)> &fn);
  explicit Journal(sd_journal *j) : j_(j) {}
  Result<std::optional<std::string>> document_once(const std::string &cursor, std::uint64_t max_bytes);
  Result<std::optional<std::string>> document_entry(const JournalEntry &e, std::uint64_t max_bytes);
  sd_journal *j_;
  /** kFiles's files: document() looks for an entry in each alone when the
   *  merged view does not give it back. */
  std::vector<std::string> files_;
};

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_JOURNAL_SOURCE_H
