/* SPDX-License-Identifier: MIT */
/* The analysis's spans step: the events placed in time, each source's
 * window, the spans begun and ended, and the threads summarized. */
#include "analyzer.h"

namespace core_timeline::reader {

/* Each source's window (SourceWindow): what survives, what was lost, and
 * since when nothing was. */
void Analyzer::build_windows() {
  bool any = false;
  for (const auto &r : a_.rings) any |= r.ring && r.state == RingReport::State::kValid;
  if (!any) return;
  static constexpr const char *kNames[f::kSourceCount] = {"user", "alloc", "io"};
  struct Acc {
    std::uint64_t oldest = UINT64_MAX;  /* ticks */
    std::uint64_t boundary = 0;         /* newest oldest-surviving of a lossy lane */
    bool boundary_untimed = false;
  };
  Acc acc[f::kSourceCount];
  a_.windows.resize(f::kSourceCount);
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
    a_.windows[c].source = c;
    a_.windows[c].name = kNames[c];
    a_.windows[c].losses_by_source = true;
  }
  for (const auto &e : a_.events) {
    /* A version-3 lane's source (its LANE_CLAIM is its own), else the kind's. */
    std::uint32_t c = f::source_of_kind(e.kind);
    if (const DecodedRing *d = ring_of(a_, e.ring); d != nullptr && e.lane < d->lanes.size() && d->lanes[e.lane].source)
      c = std::min(*d->lanes[e.lane].source, f::kSourceCount - 1);
    a_.windows[c].events++;
    if (e.timestamp != 0 && e.timestamp < acc[c].oldest) acc[c].oldest = e.timestamp;
  }
  for (const auto &r : a_.rings) {
    if (!r.ring || r.state != RingReport::State::kValid) continue;
    const DecodedRing &d = *r.ring;
    const bool by_source = !d.header.sources.empty();
    static constexpr std::uint32_t kBits[f::kSourceCount] = {TL_SOURCE_USER, TL_SOURCE_ALLOC, TL_SOURCE_IO};
    for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
      SourceWindow &w = a_.windows[c];
      w.losses_by_source &= by_source;
      w.dropped += by_source ? d.header.sources[c].dropped : d.header.dropped;
      if (by_source) w.recorder_loaded = c == f::kSourceUser || d.header.sources[c].present;
      if (d.header.enabled_sources != 0) w.enabled = (d.header.enabled_sources & kBits[c]) != 0;
    }
    for (const auto &l : d.lanes)
      for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
        if (l.source && *l.source != c) continue;
        SourceWindow &w = a_.windows[c];
        w.overwritten += l.overwritten;
        w.torn += l.torn + l.invalid + l.missing;
        if (l.overwritten == 0) continue;
        if (l.first_timestamp == 0) acc[c].boundary_untimed = true;
        else if (l.first_timestamp > acc[c].boundary) acc[c].boundary = l.first_timestamp;
      }
  }
  const DecodedRing *ref_ring = a_.time.reference_ring ? ring_of(a_, *a_.time.reference_ring) : nullptr;
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
    SourceWindow &w = a_.windows[c];
    w.lost = w.overwritten > 0 || w.dropped > 0;
    if (ref_ring != nullptr && acc[c].oldest != UINT64_MAX)
      w.oldest_age_ns = ticks_delta_ns(*ref_ring, acc[c].oldest, a_.time.reference_ticks);
    if (ref_ring == nullptr || w.dropped > 0 || acc[c].boundary_untimed) continue;
    const std::uint64_t since = w.overwritten == 0 ? ref_ring->header.anchor_ticks : acc[c].boundary;
    w.complete_since_init = w.overwritten == 0;
    /* An age is negative before the reference; the window is its length.
     * A lane of another thread may have wrapped after the reference (the
     * CRASH) as well: then nothing of the source is complete at it (0). */
    if (since != 0)
      if (const auto age = ticks_delta_ns(*ref_ring, since, a_.time.reference_ticks))
        w.complete_for_ns = std::max<std::int64_t>(0, -*age);
  }
}

