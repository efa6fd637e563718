/* SPDX-License-Identifier: MIT */
/*
 * export_document.cc - a timeline document (docs/timeline-json.md) into
 * the exporter's input (export.h), for ctl-query.  The document is
 * untrusted: every member is looked up by type, and one that is missing
 * or of another type counts as absent; nothing in it can make this throw.
 */
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/cause.h"
#include "core_timeline/reader/export.h"
#include "core_timeline/reader/printable.h"

namespace core_timeline::reader {

namespace key = core_timeline::document::key;
using ojson = nlohmann::ordered_json;

namespace {

const ojson *member(const ojson &o, std::string_view k) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}

std::optional<std::uint64_t> u64(const ojson &o, std::string_view k) {
  const ojson *v = member(o, k);
  if (!v || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  const std::int64_t s = v->get<std::int64_t>();
  if (s < 0) return std::nullopt;
  return static_cast<std::uint64_t>(s);
}

std::optional<std::int64_t> i64(const ojson &o, std::string_view k) {
  const ojson *v = member(o, k);
  if (!v || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned()) {
    const std::uint64_t u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  return v->get<std::int64_t>();
}

/* A time in ns (an age, a duration, a wall clock): untrusted, so kept to
 * |v| < 2^62 (146 years), where the exporter's sums and differences of two
 * of them (age - origin, time - age, realtime + origin) cannot overflow;
 * a larger one counts as absent. */
constexpr std::int64_t kMaxNs = std::int64_t{1} << 62;
std::optional<std::int64_t> ns(const ojson &o, std::string_view k) {
  const auto v = i64(o, k);
  if (!v || *v <= -kMaxNs || *v >= kMaxNs) return std::nullopt;
  return v;
}

template <class T>
std::optional<T> narrow(std::optional<std::int64_t> v) {
  if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) return std::nullopt;
  return static_cast<T>(*v);
}

std::string_view str(const ojson &o, std::string_view k) {
  const ojson *v = member(o, k);
  return v && v->is_string() ? std::string_view(v->get_ref<const std::string &>()) : std::string_view();
}

bool boolean(const ojson &o, std::string_view k) {
  const ojson *v = member(o, k);
  return v && v->is_boolean() && v->get<bool>();
}

/* "0x1f" as a number; nullopt when it is not one. */
std::optional<std::uint64_t> hex(const ojson &o, std::string_view k) {
  const std::string_view s = str(o, k);
  if (s.size() < 3 || s.size() > 18 || s.substr(0, 2) != "0x") return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s.substr(2)) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  return v;
}

const ojson &array_or_empty(const ojson &o, std::string_view k) {
  static const ojson kEmpty = ojson::array();
  const ojson *v = member(o, k);
  return v && v->is_array() ? *v : kEmpty;
}

/* A location object (docs/timeline-json.md, "location") as a frame, named
 * as frame_name() names it; its `from` and `signal_frame` when it has
 * them (the crash stack's and the thread stacks' frames). */
ExportFrame frame_of_location(const ojson &l) {
  ExportFrame f;
  f.address = hex(l, key::address).value_or(0);
  f.module = std::string(str(l, key::module));
  std::string_view file;
  std::uint64_t line = 0;
  if (const ojson *src = member(l, key::source); src && src->is_object()) {
    file = str(*src, key::file);
    line = u64(*src, key::line).value_or(0);
  }
  f.name = frame_name(f.address, str(l, key::function), hex(l, key::offset).value_or(0), f.module,
                      f.module.empty() ? std::nullopt : hex(l, key::file_offset), file, line);
  f.from = std::string(str(l, key::from));
  f.signal_frame = boolean(l, key::signal_frame);
  return f;
}

/* The frames of an array of location objects; other elements are left
 * out (the document is untrusted). */
std::vector<ExportFrame> frames_of(const ojson &frames) {
  std::vector<ExportFrame> out;
  if (!frames.is_array()) return out;
  out.reserve(frames.size());
  for (const ojson &f : frames)
    if (f.is_object()) out.push_back(frame_of_location(f));
  return out;
}

}  // namespace

