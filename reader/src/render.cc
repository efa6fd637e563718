/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/render.h"

#include <cstring>

#include <fmt/format.h>

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/printable.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;
namespace key = core_timeline::document::key;
using json = nlohmann::ordered_json;

namespace {

/* Untrusted bytes never reach a terminal raw (printable.h). */
std::string esc(std::string_view s) { return printable(s); }

std::string basename_of(std::string_view p) {
  auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

std::string spaced_hex(const std::vector<std::uint8_t> &b) {
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i) s.push_back(' ');
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

std::string location_text(const Location &l) {
  std::string s;
  if (!l.function.empty()) {
    s = fmt::format("{}+{:#x}", esc(l.function), l.function_offset);
    if (!l.source_file.empty()) s += fmt::format(" ({}:{})", esc(basename_of(l.source_file)), l.line);
    s += fmt::format(" in {}", esc(basename_of(l.module)));
  } else if (l.in_module) {
    s = fmt::format("{}+{:#x}", esc(basename_of(l.module)), l.file_offset);
  } else {
    s = fmt::format("{:#x} (in no file mapping)", l.address);
  }
  if (l.verification == Verification::kUnverifiedNoCoreBuildId) s += " [UNVERIFIED: no build-id in core]";
  if (l.mapping_changed) s += " [mappings changed since]";
  return s;
}

std::string mapping_text(const AddressMapping &m) {
  if (m.kind == MappingKind::kUnmapped) return "-> unmapped";
  std::string s = m.kind == MappingKind::kFile ? fmt::format("-> {} {}", esc(m.path), m.perms)
                                   : fmt::format("-> anon {} {:#x}-{:#x}", m.perms, m.start, m.end);
  if (!m.note.empty()) s += fmt::format(" ({})", m.note);
  if (!m.dumped) s += " (not in core)";
  return s;
}

std::string args_text(const Event &e) {
  const auto ptr = [&]() { return e.pointer ? " " + mapping_text(*e.pointer) : std::string(); };
  switch (e.kind) {
    case f::kKindUser:
      return e.arg1 != 0 ? fmt::format("arg={} arg1={}", e.arg0, e.arg1) : fmt::format("arg={}", e.arg0);
    case f::kKindUserPtr:
      return fmt::format("ptr={:#x} len={}/{} bytes=[{}]{}", e.arg0, e.inline_bytes.size(), e.arg1,
                         spaced_hex(e.inline_bytes), ptr());
    case f::kKindThreadName: {
      std::string n(e.inline_bytes.begin(), e.inline_bytes.end());
      return fmt::format("name=\"{}\"", esc(n.substr(0, n.find('\0'))));
    }
    case f::kKindCrash: {
      const auto &c = *e.crash;
      std::string s = fmt::format("sig={} code={} addr={:#x} pc={:#x}", c.signal_name, c.si_code_name,
                                  c.fault_address, e.return_address);
      if (c.si_code <= 0) s += fmt::format(" from pid {}", c.sender_pid);
      if (c.chained) s += " (after chained handler)";
      return s;
    }
    case f::kKindLaneClaim: return fmt::format("lane={} prev_owner={}", e.arg0, e.arg1);
    case f::kKindMalloc: return fmt::format("ptr={:#x} size={}{}", e.arg0, e.arg1, ptr());
    case f::kKindFree: return fmt::format("ptr={:#x}{}", e.arg0, ptr());
    case f::kKindCalloc: return fmt::format("ptr={:#x} size={}{}", e.arg0, e.arg1, ptr());
    case f::kKindRealloc: {
      std::uint64_t old = 0;
      if (e.inline_bytes.size() >= 8) std::memcpy(&old, e.inline_bytes.data(), 8);
      return fmt::format("ptr={:#x} size={} old={:#x}{}", e.arg0, e.arg1, old, ptr());
    }
    case f::kKindOpen:
      return fmt::format("result={} path-bytes=[{}]", static_cast<std::int64_t>(e.arg0), spaced_hex(e.inline_bytes));
    case f::kKindRead:
    case f::kKindWrite:
      return fmt::format("fd={} result={} count={}", e.id, static_cast<std::int64_t>(e.arg0), e.arg1);
    case f::kKindConnect:
      return fmt::format("fd={} result={} addr-bytes=[{}]", e.id, static_cast<std::int64_t>(e.arg0),
                         spaced_hex(e.inline_bytes));
    case f::kKindClose: return fmt::format("fd={} result={}", e.id, static_cast<std::int64_t>(e.arg0));
    default:
      return fmt::format("id={:#x} arg0={:#x} arg1={:#x} inline=[{}]", e.id, e.arg0, e.arg1,
                         spaced_hex(e.inline_bytes));
  }
}

std::string ring_summary(const RingReport &r) {
  if (r.state != RingReport::State::kValid)
    return fmt::format("ring {} at {:#x} {}: {}", r.index, r.address, ring_state_name(r.state), r.reason);
  const auto &d = *r.ring;
  std::string lanes;
  std::size_t used = 0;
  for (const auto &l : d.lanes) {
    if (l.committed == 0) continue;
    if (used++ < 8) lanes += fmt::format("{} lane {} seq {}..{}", used > 1 ? "," : "", l.index, l.first_seq, l.last_seq);
  }
  if (used > 8) lanes += fmt::format(", and {} more lanes", used - 8);
  if (used == 0) lanes = " no events";
  return fmt::format("ring {} at {:#x} ({}, {} lanes x {} slots):{}, dropped={} overwritten={} torn={}{}{}",
                     r.index, r.address, r.found_by == FoundBy::kSidecar ? "from sidecar" : found_by_name(r.found_by), d.header.lane_count,
                     d.header.slots_per_lane, lanes, d.header.dropped, d.overwritten, d.torn + d.invalid,
                     d.counter_inconsistent ? " COUNTER_INCONSISTENT" : "", d.truncated ? " TRUNCATED" : "");
}

json location_json(const Location &l) {
  json j;
  j[key::address] = fmt::format("{:#x}", l.address);
  j[key::module] = l.in_module ? json(l.module) : json(nullptr);
  j[key::build_id] = l.build_id.empty() ? json(nullptr) : json(hex_bytes(l.build_id));
  j[key::file_offset] = l.in_module ? json(fmt::format("{:#x}", l.file_offset)) : json(nullptr);
  j[key::function] = l.function.empty() ? json(nullptr) : json(l.function);
  j[key::offset] = l.function.empty() ? json(nullptr) : json(fmt::format("{:#x}", l.function_offset));
  j[key::source] = l.source_file.empty() ? json(nullptr) : json({{key::file, l.source_file}, {key::line, l.line}});
  j[key::verified] = l.verification == Verification::kVerified;
  j[key::verification] = std::string(verification_name(l.verification));
  j[key::mapping_changed] = l.mapping_changed;
  if (!l.note.empty()) j[key::note] = l.note;
  return j;
}

json mapping_json(const AddressMapping &m) {
  json j;
  j[key::kind] = std::string(mapping_kind_name(m.kind));
  j[key::path] = m.kind == MappingKind::kFile ? json(m.path) : json(nullptr);
  j[key::start] = fmt::format("{:#x}", m.start);
  j[key::end] = fmt::format("{:#x}", m.end);
  j[key::perms] = m.perms;
  j[key::dumped] = m.dumped;
  if (!m.note.empty()) j[key::note] = m.note;
  return j;
}

json check_json(const IdentityCheck &c) {
  return json{{key::result, std::string(check_name(c.result))}, {key::detail, c.detail}};
}

json process_json(const Analysis &a) {
  json p;
  p[key::pid] = a.process.pid ? json(*a.process.pid) : json(nullptr);
  p[key::ppid] = a.process.pid ? json(a.process.ppid) : json(nullptr);
  p[key::comm] = a.process.pid ? json(a.process.comm) : json(nullptr);
  p[key::args] = a.process.pid ? json(a.process.args) : json(nullptr);
  p[key::exe] = a.process.exe.empty() ? json(nullptr) : json(a.process.exe);
  p[key::build_id] = a.process.build_id.empty() ? json(nullptr) : json(hex_bytes(a.process.build_id));
  if (!a.process.build_id_note.empty()) p[key::build_id_note] = a.process.build_id_note;
  p[key::threads] = a.process.threads;
  return p;
}

json crash_json(const CrashFacts &c) {
  json cj;
  cj[key::signal] = c.signo != 0 ? json(c.signo) : json(nullptr);
  cj[key::signal_name] = c.signo != 0 ? json(c.signal_name) : json(nullptr);
  if (!c.signal_note.empty()) cj[key::signal_note] = c.signal_note;
  cj[key::si_code] = c.si_code ? json(*c.si_code) : json(nullptr);
  cj[key::si_code_name] = c.si_code ? json(c.si_code_name) : json(nullptr);
  if (!c.si_code_note.empty()) cj[key::si_code_note] = c.si_code_note;
  cj[key::fault_address] = c.fault_address ? json(fmt::format("{:#x}", *c.fault_address)) : json(nullptr);
  cj[key::sender_pid] = c.sender_pid ? json(*c.sender_pid) : json(nullptr);
  cj[key::tid] = c.tid;
  cj[key::pc] = c.has_regs ? json(fmt::format("{:#x}", c.pc)) : json(nullptr);
  cj[key::sp] = c.has_regs ? json(fmt::format("{:#x}", c.sp)) : json(nullptr);
  cj[key::location] = c.location ? location_json(*c.location) : json(nullptr);
  cj[key::ring_slot] = c.ring_slot;
  cj[key::from] = std::string(signal_note_name(c.source));
  return cj;
}

json ring_json(const RingReport &r) {
  json rj;
  rj[key::index] = r.index;
  rj[key::state] = std::string(ring_state_name(r.state));
  rj[key::reason] = r.reason.empty() ? json(nullptr) : json(r.reason);
  rj[key::found_by] = std::string(found_by_name(r.found_by));
  rj[key::address] = fmt::format("{:#x}", r.address);
  rj[key::mapping] = r.mapping_name.empty() ? json(nullptr) : json(r.mapping_name);
  rj[key::mapping_size] = r.mapping_size;
  if (r.ring) {
    const auto &d = *r.ring;
    const auto &h = d.header;
    rj[key::identity] = {{key::pid, check_json(r.pid)}, {key::build_id, check_json(r.build_id)},
                      {key::start_time, check_json(r.start_time)}};
    rj[key::header] = {{key::version, h.version},
                    {key::writer_version, fmt::format("{}.{}.{}", h.writer_version >> 16,
                                                   (h.writer_version >> 8) & 0xff, h.writer_version & 0xff)},
                    {key::pid, h.pid},
                    {key::build_id, h.build_id.empty() ? json(nullptr) : json(hex_bytes(h.build_id))},
                    {key::process_start_ticks, h.process_start_ticks},
                    {key::region_size, h.region_size},
                    {key::lane_count, h.lane_count},
                    {key::slots_per_lane, h.slots_per_lane},
                    {key::compat_flags, h.compat_flags},
                    {key::handlers_installed, (h.compat_flags & f::kCompatHandlers) != 0},
                    {key::clock, (h.compat_flags & f::kCompatClockTsc) ? "tsc"
                              : (h.compat_flags & f::kCompatClockCntvct) ? "cntvct" : "unknown"},
                    {key::ticks_per_second, d.ticks_per_second > 0 ? json(d.ticks_per_second) : json(nullptr)},
                    {key::mmap_generation, h.mmap_generation},
                    {key::enabled_sources, h.enabled_sources}};
    rj[key::dropped] = h.dropped;
    rj[key::overwritten] = d.overwritten;
    rj[key::missing] = d.missing;
    rj[key::counter_inconsistent] = d.counter_inconsistent;
    rj[key::truncated] = d.truncated;
    rj[key::bytes_present] = d.bytes_present;
    json lanes = json::array();
    for (const auto &l : d.lanes) {
      if (l.committed == 0 && l.write_index == 0 && l.torn == 0 && l.invalid == 0 && !l.counter_inconsistent &&
          l.slots_absent == 0)
        continue; /* never used: left out to keep documents small */
      json lj;
      lj[key::lane] = l.index;
      lj[key::shared] = l.shared;
      lj[key::owner_tid] = l.owner_tid;
      lj[key::owner_name] = l.owner_name;
      lj[key::write_index] = l.write_index;
      lj[key::committed] = l.committed;
      lj[key::first_seq] = l.committed ? json(l.first_seq) : json(nullptr);
      lj[key::last_seq] = l.committed ? json(l.last_seq) : json(nullptr);
      lj[key::overwritten] = l.overwritten;
      lj[key::missing] = l.missing;
      lj[key::torn] = l.torn;
      lj[key::invalid] = l.invalid;
      lj[key::in_flight] = l.in_flight;
      lj[key::slots_absent] = l.slots_absent;
      lj[key::counter_inconsistent] = l.counter_inconsistent;
      lj[key::counter_reason] = l.counter_inconsistent ? json(l.counter_reason) : json(nullptr);
      lanes.push_back(std::move(lj));
    }
    rj[key::lanes] = std::move(lanes);
    json torn = json::array();
    for (const auto &t : d.rejected)
      torn.push_back({{key::lane, t.lane}, {key::slot, t.slot}, {key::seq, t.seq},
                      {key::kind, t.torn ? "torn" : "invalid"}, {key::reason, t.reason}});
    rj[key::torn] = std::move(torn);
  }
  return rj;
}

json event_json(const Event &e) {
  json ej;
  ej[key::ring] = e.ring;
  ej[key::lane] = e.lane;
  ej[key::seq] = e.seq;
  ej[key::tid] = e.tid;
  ej[key::thread] = e.thread.empty() ? json(nullptr) : json(e.thread);
  ej[key::tid_in_core] = e.tid_in_core;
  ej[key::kind] = e.kind_name;
  ej[key::name] = e.name;
  ej[key::named] = e.named;
  ej[key::id] = e.id;
  ej[key::args] = {e.arg0, e.arg1};
  ej[key::timestamp] = e.timestamp;
  ej[key::time_ns] = e.realtime_ns ? json(*e.realtime_ns) : json(nullptr);
  ej[key::return_address] = fmt::format("{:#x}", e.return_address);
  ej[key::location] = e.location ? location_json(*e.location) : json(nullptr);
  ej[key::inline_bytes] = e.inline_bytes.empty() ? json(nullptr) : json(hex_bytes(e.inline_bytes));
  ej[key::pointer] = e.pointer ? mapping_json(*e.pointer) : json(nullptr);
  if (e.crash) {
    const auto &c = *e.crash;
    ej[key::crash] = {{key::signal, c.signo},           {key::signal_name, c.signal_name},
                   {key::si_code, c.si_code},        {key::si_code_name, c.si_code_name},
                   {key::si_errno, c.si_errno},      {key::si_pid, c.sender_pid},
                   {key::fault_address, fmt::format("{:#x}", c.fault_address)},
                   {key::sp, fmt::format("{:#x}", c.sp)},
                   {key::chained, c.chained},        {key::repeated, c.repeated}};
  } else {
    ej[key::crash] = nullptr;
  }
  ej[key::source] = std::string(origin_name(e.source));
  return ej;
}

}  // namespace

std::string render_text(const Analysis &a) {
  std::string out;
  if (a.status != Status::kOk && a.events.empty()) {
    out += fmt::format("core-timeline: {}\n", esc(a.reason));
  } else {
    std::string who = a.process.pid ? fmt::format("pid {} ({})", *a.process.pid, esc(a.process.comm))
                                    : std::string("pid unknown");
    out += fmt::format("core-timeline: {}, {}, {} events\n", timeline_source_name(a.source), who, a.events.size());
    for (const auto &r : a.rings) out += "  " + esc(ring_summary(r)) + "\n";
    for (const auto &e : a.events) {
      std::string line = fmt::format("tid {:<7} {:<15} {:<16} {}", e.tid, e.thread.empty() ? std::string("-") : esc(e.thread),
                                     esc(e.name), args_text(e));
      if (e.location && (e.return_address != 0 || e.kind == f::kKindCrash))
        line += "  at " + location_text(*e.location);
      if (e.source != Origin::kCore) line += fmt::format("  [from {}]", origin_name(e.source));
      if (a.rings.size() > 1) line += fmt::format("  [ring {}]", e.ring);
      out += line + "\n";
    }
  }
  if (a.crash) {
    const auto &c = *a.crash;
    std::string s = c.signo == 0 ? std::string("crash: no signal recorded")
                                 : fmt::format("crash: {} ({})", c.signal_name,
                                               c.si_code ? c.si_code_name : "si_code unknown: no NT_SIGINFO");
    if (c.fault_address) s += fmt::format(" addr={:#x}", *c.fault_address);
    if (c.sender_pid) s += fmt::format(" sent by pid {}", *c.sender_pid);
    s += fmt::format(" in tid {}", c.tid);
    if (c.has_regs) s += fmt::format(" pc={:#x}", c.pc);
    if (c.location) s += " at " + location_text(*c.location);
    if (a.status == Status::kOk || !a.events.empty())
      s += c.ring_slot ? "; CRASH slot present in the ring" : "; no CRASH slot in the ring";
    out += s + "\n";
  }
  for (const auto &w : a.warnings) out += "warning: " + esc(w) + "\n";
  return out;
}

json to_json(const Analysis &a) {
  json j;
  j[key::schema_version] = kJsonSchemaVersion;
  j[key::status] = std::string(status_name(a.status));
  j[key::exit_code] = exit_code(a.status);
  j[key::reason] = a.status == Status::kOk ? json(nullptr) : json(a.reason);
  j[key::source] = a.source == TimelineSource::kNone ? json(nullptr) : json(timeline_source_name(a.source));
  j[key::core] = {{key::path, a.core_path}, {key::size, a.core_size}, {key::truncated, a.core_truncated},
               {key::machine, a.machine}};
  j[key::process] = process_json(a);
  j[key::crash] = a.crash ? crash_json(*a.crash) : json(nullptr);
  json rings = json::array();
  for (const auto &r : a.rings) rings.push_back(ring_json(r));
  j[key::rings] = std::move(rings);
  json events = json::array();
  for (const auto &e : a.events) events.push_back(event_json(e));
  j[key::events] = std::move(events);
  json mr = json::array();
  for (const auto &m : a.magic_rejected) mr.push_back({{key::address, fmt::format("{:#x}", m.address)}, {key::reason, m.reason}});
  j[key::magic_rejected] = {{key::total, a.magic_rejected_total}, {key::first, std::move(mr)}};
  j[key::sidecar] = a.sidecar_path ? json{{key::path, *a.sidecar_path}, {key::status, sidecar_status_name(a.sidecar_status)},
                                       {key::detail, a.sidecar_detail}}
                                : json(nullptr);
  j[key::absence_proves_nothing] = a.absence_proves_nothing;
  j[key::warnings] = a.warnings;
  return j;
}

std::string render_json(const Analysis &a) {
  return to_json(a).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace core_timeline::reader