/* A live snapshot's time on the slot clock of its first valid ring: the
 * ticks the snapshot read itself when the ring's clock is the TSC it
 * read (x86-64) or CNTVCT (AArch64), else its CLOCK_MONOTONIC placed with
 * the ring's init anchor and rate.  False when neither can be told. */
bool Analyzer::snapshot_reference() {
  const LiveSnapshotNote &n = *a_.snapshot;
  for (const auto &r : a_.rings) {
    if (r.state != RingReport::State::kValid || !r.ring) continue;
    const DecodedRing &d = *r.ring;
#if defined(__x86_64__)
    const bool same_clock = (d.header.compat_flags & f::kCompatClockTsc) != 0 && core_.machine() == EM_X86_64;
#elif defined(__aarch64__)
    const bool same_clock = (d.header.compat_flags & f::kCompatClockCntvct) != 0 && core_.machine() == EM_AARCH64;
#else
    const bool same_clock = false;
#endif
    std::uint64_t ticks = 0;
    if (same_clock && n.ticks > d.header.anchor_ticks) {
      ticks = n.ticks;
    } else if (d.ticks_per_second > 0 && n.monotonic_ns > 0 &&
               static_cast<std::uint64_t>(n.monotonic_ns) > d.header.anchor_monotonic_ns) {
      const long double dt = static_cast<long double>(static_cast<std::uint64_t>(n.monotonic_ns) -
                                                      d.header.anchor_monotonic_ns);
      /* The note and the header are the core's word: a time past what 64
       * bits of ticks can hold cannot be told (fuzz_recipe found one). */
      const long double at = static_cast<long double>(d.header.anchor_ticks) + dt * d.ticks_per_second / 1e9L;
      if (at < 1.8e19L) ticks = static_cast<std::uint64_t>(at);
    }
    if (ticks == 0) return false;
    a_.time.reference_ticks = ticks;
    a_.time.reference_ring = r.index;
    return true;
  }
  return false;
}

/* Ages: relative to the CRASH event (the crashing thread's, else the last
 * one), else to the newest event with a timestamp.  The slot clock is one
 * machine-wide counter, so an event's ticks minus the reference's, at its
 * ring's rate, is its age. */
void Analyzer::place_in_time() {
  auto &t = a_.time;
  const std::uint32_t crash_tid = a_.crash ? a_.crash->tid : 0;
  for (auto &e : a_.events)
    if (const DecodedRing *er = ring_of(a_, e.ring)) e.realtime_ns = ticks_to_realtime_ns(*er, e.timestamp);
  for (std::size_t i = 0; i < a_.events.size(); ++i) {
    const auto &e = a_.events[i];
    if (e.kind != f::kKindCrash || e.timestamp == 0) continue;
    if (t.reference == TimeBase::Reference::kCrash && a_.events[*t.reference_event].tid == crash_tid) continue;
    t.reference = TimeBase::Reference::kCrash;
    t.reference_event = i;
  }
  if (a_.snapshot && snapshot_reference()) {
    t.reference = TimeBase::Reference::kSnapshot;
    t.reference_event.reset();
  }
  if (t.reference == TimeBase::Reference::kNone)
    for (std::size_t i = a_.events.size(); i-- > 0;)
      if (a_.events[i].timestamp != 0) {
        t.reference = TimeBase::Reference::kNewestEvent;
        t.reference_event = i;
        break;
      }
  if (t.reference != TimeBase::Reference::kSnapshot) {
    if (!t.reference_event) {
      if (!a_.events.empty()) t.note = "no event has a timestamp";
      return;
    }
    const Event &ref = a_.events[*t.reference_event];
    t.reference_ticks = ref.timestamp;
    t.reference_ring = ref.ring;
  }
  const DecodedRing *rr = ring_of(a_, *t.reference_ring);
  if (rr == nullptr) return;
  t.rate_from = rr->clock.rate_from;
  t.ticks_per_second = rr->clock.ticks_per_second;
  t.rate_error = rr->clock.rate_error;
  t.rate_offers = rr->clock.offers;
  t.note = rr->clock.note;
  std::uint64_t untimed = 0;
  for (auto &e : a_.events) {
    const DecodedRing *er = ring_of(a_, e.ring);
    if (er != nullptr) e.age_ns = ticks_delta_ns(*er, e.timestamp, t.reference_ticks);
    if (e.timestamp == 0) untimed++;
    if (e.realtime_ns) t.wall_clock = true;
  }
  if (untimed > 0)
    a_.warnings.push_back(fmt::format("{} events have no timestamp (the writer had no slot clock): they keep their "
                                      "place in their thread's order but cannot be placed in time", untimed));
}