void export_stacks_of_document(const ojson *crash, const ojson *thread_stacks, ExportTimeline &t) {
  if (crash && crash->is_object() && t.crash) {
    ExportCrash &c = *t.crash;
    if (const ojson *s = member(*crash, key::stack); s && s->is_object()) {
      ExportCrashStack st;
      st.frames = frames_of(array_or_empty(*s, key::frames));
      st.core_end = std::string(str(*s, key::core_end));
      st.ring_end = std::string(str(*s, key::ring_end));
      st.agree = u64(*s, key::agree).value_or(0);
      st.note = std::string(str(*s, key::note));
      c.stack = std::move(st);
    }
    if (const ojson *r = member(*crash, key::reraised); r && r->is_object()) {
      ExportReraised x;
      x.signo = narrow<std::int32_t>(i64(*r, key::signal)).value_or(0);
      x.signal_name = std::string(str(*r, key::signal_name));
      x.si_code = narrow<std::int32_t>(i64(*r, key::si_code)).value_or(0);
      x.si_code_name = std::string(str(*r, key::si_code_name));
      x.fault_address = hex(*r, key::fault_address);
      x.sender_pid = narrow<std::int32_t>(i64(*r, key::sender_pid));
      x.pc = hex(*r, key::pc).value_or(0);
      if (const ojson *l = member(*r, key::location); l && l->is_object()) x.at = frame_of_location(*l).name;
      if (const ojson *h = member(*r, key::handler); h && h->is_object()) x.handler = frame_of_location(*h).name;
      x.raised_with = std::string(str(*r, key::raised_with));
      c.reraised = std::move(x);
    }
    c.reraised_note = std::string(str(*crash, key::reraised_note));
  }
  if (thread_stacks && thread_stacks->is_array())
    for (const ojson &ts : *thread_stacks) {
      const auto tid = narrow<std::uint32_t>(i64(ts, key::tid));
      if (!tid) continue;
      t.thread_stacks.push_back({*tid, frames_of(array_or_empty(ts, key::frames)), std::string(str(ts, key::end))});
    }
}

void export_cause_of_document(const ojson *cause, ExportTimeline &t) {
  if (!cause || !cause->is_object()) return;
  ExportCause c;
  for (const ojson &j : array_or_empty(*cause, key::causes)) {
    const ojson *kind = member(j, key::kind), *says = member(j, key::says);
    if (!kind || !kind->is_string() || !says || !says->is_string()) continue;
    c.causes.push_back({kind->get<std::string>(), says->get<std::string>(), std::string(str(j, key::window))});
  }
  for (const ojson &line : array_or_empty(*cause, key::cannot_tell))
    if (line.is_string()) c.cannot_tell.push_back(line.get<std::string>());
  if (!c.causes.empty() || !c.cannot_tell.empty()) t.cause = std::move(c);
}

std::string cause_lines(const ExportCause &c) {
  std::string out;
  for (std::size_t i = 0; i < c.causes.size() && i < kMaxCauseLines; ++i) {
    out += "cause: " + printable(c.causes[i].says) + "\n";
    if (!c.causes[i].window.empty()) out += "  relies on: " + printable(c.causes[i].window) + "\n";
  }
  if (c.causes.size() > kMaxCauseLines)
    out += fmt::format("cause: {} more in the JSON document\n", c.causes.size() - kMaxCauseLines);
  for (const auto &line : c.cannot_tell) out += "cause cannot be told: " + printable(line) + "\n";
  return out;
}

std::string frame_line(std::size_t index, const ExportFrame &f) {
  std::string s = fmt::format("#{:<2} {:#018x} {}", index, f.address, f.name);
  if (!f.module.empty()) s += fmt::format(" in {}", f.module.substr(f.module.rfind('/') + 1));
  if (f.signal_frame) s += "  (signal frame)";
  if (!f.from.empty()) s += fmt::format("  [{}]", f.from);
  return s;
}

std::string reraised_line(const ExportReraised &r) {
  std::string s = fmt::format("{} ({})", r.signal_name, r.si_code_name);
  if (r.fault_address) s += fmt::format(" at addr={:#x}", *r.fault_address);
  if (r.sender_pid) s += fmt::format(" sent by pid {}", *r.sender_pid);
  s += fmt::format(" pc={:#x}", r.pc);
  if (!r.at.empty()) s += " in " + r.at;
  s += ", caught by the program's own handler";
  if (!r.handler.empty()) s += " " + r.handler;
  if (!r.raised_with.empty()) s += " and re-raised with " + r.raised_with;
  return s;
}

