/* SPDX-License-Identifier: MIT */
/* The analysis's events step: each ring slot made an Event, named, merged
 * in time order, given its thread names and its stack. */
#include "analyzer.h"

namespace core_timeline::reader {

namespace {

std::string sanitize_name(std::span<const std::uint8_t> b) {
  return printable_name({reinterpret_cast<const char *>(b.data()), b.size()});
}

}  // namespace

std::uint32_t Analyzer::intern(std::string s) {
  if (s.empty()) return 0;
  auto [it, fresh] = string_at_.try_emplace(std::move(s), static_cast<std::uint32_t>(a_.strings.size()));
  if (fresh) a_.strings.push_back(it->first);
  return it->second;
}

/* The Location of `addr` for an event: one per distinct address, CRASH or
 * not (a CRASH event's address is its pc; others are return addresses,
 * symbolized one byte back) and mapping_changed. */
std::uint32_t Analyzer::location_index(std::uint64_t addr, bool crash, bool mapping_changed) {
  auto [it, fresh] = location_at_.try_emplace({addr, crash, mapping_changed},
                                              static_cast<std::uint32_t>(a_.locations.size()));
  if (fresh) {
    Location l = locate(addr);
    l.mapping_changed = mapping_changed;
    a_.locations.push_back(std::move(l));
    location_is_crash_.push_back(crash);
  }
  return it->second;
}

/* The AddressMapping of a pointer argument: describe() depends only on the
 * segment and the file mapping `addr` lies in, and whether it is dumped. */
std::uint32_t Analyzer::mapping_index(std::uint64_t addr) {
  const Segment *s = core_.segment_for(addr);
  const FileMapping *fm = core_.file_for(addr);
  const bool dumped = s != nullptr && addr - s->vaddr < s->present;
  auto [it, fresh] = mapping_at_.try_emplace({s, fm, dumped}, static_cast<std::uint32_t>(a_.mappings.size()));
  if (fresh) a_.mappings.push_back(describe(addr));
  return it->second;
}

namespace {

/* Whether a slot's stack byte (non-zero) agrees with its kind, its inline
 * length and, for a STACK slot, its place in its chain (arg1: the walk's
 * index of its first frame); ring_format.h, "stacks" and "the stack
 * chain".  A chain (kStackNext on a STACK slot, arg1 > 0, a host whose
 * first part is continued) is version 5's. */
bool stack_byte_ok(std::uint32_t version, const RingEvent &e) {
  const std::uint32_t depth = f::stack_depth(e.stack), end = f::stack_end(e.stack);
  const bool next = (e.stack & f::kStackNext) != 0;
  const bool chain = version >= f::kStackChainVersion;
  if (depth > f::kMaxStackDepth || end > f::kStackBadFrame) return false;
  /* A part that another continues is full and does not end the walk. */
  const bool continued = end == f::kStackNone;
  if (continued && !(chain && depth == f::kMaxStackDepth)) return false;
  if (e.kind == f::kKindStack) {
    if (next != continued || e.inline_len != depth * 8) return false;
    if (!chain) return e.arg1 == 0;
    return e.arg1 % f::kMaxStackDepth == 0 && e.arg1 <= f::kMaxChainedStackDepth - depth;
  }
  if (next) return true;  /* the frames are in the STACK slot after it */
  return !continued && f::stack_inline_ok(e.kind) && e.inline_len == depth * 8;
}

}  // namespace

/* An accepted slot as an Event, unnamed: names come in name_events(), once
 * every ring's name table is known; threads in name_threads(). */
Event Analyzer::make_event(std::uint32_t ring_index, const RingHeaderInfo &ring, const RingEvent &e,
                           Origin source) {
  Event ev;
  ev.ring = ring_index;
  ev.lane = e.lane;
  ev.seq = e.seq;
  ev.tid = e.tid;
  ev.kind = e.kind;
  ev.id = e.id;
  ev.arg0 = e.arg0;
  ev.arg1 = e.arg1;
  ev.timestamp = e.timestamp;
  /* realtime_ns and age_ns: place_in_time(), once the ring is in a_.rings. */
  ev.return_address = e.return_address;
  ev.inline_len = static_cast<std::uint8_t>(std::min<std::size_t>(e.inline_len, e.inline_data.size()));
  const auto now_gen = static_cast<std::uint32_t>(ring.mmap_generation);
  const bool gen_changed = e.mmap_generation != 0 && now_gen != 0 && e.mmap_generation != now_gen;
  if (ring.version >= 4 && e.stack != 0) {
    /* The stack byte (ring_format.h, "stacks"): untrusted, so checked
     * against the slot before its frames are believed. */
    const std::uint32_t depth = f::stack_depth(e.stack);
    const bool next = (e.stack & f::kStackNext) != 0;
    if (!stack_byte_ok(ring.version, e)) {
      ev.stack = StackState::kMalformed;
    } else if (next && e.kind != f::kKindStack) {
      ev.stack = StackState::kLost; /* until attach_stacks() finds its slot */
    } else {
      /* A part that the next STACK slot continues is cut until
       * attach_stacks() finds that slot. */
      ev.stack = next ? StackState::kCut : static_cast<StackState>(f::stack_end(e.stack));
      ev.stack_depth = static_cast<std::uint8_t>(depth);
      ev.frames_at = static_cast<std::uint32_t>(a_.frames.size());
      for (std::uint32_t i = 0; i < depth; ++i) {
        std::uint64_t frame;
        std::memcpy(&frame, e.inline_data.data() + i * 8, 8);
        a_.frames.push_back(location_index(frame, false, gen_changed));
      }
      ev.inline_len = 0; /* the bytes were the frames */
    }
  }
  if (ev.inline_len > 0) {
    ev.inline_at = a_.inline_data.size();
    a_.inline_data.insert(a_.inline_data.end(), e.inline_data.begin(), e.inline_data.begin() + ev.inline_len);
  }
  ev.source = source;
  ev.tid_in_core = core_tids_.count(e.tid) != 0;
  switch (e.kind) {
    case f::kKindUserPtr:
    case f::kKindMalloc:
    case f::kKindFree:
    case f::kKindCalloc:
    case f::kKindRealloc:
      ev.pointer = mapping_index(e.arg0);
      break;
    case f::kKindCrash: {
      CrashSlot c;
      c.signo = static_cast<std::int32_t>(e.id);
      c.signal_name = signal_name(c.signo);
      c.fault_address = e.arg0;
      c.sp = e.arg1;
      if (e.inline_len >= sizeof(f::CrashInfo)) {
        f::CrashInfo ci;
        std::memcpy(&ci, e.inline_data.data(), sizeof ci);
        c.si_code = ci.code;
        c.si_errno = ci.error;
        c.sender_pid = ci.sender_pid;
        c.sender_uid = ci.sender_uid;
        c.handler_flags = ci.handler_flags;
        c.chained = (ci.handler_flags & f::kCrashChained) != 0;
        c.repeated = (ci.handler_flags & f::kCrashRepeated) != 0;
        c.handed = (ci.handler_flags & f::kCrashHanded) != 0;
        if (c.handed) c.handed_outcome = HandedOutcome::kUnknown;
      }
      c.si_code_name = si_code_name(c.signo, c.si_code);
      ev.crash = static_cast<std::uint32_t>(a_.crash_slots.size());
      a_.crash_slots.push_back(std::move(c));
      break;
    }
    default: break;
  }
  if (e.return_address != 0 || e.kind == f::kKindCrash) {
    /* 0 means "not known yet" (the writer's helper thread sets the
     * generation on its first pass): only two known, different generations
     * say the set of loaded objects changed after the event. */
    ev.location = location_index(e.return_address, e.kind == f::kKindCrash, gen_changed);
  }
  return ev;
}

/* Kind names, and display names: a user id's from --tlmap (which also
 * enters Analysis::names, keeping the rings' argument names it does not
 * give) or the rings' name tables, else "id=0x...". */
void Analyzer::name_events() {
  std::map<std::uint16_t, std::uint32_t> kinds;  /* kind -> its name in strings */
  struct IdName {
    bool named = false;
    NameFrom from = NameFrom::kNone;
    std::uint32_t name = 0;
  };
  std::unordered_map<std::uint32_t, IdName> ids;  /* user id -> its name */
  for (auto &ev : a_.events) {
    auto [k, fresh] = kinds.try_emplace(ev.kind, 0);
    if (fresh) {
      const char *kn = kind_name(ev.kind);
      k->second = intern(kn != nullptr ? std::string(kn) : fmt::format("KIND_{}", ev.kind));
    }
    ev.kind_name = ev.name = k->second;
    if (ev.kind != f::kKindUser && ev.kind != f::kKindUserPtr && ev.kind != f::kKindSpanBegin &&
        (ev.kind != f::kKindSpanEnd || ev.id == 0))
      continue;
    auto [n, first] = ids.try_emplace(ev.id);
    if (first) {
      if (const TlMap::Entry *t = opts_.tlmap != nullptr ? opts_.tlmap->entry(ev.id) : nullptr) {
        /* The tlmap's name wins; an argument it does not name keeps the
         * core's name for it. */
        EventName named{t->name, t->arg0, t->arg1, NameFrom::kTlmap};
        if (auto core = a_.names.find(ev.id); core != a_.names.end()) {
          if (named.arg0.empty()) named.arg0 = core->second.arg0;
          if (named.arg1.empty()) named.arg1 = core->second.arg1;
        }
        a_.names.insert_or_assign(ev.id, std::move(named));
      }
      if (auto it = a_.names.find(ev.id); it != a_.names.end())
        n->second = {true, it->second.from, intern(it->second.name)};
      else
        n->second.name = intern(fmt::format("id={:#x}", ev.id));
    }
    ev.named = n->second.named;
    ev.name_from = n->second.from;
    ev.name = n->second.name;
  }
}

/* Merge order: within a lane, seq order is exact; across lanes and rings,
 * by slot timestamp.  A timestamp of 0 (none) or one earlier than its lane
 * predecessor's inherits the predecessor's, so the lane order holds.  The
 * events are moved into that order in place, following the permutation's
 * cycles: no second vector of events. */
void Analyzer::sort_events() {
  auto &ev = a_.events;
  const std::size_t n = ev.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  const auto lane_order = [&](std::size_t x, std::size_t y) {
    return std::tie(ev[x].ring, ev[x].lane, ev[x].seq) < std::tie(ev[y].ring, ev[y].lane, ev[y].seq);
  };
  /* Each ring's events are in lane order already, unless a sidecar added some. */
  if (!std::is_sorted(order.begin(), order.end(), lane_order)) std::sort(order.begin(), order.end(), lane_order);
  std::vector<std::uint64_t> key(n);  /* by event index */
  for (std::size_t k = 0; k < n; ++k) {
    const Event &e = ev[order[k]];
    std::uint64_t t = e.timestamp;
    if (k > 0) {
      const Event &p = ev[order[k - 1]];
      if (p.ring == e.ring && p.lane == e.lane) t = std::max(t, key[order[k - 1]]);
    }
    key[order[k]] = t;
  }
  /* (key, lane, ring, seq) is a total order: no two events share (ring,
   * lane, seq). */
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::tie(key[x], ev[x].lane, ev[x].ring, ev[x].seq) < std::tie(key[y], ev[y].lane, ev[y].ring, ev[y].seq);
  });
  key = {};
  /* Position i takes the event at order[i]; a position is done once
   * order[i] == i. */
  for (std::size_t i = 0; i < n; ++i) {
    if (order[i] == i) continue;
    Event held = std::move(ev[i]);
    std::size_t j = i;
    for (;;) {
      const std::size_t from = order[j];
      order[j] = j;
      if (from == i) {
        ev[j] = std::move(held);
        break;
      }
      ev[j] = std::move(ev[from]);
      j = from;
    }
  }
}

