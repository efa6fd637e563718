/* SPDX-License-Identifier: MIT */
/* compact_write.cc - the compact document's writer (compact.h). */
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core_timeline/document/compact_shape.h"
#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/printable.h"
#include "cause_render.h"
#include "render_parts.h"

namespace core_timeline::reader {

namespace key = core_timeline::document::key;
using json = nlohmann::ordered_json;

namespace {

/* Buffered output (render_parts.h) that also writes a JSON value. */
class Pieces : public Buffered {
 public:
  using Buffered::Buffered;
  void add(std::string_view s) { *this += s; }
  void value(const json &v) { add(v.dump(-1, ' ', false, json::error_handler_t::replace)); }
};

/* `n` as hex, "0x..." (addresses, as the full document writes them). */
std::string hex(std::uint64_t n) { return fmt::format("{:#x}", n); }

json opt_string(const std::string &s) { return s.empty() ? json(nullptr) : json(s); }

/* Inline bytes, exact: a string when they are valid UTF-8 (JSON keeps
 * every such byte) and that is no longer than their hex, else
 * {"hex": "..."} (binary bytes, or text of mostly escaped bytes). */
json bytes_value(std::span<const std::uint8_t> b) {
  std::string s(b.begin(), b.end());
  json hex = {{key::hex, hex_bytes(b)}};
  try {
    json text(std::move(s));
    if (text.dump().size() <= hex.dump().size()) return text;  // strict: throws on invalid UTF-8
  } catch (const json::type_error &) {
  }
  return hex;
}

/* What events share, interned while the events are written. */
struct Tables {
  std::map<std::tuple<std::uint32_t, std::uint32_t, bool>, std::uint32_t> threads;  // (tid, name, in core)
  std::map<std::tuple<std::uint16_t, std::uint32_t, std::uint32_t, bool, NameFrom>, std::uint32_t> types;
  std::map<std::string, std::uint32_t> bytes;
  json thread_rows = json::array(), type_rows = json::array(), byte_rows = json::array();
};

std::uint32_t thread_of(const Analysis &a, Tables &t, const Event &e) {
  auto [it, fresh] = t.threads.try_emplace({e.tid, e.thread, e.tid_in_core}, t.thread_rows.size());
  if (fresh) t.thread_rows.push_back({e.tid, e.thread == 0 ? json(nullptr) : json(a.thread_of(e)), e.tid_in_core});
  return it->second;
}

std::uint32_t type_of(const Analysis &a, Tables &t, const Event &e) {
  auto [it, fresh] = t.types.try_emplace({e.kind, e.kind_name, e.name, e.named, e.name_from}, t.type_rows.size());
  if (fresh)
    t.type_rows.push_back({e.kind, a.kind_name_of(e), a.name_of(e), e.named,
                           e.name_from == NameFrom::kNone ? json(nullptr) : json(name_from_name(e.name_from))});
  return it->second;
}

std::uint32_t bytes_of(const Analysis &a, Tables &t, const Event &e) {
  const auto b = a.inline_bytes_of(e);
  auto [it, fresh] = t.bytes.try_emplace(std::string(b.begin(), b.end()), t.byte_rows.size());
  if (fresh) t.byte_rows.push_back(bytes_value(b));
  return it->second;
}

/* One event: [lane, seq, thread, type, id, arg0, arg1, location, dt] and,
 * when it has any, an object of what few events have. */
json event_row(const Analysis &a, Tables &t, const Event &e, std::uint64_t previous_ticks) {
  json row = json::array({e.lane, e.seq, thread_of(a, t, e), type_of(a, t, e), e.id, e.arg0, e.arg1,
                          e.location == kNoIndex ? json(nullptr) : json(e.location),
                          static_cast<std::int64_t>(e.timestamp - previous_ticks)});
  json x = json::object();
  if (e.ring != 0) x[key::x_ring] = e.ring;
  if (e.source != Origin::kCore) x[key::x_source] = std::string(origin_name(e.source));
  if (e.pointer != kNoIndex) x[key::x_pointer] = e.pointer;
  if (e.inline_len > 0) x[key::x_bytes] = bytes_of(a, t, e);
  if (e.stack != StackState::kNone) {
    const auto frames = a.frames_of(e);
    x[key::x_stack] = {stack_state_name(e.stack), json(std::vector<std::uint32_t>(frames.begin(), frames.end()))};
  }
  if (e.crash != kNoIndex) x[key::x_crash] = e.crash;
  if (e.span) x[key::x_span] = *e.span;
  if (e.fd_state != FdOrigin::kNone)
    x[key::x_fd] = {fd_origin_name(e.fd_state), e.fd_origin == kNoIndex ? json(nullptr) : json(e.fd_origin)};
  if (!x.empty()) row.push_back(std::move(x));
  return row;
}

json location_row(const Location &l, std::map<std::pair<std::string, std::vector<std::uint8_t>>, std::uint32_t> &modules,
                  json &module_rows) {
  json module = nullptr;
  if (l.in_module) {
    auto [it, fresh] = modules.try_emplace({l.module, l.build_id}, module_rows.size());
    if (fresh) module_rows.push_back({l.module, l.build_id.empty() ? json(nullptr) : json(hex_bytes(l.build_id))});
    module = it->second;
  }
  json more = json::object();
  if (l.mapping_changed) more[key::mapping_changed] = true;
  if (!l.note.empty()) more[key::note] = l.note;
  if (!l.refused_file.empty())
    more[key::refused_file] = {{key::path, l.refused_file},
                               {key::build_id, l.refused_build_id.empty() ? json(nullptr) : json(hex_bytes(l.refused_build_id))}};
  const bool fn = !l.function.empty();
  return json::array({hex(l.address), module, l.in_module ? json(hex(l.file_offset)) : json(nullptr),
                      fn ? json(l.function) : json(nullptr), fn ? json(hex(l.function_offset)) : json(nullptr),
                      opt_string(l.source_file), l.source_file.empty() ? json(nullptr) : json(l.line),
                      verification_name(l.verification), more.empty() ? json(nullptr) : std::move(more)});
}

json crash_slot_row(const CrashSlot &c) {
  return {{key::signal, c.signo},          {key::signal_name, c.signal_name},
          {key::si_code, c.si_code},       {key::si_code_name, c.si_code_name},
          {key::si_errno, c.si_errno},     {key::si_pid, c.sender_pid},
          {key::sender_uid, c.sender_uid}, {key::fault_address, hex(c.fault_address)},
          {key::sp, hex(c.sp)},            {key::handler_flags, c.handler_flags},
          {key::chained, c.chained},       {key::repeated, c.repeated},
          {key::handed, c.handed},         {key::handed_outcome, std::string(handed_outcome_name(c.handed_outcome))},
          {key::handed_note, c.handed_note}};
}

json span_row(const Span &sp) {
  const auto opt = [](const auto &v) { return v ? json(*v) : json(nullptr); };
  return json::array({hex(sp.token), span_state_name(sp.state), sp.id_known ? json(sp.id) : json(nullptr), sp.arg,
                      opt(sp.begin), opt(sp.end), opt(sp.duration_ns), opt(sp.open_for_ns), opt(sp.parent), sp.depth,
                      sp.extra_ends, opt_string(sp.note), sp.tid, sp.end_tid, sp.ring});
}

/* A ring's object: the full document's, and what the text and the
 * events' times need of it besides. */
json ring_object(const RingReport &r) {
  json j = parts::ring(r);
  if (!r.ring) return j;
  const DecodedRing &d = *r.ring;
  json pools = json::array();
  for (const auto &s : d.header.sources) pools.push_back({s.pool_slots, s.lent});
  j[key::pools] = std::move(pools);
  j[key::live] = d.live;
  j[key::torn_slots] = d.torn;
  j[key::invalid_slots] = d.invalid;
  json anchors = json::array();
  for (const auto &an : d.clock.anchors) anchors.push_back({an.ticks, an.realtime_ns});
  j[key::anchors] = std::move(anchors);
  return j;
}

/* "crash" and "thread_stacks" as the full document has them, with the
 * re-raised fault's "recorded" (the text says whose handler caught it). */
json crash_object(const Analysis &a) {
  json c = crash_document(a);
  if (a.crash && a.crash->reraised) c[key::crash][key::reraised][key::recorded] = a.crash->reraised->recorded;
  return c;
}

/* "time": the full document's, the reference an index in "events", and
 * the reference's ticks (ages follow from them). */
json time_object(const Analysis &a) {
  json t = parts::time(a);
  t[key::reference_event] = a.time.reference_event ? json(*a.time.reference_event) : json(nullptr);
  t[key::reference_ticks] = a.time.reference_ticks;
  t[key::reference_ring] = a.time.reference_ring ? json(*a.time.reference_ring) : json(nullptr);
  return t;
}

void member(Pieces &w, std::string_view k, const json &v, bool first = false) {
  w.add(first ? "{" : ",\n");
  w.add(json(k).dump());
  w.add(":");
  w.value(v);
}

/* An array member, one element a line. */
template <typename Each>
void array_member(Pieces &w, std::string_view k, std::size_t n, Each each) {
  w.add(",\n");
  w.add(json(k).dump());
  w.add(":[");
  for (std::size_t i = 0; i < n && w.ok(); ++i) {
    w.add(i ? ",\n" : "\n");
    w.value(each(i));
  }
  w.add(n ? "\n]" : "]");
}

void write_head(const Analysis &a, Pieces &w) {
  member(w, key::schema_version, document::kCompactSchemaVersion, true);
  member(w, key::status, std::string(status_name(a.status)));
  member(w, key::exit_code, exit_code(a.status));
  member(w, key::reason, a.status == Status::kOk ? json(nullptr) : json(a.reason));
  member(w, key::source, a.source == TimelineSource::kNone ? json(nullptr) : json(timeline_source_name(a.source)));
  member(w, key::core, parts::core(a));
  member(w, key::process, parts::process(a));
  member(w, key::snapshot, parts::snapshot(a));
  const json crash = crash_object(a);
  member(w, key::crash, crash[key::crash]);
  member(w, key::thread_stacks, crash[key::thread_stacks]);
  member(w, key::cause, detail::cause_json(a)); /* cause_render.cc: as the full document */
  member(w, document::group_key::group, group_json(a));
  array_member(w, key::rings, a.rings.size(), [&](std::size_t i) { return ring_object(a.rings[i]); });
  member(w, key::time, time_object(a));
  array_member(w, key::threads, a.threads.size(), [&](std::size_t i) { return parts::thread(a.threads[i]); });
  member(w, key::windows, parts::windows(a));
  member(w, key::names, parts::names(a));
  member(w, key::magic_rejected, parts::magic_rejected(a));
  member(w, key::sidecar, parts::sidecar(a));
  member(w, key::absence_proves_nothing, a.absence_proves_nothing);
  member(w, key::warnings, a.warnings);
}

}  // namespace

bool write_compact(const Analysis &a, const Output &output) {
  Pieces w(output);
  write_head(a, w);
  /* The tables first: one pass interns the events' threads, types and
   * bytes; the events' rows are made as they are written, below. */
  Tables t;
  for (const auto &e : a.events) {
    thread_of(a, t, e);
    type_of(a, t, e);
    if (e.inline_len > 0) bytes_of(a, t, e);
  }
  std::map<std::pair<std::string, std::vector<std::uint8_t>>, std::uint32_t> modules;
  json module_rows = json::array(), location_rows = json::array();
  for (const auto &l : a.locations) location_rows.push_back(location_row(l, modules, module_rows));
  w.add(",\n\"tables\":{");
  const auto table = [&](std::string_view k, const json &rows_of, bool first = false) {
    w.add(first ? "\n" : ",\n");
    w.add(json(k).dump());
    w.add(":[");
    for (std::size_t i = 0; i < rows_of.size(); ++i) {
      w.add(i ? ",\n" : "\n");
      w.value(rows_of[i]);
    }
    w.add(rows_of.empty() ? "]" : "\n]");
  };
  table(key::threads, t.thread_rows, true);
  table(key::types, t.type_rows);
  table(key::modules, module_rows);
  table(key::locations, location_rows);
  json mappings = json::array(), slots = json::array();
  for (const auto &m : a.mappings) mappings.push_back(parts::mapping(m));
  for (const auto &c : a.crash_slots) slots.push_back(crash_slot_row(c));
  table(key::mappings, mappings);
  table(key::crash_slots, slots);
  table(key::bytes, t.byte_rows);
  w.add("}");
  array_member(w, key::spans, a.spans.size(), [&](std::size_t i) { return span_row(a.spans[i]); });
  std::uint64_t previous = 0;
  array_member(w, key::events, a.events.size(), [&](std::size_t i) {
    json row = event_row(a, t, a.events[i], previous);
    previous = a.events[i].timestamp;
    return row;
  });
  w.add("}\n");
  return w.flush();
}

json full_event(const Analysis &a, const Event &e) { return parts::event(a, e); }

json full_spans(const Analysis &a) {
  json spans = json::array();
  for (const auto &sp : a.spans) spans.push_back(parts::span(a, sp));
  return spans;
}

json full_time(const Analysis &a) { return parts::time(a); }

std::string render_compact(const Analysis &a) {
  std::string s;
  write_compact(a, [&](std::string_view piece) {
    s.append(piece);
    return true;
  });
  return s;
}

}  // namespace core_timeline::reader
