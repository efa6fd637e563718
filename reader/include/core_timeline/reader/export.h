/* SPDX-License-Identifier: MIT */
/*
 * export.h - a timeline in the formats of other tools (docs/export.md):
 *
 *  - chrome-trace: the Chrome Trace Event Format, JSON object form
 *    ({"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}),
 *    which Perfetto UI, chrome://tracing and speedscope open;
 *  - ctf: a CTF 1.8 trace (https://diamon.org/ctf/v1.8.3/), a directory
 *    with a TSDL `metadata` file and one binary stream per thread, which
 *    babeltrace2 and Trace Compass read.
 *
 * One exporter, two inputs.  The writers take an ExportTimeline (what is
 * known before the first event: the process, the threads and what each
 * lost, the spans, the crash) and then the events one by one as
 * ExportEvents, in the timeline's merged order.  Both core-timeline-read
 * (from an Analysis: export_timeline_of() and ExportEvents made from
 * Analysis::events, with no copy of the events) and ctl-query (from a
 * stored document's JSON: export_timeline_of_document() and
 * export_event_of_json(), the events streamed by its reader) feed them,
 * so each format is written in one place.
 *
 * Time: an event's place is its age (ns from the time reference, the
 * CRASH event or the newest event; analyze.h TimeBase).  The exported
 * time 0 is the oldest placed event (ExportTimeline::origin_age_ns), so
 * times are never negative: chrome-trace's "ts" is (age - origin) in
 * microseconds with three decimals (exact: written from integers), CTF's
 * timestamps (age - origin) ns on a 1 GHz clock whose offset is the wall
 * clock of time 0 when the timeline has one.  An event without an age is
 * not given one: it is left out and counted (otherData.events_without_time,
 * CTF env.events_without_time).
 *
 * The cause section (docs/cause.md), when the timeline has one, goes with
 * the crash: an instant at the time reference in chrome-trace, CAUSE
 * events after the CRASH in CTF; without one nothing of it is written.
 *
 * Losses are never silent: per thread (the lanes it owned: overwritten,
 * torn or invalid, missing slots) on that thread's track, and the ring's
 * dropped events and the shared lane's losses in the document's top-level
 * metadata; docs/export.md lists where each one goes.
 *
 * Memory: the writers hold the ExportTimeline, a small table per thread
 * and per event class, and a 64 KiB buffer; events are written as they
 * come, so a million events are never one string.
 *
 * Errors: the writers return an Error (kIo with errno for a write that
 * failed, kInvalidArgument for an unusable --output) and write nothing
 * more after one.  Untrusted strings (thread names, event names from the
 * core or a document) are written escaped: invalid UTF-8 replaced in JSON;
 * the process's name as thread names are (printable_name());
 * CTF identifiers are made of [A-Za-z0-9_] and its strings of printable
 * ASCII (in the metadata, other bytes as three-digit octal escapes).
 *
 * Thread-safety: a writer is used from one thread; distinct writers share
 * nothing.
 */
#ifndef CORE_TIMELINE_READER_EXPORT_H
#define CORE_TIMELINE_READER_EXPORT_H

#include <array>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core_timeline/reader/result.h"

