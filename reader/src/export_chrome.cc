/* SPDX-License-Identifier: MIT */
/*
 * export_chrome.cc - the Chrome Trace Event Format writer (export.h).
 *
 * The format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
 * ("Trace Event Format"), JSON object form.  What is used of it, and no
 * more, so that Perfetto, chrome://tracing and speedscope read it alike:
 *  - ph "M" process_name, thread_name (with the thread's losses in args),
 *    thread_sort_index;
 *  - ph "X" with dur for spans (closed, open to the reference, begin lost
 *    with its duration known), their state in args;
 *  - ph "i" with "s":"t" for every other event, "s":"p" for the crash;
 *  - ts in microseconds with three decimals (ns exact), pid, tid;
 *  - an event's stack (ring format 4) as "sf", an id in the top-level
 *    "stackFrames" (each frame: name, category = its module, parent = the
 *    frame that called it), and its walk's end in args.stack_end;
 *  - the crash's whole stack (the document's crash.stack) as the
 *    crashing thread's CRASH instant's "sf" in place of its own walk, its
 *    frames also saying where they came from ("from", an extra member
 *    viewers pass over), and as args.crash_stack, one line a frame, for
 *    Perfetto, which does not read stackFrames from JSON; the re-raised
 *    fault in args.reraised; each other thread's stack an instant
 *    "stack at the crash" on its track;
 *  - the cause section, when there is one, as an instant "cause: KIND"
 *    (cat CAUSE) at the time reference and otherData.cause.
 *
 * Each event is written with fmt into the buffer, its strings escaped by
 * nlohmann (invalid UTF-8 replaced); the few distinct names and argument
 * names are escaped once and kept.
 */
#include <algorithm>
#include <array>
#include <cerrno>
#include <cinttypes>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core_timeline/reader/export.h"
#include "core_timeline/reader/printable.h"

namespace core_timeline::reader {

namespace {

using ojson = nlohmann::ordered_json;

/* `s` as a JSON string literal, quotes included. */
std::string json_quoted(std::string_view s) { return ojson(s).dump(-1, ' ', false, ojson::error_handler_t::replace); }

/* An integer in decimal, without allocating. */
template <class T>
void append_int(std::string &out, T v) {
  const fmt::format_int f(v);
  out.append(f.data(), f.size());
}

/* a - b, or the int64 limit it passes: ages come from an untrusted ring,
 * and two of them 2^63 ns apart do not fit (fuzz_recipe's finding,
 * reader/fuzz/regressions/fuzz_recipe/). */
std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}
std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

/* Microseconds with three decimals (INT64_MIN included). */
void append_us(std::string &out, std::int64_t v) {
  std::uint64_t ns = static_cast<std::uint64_t>(v);
  if (v < 0) {
    out += '-';
    ns = 0 - ns;
  }
  append_int(out, ns / 1000);
  const auto frac = static_cast<int>(ns % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, 4);
}

class ChromeWriter final : public ExportWriter {
 public:
  ChromeWriter(ExportTimeline t, std::function<bool(std::string_view)> out)
      : t_(std::move(t)), out_(std::move(out)) {
    buf_.reserve(kPiece + 4096);
    buf_ += "{\"traceEvents\":[";
    for (const auto &tr : t_.tracks) threads_[tr.tid];
  }

