/* SPDX-License-Identifier: MIT */
/*
 * query.h - ctl-query's commands (list, show, events, export) over its sources: the timeline
 * entries of a journal (journal_source.h) and the timeline files of directories (docs/ctl-query.md).
 *
 *   0. the journal: ask its index for the timeline entries that the
 *      matches, --boot and events --name leave possible, reading only their
 *      summary fields (the document only where a command needs it);
 *   1. list the *.timeline.json files of each directory;
 *   2. drop those whose file name proves they cannot match (pid, uid, comm,
 *      boot id, crash time) -- without opening them;
 *   3. read the rest (document.h: a SAX pass, a size cap), in parallel;
 *      a file that cannot be read is reported, never taken as "no match";
 *   4. keep the documents that match, sort them by crash time, apply -r
 *      and -n, and print.
 *
 * Thread-safety: run_query() may be called from one thread at a time per
 * output stream; it starts and joins its own worker threads.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_QUERY_H
#define CORE_TIMELINE_CTL_QUERY_QUERY_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core_timeline/reader/export.h"
#include "document_reader.h"
#include "view.h"

namespace core_timeline::ctl_query {

/** Where core-timelined writes timelines: next to the cores, and in its
 *  state directory for cores that are not files (Storage=journal). */
inline constexpr const char *kDefaultDirectories[] = {"/var/lib/systemd/coredump",
                                                      "/var/lib/core-timeline/timelines"};

/** Exit codes of ctl-query (docs/ctl-query.md). */
enum ExitCode : int {
  kExitFound = 0,       /**< something matched and was printed */
  kExitNoMatch = 1,     /**< nothing matched, and every timeline was read */
  kExitUsage = 2,       /**< bad command line (option, time, match) */
  kExitIncomplete = 3,  /**< nothing matched among the timelines that could
                             be read, and some could not (permission denied,
                             malformed, too large...): a match may be there */
  kExitNoDirectory = 4, /**< a -D directory cannot be opened */
};

enum class Command { kList, kShow, kEvents, kExport, kInfo, kGroup };

/** The `events` command's conditions on one event; unset ones always hold. */
struct EventFilter {
  std::optional<std::string> name;  /**< the event's "name" (BEFORE_DIE) */
  std::optional<std::string> kind;  /**< its "kind" (USER, MALLOC, CRASH) */
  std::optional<std::uint64_t> arg; /**< one of its two "args" */
  std::optional<std::uint64_t> id;  /**< its "id" */
  std::optional<std::uint64_t> tid; /**< its "tid" */

  /** Whether an event object (docs/timeline-json.md) meets every condition;
   *  a missing or mistyped value does not. */
  bool matches(const nlohmann::ordered_json &event) const;
};

struct QueryOptions {
  Command command = Command::kList;
  std::vector<std::string> matches;        /**< MATCH arguments (match.h) */
  std::optional<std::int64_t> since_usec;  /**< inclusive, crash time */
  std::optional<std::int64_t> until_usec;  /**< inclusive, crash time */
  bool reverse = false;                    /**< newest first */
  std::optional<std::size_t> max_entries;  /**< -n: lines of list/events */
  /** --all: the bookkeeping events too (document::is_bookkeeping_event():
   *  LANE_CLAIM, STACK), which list's last event, events and show leave
   *  out by default. */
  bool all = false;
  /** show: the reader's view options, and -n as the last N events
   *  (view.h; its `all` is ignored: `all` above is used). */
  ViewOptions view;
  bool json = false;
  /** With json: list and events print each object indented (--json=pretty),
   *  show the stored document as is. */
  bool json_pretty = false;
  /** With json: show prints the document on one line (--json=short). */
  bool json_short = false;
  /** -D: directories to read.  Each is a journal directory when it holds
   *  journal files (journal_source.h journal_files_in()), else a timeline
   *  directory.  With no -D, --file or -M the local journal is read. */
  std::vector<std::string> directories;
  /** --file: journal files to read (as journalctl --file). */
  std::vector<std::string> journal_files;
  /** -M: the journal of this container (as journalctl -M). */
  std::string machine;
  /** --files: also read the timeline files of kDefaultDirectories (where a
   *  missing directory is normal: no timeline yet). */
  bool files = false;
  /** --boot: the crash's boot, as journalctl -b takes it ("" or "0" the
   *  current boot, "-1" the one before, "1" the first, a 32-hex boot id,
   *  ID+N / ID-N); unset: every boot. */
  std::optional<std::string> boot;
  /** --unverified: also the journal entries only their crashed user
   *  vouches for that nothing corroborates (journal_source.h), marked so. */
  bool unverified = false;
  bool quiet = false;      /**< no per-file problem lines (the count stays) */
  bool no_legend = false;  /**< no column header */
  std::uint64_t max_bytes = kDefaultMaxBytes;
  EventFilter event_filter;
  std::string cwd;         /**< for relative executable paths in matches */
  unsigned jobs = 0;       /**< reader threads; 0: up to 4, by CPU count */
  /** export: the format, and where (a file for chrome-trace, stdout when
   *  empty; the directory to make for ctf, required). */
  reader::ExportFormat export_format = reader::ExportFormat::kChromeTrace;
  std::string export_output;
  /** group: by the stack part of the signature alone (--stack). */
  bool group_by_stack = false;
};

/** The timeline `locate_newest()` found. */
struct LocatedTimeline {
  std::string dir;          /**< its directory, as given or default */
  std::string name;         /**< its file name in dir */
  std::string path;         /**< dir + "/" + name; for a journal entry, words
                                 that name it ("the journal entry for FILE") */
  /** The timeline file: dir + "/" + name, or the one a journal entry names
   *  (its CORE_TIMELINE_TIMELINE); empty when the entry names none. */
  std::string file;
  /** Where it was found, as list --json says it: "journal" or "file". */
  std::string source;
  std::string entry_cursor;  /**< a journal entry's own cursor, else empty */
  std::size_t matches = 0;  /**< how many timelines matched; this is the
                                 newest of them (by crash time, as show) */
  std::uint64_t time_usec = 0;  /**< its crash time (Timeline::time_usec) */
  /** When it was found in the journal with a document: the document's
   *  bytes (then dir and name are empty, and path names the entry). */
  std::shared_ptr<const std::string> document;
};

/** Steps 1-5 of a query with options.matches, --since, --until and -D
 *  (the command, -r, -n are ignored): the newest matching timeline, the
 *  one `show` would print.  Problems with other files are reported on
 *  `err` as list reports them (-q: only their count).  Returns kExitFound
 *  with *found set, kExitNoMatch, kExitIncomplete (nothing matched among
 *  the timelines that could be read, and some could not) or
 *  kExitNoDirectory; prints no "no match" line itself.  Never throws. */
int locate_newest(const QueryOptions &options, std::ostream &err, LocatedTimeline *found) noexcept;

/** Runs one command: results on `out`, problems and notes on `err`.
 *  Returns an ExitCode.  Never throws. */
int run_query(const QueryOptions &options, std::ostream &out, std::ostream &err) noexcept;

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_QUERY_H