void DocumentEventScan::scan(const ojson &event) {
  ++events;
  const auto ring = narrow<std::uint32_t>(i64(event, key::ring));
  const auto lane = narrow<std::uint32_t>(i64(event, key::lane));
  const auto tid = narrow<std::uint32_t>(i64(event, key::tid));
  if (ring && lane && tid && lane_tid.size() < kMaxLanes) lane_tid.emplace(std::pair{*ring, *lane}, *tid);
  const auto age = ns(event, key::age_ns);
  if (!age) return;
  oldest_age_ns = std::min(oldest_age_ns.value_or(0), *age);
  const auto time = ns(event, key::time_ns);
  if (!time || *time < 0) return;
  /* The wall clock of age 0 from the event nearest the reference (its
   * anchor is the nearest to it). */
  const std::int64_t distance = *age < 0 ? -*age : *age;
  if (!reference_distance || distance < *reference_distance) {
    reference_distance = distance;
    reference_realtime_ns = *time - *age;
  }
}

ExportTimeline export_timeline_of_document(const ojson &top, const DocumentEventScan &scan) {
  ExportTimeline t;
  static const ojson kNull;
  const ojson *process = member(top, key::process);
  const ojson &p = process ? *process : kNull;
  t.pid = narrow<std::uint32_t>(i64(p, key::pid)).value_or(0);
  t.comm = std::string(str(p, key::comm));
  t.status = std::string(str(top, key::status));
  if (const ojson *time = member(top, key::time)) t.reference = std::string(str(*time, "reference"));
  t.origin_age_ns = scan.oldest_age_ns.value_or(0);
  t.reference_realtime_ns = scan.reference_realtime_ns;
  t.events = scan.events;
  for (const ojson &th : array_or_empty(top, key::threads)) {
    const auto tid = narrow<std::uint32_t>(i64(th, key::tid));
    if (!tid) continue;
    ExportTrack tr;
    tr.tid = *tid;
    tr.name = std::string(str(th, key::name));
    tr.crashed = boolean(th, key::crashed);
    tr.events = u64(th, key::events).value_or(0);
    t.tracks.push_back(std::move(tr));
  }
  LaneLosses losses(t);
  for (const ojson &r : array_or_empty(top, key::rings)) {
    if (str(r, key::state) != "valid") continue;
    const auto index = narrow<std::uint32_t>(i64(r, key::index));
    t.dropped += u64(r, key::dropped).value_or(0);
    for (const ojson &l : array_or_empty(r, key::lanes)) {
      const std::uint64_t overwritten = u64(l, key::overwritten).value_or(0);
      const std::uint64_t torn = u64(l, key::torn).value_or(0) + u64(l, key::invalid).value_or(0);
      const std::uint64_t missing = u64(l, key::missing).value_or(0);
      auto owner = narrow<std::uint32_t>(i64(l, key::owner_tid)).value_or(0);
      const auto lane = narrow<std::uint32_t>(i64(l, key::lane));
      if (owner == 0 && index && lane)
        if (auto it = scan.lane_tid.find({*index, *lane}); it != scan.lane_tid.end()) owner = it->second;
      losses.charge(boolean(l, key::shared), owner, str(l, key::owner_name), overwritten, torn, missing);
    }
  }
  for (const ojson &s : array_or_empty(top, key::spans)) {
    ExportSpan sp;
    sp.state = std::string(str(s, key::state));
    sp.tid = narrow<std::uint32_t>(i64(s, key::tid)).value_or(0);
    sp.duration_ns = ns(s, key::duration_ns);
    sp.open_for_ns = ns(s, key::open_for_ns);
    sp.note = std::string(str(s, key::note));
    /* A span whose begin was lost starts where its end says it began. */
    if (const ojson *end = member(s, key::end); end && sp.state == "begin_lost" && sp.duration_ns &&
                                                 *sp.duration_ns > 0)
      if (const auto age = ns(*end, key::age_ns);
          age && *age - *sp.duration_ns < t.origin_age_ns && *age - *sp.duration_ns > -kMaxNs)
        t.origin_age_ns = *age - *sp.duration_ns;
    t.spans.push_back(std::move(sp));
  }
  if (const ojson *c = member(top, key::crash); c && c->is_object()) {
    ExportCrash x;
    x.signo = narrow<std::int32_t>(i64(*c, key::signal)).value_or(0);
    x.signal_name = std::string(str(*c, key::signal_name));
    x.si_code = narrow<std::int32_t>(i64(*c, key::si_code));
    x.si_code_name = std::string(str(*c, key::si_code_name));
    x.fault_address = hex(*c, key::fault_address);
    x.tid = narrow<std::uint32_t>(i64(*c, key::tid)).value_or(0);
    x.pc = hex(*c, key::pc).value_or(0);
    x.ring_slot = boolean(*c, key::ring_slot);
    t.crash = std::move(x);
  }
  export_stacks_of_document(member(top, key::crash), member(top, key::thread_stacks), t);
  export_cause_of_document(member(top, key::cause), t);
  for (const ojson &w : array_or_empty(top, key::windows))
    t.windows.push_back({std::string(str(w, key::source)), u64(w, key::events).value_or(0),
                         u64(w, key::overwritten).value_or(0), u64(w, key::dropped).value_or(0),
                         u64(w, key::torn).value_or(0), ns(w, key::complete_for_ns), std::string(str(w, key::says))});
  t.absence_proves_nothing = boolean(top, key::absence_proves_nothing);
  for (const ojson &w : array_or_empty(top, key::warnings))
    if (w.is_string()) t.warnings.push_back(w.get<std::string>());
  return t;
}