  Result<void> event(const ExportEvent &e) override {
    if (failed_) return failure();
    ++seen_;
    if (!e.age_ns) {
      ++unplaced_;
      return {};
    }
    const std::int64_t ts = sat_sub(*e.age_ns, t_.origin_age_ns);
    /* The crashing thread's CRASH event carries the whole crash stack (its
     * walk merged with the core's unwind) in place of its own walk. */
    const ExportCrashStack *whole = whole_stack_of(e);
    if (whole) pending_sf_ = whole->frames.empty() ? -1 : stack_id(whole->frames);
    else pending_sf_ = e.stack.empty() ? -1 : stack_id(e.stack);
    threads_[e.tid];
    const ExportSpan *sp = e.span && *e.span < t_.spans.size() ? &t_.spans[*e.span] : nullptr;
    if (e.kind == "SPAN_BEGIN" && sp) {
      /* The slice, from its begin: closed with its duration, open (or
       * whose end may be lost) up to the reference, saying so. */
      const std::int64_t none = -1;
      std::int64_t dur = none;
      if (sp->state == "closed" && sp->duration_ns) dur = *sp->duration_ns;
      else if ((sp->state == "open" || sp->state == "open_or_end_lost") && sp->open_for_ns) dur = *sp->open_for_ns;
      if (dur < 0) dur = none;
      begin_event(e, dur != none ? 'X' : 'i', ts, dur != none ? std::optional<std::int64_t>(dur) : std::nullopt);
      write_args(e, sp, dur != none ? nullptr : "no duration known");
      close_event();
    } else if (e.kind == "SPAN_END" && sp && sp->state != "begin_lost") {
      /* Its slice was drawn from the begin; the end adds nothing.  An end
       * without a begin (no_begin: its token names none; a span of an
       * unknown state) is an instant. */
      if (!span_has_begin(*sp)) {
        begin_event(e, 'i', ts, std::nullopt);
        write_args(e, sp, sp->state == "no_begin" ? "not a span of this ring: its token names no begin" : "end only");
        close_event();
      }
    } else if (e.kind == "SPAN_END" && sp) {
      /* begin_lost: a slice only when the ender read the begin's time, and
       * never starting before it; else the end alone. */
      if (sp->duration_ns && *sp->duration_ns >= 0 && *sp->duration_ns <= ts) {
        begin_event(e, 'X', ts - *sp->duration_ns, sp->duration_ns);
        write_args(e, sp, "its begin was lost; its time is the one the end recorded");
      } else {
        begin_event(e, 'i', ts, std::nullopt);
        write_args(e, sp, "its begin was lost");
      }
      close_event();
    } else if (e.signal) {
      begin_event(e, 'i', ts, std::nullopt, 'p');
      const bool crashed_thread = t_.crash && e.tid == t_.crash->tid;
      write_args(e, nullptr, nullptr, crashed_thread ? &*t_.crash : nullptr);
      close_event();
      /* The crashing thread's CRASH is written: no crash from the notes. */
      if (crashed_thread || !t_.crash) crash_written_ = true;
    } else {
      begin_event(e, 'i', ts, std::nullopt);
      write_args(e, nullptr, nullptr);
      close_event();
    }
    ++written_;
    if (buf_.size() >= kPiece && !flush()) return failure();
    return {};
  }

  Result<void> finish() override {
    if (failed_) return failure();
    write_crash_instants();
    write_metadata();
    buf_ += ']';
    if (!frames_.empty()) write_stack_frames();
    buf_ += ",\"displayTimeUnit\":\"ns\",\"otherData\":";
    buf_ += other_data().dump(-1, ' ', false, ojson::error_handler_t::replace);
    buf_ += "}\n";
    if (!flush()) return failure();
    return {};
  }

 private:
  struct Thread {
    std::optional<std::int64_t> first_ts;
  };

  /* A span whose SPAN_BEGIN is in the timeline (and drawn from it). */
  static bool span_has_begin(const ExportSpan &sp) {
    return sp.state == "closed" || sp.state == "open" || sp.state == "open_or_end_lost";
  }

  /* The escaped form of a name, kept for the next time (at most
   * kMaxCached distinct names: ids without a name are "id=0x..." each). */
  const std::string &cached(std::string_view s) {
    auto it = names_.find(s);
    if (it != names_.end()) return it->second;
    if (names_.size() >= kMaxCached) return scratch_ = json_quoted(s);
    return names_.emplace(std::string(s), json_quoted(s)).first->second;
  }

  void separator() {
    if (count_++ > 0) buf_ += ',';
    buf_ += '\n';
  }

  void begin_event(const ExportEvent &e, char ph, std::int64_t ts, std::optional<std::int64_t> dur,
                   char scope = 't') {
    Thread &th = threads_[e.tid];
    if (!th.first_ts || ts < *th.first_ts) th.first_ts = ts;
    separator();
    buf_ += "{\"name\":";
    buf_ += cached(e.name);
    buf_ += ",\"cat\":";
    buf_ += cached(e.kind);
    buf_ += ",\"ph\":\"";
    buf_ += ph;
    buf_ += "\",\"ts\":";
    append_us(buf_, ts);
    if (dur) {
      buf_ += ",\"dur\":";
      append_us(buf_, *dur);
    }
    if (ph == 'i') {
      buf_ += ",\"s\":\"";
      buf_ += scope;
      buf_ += '"';
    }
    buf_ += ",\"pid\":";
    append_int(buf_, t_.pid);
    buf_ += ",\"tid\":";
    append_int(buf_, e.tid);
  }

