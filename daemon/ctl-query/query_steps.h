/* SPDX-License-Identifier: MIT */
/*
 * query_steps.h - one run of ctl-query's list, show or events (and the
 * locating that export does), as class Query's steps: the sources
 * (query_sources.cc: directories, files, journals, --boot), the selection
 * (query_select.cc: candidates by name, documents read, rows made and
 * ordered), the printing (query_print.cc: list, show, info, events,
 * export) and the run that calls them in order (query.cc).  Private to
 * daemon/ctl-query: query.h is the interface.
 *
 * Thread-safety: a Query is one thread's, but for read_selected(), which
 * reads documents on worker threads (each into its own Slot).
 */
#ifndef CORE_TIMELINE_CTL_QUERY_QUERY_STEPS_H
#define CORE_TIMELINE_CTL_QUERY_QUERY_STEPS_H

#include "query.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <systemd/sd-id128.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/ids.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/number.h"
#include "group_query.h"
#include "journal_source.h"
#include "match.h"
#include "refusal.h"
#include "text.h"
#include "time_spec.h"

namespace core_timeline::ctl_query {

using json = nlohmann::ordered_json;
namespace key = core_timeline::document::key;
namespace jf = core_timeline::document::journal;


/* An open timeline directory. */
struct Directory {
  std::string path;
  int fd = -1;
};

/* A *.timeline.json file found in a directory, or (entry set) a timeline
 * entry found in the journal. */
struct Candidate {
  std::size_t dir = 0;
  std::string name;
  std::optional<TimelineName> parsed;
  std::optional<std::size_t> entry;  /* index in Query::entries_ */
};

/* Reads the document of one timeline (a file, or a journal entry's). */
using DocumentReader = std::function<Result<Timeline>(const ReadRequest &)>;

/* What is printed of one matching timeline. */
struct Row {
  std::string path;
  std::uint64_t time_usec = 0, realtime_usec = 0;
  std::string pid, uid, gid, signal, signal_name, exe, comm, status, reason, boot_id, cursor;
  std::string host;          /* _HOSTNAME: the entry's, or the stored coredump entry's */
  std::string machine;       /* _MACHINE_ID, likewise ("" when it has none) */
  /* When this row was chosen among several documents of its crash
   * (order_rows()): how many, and why this one; "" otherwise. */
  std::string chosen;
  /* The crash's pid in its own pid namespace (pids.pid, process.pid; the
   * entry's CORE_TIMELINE_NAMESPACE_PID): its leader's tid there. */
  std::string own_pid;
  std::optional<bool> namespaced; /* pids.namespaced; nullopt: cannot be told */
  std::string host_pid;           /* COREDUMP_PID alone (pid may fall back to process.pid) */
  bool from_journal = false; /* a journal entry (else a file) */
  std::string entry_cursor;  /* the timeline entry's own cursor */
  bool cut = false;          /* the entry's document is cut (CORE_TIMELINE_DOCUMENT_CUT=1) */
  bool user_vouched = false; /* only its crashed user vouches for the entry (journal_source.h) */
  bool unverified = false;   /* ... and nothing backs it (shown with --unverified) */
  /* An entry's CORE_TIMELINE_LAST_EVENT (the event's name), as read. */
  std::string last_event_raw;
  bool has_events = false;
  std::size_t event_count = 0;
  json last_event;
  std::vector<json> events;  /* the matching events (events command) */
  /* The matching bookkeeping events left out of `events` (not --all). */
  std::size_t bookkeeping_left_out = 0;
  /* The windows of the sources that lost events (events command): the
   * reader's own sentences (windows[].says), so an empty search is not
   * read as "it never happened". */
  std::vector<std::string> lossy_windows;
  GroupFacts group;          /* its group signature (group_query.h) */
};

/* The result of reading one candidate.  The row is on the heap: a Row is
 * near 1 KiB, and list holds one for each of 100,000 crashes (moved, not
 * copied, from the scan to its slot). */
struct Slot {
  std::unique_ptr<Row> row;
  std::optional<Error> error;
};

/* Problems met along the way: each named on stderr (unless -q) as it is
 * met, and counted by kind for the summary line. */
class Problems {
 public:
  Problems(std::ostream &err, bool quiet) : err_(err), quiet_(quiet) {}

  void report(const std::string &message, std::string_view kind) {
    ++count_;
    ++kinds_[std::string(kind)];
    if (!quiet_) err_ << "ctl-query: " << printable(message) << '\n';
  }
  std::size_t count() const { return count_; }