/* Thread names: THREAD_NAME events (the latest before each event wins),
 * else the lane owner's name. */
void Analyzer::name_threads() {
  std::map<std::uint32_t, std::uint32_t> owner, named;  /* tid -> name in strings */
  for (const auto &r : a_.rings)
    if (r.ring)
      for (const auto &l : r.ring->lanes)
        if (l.owner_tid != 0 && !l.owner_name.empty())
          owner[l.owner_tid] = intern(sanitize_name({reinterpret_cast<const std::uint8_t *>(l.owner_name.data()),
                                                     l.owner_name.size()}));
  for (auto &e : a_.events) {
    if (e.kind == f::kKindThreadName) named[e.tid] = intern(sanitize_name(a_.inline_bytes_of(e)));
    if (auto it = named.find(e.tid); it != named.end()) e.thread = it->second;
    else if (auto o = owner.find(e.tid); o != owner.end()) e.thread = o->second;
  }
}

const DecodedRing *ring_of(const Analysis &a, std::uint32_t index);

/* A kKindStack slot holds frames of an earlier slot of its lane, its
 * host (arg0 names the host's seq, id its kind): a chain of them (ring
 * format 5) holds a walk of more than 8 frames, 8 a slot, each part's arg1
 * the walk's index of its first frame and kStackNext on every part but the
 * last (ring_format.h, "the stack chain").  Give each host the frames of
 * its chain and drop the parts from the timeline.  A chain is the parts of
 * one (ring, lane, host seq) that follow each other in seq order, each
 * with arg1 8 more than the last, the same tid and host kind, while the
 * last says another follows; a chain that stops before a part without
 * kStackNext is cut (the ring wrapped over its end, or the process died
 * writing it): the host keeps the frames that are there, its stack "cut".
 * Parts whose host is gone (overwritten) stay: the first of each chain,
 * as a STACK event with the chain's frames (its arg1 says where in the
 * walk they begin), the rest dropped.  A host whose first part is
 * malformed is malformed.  Linear in the STACK slots, whatever they say. */