  /* The whole crash stack, for the crashing thread's CRASH events. */
  const ExportCrashStack *whole_stack_of(const ExportEvent &e) const {
    if (!e.signal || !t_.crash || !t_.crash->stack || e.tid != t_.crash->tid) return nullptr;
    return &*t_.crash->stack;
  }

  /* Every key write_args() writes besides the two arguments'. */
  static constexpr std::array<std::string_view, 18> kOwnKeys = {
      "text",    "stack_end",    "state",         "ends", "span", "note", "signal",      "signal_name",   "si_code",
      "si_code_name", "fault_address", "kind", "id",   "lane", "seq",  "crash_stack", "reraised", "reraised_note"};

  /* `crash`: the crash facts whose whole stack and re-raised fault this
   * event carries (the crashing thread's CRASH event), or null. */
  void write_args(const ExportEvent &e, const ExportSpan *sp, const char *span_note,
                  const ExportCrash *crash = nullptr) {
    buf_ += ",\"args\":{";
    bool first = true;
    const auto key = [&](std::string_view k) {
      if (!first) buf_ += ',';
      first = false;
      buf_ += cached(k);
      buf_ += ':';
    };
    /* The arguments under their names, unless a name is one of the keys
     * written below or both are one (argument_keys renames them then). */
    std::string_view k0 = e.args[0].name, k1 = e.args[1].name;
    std::array<std::string, 2> renamed;
    const auto own = [](std::string_view k) {
      return std::find(kOwnKeys.begin(), kOwnKeys.end(), k) != kOwnKeys.end();
    };
    if (k0 == k1 || own(k0) || own(k1)) {
      renamed = argument_keys(k0, k1, kOwnKeys);
      k0 = renamed[0];
      k1 = renamed[1];
    }
    key(k0);
    append_int(buf_, e.args[0].value);
    key(k1);
    append_int(buf_, e.args[1].value);
    if (e.text) {
      key("text");
      buf_ += json_quoted(*e.text);
    }
    if (e.stack_end) {
      key("stack_end");
      buf_ += cached(*e.stack_end);
    }
    if (sp) {
      key("state");
      buf_ += cached(sp->state);
      if (sp->state == "open") {
        key("ends");
        buf_ += "\"still open at the crash: drawn up to the time reference\"";
      } else if (sp->state == "open_or_end_lost") {
        key("ends");
        buf_ += "\"no end found, and its end may have been lost: drawn up to the time reference, not known to "
                "have lasted so long\"";
      }
      if (span_note) {
        key("span");
        buf_ += cached(span_note);
      }
      if (!sp->note.empty()) {
        key("note");
        buf_ += json_quoted(sp->note);
      }
    }
    if (e.signal) {
      key("signal");
      fmt::format_to(std::back_inserter(buf_), "{}", e.signal->signo);
      key("signal_name");
      buf_ += json_quoted(e.signal->signal_name);
      key("si_code");
      fmt::format_to(std::back_inserter(buf_), "{}", e.signal->si_code);
      key("si_code_name");
      buf_ += json_quoted(e.signal->si_code_name);
      key("fault_address");
      fmt::format_to(std::back_inserter(buf_), "\"{:#x}\"", e.signal->fault_address);
    }
    if (crash) {
      const ojson extra = crash_stack_args(*crash);
      for (const auto &[k, v] : extra.items()) {
        key(k);
        buf_ += v.dump(-1, ' ', false, ojson::error_handler_t::replace);
      }
    }
    buf_ += first ? "\"kind\":" : ",\"kind\":";
    buf_ += cached(e.kind);
    buf_ += ",\"id\":";
    append_int(buf_, e.id);
    buf_ += ",\"lane\":";
    append_int(buf_, e.lane);
    buf_ += ",\"seq\":";
    append_int(buf_, e.seq);
    buf_ += '}';
  }

  void close_event() {
    if (pending_sf_ >= 0) {
      buf_ += ",\"sf\":";
      append_int(buf_, pending_sf_);
      pending_sf_ = -1;
    }
    buf_ += '}';
  }