namespace core_timeline::reader {

struct Analysis;
struct Event;

/** The export formats, as the command lines name them ("chrome-trace",
 *  "ctf"). */
enum class ExportFormat { kChromeTrace, kCtf };
std::string_view export_format_name(ExportFormat f) noexcept;

/** One thread's track and what its lanes lost (LaneSummary counts summed
 *  over the lanes it owned, ring.h; a lane whose owner left it, when the
 *  thread exited, is the thread's of its oldest kept event, the one right
 *  after the losses). */
struct ExportTrack {
  std::uint32_t tid = 0;
  std::string name;              /**< "" when unnamed ("tid N" is shown) */
  bool crashed = false;          /**< the thread that took the signal */
  std::uint64_t events = 0;      /**< its events in the timeline */
  std::uint64_t overwritten = 0; /**< recorded, then overwritten */
  std::uint64_t torn = 0;        /**< torn or invalid slots */
  std::uint64_t missing = 0;     /**< sequences inside its kept range that
                                      are not events */
  std::uint64_t lost() const { return overwritten + torn + missing; }
};

/** One span, as the writers need it (analyze.h Span). */
struct ExportSpan {
  std::string state;             /**< "open", "open_or_end_lost", "closed",
                                      "begin_lost", "no_begin"
                                      (span_state_name) */
  std::uint32_t tid = 0;         /**< the begin's thread */
  std::optional<std::int64_t> duration_ns;  /**< closed; begin_lost with the
                                                 begin's time known */
  std::optional<std::int64_t> open_for_ns;  /**< open and open_or_end_lost:
                                                 begin to the reference */
  std::string note;
};

/** One frame of a stack: its address, its name (frame_name()), and its
 *  module's path ("" when none).  A frame of the crash's whole stack or of
 *  a thread's unwound stack also says where it came from ("ring": the
 *  CRASH event's walk; "core": the reader's unwind of the core;
 *  "ring+core": both, at the same address) and whether it is the kernel's
 *  signal frame; an event's own walk leaves `from` "". */
struct ExportFrame {
  std::uint64_t address = 0;
  std::string name;
  std::string module;
  std::string from;
  bool signal_frame = false;
};

/** The crashing thread's whole stack (docs/timeline-json.md, "The whole
 *  crash stack": the document's crash.stack), innermost first. */
struct ExportCrashStack {
  std::vector<ExportFrame> frames;
  std::string core_end;          /**< "" when the core's unwind reached the
                                      outermost frame, else why it stopped */
  std::string ring_end;          /**< the CRASH walk's end; "" without one */
  std::uint64_t agree = 0;       /**< frames both sources hold */
  std::string note;              /**< where and why they differ; "" if not */
};

/** A fault the program's own handler caught and re-raised (the
 *  document's crash.reraised), read from the kernel's signal frame. */
struct ExportReraised {
  std::int32_t signo = 0;
  std::string signal_name;
  std::int32_t si_code = 0;
  std::string si_code_name;
  std::optional<std::uint64_t> fault_address;
  std::optional<std::int32_t> sender_pid;
  std::uint64_t pc = 0;          /**< where the fault was */
  std::string at;                /**< pc's frame_name(), "" when unknown */
  std::string handler;           /**< the handler's frame_name(), "" when
                                      unknown */
  std::string raised_with;       /**< "kill()", "tgkill()", "sigqueue()" */
};

/** Another thread's stack unwound from the core (the document's
 *  thread_stacks[], --all-threads), innermost first. */
struct ExportThreadStack {
  std::uint32_t tid = 0;
  std::vector<ExportFrame> frames;  /**< every one "core" */
  std::string end;               /**< "" at the outermost frame */
};

/** The crash, from the core's notes (analyze.h CrashFacts). */
struct ExportCrash {
  std::int32_t signo = 0;        /**< 0: no signal recorded */
  std::string signal_name;
  std::optional<std::int32_t> si_code;
  std::string si_code_name;
  std::optional<std::uint64_t> fault_address;
  std::uint32_t tid = 0;
  std::uint64_t pc = 0;
  bool ring_slot = false;        /**< a CRASH event is in the ring */
  /** The crashing thread's whole stack; nullopt when the core was not
   *  unwound. */
  std::optional<ExportCrashStack> stack;
  std::optional<ExportReraised> reraised;
  std::string reraised_note;     /**< what the core shows of a signal the
                                      process sent itself when no signal
                                      frame tells the fault; "" otherwise */
};

/** One claim of the cause section (cause.h Cause; the document's
 *  cause.causes[]): its kind ("use_after_free", ...: cause_kind_name()),
 *  the claim as its text line has it (raw: writers escape it), and the
 *  window it relies on ("" for the core alone). */
struct ExportCauseClaim {
  std::string kind;
  std::string says;
  std::string window;
};

/** The cause section (docs/cause.md; the document's "cause"): its claims,
 *  strongest first, and what the evidence could not decide. */
struct ExportCause {
  std::vector<ExportCauseClaim> causes;
  std::vector<std::string> cannot_tell;
};

/** One source's window (analyze.h SourceWindow), for the metadata. */
struct ExportWindow {
  std::string source;            /**< "user", "alloc", "io" */
  std::uint64_t events = 0, overwritten = 0, dropped = 0, torn = 0;
  std::optional<std::int64_t> complete_for_ns;
  std::string says;              /**< render.h window_text() */
};

/** What the writers know before the first event. */
struct ExportTimeline {
  std::uint32_t pid = 0;         /**< 0: unknown */
  std::string comm;              /**< raw bytes: the writers escape them
                                      (printable_name(), printable.h) */
  std::string status;            /**< "ok", ... (document status) */
  std::string reference;         /**< "crash", "newest_event", "snapshot", "" */
  /** Age of exported time 0 (<= 0): the oldest placed event's, or the
   *  begin of a span whose begin was lost, as its end recorded it (a
   *  begin that does not fit int64 ns is not placed and moves nothing). */
  std::int64_t origin_age_ns = 0;
  /** CLOCK_REALTIME ns of the reference (age 0), when known. */
  std::optional<std::int64_t> reference_realtime_ns;
  std::uint64_t events = 0;      /**< events in the timeline */
  std::vector<ExportTrack> tracks;  /**< by first event; threads that only
                                       lost events after them */
  std::vector<ExportSpan> spans; /**< indexed by ExportEvent::span */
  std::optional<ExportCrash> crash;
  std::vector<ExportWindow> windows;
  std::uint64_t dropped = 0;     /**< the rings' dropped (no lane: no
                                      thread, no time) */
  /** Losses of lanes no thread owns (the shared overflow lane). */
  std::uint64_t shared_overwritten = 0, shared_torn = 0, shared_missing = 0;
  bool absence_proves_nothing = false;
  std::vector<std::string> warnings;
  /** The other threads' stacks unwound from the core (--all-threads). */
  std::vector<ExportThreadStack> thread_stacks;
  /** The cause section; nullopt when the document has none (then the
   *  writers add nothing of it). */
  std::optional<ExportCause> cause;
};

/** The tracks of `t` by tid (the first of a repeated tid), pointing into
 *  t.tracks: valid while t.tracks is not changed.  A document is
 *  untrusted and may name a million threads, so a writer looks tracks up
 *  here rather than searching t.tracks once per thread. */
std::unordered_map<std::uint32_t, const ExportTrack *> tracks_by_tid(const ExportTimeline &t);

/** Charges each lane's losses to its thread's track (one tid index, so
 *  as many lanes as an untrusted document holds stay linear).  Made once
 *  the timeline's thread tracks are in; each call adds a lane.
 *  Not thread-safe; holds a reference to `timeline`. */
class LaneLosses {
 public:
  explicit LaneLosses(ExportTimeline &timeline);
  /** A lane of one ring.  `owner` is its thread (0: none known); a shared
   *  lane, or one with no owner, counts in the timeline's shared_*
   *  totals.  A thread with losses but no track gets one, named
   *  `owner_name`. */
  void charge(bool shared, std::uint32_t owner, std::string_view owner_name, std::uint64_t overwritten,
              std::uint64_t torn, std::uint64_t missing);