  /* "N timelines or directories could not be read (...)", if any. */
  void summary() const {
    if (count_ == 0) return;
    std::string kinds;
    for (const auto &[k, n] : kinds_) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, k);
    err_ << "ctl-query: " << count_ << (count_ == 1 ? " timeline or directory" : " timelines or directories")
         << " could not be read (" << kinds << ")"
         << (kinds_.count(std::string(problem_name(Errc::kPermissionDenied))) || kinds_.count(kAnotherUser) ||
                     kinds_.count(kNotDumpable)
                 ? "; run as root to see them"
                 : "")
         << '\n';
  }

 private:
  std::ostream &err_;
  const bool quiet_;
  std::size_t count_ = 0;
  std::map<std::string, std::size_t> kinds_;
};

/* Shared by the steps' files. */
std::optional<std::string> journal_field(const std::string &field);
Result<Timeline> read_timeline_path(const std::string &path, const ReadRequest &req);
std::uint64_t entry_time(const JournalEntry &e);
/* list's row of a timeline entry, from its summary fields alone; its
 * group signature whole when `whole_group` (group prints it), else only
 * the group's id (order_rows() weighs whether there is one). */
Row row_of_entry(const JournalEntry &e, bool whole_group);
/* The same, into *row (a Row just made: its strings empty). */
void fill_row_of_entry(const JournalEntry &e, bool whole_group, Row *row);
std::optional<std::uint64_t> host_tid(const Row &r, std::uint64_t tid);

/* One run of list, show or events, step by step. */
class Query {
 public:
  Query(const QueryOptions &o, const MatchSet &matches, std::ostream &out, std::ostream &err)
      : o_(o), matches_(matches), out_(out), err_(err), problems_(err, o.quiet) {}
  ~Query() {
    for (auto &d : dirs_)
      if (d.fd >= 0) ::close(d.fd);
  }
  Query(const Query &) = delete;
  Query &operator=(const Query &) = delete;

  /* locate_newest(): the steps before print(). */
  int locate(LocatedTimeline *found);

  int run();

 private:
  /* Steps 0-5: the sources, their candidates, what is read, the rows. */
  std::optional<int> gather();

  /* The crashes of this (non-root) user that systemd-coredump's own
   * entries, in the journal it can read, say were not dumpable for it:
   * their timeline entries are in system.journal, which it cannot read
   * (journal_source.h Journal::withheld()).  Only when the journal's index can
   * decide every match (a match only a document could decide, or events
   * --name, cannot be told), and not for crashes already listed. */
  void note_withheld();

  /* 1. The sources: -D directories (journal or timeline directories),
   *    --file, -M, else the local journal; --files adds the default
   *    timeline directories.  An exit status if one cannot be opened. */
  std::optional<int> open_sources();

  void list_directory(std::size_t dir);

  /* --boot: the boot id it names.  0 is the current boot for the local
   * journal and for timeline files, the last boot of other journals (as
   * journalctl); other offsets count the journal's boots, or the boots of
   * the timeline files' names when no journal is read. */
  std::optional<int> resolve_boot();

  /* 0. The journal's timeline entries that the index leaves possible:
   *    MESSAGE_ID, the matches on fields the entry has, --boot, and for
   *    events --name the entries that list the name (or could not list
   *    every name).  The other matches are left to the documents. */
  std::optional<int> scan_journal();

  bool in_range(std::uint64_t usec) const;

  /* The namespace pid a timeline file's xattr gives (names.h
   * kNamespacePidXattr), not following a symbolic link.  A file this user
   * may not read does not let its xattr be read either (EACCES): kNone, so
   * that a PID match does not report every such file as one that may
   * match (docs/ctl-query.md, "Who sees what"). */
  static NamespacePidHint namespace_pid_hint(const Directory &d, const std::string &name);

  /* 2. What the file names leave possible (journal entries: the index
   *    already decided). */
  void select_by_name();

  /* Whether a journal entry's document must be read: events reads the
   * events, matches the index cannot answer need the document, and so does
   * list --all (the entry names the last event that is not bookkeeping). */
  bool entry_needs_document() const;

  /* Whether list needs this entry's document for its last event: its
   * CORE_TIMELINE_LAST_EVENT names a bookkeeping event (as a daemon wrote
   * it before it passed them over), and the event before it is wanted. */
  bool stale_last_event(const JournalEntry &e) const;

  void parallel(const std::vector<std::size_t> &items, const std::function<void(std::size_t)> &fn);