  /* The frames' ids in stackFrames, outermost first so that each names
   * its parent; the innermost's id is the event's "sf".  A frame of the
   * crash stack or a thread stack is told apart by where it came from. */
  std::int64_t stack_id(const std::vector<ExportFrame> &stack) {
    std::int64_t parent = -1;
    for (std::size_t i = stack.size(); i-- > 0;) {
      const ExportFrame &f = stack[i];
      auto [it, fresh] = frame_ids_.try_emplace({parent, f.name, f.module, f.from, f.signal_frame},
                                                static_cast<std::int64_t>(frame_ids_.size()));
      if (fresh) frames_.push_back({it->second, parent, f.name, f.module, f.from, f.signal_frame});
      parent = it->second;
    }
    return parent;
  }

  /* The args a crash's whole stack and re-raised fault add (to the
   * crashing thread's CRASH event, or the crash instant made from the
   * core's notes): "crash_stack" {frames: one line each (frame_line():
   * address, name, module, signal frame, where it came from), core_end,
   * ring_end, agree, note}, "reraised" and "reraised_note". */
  static ojson crash_stack_args(const ExportCrash &c) {
    ojson j = ojson::object();
    if (c.stack) {
      ojson lines = ojson::array();
      for (std::size_t i = 0; i < c.stack->frames.size(); ++i) lines.push_back(frame_line(i, c.stack->frames[i]));
      j["crash_stack"] = {{"frames", std::move(lines)},
                          {"core_end", c.stack->core_end.empty() ? std::string("complete") : c.stack->core_end},
                          {"ring_end", c.stack->ring_end.empty() ? ojson(nullptr) : ojson(c.stack->ring_end)},
                          {"agree", c.stack->agree},
                          {"note", c.stack->note.empty() ? ojson(nullptr) : ojson(c.stack->note)}};
    }
    if (c.reraised) {
      const ExportReraised &r = *c.reraised;
      j["reraised"] = {{"fault", reraised_line(r)},
                       {"signal", r.signo},
                       {"signal_name", r.signal_name},
                       {"si_code", r.si_code},
                       {"si_code_name", r.si_code_name},
                       {"fault_address", r.fault_address ? ojson(fmt::format("{:#x}", *r.fault_address)) : ojson(nullptr)},
                       {"sender_pid", r.sender_pid ? ojson(*r.sender_pid) : ojson(nullptr)},
                       {"pc", fmt::format("{:#x}", r.pc)},
                       {"at", r.at},
                       {"handler", r.handler.empty() ? ojson(nullptr) : ojson(r.handler)},
                       {"raised_with", r.raised_with}};
    }
    if (!c.reraised_note.empty()) j["reraised_note"] = c.reraised_note;
    return j;
  }

  void write_stack_frames() {
    buf_ += ",\"stackFrames\":{";
    bool first = true;
    for (const auto &f : frames_) {
      if (!first) buf_ += ',';
      first = false;
      ojson j = {{"name", f.name}, {"category", f.module.empty() ? std::string("?") : f.module}};
      if (f.parent >= 0) j["parent"] = std::to_string(f.parent);
      if (!f.from.empty()) j["from"] = f.from;
      if (f.signal_frame) j["signal_frame"] = true;
      buf_ += json_quoted(std::to_string(f.id));
      buf_ += ':';
      buf_ += j.dump(-1, ' ', false, ojson::error_handler_t::replace);
    }
    buf_ += '}';
  }

  struct FrameNode {
    std::int64_t id, parent;
    std::string name, module, from;
    bool signal_frame;
  };
  std::map<std::tuple<std::int64_t, std::string, std::string, std::string, bool>, std::int64_t> frame_ids_;
  std::vector<FrameNode> frames_;
  std::int64_t pending_sf_ = -1;

  /* One metadata or instant event built with nlohmann (few of them). */
  void raw(const ojson &j) {
    separator();
    buf_ += j.dump(-1, ' ', false, ojson::error_handler_t::replace);
  }

  static std::string track_name(std::uint32_t tid, std::string_view name) {
    return name.empty() ? fmt::format("tid {}", tid) : std::string(name);
  }