namespace {

/* What a ring lost that could hold a span's end, indexed once per ring so
 * that judging N open spans costs O(N log lanes), not O(N x lanes). */
struct LossIndex {
  /* (timestamp of the lane's oldest surviving event, or UINT64_MAX when
   * it has none or no timestamp; events overwritten; lane), for lanes
   * that lost events, by timestamp; suffix[i] sums overwritten from i on. */
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>> lanes;
  std::vector<std::uint64_t> suffix;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> by_lane;  /* lane -> (timestamp, overwritten) */
  std::set<std::pair<std::uint32_t, std::uint64_t>> rejected;  /* (lane, seq) */
};

LossIndex index_losses(const DecodedRing &r) {
  LossIndex x;
  for (const auto &l : r.lanes) {
    if (l.overwritten == 0) continue;
    const std::uint64_t ts = l.committed > 0 && l.first_timestamp != 0 ? l.first_timestamp : UINT64_MAX;
    x.lanes.emplace_back(ts, l.overwritten, l.index);
    x.by_lane.emplace(l.index, std::make_pair(ts, l.overwritten));
  }
  std::sort(x.lanes.begin(), x.lanes.end());
  x.suffix.assign(x.lanes.size() + 1, 0);
  for (std::size_t i = x.lanes.size(); i-- > 0;) x.suffix[i] = x.suffix[i + 1] + std::get<1>(x.lanes[i]);
  for (const auto &j : r.rejected) x.rejected.emplace(j.lane, j.seq);
  return x;
}

/* Why an end of `sp` (open: begun, no end found) may have been lost, or ""
 * when every event that could be its end is in the ring. */
std::string end_may_be_lost(const DecodedRing &r, const LossIndex &x, const Event &b) {
  std::vector<std::string> why;
  if (r.header.dropped > 0)
    why.push_back(fmt::format("{} events were dropped (no lane could be had)", r.header.dropped));
  /* A lane's overwritten events precede its oldest surviving one; they can
   * hold this span's end only if that oldest one is later than the begin.
   * The begin's own lane lost only events before the begin. */
  const auto first = std::upper_bound(x.lanes.begin(), x.lanes.end(),
                                      std::make_tuple(b.timestamp, UINT64_MAX, UINT32_MAX));
  const auto i = static_cast<std::size_t>(first - x.lanes.begin());
  std::uint64_t lanes = x.lanes.size() - i, lost = x.suffix[i];
  if (auto own = x.by_lane.find(b.lane); own != x.by_lane.end() && own->second.first > b.timestamp) {
    lanes--;
    lost -= own->second.second;
  }
  if (lanes > 0)
    why.push_back(fmt::format("{} events of {} other lanes were overwritten after it began", lost, lanes));
  if (r.torn + r.invalid > 0) why.push_back(fmt::format("{} slots are torn or invalid", r.torn + r.invalid));
  if (r.truncated) why.push_back("the ring is cut off by truncation");
  std::string s;
  for (const auto &w : why) s += (s.empty() ? "" : "; ") + w;
  return s;
}

}  // namespace

