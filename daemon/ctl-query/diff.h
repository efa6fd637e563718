/* SPDX-License-Identifier: MIT */
/*
 * diff.h - `ctl-query diff A B`: what one timeline did that the other did
 * not (docs/ctl-query.md, "diff").  "What does normal look like, against
 * the crash."
 *
 * One model: the timeline document (docs/timeline-json.md).  A side is
 * either a stored timeline, found by a MATCH as `show` finds it and read
 * through document.h (its events streamed to DiffSide::add_event, nothing
 * of them kept but the counts), or a core FILE (a kernel core, or a live
 * snapshot saved by `core-timeline-read --pid PID --save FILE`, also an
 * ELF core) analyzed by the reader library (ct::reader: CoreFile::open,
 * analyze, to_json) into the same document.
 *
 * Per event name (SPAN_BEGIN and SPAN_END are spans, not events here):
 * the count on each side and its rate per second over that side's kept
 * window (its oldest to its newest event placed in time).  Per span name:
 * the count, the p50 and p95 of the closed spans' durations, and the spans
 * open at the end.  An event or span seen on one side only is "absent" on
 * the other only when that side's window for its source is complete over
 * the compared time (absence_on()); otherwise "not seen; window incomplete
 * (N overwritten)".
 *
 * Before the tables, the group section (diff_group.h): whether A and B
 * are one group, or share a stack but not a group (and what in their
 * histories differs), from each document's "group".
 *
 * Memory: a stored side keeps its "spans", "windows", "time" and "group" whole
 * (ReadRequest::paths) and of its events only the counts; a core FILE's
 * document is built whole by to_json(), as core-timeline-read --json does,
 * with symbols (libdwfl, in a child as the reader isolates it), since the
 * group's stack part is function names.
 *
 * Untrusted input: documents are checked member by member; a value of the
 * wrong type counts as missing, never as a crash.
 *
 * Thread-safety: plain values and pure functions; run_diff() as
 * run_query().
 */
#ifndef CORE_TIMELINE_CTL_QUERY_DIFF_H
#define CORE_TIMELINE_CTL_QUERY_DIFF_H

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff_group.h"
#include "query.h"

namespace core_timeline::ctl_query {

/** What a diff argument names. */
enum class DiffArgument {
  kMatch, /**< a MATCH (match.h), as list/show/events take it */
  kCore,  /**< a core FILE */
};

/** kCore when `arg` holds a '/' with no '=' before it (so FIELD=VALUE
 *  stays a match) and names, relative to `cwd`, a regular file that starts
 *  with an ELF header of type ET_CORE: the kernel never executes an
 *  ET_CORE file, so it cannot be the executable an executable MATCH names.
 *  Anything else is a MATCH.  Reads at most the file's first 18 bytes. */
DiffArgument classify_diff_argument(const std::string &arg, const std::string &cwd);

/** One source's window (windows[] of the document). */
struct WindowFacts {
  std::string source;  /**< "user", "alloc", "io" */
  std::uint64_t events = 0;  /**< its events kept */
  std::uint64_t overwritten = 0, dropped = 0, torn = 0;
  std::optional<std::int64_t> complete_for_ns;  /**< null: cannot be told */
  bool complete_since_init = false;
  std::optional<bool> recorder_loaded;          /**< null before version 3 */
  bool enabled = true;
  std::string says;                             /**< the reader's sentence */
};

/** How often one event name occurred on one side. */
struct EventStats {
  std::string kind;          /**< the first such event's kind (USER, MALLOC) */
  std::string source;        /**< its source: "user", "alloc", "io" */
  std::uint64_t count = 0;
};

/** One span name on one side (spans[] of the document). */
struct SpanStats {
  std::uint64_t count = 0;             /**< every span of that name */
  std::uint64_t open = 0;              /**< state "open": open at the end */
  std::uint64_t open_or_end_lost = 0;  /**< state "open_or_end_lost" */
  std::uint64_t begin_lost = 0;        /**< state "begin_lost" */
  std::vector<std::int64_t> closed_ns; /**< duration_ns of each "closed" one */
};

/** The statistics of one timeline document: fed its events one by one
 *  (add_event, in document order), then the rest of it (add_rest: spans[],
 *  windows[], time).  Memory: one entry per distinct event and span name,
 *  and one integer per closed span. */
class DiffSide {
 public:
  /** One element of events[].  A non-object, or a name or kind that is
   *  not a string, counts under "?"; an age_ns that is not an integer
   *  leaves the event out of the kept window (not placed in time). */
  void add_event(const nlohmann::ordered_json &event);
  /** The document's spans[], windows[] and time.reference, where present
   *  and of the documented types (others are skipped). */
  void add_rest(const nlohmann::ordered_json &document);
  /** add_event() for each of document.events[], then add_rest(). */
  static DiffSide of_document(const nlohmann::ordered_json &document);