  /* Before the metadata (which names every track these use): the crash
   * from the core's notes when no CRASH event of the ring was written,
   * and each other thread's stack unwound from the core, at the time
   * reference on its track. */
  void write_crash_instants() {
    std::string ref;
    append_us(ref, sat_sub(0, t_.origin_age_ns));
    if (!crash_written_ && t_.crash) {
      /* No CRASH event in the ring: the crash from the core's notes, at the
       * time reference, saying so, with the whole crash stack. */
      const ExportCrash &c = *t_.crash;
      threads_[c.tid];
      ojson ev = {{"name", c.signo ? "CRASH " + c.signal_name : std::string("CRASH")},
                  {"cat", "CRASH"},
                  {"ph", "i"},
                  {"ts", ojson::parse(ref)},
                  {"s", "p"},
                  {"pid", t_.pid},
                  {"tid", c.tid},
                  {"args", crash_json(c, std::string(c.ring_slot ? "the ring's CRASH event cannot be placed in time"
                                                                 : "not in the ring") +
                                             ": from the core's notes, placed at the time reference (" +
                                             (t_.reference.empty() ? std::string("none") : t_.reference) + ")")}};
      if (c.stack && !c.stack->frames.empty()) ev["sf"] = stack_id(c.stack->frames);
      raw(ev);
    }
    if (t_.cause) write_cause_instant(ref);
    for (const ExportThreadStack &ts : t_.thread_stacks) {
      threads_[ts.tid];
      ojson lines = ojson::array();
      for (std::size_t i = 0; i < ts.frames.size(); ++i) lines.push_back(frame_line(i, ts.frames[i]));
      ojson ev = {{"name", "stack at the crash"},
                  {"cat", "STACK"},
                  {"ph", "i"},
                  {"ts", ojson::parse(ref)},
                  {"s", "t"},
                  {"pid", t_.pid},
                  {"tid", ts.tid},
                  {"args",
                   {{"frames", std::move(lines)},
                    {"end", ts.end.empty() ? std::string("complete") : ts.end},
                    {"from", "the core's unwind of this thread, placed at the time reference"}}}};
      if (!ts.frames.empty()) ev["sf"] = stack_id(ts.frames);
      raw(ev);
    }
  }

  /* The cause section (docs/cause.md) as an instant at the time reference
   * (the crash) on the crashing thread's track, process-scoped as the
   * crash is: named "cause: KIND" by its first claim ("cause cannot be
   * told" without one), its args the first claim's kind, says and
   * relies_on, and every claim and cannot_tell line (cause_args()). */
  void write_cause_instant(const std::string &ref) {
    const ExportCause &c = *t_.cause;
    const std::uint32_t tid = t_.crash ? t_.crash->tid : 0;
    threads_[tid];
    ojson args = ojson::object();
    if (!c.causes.empty()) {
      const ExportCauseClaim &first = c.causes.front();
      args["kind"] = first.kind;
      args["says"] = first.says;
      args["relies_on"] = first.window.empty() ? ojson(nullptr) : ojson(first.window);
    }
    const ojson all = cause_args(c);
    for (const auto &[k, v] : all.items()) args[k] = v;
    raw({{"name", c.causes.empty() ? std::string("cause cannot be told") : "cause: " + c.causes.front().kind},
         {"cat", "CAUSE"},
         {"ph", "i"},
         {"ts", ojson::parse(ref)},
         {"s", "p"},
         {"pid", t_.pid},
         {"tid", tid},
         {"args", std::move(args)}});
  }

  /* {"causes": [{kind, says, window}], "cannot_tell": [...]}: the
   * instant's and otherData's. */
  static ojson cause_args(const ExportCause &c) {
    ojson causes = ojson::array();
    for (const ExportCauseClaim &x : c.causes)
      causes.push_back({{"kind", x.kind}, {"says", x.says}, {"window", x.window.empty() ? ojson(nullptr) : ojson(x.window)}});
    return {{"causes", std::move(causes)}, {"cannot_tell", c.cannot_tell}};
  }