std::string frame_name(std::uint64_t address, std::string_view function, std::uint64_t function_offset,
                       std::string_view module, std::optional<std::uint64_t> file_offset,
                       std::string_view source_file, std::uint64_t line) {
  std::string n;
  if (!function.empty()) n = fmt::format("{}+{:#x}", function, function_offset);
  else if (file_offset && !module.empty()) n = fmt::format("{}+{:#x}", module.substr(module.rfind('/') + 1), *file_offset);
  else n = fmt::format("{:#x}", address);
  if (!source_file.empty()) n += fmt::format(" ({}:{})", source_file, line);
  return n;
}

std::optional<ExportEvent> export_event_of_json(const ojson &e) {
  const auto tid = narrow<std::uint32_t>(i64(e, key::tid));
  const ojson *kind = member(e, key::kind);
  const ojson *name = member(e, key::name);
  if (!tid || !kind || !kind->is_string() || !name || !name->is_string()) return std::nullopt;
  ExportEvent x;
  x.tid = *tid;
  x.kind = kind->get_ref<const std::string &>();
  x.name = name->get_ref<const std::string &>();
  x.age_ns = ns(e, key::age_ns);
  x.lane = narrow<std::uint32_t>(i64(e, key::lane)).value_or(0);
  x.seq = u64(e, key::seq).value_or(0);
  x.id = narrow<std::uint32_t>(i64(e, key::id)).value_or(0);
  if (const ojson *args = member(e, key::args); args && args->is_array())
    for (std::size_t i = 0; i < 2 && i < args->size(); ++i)
      if ((*args)[i].is_number_unsigned()) x.args[i].value = (*args)[i].get<std::uint64_t>();
  if (const ojson *names = member(e, key::arg_names); names && names->is_array())
    for (std::size_t i = 0; i < 2 && i < names->size(); ++i)
      if ((*names)[i].is_string() && !(*names)[i].get_ref<const std::string &>().empty())
        x.args[i].name = (*names)[i].get_ref<const std::string &>();
  if (const ojson *text = member(e, key::inline_text); text && text->is_string())
    x.text = std::string_view(text->get_ref<const std::string &>());
  x.span = narrow<std::uint32_t>(i64(e, key::span));
  if (const ojson *c = member(e, key::crash); c && c->is_object()) {
    ExportSignal s;
    s.signo = narrow<std::int32_t>(i64(*c, key::signal)).value_or(0);
    s.signal_name = str(*c, key::signal_name);
    s.si_code = narrow<std::int32_t>(i64(*c, key::si_code)).value_or(0);
    s.si_code_name = str(*c, key::si_code_name);
    s.fault_address = hex(*c, key::fault_address).value_or(0);
    x.signal = s;
  }
  if (const ojson *st = member(e, key::stack); st && st->is_object()) {
    if (const ojson *l = member(e, key::location); l && l->is_object()) x.stack.push_back(frame_of_location(*l));
    for (ExportFrame &f : frames_of(array_or_empty(*st, key::frames))) x.stack.push_back(std::move(f));
    if (const ojson *end = member(*st, key::end); end && end->is_string())
      x.stack_end = std::string_view(end->get_ref<const std::string &>());
    else
      x.stack_end = "none";
  }
  return x;
}

}  // namespace core_timeline::reader
