/* SPDX-License-Identifier: MIT */
/*
 * view.h - what `show` prints of a stored timeline's text: the text
 * core-timeline-read printed for the core (the document's "text"), seen
 * through the reader's view options (--wall-clock, --by-thread, with the
 * same meaning as core-timeline-read's), a thread (--tid), the last N
 * events (-n), and without the bookkeeping events unless --all
 * (document::is_bookkeeping_event(); docs/ctl-query.md, "show").
 *
 * The stored text is laid out as the reader's write_text() writes it
 * (reader/render.h): header lines; then, for each element of the document's
 * "events" in order, the event's line and, when it has a "stack", one line
 * per frame and a closing "(stack: ...)" line; then a "crash:" line when
 * "crash" is not null, with what follows it (the re-raised fault, the
 * thread stacks, the "cause" section's lines), and one "warning:" line per
 * element of "warnings".
 * The view cuts the text at those boundaries, checks that each event's
 * line names that event's tid and name (and the last lines are the crash
 * and the warnings), and puts the lines it keeps back together: the header
 * as stored, a "shown: K of N events..." line when any event is left out
 * (so nothing is hidden silently), the kept events (grouped per thread
 * under "thread TID (NAME): K events" lines with by_thread, as the reader
 * groups them), the crash and warning lines as stored.  With wall_clock
 * each event line's age is replaced by the event's "time_ns" as the
 * reader's --wall-clock prints it (reader::format_wall_clock(), in a
 * 22-wide column; "?" without one) and its stack lines are indented to
 * match.  A text that does not line up with the events (a document cut to
 * fit its journal entry keeps the newest events and the end of the text;
 * a document edited by hand) is an error: the caller prints the text as it
 * is stored and says why the view could not be made.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_VIEW_H
#define CORE_TIMELINE_CTL_QUERY_VIEW_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "expected.h"

namespace core_timeline::ctl_query {

/** show's options over the events. */
struct ViewOptions {
  bool all = false;         /**< --all: the bookkeeping events too */
  bool wall_clock = false;  /**< --wall-clock: each event's wall-clock time instead of its age */
  bool by_thread = false;   /**< --by-thread: grouped by thread */
  std::optional<std::uint64_t> tid;  /**< --tid: only this thread's events (its tid in the text) */
  std::optional<std::size_t> last;   /**< -n: only the last N of the events kept so far */

  /** Whether an option beyond --all was given (wall_clock, by_thread, tid, last). */
  bool reshapes() const { return wall_clock || by_thread || tid || last; }
};

/** What the view needs of one element of "events". */
struct ViewEvent {
  std::string kind, name;              /**< "kind", "name" ("" when missing) */
  std::optional<std::uint64_t> tid;    /**< "tid" */
  std::optional<std::int64_t> time_ns; /**< "time_ns": the event's wall-clock time */
  std::size_t stack_lines = 0;         /**< its lines under the event line: 0, or frames + 1 */
  bool bookkeeping = false;            /**< document::is_bookkeeping_event() */

  static ViewEvent of(const nlohmann::ordered_json &event);
};

/** One element of "threads": its tid and name ("" for null). */
struct ViewThread {
  std::uint64_t tid = 0;
  std::string name;
};

/** A stored timeline as the view reads it. */
struct ViewInput {
  std::string_view text;          /**< the document's "text" */
  std::vector<ViewEvent> events;  /**< its "events", in order */
  std::vector<ViewThread> threads;  /**< its "threads", in order */
  bool crash = false;             /**< its "crash" is not null */
  std::size_t warnings = 0;       /**< how many "warnings" */
  /** The lines of the crash's whole stack ("crash"."stack": its frames,
   *  the summary and the note; 0 without one), which the text puts under
   *  the CRASH event of `crash_tid`, or after the "crash:" line when the
   *  ring has no CRASH event of that thread. */
  std::size_t crash_stack_lines = 0;
  std::optional<std::uint64_t> crash_tid; /**< "crash"."tid" */
  /** The lines between the "crash:" line and the warnings other than an
   *  unplaced crash stack: the re-raised fault, its note, and
   *  "thread_stacks" (render.cc, the end of the text). */
  std::size_t after_crash_lines = 0;

  /** Fills crash, crash_tid, crash_stack_lines and after_crash_lines from
   *  the document's "crash" and "thread_stacks" (either may be null). */
  void take_crash(const nlohmann::ordered_json *crash, const nlohmann::ordered_json *thread_stacks);
  /** Adds the lines of the cause section (after the crash's, before the
   *  warnings: reader/cause.h kMaxCauseLines) to after_crash_lines, from
   *  the document's "cause" (null, or missing in older documents: none). */
  void take_cause(const nlohmann::ordered_json *cause);
  /** Adds the lines of the group signature (the "group:" line, "stack
   *  alone:" and its note: reader/group.h group_text) to after_crash_lines,
   *  from the document's "group" (null, or missing in older documents:
   *  none). */
  void take_group(const nlohmann::ordered_json *group);
};

/** The text show prints (every line ending in '\n'); kBadData with a
 *  sentence saying where the text does not line up with the events. */
Result<std::string> view_text(const ViewInput &in, const ViewOptions &options);

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_VIEW_H