  void write_metadata() {
    const std::string comm = printable_name(t_.comm);
    raw({{"name", "process_name"}, {"ph", "M"}, {"ts", 0}, {"pid", t_.pid}, {"tid", 0},
         {"args", {{"name", comm.empty() ? fmt::format("pid {}", t_.pid) : comm}}}});
    std::uint32_t sort = 0;
    const auto tracks = tracks_by_tid(t_);
    for (const auto &[tid, th] : threads_) {
      const auto found = tracks.find(tid);
      const ExportTrack *tr = found == tracks.end() ? nullptr : found->second;
      ojson args = {{"name", track_name(tid, tr ? tr->name : "")}};
      if (tr) {
        args["events"] = tr->events;
        args["crashed"] = tr->crashed;
        args["overwritten"] = tr->overwritten;
        args["torn"] = tr->torn;
        args["missing"] = tr->missing;
        args["lost"] = tr->lost();
      }
      raw({{"name", "thread_name"}, {"ph", "M"}, {"ts", 0}, {"pid", t_.pid}, {"tid", tid}, {"args", args}});
      /* The crashed thread first, the others by tid. */
      const std::uint32_t index = tr && tr->crashed ? 0 : ++sort;
      raw({{"name", "thread_sort_index"}, {"ph", "M"}, {"ts", 0}, {"pid", t_.pid}, {"tid", tid},
           {"args", {{"sort_index", index}}}});
      if (tr && tr->lost() > 0) {
        /* Visible on the track: where what it kept begins. */
        std::string ts;
        append_us(ts, th.first_ts.value_or(0));
        ojson ev = {{"name", fmt::format("{} events lost before this", tr->lost())},
                    {"cat", "LOSS"},
                    {"ph", "i"},
                    {"ts", ojson::parse(ts)},
                    {"s", "t"},
                    {"pid", t_.pid},
                    {"tid", tid},
                    {"args",
                     {{"overwritten", tr->overwritten},
                      {"torn", tr->torn},
                      {"missing", tr->missing},
                      {"placed", th.first_ts ? "at the start of the events this thread kept"
                                             : "no event of this thread can be placed in time"}}}};
        raw(ev);
      }
    }
    if (t_.dropped > 0) {
      /* On a track of its own: no thread wrote them. */
      raw({{"name", "thread_name"}, {"ph", "M"}, {"ts", 0}, {"pid", t_.pid}, {"tid", 0},
           {"args", {{"name", "events without a thread"}}}});
      raw({{"name", fmt::format("{} events dropped (no lane: thread and time unknown)", t_.dropped)},
           {"cat", "LOSS"},
           {"ph", "i"},
           {"ts", 0},
           {"s", "p"},
           {"pid", t_.pid},
           {"tid", 0},
           {"args", {{"dropped", t_.dropped}}}});
    }
  }

  static ojson crash_json(const ExportCrash &c, const std::string &placed) {
    ojson j = {{"signal", c.signo},
               {"signal_name", c.signal_name},
               {"si_code", c.si_code ? ojson(*c.si_code) : ojson(nullptr)},
               {"si_code_name", c.si_code_name},
               {"fault_address", c.fault_address ? ojson(fmt::format("{:#x}", *c.fault_address)) : ojson(nullptr)},
               {"tid", c.tid},
               {"pc", fmt::format("{:#x}", c.pc)},
               {"ring_slot", c.ring_slot}};
    if (!placed.empty()) j["placed"] = placed;
    const ojson extra = crash_stack_args(c);
    for (const auto &[k, v] : extra.items()) j[k] = v;
    return j;
  }

  ojson other_data() const {
    ojson d;
    d["generator"] = "core-timeline";
    d["pid"] = t_.pid;
    d["comm"] = printable_name(t_.comm);
    d["status"] = t_.status;
    d["time_reference"] = t_.reference;
    d["ts_zero_age_ns"] = t_.origin_age_ns;
    d["ts_zero_realtime_ns"] =
        t_.reference_realtime_ns ? ojson(sat_add(*t_.reference_realtime_ns, t_.origin_age_ns)) : ojson(nullptr);
    d["events"] = t_.events;
    d["events_seen"] = seen_;
    d["events_written"] = written_;
    d["events_without_time"] = unplaced_;
    d["dropped"] = t_.dropped;
    d["shared_lane"] = {{"overwritten", t_.shared_overwritten},
                        {"torn", t_.shared_torn},
                        {"missing", t_.shared_missing}};
    ojson tracks = ojson::array();
    std::uint64_t lost = t_.dropped + t_.shared_overwritten + t_.shared_torn + t_.shared_missing;
    for (const auto &tr : t_.tracks) {
      lost += tr.lost();
      if (tr.lost() == 0) continue;
      tracks.push_back({{"tid", tr.tid},
                        {"name", track_name(tr.tid, tr.name)},
                        {"overwritten", tr.overwritten},
                        {"torn", tr.torn},
                        {"missing", tr.missing}});
    }
    d["lost"] = lost;
    d["losses_by_thread"] = tracks;
    ojson windows = ojson::array();
    for (const auto &w : t_.windows)
      windows.push_back({{"source", w.source},
                         {"events", w.events},
                         {"overwritten", w.overwritten},
                         {"dropped", w.dropped},
                         {"torn", w.torn},
                         {"complete_for_ns", w.complete_for_ns ? ojson(*w.complete_for_ns) : ojson(nullptr)},
                         {"says", w.says}});
    d["windows"] = windows;
    d["absence_proves_nothing"] = t_.absence_proves_nothing;
    d["crash"] = t_.crash ? crash_json(*t_.crash, "") : ojson(nullptr);
    d["warnings"] = t_.warnings;
    if (t_.cause) d["cause"] = cause_args(*t_.cause);
    return d;
  }