void Analyzer::build_spans() {
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t> by_token;  /* (ring, token) -> span */
  std::map<std::uint32_t, std::vector<std::uint32_t>> open_in;                /* tid -> its open spans */
  std::map<std::uint32_t, LossIndex> loss_index;                              /* ring -> its losses */
  std::vector<std::uint32_t> in_kept_range;  /* begin-less ends whose token names a kept sequence */
  const auto losses = [&](std::uint32_t ring) -> const LossIndex & {
    auto it = loss_index.find(ring);
    if (it == loss_index.end()) it = loss_index.emplace(ring, index_losses(*ring_of(a_, ring))).first;
    return it->second;
  };
  const auto delta = [&](std::uint32_t ring, std::uint64_t later, std::uint64_t earlier) {
    const DecodedRing *r = ring_of(a_, ring);
    return r != nullptr ? ticks_delta_ns(*r, later, earlier) : std::nullopt;
  };
  for (std::size_t i = 0; i < a_.events.size(); ++i) {
    Event &e = a_.events[i];
    if (e.kind == f::kKindSpanBegin) {
      Span sp;
      sp.ring = e.ring;
      sp.token = f::span_token(e.lane, e.seq);
      sp.id = e.id;
      sp.arg = e.arg0;
      sp.begin = i;
      sp.tid = e.tid;
      auto &stack = open_in[e.tid];
      if (!stack.empty()) sp.parent = stack.back();
      sp.depth = static_cast<std::uint32_t>(stack.size());
      const auto index = static_cast<std::uint32_t>(a_.spans.size());
      if (!by_token.emplace(std::make_pair(e.ring, sp.token), index).second) continue; /* cannot happen */
      stack.push_back(index);
      e.span = index;
      a_.spans.push_back(std::move(sp));
      continue;
    }
    if (e.kind != f::kKindSpanEnd) continue;
    const std::uint64_t token = e.arg0;
    auto it = by_token.find({e.ring, token});
    if (it != by_token.end()) {
      Span &sp = a_.spans[it->second];
      e.span = it->second;
      if (sp.end) {
        sp.extra_ends++;
        sp.note = fmt::format("ended {} times", sp.extra_ends + 1);
        continue;
      }
      if (sp.state == Span::State::kBeginLost) continue;
      sp.end = i;
      sp.end_tid = e.tid;
      sp.state = Span::State::kClosed;
      sp.duration_ns = delta(e.ring, e.timestamp, a_.events[*sp.begin].timestamp);
      if (!e.named && sp.id != 0) {
        e.name = a_.events[*sp.begin].name;
        e.named = a_.events[*sp.begin].named;
        e.name_from = a_.events[*sp.begin].name_from;
      }
      auto &stack = open_in[sp.tid];
      stack.erase(std::remove(stack.begin(), stack.end(), it->second), stack.end());
      continue;
    }
    /* An end whose begin is not in the timeline: lost (overwritten, torn,
     * missing), or never there (no_begin: the token names no slot, one the
     * lane never reached, or one that holds another event). */
    Span sp;
    sp.state = Span::State::kBeginLost;
    sp.ring = e.ring;
    sp.token = token;
    sp.id = e.id;
    sp.id_known = e.id != 0;
    sp.end = i;
    sp.tid = sp.end_tid = e.tid;
    const DecodedRing *r = ring_of(a_, e.ring);
    const std::uint32_t lane = f::span_token_lane(token);
    const std::uint64_t seq = f::span_token_seq(token);
    if (r == nullptr || lane >= r->lanes.size() || seq == 0) {
      sp.state = Span::State::kNoBegin;
      sp.note = fmt::format("its token {:#x} names no slot of this ring", token);
    } else {
      const LaneSummary &l = r->lanes[lane];
      const bool torn = losses(e.ring).rejected.count({lane, seq}) != 0;
      if (torn) {
        sp.note = fmt::format("its begin (lane {} seq {}) is torn", lane, seq);
      } else if (seq <= l.overwritten || (l.committed == 0 && seq <= l.write_index)) {
        sp.note = fmt::format("its begin (lane {} seq {}) was overwritten", lane, seq);
      } else if (seq > l.last_seq && seq > l.write_index) {
        sp.state = Span::State::kNoBegin;
        sp.note = fmt::format("its token names lane {} seq {}, which the lane never reached", lane, seq);
      } else {
        sp.note = fmt::format("its begin (lane {} seq {}) is not in the ring", lane, seq);
        /* Whether that slot holds another event is told after this pass. */
        if (seq >= l.first_seq && seq <= l.last_seq) in_kept_range.push_back(static_cast<std::uint32_t>(a_.spans.size()));
      }
    }
    if (sp.state == Span::State::kBeginLost && e.arg1 != 0) sp.duration_ns = delta(e.ring, e.timestamp, e.arg1);
    const auto index = static_cast<std::uint32_t>(a_.spans.size());
    by_token.emplace(std::make_pair(e.ring, token), index);
    e.span = index;
    a_.spans.push_back(std::move(sp));
  }
  /* An end whose token names a slot in its lane's kept range: the event
   * that slot holds, when it is in the timeline and is no span's begin,
   * says the token names no begin (nothing was lost there).  One pass over
   * the events, and only when there are such ends. */
  if (!in_kept_range.empty()) {
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, std::uint32_t> wanted;  /* slot -> span */
    for (const std::uint32_t s : in_kept_range) {
      const Span &sp = a_.spans[s];
      wanted.emplace(std::make_tuple(sp.ring, f::span_token_lane(sp.token), f::span_token_seq(sp.token)), s);
    }
    for (const Event &e : a_.events) {
      const auto it = wanted.find({e.ring, e.lane, e.seq});
      if (it == wanted.end() || e.kind == f::kKindSpanBegin) continue;
      Span &sp = a_.spans[it->second];
      sp.state = Span::State::kNoBegin;
      sp.duration_ns.reset();
      sp.note = fmt::format("its token names lane {} seq {}, which holds a {} event, not a span's begin", e.lane,
                            e.seq, a_.kind_name_of(e));
    }
  }
  for (auto &sp : a_.spans) {
    if (sp.state != Span::State::kOpen) continue;
    const Event &b = a_.events[*sp.begin];
    if (a_.time.reference_ring) sp.open_for_ns = delta(sp.ring, a_.time.reference_ticks, b.timestamp);
    const DecodedRing *r = ring_of(a_, sp.ring);
    if (r == nullptr) continue;
    if (std::string why = end_may_be_lost(*r, losses(sp.ring), b); !why.empty()) {
      sp.state = Span::State::kOpenOrEndLost;
      sp.note = "no end was found, but an end may have been lost: " + why;
    }
  }
  if (a_.crash)
    for (std::uint32_t i = 0; i < a_.spans.size(); ++i) {
      const Span &sp = a_.spans[i];
      if ((sp.state == Span::State::kOpen || sp.state == Span::State::kOpenOrEndLost) && sp.tid == a_.crash->tid)
        a_.crash->inside_spans.push_back(i);
    }
}