  /* 3. Read what is left, in parallel, keeping the fields the matches use;
   *    note which match fields some document has.  Journal entries are
   *    rows from their summary fields, or, when their document is needed,
   *    fetched from the journal (one thread: the sd_journal handle) in
   *    chunks that are parsed in parallel. */
  void read_selected();

  /* The events of one document that the filter keeps.  With --tid T, an
   * event of the thread group leader (tid == process.pid, read before the
   * events) is kept too, as `via_host`, in case T is the crash's host pid,
   * the leader's host tid; keep_host_matches() decides once the document
   * says that pid. */
  struct Found {
    std::vector<json> events;
    std::vector<bool> via_host;
    std::vector<bool> bookkeeping;  /* left out unless --all (or --name/--kind chose it) */
    std::optional<std::uint64_t> leader;
  };

  /* The request for one document. */
  ReadRequest request_for(Found &found) const;

  /* The leader's events kept as `via_host` stay only when --tid is the
   * crash's host pid and the leader's tid is the pid of its namespace.
   * Bookkeeping events are left out (and counted in *bookkeeping) unless
   * --all. */
  std::vector<json> keep_host_matches(Found &&found, const Row &row, std::size_t *bookkeeping) const;

  /* One document (todo_[i]); runs on a worker thread (its slot is its own). */
  void read_one(std::size_t i);

  static std::string entry_label(const JournalEntry &e);

  std::string label(const Row &r) const { return label_of(r); }

  static std::string label_of(const Row &r);

  /* A match on a field that no document read has is most likely a
   * misspelling: name it rather than let it look like "no match". */
  void note_fields_no_timeline_has() const;

  /* 4. Problems, in file order (a file that vanished is not one). */
  void report_read_problems();

  /* Entries of their user's word alone were left out (not --unverified):
   * an empty answer is then not "no match". */
  bool hid_unverified() const { return unverified_ > 0 && !o_.unverified; }

  /* 5. The matches, by crash time.  The documents of one crash (its
   *    machine, boot, pid and crash time: crash_key() and same_machine();
   *    or an entry and the file it names, as the older notice has no crash
   *    time) from files and from the journal are one row, preferred()'s:
   *    never one that only says the core was gone over one that says more,
   *    never the crashed user's own word over core-timelined's, a file (never
   *    cut) over an entry, and else the last logged.  The row kept says so
   *    when there were several (Row::chosen, printed by show). */
  void order_rows();

  /* The document of a journal candidate and its row: of the entry kept,
   * or else of the entry at the row's cursor, read again. */
  Result<std::optional<std::string>> document_of(const Candidate &c, const Row &row);

  /* The reader of the newest row's document (show, export), and where
   * the whole timeline is (the file beside the core). */
  DocumentReader reader_of(const Candidate &c, const Row &row, std::string *whole);

  /* Before list or group prints at least one row: frees what print()
   * does not read then (the entries, the candidates), so that they and
   * the table print() makes are not in memory at once. */
  void release_unprinted();

  /* 6. What the command prints, and the exit status. */
  int print();

  const QueryOptions &o_;
  const MatchSet &matches_;
  std::ostream &out_, &err_;
  Problems problems_;
  std::vector<Directory> dirs_;
  std::unique_ptr<Journal> journal_;
  bool journal_local_ = false;
  /* The entries whose rows are not made while scanning (null for those
   * whose are: list keeps 100,000 rows, not their entries too). */
  std::vector<std::unique_ptr<JournalEntry>> entries_;
  /* entries_'s rows, made while scanning for those whose documents are
   * not needed */
  std::vector<std::unique_ptr<Row>> entry_rows_;
  std::size_t untrusted_ = 0;
  std::size_t unverified_ = 0;  /* entries of a user's own word alone, in range */
  std::optional<std::string> boot_id_;
  MatchSet residual_;
  std::vector<std::optional<std::string>> docs_;
  /* show, info and export of a lone timeline file: its document, read
   * whole by the selection, for the printing to take (compact_timeline.h). */
  std::shared_ptr<CompactCache> lone_;
  std::vector<Candidate> candidates_;
  std::vector<const Candidate *> todo_;
  std::vector<std::string> match_fields_;
  std::vector<Slot> slots_;
  std::vector<std::atomic<bool>> field_seen_;
  std::atomic<std::size_t> documents_read_{0};
  std::vector<const Row *> rows_;
  std::vector<const Candidate *> row_candidates_;
};

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_QUERY_STEPS_H