void Analyzer::attach_stacks() {
  auto &ev = a_.events;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, std::size_t> waiting;
  std::vector<std::size_t> parts;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == f::kKindStack && ev[i].stack != StackState::kNone)
      parts.push_back(i);
    else if (ev[i].stack == StackState::kLost)
      waiting.emplace(std::make_tuple(ev[i].ring, ev[i].lane, ev[i].seq), i);
  }
  if (parts.empty()) return;
  /* The parts by host (ring, lane, host seq), each host's in seq order. */
  const auto host_key = [&](std::size_t i) { return std::make_tuple(ev[i].ring, ev[i].lane, ev[i].arg0); };
  std::sort(parts.begin(), parts.end(), [&](std::size_t x, std::size_t y) {
    return std::make_tuple(ev[x].ring, ev[x].lane, ev[x].arg0, ev[x].seq) <
           std::make_tuple(ev[y].ring, ev[y].lane, ev[y].arg0, ev[y].seq);
  });
  std::vector<bool> drop(ev.size(), false);
  for (std::size_t from = 0, to_end = 0; from < parts.size(); from = to_end) {
    to_end = from + 1;
    while (to_end < parts.size() && host_key(parts[to_end]) == host_key(parts[from])) ++to_end;
    const std::span<const std::size_t> g(parts.data() + from, to_end - from);
    const auto host_it = waiting.find(host_key(g[0]));
    Event *host = host_it == waiting.end() ? nullptr : &ev[host_it->second];
    for (std::size_t i = 0; i < g.size();) {
      const Event &head = ev[g[i]];
      std::size_t j = i;
      while (ev[g[j]].stack == StackState::kCut && j + 1 < g.size() && ev[g[j + 1]].stack != StackState::kMalformed &&
             ev[g[j + 1]].arg1 == ev[g[j]].arg1 + f::kMaxStackDepth && ev[g[j + 1]].tid == head.tid &&
             ev[g[j + 1]].id == head.id)
        ++j;
      const bool for_host = host != nullptr && head.arg1 == 0 && head.id == host->kind && head.tid == host->tid &&
                            head.seq > host->seq;
      if (head.stack == StackState::kMalformed) {
        if (for_host) host->stack = StackState::kMalformed, host = nullptr;
        ++i;
        continue;
      }
      Event &to = for_host ? *host : ev[g[i]];
      std::uint32_t depth = 0;
      const std::size_t frames_at = j == i ? head.frames_at : a_.frames.size();
      for (std::size_t k = i; k <= j; ++k) {
        const Event &p = ev[g[k]];
        if (j != i)
          for (std::uint32_t n = 0; n < p.stack_depth; ++n) {
            const std::uint32_t location = a_.frames[p.frames_at + n];
            a_.frames.push_back(location);
          }
        depth += p.stack_depth;
        if (k != i || for_host) drop[g[k]] = true;
      }
      to.stack = ev[g[j]].stack;
      to.stack_depth = static_cast<std::uint8_t>(depth);
      to.frames_at = static_cast<std::uint32_t>(frames_at);
      if (for_host) host = nullptr;
      i = j + 1;
    }
  }
  std::size_t out = 0;
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (!drop[i]) ev[out++] = std::move(ev[i]);
  ev.resize(out);
}

void Analyzer::build_events() {
  attach_stacks();
  name_events();
  sort_events();
  name_threads();
  string_at_ = {};
  judge_handed();
  /* A CRASH event that may be the crash (not one recovered from). */
  for (const auto &e : a_.events)
    if (e.kind == f::kKindCrash && a_.crash && a_.crash_of(e)->handed_outcome != HandedOutcome::kRecovered)
      a_.crash->ring_slot = true;
}

/* The names the program registered (tl_name): each valid ring's table, the
 * newest entry per id winning; --tlmap entries override them per event
 * (make_event). */
void Analyzer::collect_names() {
  for (const auto &r : a_.rings) {
    if (r.state != RingReport::State::kValid || !r.ring) continue;
    for (const auto &n : r.ring->names)
      a_.names.insert_or_assign(n.id, EventName{n.name, n.arg0, n.arg1, NameFrom::kCore});
  }
}

const DecodedRing *ring_of(const Analysis &a, std::uint32_t index) {
  return index < a.rings.size() && a.rings[index].ring ? &*a.rings[index].ring : nullptr;
}

}  // namespace core_timeline::reader