void Analyzer::summarize_threads() {
  std::map<std::uint32_t, std::size_t> at;  /* tid -> index in threads */
  std::vector<std::uint32_t> name_of;  /* per thread: its name in strings */
  for (const auto &e : a_.events) {
    auto [it, fresh] = at.emplace(e.tid, a_.threads.size());
    if (fresh) {
      a_.threads.push_back(ThreadSummary{e.tid, {}, 0, a_.crash && a_.crash->tid == e.tid, {}});
      name_of.push_back(0);
    }
    a_.threads[it->second].events++;
    if (e.thread != 0) name_of[it->second] = e.thread;
  }
  for (std::size_t i = 0; i < a_.threads.size(); ++i) a_.threads[i].name = a_.strings[name_of[i]];
  for (std::uint32_t i = 0; i < a_.spans.size(); ++i) {
    const Span &sp = a_.spans[i];
    if (sp.state != Span::State::kOpen && sp.state != Span::State::kOpenOrEndLost) continue;
    if (auto it = at.find(sp.tid); it != at.end()) a_.threads[it->second].open_spans.push_back(i);
  }
}

/* The events placed in time, their spans, the descriptors their I/O
 * events name, each thread's summary and each source's window. */
void Analyzer::build_time_and_spans() {
  place_in_time();
  build_spans();
  tie_fds(a_.events);
  summarize_threads();
  build_windows();
}

}  // namespace core_timeline::reader
