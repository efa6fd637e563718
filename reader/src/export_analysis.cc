/* SPDX-License-Identifier: MIT */
/*
 * export_analysis.cc - an Analysis into the exporter's input (export.h):
 * the ExportTimeline from its tables, and each Event as an ExportEvent
 * viewing the Analysis (no copy of the events).
 */
#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/export.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "cause_render.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

ExportTimeline export_timeline_of(const Analysis &a) {
  ExportTimeline t;
  t.pid = a.process.pid.value_or(0);
  t.comm = a.process.comm;
  t.status = std::string(status_name(a.status));
  t.reference = std::string(reference_name(a.time.reference));
  t.events = a.events.size();
  for (const Event &e : a.events)
    if (e.age_ns) t.origin_age_ns = std::min(t.origin_age_ns, *e.age_ns);
  /* A span whose begin was lost starts where its end says it began: its
   * end's age less its duration, both from the untrusted ring, so a begin
   * more than 2^63 ns before the reference (fuzz_recipe's finding,
   * reader/fuzz/regressions/fuzz_recipe/span-begin-age-overflow) cannot
   * be placed and moves nothing. */
  for (const Span &s : a.spans) {
    std::int64_t begin = 0;
    if (s.state == Span::State::kBeginLost && s.duration_ns && *s.duration_ns > 0 && s.end &&
        *s.end < a.events.size() && a.events[*s.end].age_ns &&
        !__builtin_sub_overflow(*a.events[*s.end].age_ns, *s.duration_ns, &begin))
      t.origin_age_ns = std::min(t.origin_age_ns, begin);
  }
  if (a.time.reference_event && *a.time.reference_event < a.events.size()) {
    const Event &r = a.events[*a.time.reference_event];
    std::int64_t at_age_0 = 0;
    if (r.realtime_ns && r.age_ns && !__builtin_sub_overflow(*r.realtime_ns, *r.age_ns, &at_age_0))
      t.reference_realtime_ns = at_age_0;
  } else if (a.time.reference == TimeBase::Reference::kSnapshot && a.snapshot) {
    /* A live snapshot's reference is no event: its own time (live.h). */
    t.reference_realtime_ns = a.snapshot->realtime_ns;
  }
  for (const ThreadSummary &th : a.threads) {
    ExportTrack tr;
    tr.tid = th.tid;
    tr.name = th.name;
    tr.crashed = th.crashed;
    tr.events = th.events;
    t.tracks.push_back(std::move(tr));
  }
  /* A lane's losses are its thread's: the owner's, or, for a lane whose
   * owner left it (the thread exited), the thread of its oldest kept
   * event, the one right after what was lost. */
  std::vector<std::vector<std::uint32_t>> lane_tid(a.rings.size());  /* [ring][lane], 0: none */
  for (const RingReport &r : a.rings)
    if (r.index < lane_tid.size() && r.ring) lane_tid[r.index].resize(r.ring->lanes.size() + 1, 0);
  for (const RingReport &r : a.rings)
    if (r.index < lane_tid.size() && r.ring)
      for (const LaneSummary &l : r.ring->lanes)
        if (l.index >= lane_tid[r.index].size()) lane_tid[r.index].resize(std::size_t{l.index} + 1, 0);
  for (const Event &e : a.events)
    if (e.ring < lane_tid.size() && e.lane < lane_tid[e.ring].size() && lane_tid[e.ring][e.lane] == 0)
      lane_tid[e.ring][e.lane] = e.tid;
  LaneLosses losses(t);
  for (const RingReport &r : a.rings) {
    if (r.state != RingReport::State::kValid || !r.ring) continue;
    t.dropped += r.ring->header.dropped;
    for (const LaneSummary &l : r.ring->lanes) {
      const std::uint64_t torn = l.torn + l.invalid;
      std::uint32_t owner = l.owner_tid;
      if (owner == 0 && r.index < lane_tid.size() && l.index < lane_tid[r.index].size())
        owner = lane_tid[r.index][l.index];
      losses.charge(l.shared, owner, l.owner_name, l.overwritten, torn, l.missing);
    }
  }
  t.spans.reserve(a.spans.size());
  for (const Span &s : a.spans)
    t.spans.push_back({std::string(span_state_name(s.state)), s.tid, s.duration_ns, s.open_for_ns, s.note});
  if (a.crash) {
    const CrashFacts &c = *a.crash;
    ExportCrash x;
    x.signo = c.signo;
    x.signal_name = c.signal_name;
    x.si_code = c.si_code;
    x.si_code_name = c.si_code_name;
    x.fault_address = c.fault_address;
    x.tid = c.tid;
    x.pc = c.pc;
    x.ring_slot = c.ring_slot;
    t.crash = std::move(x);
  }
  /* The whole crash stack, the re-raised fault and the thread stacks as the
   * document has them: the one reading a stored document's export uses. */
  const nlohmann::ordered_json stacks = crash_document(a);
  export_stacks_of_document(&stacks[document::key::crash], &stacks[document::key::thread_stacks], t);
  /* The cause section likewise, from its document form (cause_render.cc). */
  const nlohmann::ordered_json cause = detail::cause_json(a);
  export_cause_of_document(&cause, t);
  for (const SourceWindow &w : a.windows)
    t.windows.push_back({w.name.empty() ? std::string(f::source_name(w.source)) : w.name, w.events, w.overwritten,
                         w.dropped, w.torn, w.complete_for_ns, window_text(w)});
  t.absence_proves_nothing = a.absence_proves_nothing;
  t.warnings = a.warnings;
  return t;
}

Result<void> export_events(const Analysis &a, ExportWriter &w) {
  std::optional<std::string> text;
  for (const Event &e : a.events) {
    ExportEvent x;
    x.age_ns = e.age_ns;
    x.tid = e.tid;
    x.lane = e.lane;
    x.seq = e.seq;
    x.kind = a.kind_name_of(e);
    x.name = a.name_of(e);
    x.id = e.id;
    x.args[0].value = e.arg0;
    x.args[1].value = e.arg1;
    if (const auto n = a.arg_names_of(e)) {
      if (!(*n)[0].empty()) x.args[0].name = (*n)[0];
      if (!(*n)[1].empty()) x.args[1].name = (*n)[1];
    }
    if (e.inline_len > 0 && (text = event_inline_text(a, e))) x.text = *text;
    x.span = e.span;
    if (const CrashSlot *c = a.crash_of(e))
      x.signal = ExportSignal{c->signo, c->signal_name, c->si_code, c->si_code_name, c->fault_address};
    if (e.stack != StackState::kNone) {
      const auto frame_of = [](const Location &l) {
        ExportFrame f;
        f.address = l.address;
        f.name = frame_name(l.address, l.function, l.function_offset, l.in_module ? l.module : "",
                            l.in_module ? std::optional<std::uint64_t>(l.file_offset) : std::nullopt, l.source_file,
                            l.line);
        f.module = l.in_module ? l.module : std::string();
        return f;
      };
      if (const Location *l = a.location_of(e)) x.stack.push_back(frame_of(*l));
      for (const std::uint32_t f : a.frames_of(e)) x.stack.push_back(frame_of(a.locations[f]));
      x.stack_end = stack_state_name(e.stack);
    }
    CT_TRY_VOID(w.event(x));
  }
  return w.finish();
}

}  // namespace core_timeline::reader