  std::map<std::string, EventStats> events;  /**< by event name */
  std::map<std::string, SpanStats> spans;    /**< by span name ("?" unnamed) */
  std::vector<WindowFacts> windows;
  bool has_windows = false;       /**< the document has windows[] */
  std::uint64_t event_count = 0;  /**< every event, spans' included */
  std::uint64_t placed = 0;       /**< those with an integer age_ns */
  std::optional<std::int64_t> oldest_age_ns, newest_age_ns;
  std::string reference;          /**< time.reference: "crash", "newest_event",
                                       "snapshot" (a live process), "" */

  /** The kept window in ns: newest_age_ns - oldest_age_ns, when at least
   *  two events are placed in time and they span more than 0 ns. */
  std::optional<std::int64_t> window_ns() const;
  /** Why window_ns() cannot be told ("" when it can). */
  std::string window_note() const;
  /** How far before its reference the kept events reach: -oldest_age_ns
   *  (at least 0), when an event is placed in time. */
  std::optional<std::int64_t> reach_ns() const;
  /** count / window_ns() in events per second, when the window is known. */
  std::optional<double> rate_per_s(std::uint64_t count) const;
  /** The window of `source`, or nullptr. */
  const WindowFacts *window(std::string_view source) const;
};

/** The source of an event kind as the document names kinds ("MALLOC",
 *  "KIND_40"): ring_format.h source_of_kind, by name. */
std::string source_of_kind_name(std::string_view kind);

/** Nearest-rank percentile: the value at rank ceil(percent/100 * n) of the
 *  sorted values (p50 of {1,2,3,4} is 2, p95 of 1..20 is 19); nullopt for
 *  no values or percent outside 1..100. */
std::optional<std::int64_t> percentile(std::vector<std::int64_t> values, unsigned percent);

/** Why something is missing from one side. */
struct Absence {
  bool proven = false;  /**< true: "absent"; false: "not seen" */
  std::string note;     /**< for "not seen": why absence is not proven,
                             "window incomplete (5189 overwritten)" */
  /** "absent", or "not seen; " + note. */
  std::string text() const;
};

/** Whether `side` not having events of `source` proves they did not
 *  happen over the last `compared_ns` before its reference: absent when
 *  its window for that source lost nothing since tl_init
 *  (complete_since_init), or is complete for at least compared_ns;
 *  otherwise not seen, and why: no window for the source, its recorder
 *  not loaded and none of its events kept (as the reader's "not
 *  recorded"), recording off at the end, N dropped, N torn, N overwritten
 *  (the reader's facts, windows[]). */
Absence absence_on(const DiffSide &side, std::string_view source, std::optional<std::int64_t> compared_ns);

/** One side of an event row. */
struct EventCell {
  std::uint64_t count = 0;
  std::optional<double> rate_per_s;
  std::optional<Absence> absence;  /**< when count is 0 */
};

/** One event name, both sides. */
struct EventRow {
  std::string name, kind, source;
  EventCell a, b;
  /** Sort key, lower first: 0 on one side only and absent on the other,
   *  1 on one side only and not seen on the other (window incomplete),
   *  2 on both sides. */
  int tier = 2;
  /** Within a tier, higher first: the count on the one side (tiers 0, 1);
   *  |log2_ratio| (tier 2). */
  double change = 0;
  /** log2(B/A) of the rates, or of the counts when a rate cannot be told
   *  (of_rates false); tier 2 only. */
  std::optional<double> log2_ratio;
  bool of_rates = false;
};

/** One side of a span row. */
struct SpanCell {
  std::uint64_t count = 0, closed = 0, open = 0, open_or_end_lost = 0, begin_lost = 0;
  std::optional<std::int64_t> p50_ns, p95_ns;  /**< of the closed spans */
  std::optional<Absence> absence;              /**< when count is 0 */
};

/** One span name, both sides. */
struct SpanRow {
  std::string name;
  SpanCell a, b;
  /** 0 on one side only, absent on the other; 1 on one side only, not
   *  seen on the other; 2 on both, with different counts open at the end;
   *  3 the rest. */
  int tier = 3;
  /** Within a tier, higher first: the count on the one side (tiers 0, 1);
   *  |log2(count B/A)| + |log2(p95 B/A)| (the p95 term only when both
   *  sides have closed spans) (tiers 2, 3). */
  double change = 0;
};

/** The comparison of two sides, rows sorted (by tier, then change, then
 *  the total count, then name). */
struct Diff {
  /** The compared time: the longer reach_ns() of the two sides; nullopt
   *  when either side has no event placed in time. */
  std::optional<std::int64_t> compared_ns;
  std::vector<EventRow> events;
  std::vector<SpanRow> spans;
};

Diff compare_sides(const DiffSide &a, const DiffSide &b);

/** What a side is, for the headings and the JSON's "a" and "b". */
struct SideInfo {
  std::string argument;        /**< as given */
  DiffArgument from = DiffArgument::kMatch;
  /** The core, or the timeline file (for a journal entry, the one it
   *  names); empty when an entry names none. */
  std::string file;
  /** Where it was found: "core", or as list --json says it, "journal"
   *  or "file". */
  std::string source;
  std::string entry_cursor;    /**< a journal entry's own cursor */
  /** How the text names it: the file, or words naming the journal entry. */
  std::string label;
  std::size_t matched = 0;     /**< MATCH: timelines it selected */
  std::uint64_t time_usec = 0; /**< MATCH: the crash time */
  std::string status;          /**< the document's status */
  std::optional<std::uint64_t> pid;
  std::string comm, exe, signal_name;
};

/** The --json object (docs/ctl-query.md, "diff --json"); "group" is
 *  group_diff_json(group). */
nlohmann::ordered_json diff_json(const SideInfo &ia, const DiffSide &a, const SideInfo &ib, const DiffSide &b,
                                 const Diff &d, const GroupDiff &group);

/** The text: the two sides, the group section (print_group_section), then
 *  the EVENT table and the SPAN table. */
void print_diff_text(std::ostream &out, const SideInfo &ia, const DiffSide &a, const SideInfo &ib,
                     const DiffSide &b, const Diff &d, const GroupDiff &group, bool legend);

/** diff's own arguments. */
struct DiffOptions {
  std::string a, b;                  /**< MATCH or core FILE each */
  std::optional<std::string> tlmap;  /**< names for a FILE's user ids */
};

/** The diff command: resolves both sides (a MATCH with the directories,
 *  --since, --until, --max-size of `o`, the newest when several match,
 *  said on `err`), compares them and prints text or o.json.  Returns
 *  kExitFound, kExitNoMatch (a MATCH matched nothing), kExitUsage,
 *  kExitIncomplete (a side cannot be read or holds no timeline) or
 *  kExitNoDirectory.  Never throws. */
int run_diff(const QueryOptions &o, const DiffOptions &d, std::ostream &out, std::ostream &err) noexcept;

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_DIFF_H