  bool flush() {
    if (!buf_.empty() && !out_(buf_)) {
      failed_ = true;
      errno_ = errno;
    }
    buf_.clear();
    return !failed_;
  }

  Error failure() const { return system_error(errno_ ? errno_ : EIO, "writing the chrome-trace export"); }

  static constexpr std::size_t kPiece = 64 * 1024;
  ExportTimeline t_;
  std::function<bool(std::string_view)> out_;
  std::string buf_;
  std::map<std::uint32_t, Thread> threads_;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  static constexpr std::size_t kMaxCached = 4096;
  std::unordered_map<std::string, std::string, Hash, std::equal_to<>> names_;
  std::string scratch_;
  std::uint64_t count_ = 0, seen_ = 0, written_ = 0, unplaced_ = 0;
  bool crash_written_ = false, failed_ = false;
  int errno_ = 0;
};

}  // namespace

std::array<std::string, 2> argument_keys(std::string_view arg0, std::string_view arg1,
                                         std::span<const std::string_view> fixed) {
  std::array<std::string, 2> keys{std::string(arg0), std::string(arg1)};
  for (std::string &k : keys)
    if (std::find(fixed.begin(), fixed.end(), k) != fixed.end()) k += "_arg";
  while (keys[1] == keys[0]) keys[1] += "_1";
  return keys;
}

std::string_view export_format_name(ExportFormat f) noexcept {
  switch (f) {
    case ExportFormat::kChromeTrace: return "chrome-trace";
    case ExportFormat::kCtf: return "ctf";
  }
  return "";
}

std::unordered_map<std::uint32_t, const ExportTrack *> tracks_by_tid(const ExportTimeline &t) {
  std::unordered_map<std::uint32_t, const ExportTrack *> index;
  index.reserve(t.tracks.size());
  for (const auto &tr : t.tracks) index.emplace(tr.tid, &tr);
  return index;
}

LaneLosses::LaneLosses(ExportTimeline &timeline) : t_(timeline) {
  for (std::size_t i = 0; i < t_.tracks.size(); ++i) track_of_.emplace(t_.tracks[i].tid, i);
}

void LaneLosses::charge(bool shared, std::uint32_t owner, std::string_view owner_name, std::uint64_t overwritten,
                        std::uint64_t torn, std::uint64_t missing) {
  if (shared || owner == 0) {
    t_.shared_overwritten += overwritten;
    t_.shared_torn += torn;
    t_.shared_missing += missing;
    return;
  }
  auto found = track_of_.find(owner);
  if (found == track_of_.end()) {
    if (overwritten + torn + missing == 0) return;
    ExportTrack tr;
    tr.tid = owner;
    tr.name = std::string(owner_name);
    found = track_of_.emplace(owner, t_.tracks.size()).first;
    t_.tracks.push_back(std::move(tr));
  }
  ExportTrack &track = t_.tracks[found->second];
  track.overwritten += overwritten;
  track.torn += torn;
  track.missing += missing;
}

std::unique_ptr<ExportWriter> chrome_trace_writer(ExportTimeline timeline, std::function<bool(std::string_view)> out) {
  return std::make_unique<ChromeWriter>(std::move(timeline), std::move(out));
}

}  // namespace core_timeline::reader