 private:
  ExportTimeline &t_;
  std::unordered_map<std::uint32_t, std::size_t> track_of_;
};

/** A named argument of an event. */
struct ExportArg {
  std::string_view name;         /**< the name table's, else "arg0"/"arg1" */
  std::uint64_t value = 0;
};

/** The keys an event's two arguments are written under, by both exports
 *  (docs/export.md, "Argument names"): each argument's name, with "_arg"
 *  appended when it is one of `fixed` (the keys and fields the export
 *  writes itself), then "_1" appended to the second's as long as it is the
 *  first's.  So no key is written twice, and no argument's value is lost
 *  to a key of the export's own.  Pure; allocates. */
std::array<std::string, 2> argument_keys(std::string_view arg0, std::string_view arg1,
                                         std::span<const std::string_view> fixed);

/** The CRASH slot's payload (analyze.h CrashSlot). */
struct ExportSignal {
  std::int32_t signo = 0;
  std::string_view signal_name;
  std::int32_t si_code = 0;
  std::string_view si_code_name;
  std::uint64_t fault_address = 0;
};

/** How both exports name a frame, from an Analysis's Location or from the
 *  same fields of a document's location object, so that ctl-query's export
 *  of a stored document names it as the reader's export of the core does:
 *  "FUNCTION+0xOFF" when symbolized, else "MODULE_BASENAME+0xFILEOFF" when
 *  the address is in a module, else "0xADDRESS"; then " (FILE:LINE)" when
 *  a source line is known.  `file_offset`: nullopt when not in a module. */
std::string frame_name(std::uint64_t address, std::string_view function, std::uint64_t function_offset,
                       std::string_view module, std::optional<std::uint64_t> file_offset,
                       std::string_view source_file, std::uint64_t line);

/** A frame as one line, numbered as coredumpctl info's "Stack trace of
 *  thread" numbers them: "#3  0x000055dbc48956dc main+0x213 (crash_demo.c:156)
 *  in crash_demo  (signal frame)  [ring+core]" (the module's file name after
 *  "in", when there is one; the signal frame and the source only when
 *  known).  Pure; allocates. */
std::string frame_line(std::size_t index, const ExportFrame &f);

/** The re-raised fault as one sentence: "SIGSEGV (SEGV_ACCERR) at
 *  addr=0x10000040 pc=0x401136 in fault_here+0x6 (f.c:40), caught by the
 *  program's own handler on_segv+0x1c and re-raised with kill()". */
std::string reraised_line(const ExportReraised &r);

/** The crash's whole stack, the re-raised fault and the other threads'
 *  stacks, read from the timeline document's "crash" object (its
 *  "stack", "reraised", "reraised_note") and "thread_stacks" array (either
 *  may be null or of another type: absent then) into `t`.  The one reading
 *  of them that both inputs use: export_timeline_of() passes the document
 *  form of its Analysis (render.h crash_document()), so a core's export and
 *  its stored document's are the same.  `t.crash` must be set for the
 *  crash's parts to be kept. */
void export_stacks_of_document(const nlohmann::ordered_json *crash, const nlohmann::ordered_json *thread_stacks,
                               ExportTimeline &t);

/** The document's "cause" (null, missing or of another type: none;
 *  docs/timeline-json.md, "cause") into t.cause: each claim of
 *  "causes" that is an object with a string "kind" and "says" (and
 *  "window", a string or null), each string of "cannot_tell"; other
 *  elements are left out (the document is untrusted).  A section with
 *  neither is none.  The one reading of it that both inputs use:
 *  export_timeline_of() passes the document form of its Analysis. */
void export_cause_of_document(const nlohmann::ordered_json *cause, ExportTimeline &t);

/** The cause section's lines as the text has them (render.h; cause.h
 *  kMaxCauseLines): "cause: SAYS" for at most kMaxCauseLines claims, each
 *  followed by "  relies on: WINDOW" when it has one, then "cause: N more
 *  in the JSON document" when there are more, then "cause cannot be
 *  told: ..." per line of cannot_tell; each line escaped (printable())
 *  and ended by '\n'.  Pure; allocates. */
std::string cause_lines(const ExportCause &c);

/** One event.  The views point into the Analysis or the JSON event it
 *  was made from, and are used only during ExportWriter::event(). */
struct ExportEvent {
  std::optional<std::int64_t> age_ns;  /**< nullopt: cannot be placed */
  std::uint32_t tid = 0;
  std::uint32_t lane = 0;
  std::uint64_t seq = 0;
  std::string_view kind;         /**< "USER", "MALLOC", "SPAN_BEGIN", ... */
  std::string_view name;         /**< display name (Event::name) */
  std::uint32_t id = 0;
  std::array<ExportArg, 2> args{{{"arg0", 0}, {"arg1", 0}}};
  std::optional<std::string_view> text;   /**< inline text, when text */
  std::optional<std::uint32_t> span;      /**< SPAN_BEGIN/END: its index in
                                               ExportTimeline::spans */
  std::optional<ExportSignal> signal;     /**< kind CRASH */
  /** Ring format 4: the event's stack, innermost first: its own location
   *  (the return address, or a CRASH's pc), then the callers the walk
   *  found; and how the walk ended ("depth_limit", ...).  Empty and
   *  nullopt: no stack was recorded. */
  std::vector<ExportFrame> stack;
  std::optional<std::string_view> stack_end;
};

/** A streaming writer of one format. */
class ExportWriter {
 public:
  virtual ~ExportWriter() = default;
  /** One event, in merged order.  An error stops the writer. */
  virtual Result<void> event(const ExportEvent &e) = 0;
  /** After the last event: the metadata, the thread tracks, the
   *  patched packet headers.  Call once. */
  virtual Result<void> finish() = 0;
};

/** Chrome Trace Event Format, to `out` (render.h Output: called with
 *  pieces of about 64 KiB; false stops it, and the writer then returns a
 *  kIo error with errno as it was).  docs/export.md gives the mapping. */
std::unique_ptr<ExportWriter> chrome_trace_writer(ExportTimeline timeline,
                                                  std::function<bool(std::string_view)> out);

/** CTF 1.8 into the directory `dir`, which it creates (mode 0755); an
 *  existing directory must be empty (else kInvalidArgument naming it).
 *  Writes `metadata` and one `stream_TID` per thread with placed events;
 *  each stream keeps a file descriptor and a 16 KiB buffer open until
 *  finish(), so a timeline of more threads than RLIMIT_NOFILE allows fails
 *  with EMFILE, naming the stream.  A thread whose losses it knows but
 *  that has no placed event gets no stream: its losses are in the
 *  metadata's env (thread_TID_lost). */
Result<std::unique_ptr<ExportWriter>> ctf_writer(ExportTimeline timeline, const std::string &dir);

/* From an Analysis (core-timeline-read); built into ct::reader. */

/** The ExportTimeline of an Analysis: threads, lane losses of its valid
 *  rings, spans, crash, windows, time origin.  O(events). */
ExportTimeline export_timeline_of(const Analysis &a);

/** Writes every event of `a` to `w`, then finishes it. */
Result<void> export_events(const Analysis &a, ExportWriter &w);

/* From a stored document (ctl-query); built into ct::export. */

/** Learns, from a document's events one by one, what the ExportTimeline
 *  needs of them (the oldest age, the reference's wall clock), for
 *  export_timeline_of_document(); a first pass over "events". */
struct DocumentEventScan {
  std::optional<std::int64_t> oldest_age_ns;
  std::optional<std::int64_t> reference_realtime_ns;
  std::optional<std::int64_t> reference_distance;  /**< |age| of the event
                                                        that gave it */
  std::uint64_t events = 0;
  /** (ring, lane) -> the tid of its first event, for the losses of a lane
   *  whose owner left it; at most kMaxLanes entries. */
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> lane_tid;
  static constexpr std::size_t kMaxLanes = 1u << 16;
  void scan(const nlohmann::ordered_json &event);
};

/** The ExportTimeline of a document (docs/timeline-json.md), from its
 *  top-level values "process", "status", "crash", "rings", "time",
 *  "spans", "threads", "windows", "absence_proves_nothing" and
 *  "warnings" (members that are missing or of the wrong type count as
 *  absent: the document is untrusted), and the scan of its events. */
ExportTimeline export_timeline_of_document(const nlohmann::ordered_json &top, const DocumentEventScan &scan);

/** An ExportEvent viewing the JSON event `e` (which must outlive its use);
 *  nullopt when `e` is not an event object with "kind", "name" and "tid"
 *  (the caller counts it). */
std::optional<ExportEvent> export_event_of_json(const nlohmann::ordered_json &e);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_EXPORT_H
