/* SPDX-License-Identifier: MIT */
/* compact_read.cc - a compact document back into an Analysis (compact.h).
 * The document is untrusted: every member is type-checked and every index
 * bounds-checked before it is used; the first fault stops the read. */
#include <charconv>
#include <map>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core_timeline/document/compact_shape.h"
#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::reader {

namespace key = core_timeline::document::key;
namespace f = core_timeline::format;
using json = nlohmann::ordered_json;

namespace {

/* The first fault found; analysis_of_compact() turns it into kBadData. */
struct Bad {
  std::string what;
};
[[noreturn]] void bad(std::string what) { throw Bad{std::move(what)}; }

const json &at(const json &o, const char *k, std::string_view where) {
  if (!o.is_object()) bad(fmt::format("{} is not an object", where));
  const auto it = o.find(k);
  if (it == o.end()) bad(fmt::format("{} has no \"{}\"", where, k));
  return *it;
}
const json *opt(const json &o, const char *k) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}
std::uint64_t u64(const json &v, std::string_view what) {
  if (!v.is_number_unsigned()) bad(fmt::format("{} is not an unsigned integer", what));
  return v.get<std::uint64_t>();
}
std::uint32_t u32(const json &v, std::string_view what) {
  const std::uint64_t n = u64(v, what);
  if (n > UINT32_MAX) bad(fmt::format("{} is out of range", what));
  return static_cast<std::uint32_t>(n);
}
std::int64_t i64(const json &v, std::string_view what) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > INT64_MAX) bad(fmt::format("{} is out of range", what));
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (!v.is_number_integer()) bad(fmt::format("{} is not an integer", what));
  return v.get<std::int64_t>();
}
std::int32_t i32(const json &v, std::string_view what) {
  const std::int64_t n = i64(v, what);
  if (n < INT32_MIN || n > INT32_MAX) bad(fmt::format("{} is out of range", what));
  return static_cast<std::int32_t>(n);
}
bool boolean(const json &v, std::string_view what) {
  if (!v.is_boolean()) bad(fmt::format("{} is not a boolean", what));
  return v.get<bool>();
}
double number(const json &v, std::string_view what) {
  if (!v.is_number()) bad(fmt::format("{} is not a number", what));
  return v.get<double>();
}
const std::string &str(const json &v, std::string_view what) {
  if (!v.is_string()) bad(fmt::format("{} is not a string", what));
  return v.get_ref<const std::string &>();
}
std::string str_or_empty(const json *v, std::string_view what) { return v ? str(*v, what) : std::string(); }
const json &array(const json &v, std::string_view what) {
  if (!v.is_array()) bad(fmt::format("{} is not an array", what));
  return v;
}
const json &item(const json &row, std::size_t i, std::string_view what) {
  if (!row.is_array() || row.size() <= i) bad(fmt::format("{} has no element {}", what, i));
  return row[i];
}
std::uint64_t hex_u64(const json &v, std::string_view what) {
  const std::string &s = str(v, what);
  std::uint64_t n = 0;
  if (s.size() < 3 || s[0] != '0' || s[1] != 'x') bad(fmt::format("{} is not 0x-hex", what));
  const auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), n, 16);
  if (ec != std::errc() || end != s.data() + s.size()) bad(fmt::format("{} is not 0x-hex", what));
  return n;
}
std::vector<std::uint8_t> hex_bytes_of(const json &v, std::string_view what) {
  const std::string &s = str(v, what);
  if (s.size() % 2) bad(fmt::format("{} is not hex bytes", what));
  std::vector<std::uint8_t> out(s.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto [end, ec] = std::from_chars(s.data() + 2 * i, s.data() + 2 * i + 2, out[i], 16);
    if (ec != std::errc() || end != s.data() + 2 * i + 2) bad(fmt::format("{} is not hex bytes", what));
  }
  return out;
}
std::size_t index(const json &v, std::size_t size, std::string_view what) {
  const std::uint64_t n = u64(v, what);
  if (n >= size) bad(fmt::format("{} ({}) is out of bounds ({})", what, n, size));
  return static_cast<std::size_t>(n);
}

/* The enum value whose name is `s`, for enums named by `name` over
 * 0..count-1. */
template <typename E, typename Name>
E named(const json &v, Name name, int count, std::string_view what) {
  const std::string &s = str(v, what);
  for (int i = 0; i < count; ++i)
    if (name(static_cast<E>(i)) == s) return static_cast<E>(i);
  bad(fmt::format("{} \"{}\" is not a known name", what, s));
}

/* The Analysis of a compact document: run() from its whole tree, or
 * row() for each element of "events" as it is parsed (parse_streaming())
 * and then finish() with the rest of the tree. */
class Loader {
 public:
  Analysis run(const json &doc);
  std::optional<std::string> row(const json &so_far, const json &r);
  Analysis finish(const json &doc);

 private:
  const json &doc() const { return *d_; }
  /* The members an event refers to: rings, tables. */
  void prepare() {
    rings();
    tables();
    prepared_ = true;
  }
  void head();
  void rings();
  void tables();
  void event(const json &r);
  void end_events();
  void rest();
  void spans();
  void time();
  void summaries();
  void crash();
  void cause();
  void group();
  Location location(const json &l, std::string_view what) const;
  std::vector<StackFrame> frames(const json &v, std::string_view what) const;
  /* An index into the whole document's events as one into a.events (a
   * cut copy holds the newest only), nullopt for one left out. */
  std::optional<std::size_t> event_at(const json &v, std::string_view what) const {
    if (v.is_null()) return std::nullopt;
    const std::uint64_t n = u64(v, what);
    if (n >= first_ + a_.events.size()) bad(fmt::format("{} ({}) is out of bounds", what, n));
    if (n < first_) return std::nullopt;
    return static_cast<std::size_t>(n - first_);
  }
  std::uint32_t intern(const std::string &s) {
    auto [it, fresh] = strings_.try_emplace(s, static_cast<std::uint32_t>(a_.strings.size()));
    if (fresh) a_.strings.push_back(s);
    return it->second;
  }

  const json *d_ = nullptr;
  bool prepared_ = false;
  json pending_ = json::array();  // rows that came before the members they refer to
  std::vector<std::pair<std::size_t, std::uint64_t>> fd_origins_;  // (event, the whole document's index)
  std::uint64_t ticks_ = 0;  // the last row's timestamp
  Analysis a_;
  std::size_t first_ = 0;  // the whole document's index of events[0]
  std::map<std::string, std::uint32_t> strings_;
  struct ThreadRow {
    std::uint32_t tid, name;
    bool in_core;
  };
  struct TypeRow {
    std::uint16_t kind;
    std::uint32_t kind_name, name;
    bool named;
    NameFrom from;
  };
  std::vector<ThreadRow> threads_;
  std::vector<TypeRow> types_;
  std::vector<std::pair<std::uint64_t, std::uint8_t>> bytes_;  // (offset in inline_data, length)
};

void Loader::head() {
  a_.status = named<Status>(at(doc(), key::status, "the document"), status_name, 9, "status");
  if (const json *r = opt(doc(), key::reason)) a_.reason = str(*r, "reason");
  a_.source = doc().contains(key::source) && !doc()[key::source].is_null()
                  ? named<TimelineSource>(doc()[key::source], timeline_source_name, 4, "source")
                  : TimelineSource::kNone;
  const json &c = at(doc(), key::core, "the document");
  a_.core_path = str(at(c, key::path, "core"), "core.path");
  a_.core_size = u64(at(c, key::size, "core"), "core.size");
  a_.core_truncated = boolean(at(c, key::truncated, "core"), "core.truncated");
  const std::uint32_t machine = u32(at(c, key::machine, "core"), "core.machine");
  if (machine > UINT16_MAX) bad("core.machine is out of range");
  a_.machine = static_cast<std::uint16_t>(machine);
  const json &p = at(doc(), key::process, "the document");
  if (const json *pid = opt(p, key::pid)) {
    a_.process.pid = u32(*pid, "process.pid");
    a_.process.ppid = u32(at(p, key::ppid, "process"), "process.ppid");
    a_.process.comm = str(at(p, key::comm, "process"), "process.comm");
    a_.process.args = str(at(p, key::args, "process"), "process.args");
  }
  a_.process.exe = str_or_empty(opt(p, key::exe), "process.exe");
  if (const json *b = opt(p, key::build_id)) a_.process.build_id = hex_bytes_of(*b, "process.build_id");
  a_.process.build_id_note = str_or_empty(opt(p, key::build_id_note), "process.build_id_note");
  for (const json &t : array(at(p, key::threads, "process"), "process.threads"))
    a_.process.threads.push_back(u32(t, "process.threads[]"));
  if (const json *s = opt(doc(), key::snapshot)) {
    LiveSnapshotNote n{};
    n.pid = u32(at(*s, key::pid, "snapshot"), "snapshot.pid");
    n.realtime_ns = i64(at(*s, key::realtime_ns, "snapshot"), "snapshot.realtime_ns");
    n.monotonic_ns = i64(at(*s, key::monotonic_ns, "snapshot"), "snapshot.monotonic_ns");
    if (const json *t = opt(*s, key::ticks)) n.ticks = u64(*t, "snapshot.ticks");
    n.duration_ns = i64(at(*s, key::duration_ns, "snapshot"), "snapshot.duration_ns");
    n.lanes_retried = u32(at(*s, key::lanes_retried, "snapshot"), "snapshot.lanes_retried");
    a_.snapshot = n;
  }
  if (const json *cut = opt(doc(), key::cut)) {
    const std::uint64_t total = u64(at(*cut, key::events_total, "cut"), "cut.events_total");
    const std::uint64_t kept = u64(at(*cut, key::events_kept, "cut"), "cut.events_kept");
    if (kept > total) bad("cut.events_kept is more than cut.events_total");
    first_ = static_cast<std::size_t>(total - kept);
  }
}

void Loader::rings() {
  for (const json &r : array(at(doc(), key::rings, "the document"), "rings")) {
    RingReport rr;
    rr.index = u32(at(r, key::index, "a ring"), "rings[].index");
    rr.state = named<RingReport::State>(at(r, key::state, "a ring"), ring_state_name, 5, "rings[].state");
    rr.reason = str_or_empty(opt(r, key::reason), "rings[].reason");
    rr.found_by = named<FoundBy>(at(r, key::found_by, "a ring"), found_by_name, 3, "rings[].found_by");
    rr.address = hex_u64(at(r, key::address, "a ring"), "rings[].address");
    rr.mapping_name = str_or_empty(opt(r, key::mapping), "rings[].mapping");
    rr.mapping_size = u64(at(r, key::mapping_size, "a ring"), "rings[].mapping_size");
    if (const json *h = opt(r, key::header)) {
      DecodedRing d;
      d.header.lane_count = u32(at(*h, key::lane_count, "a ring's header"), "header.lane_count");
      d.header.slots_per_lane = u32(at(*h, key::slots_per_lane, "a ring's header"), "header.slots_per_lane");
      d.header.dropped = u64(at(r, key::dropped, "a ring"), "rings[].dropped");
      if (const json *t = opt(*h, key::ticks_per_second)) d.ticks_per_second = number(*t, "header.ticks_per_second");
      d.clock.ticks_per_second = d.ticks_per_second;
      d.overwritten = u64(at(r, key::overwritten, "a ring"), "rings[].overwritten");
      d.missing = u64(at(r, key::missing, "a ring"), "rings[].missing");
      d.in_flight = u64(at(r, key::in_flight, "a ring"), "rings[].in_flight");
      d.counter_inconsistent = boolean(at(r, key::counter_inconsistent, "a ring"), "rings[].counter_inconsistent");
      d.truncated = boolean(at(r, key::truncated, "a ring"), "rings[].truncated");
      d.torn = u64(at(r, key::torn_slots, "a ring"), "rings[].torn_slots");
      d.invalid = u64(at(r, key::invalid_slots, "a ring"), "rings[].invalid_slots");
      d.live = boolean(at(r, key::live, "a ring"), "rings[].live");
      for (const json &p : array(at(r, key::pools, "a ring"), "rings[].pools")) {
        SourceInfo s;
        s.pool_slots = u32(item(p, 0, "a pool"), "pools[][0]");
        s.lent = u64(item(p, 1, "a pool"), "pools[][1]");
        d.header.sources.push_back(s);
      }
      for (const json &an : array(at(r, key::anchors, "a ring"), "rings[].anchors"))
        d.clock.anchors.push_back({u64(item(an, 0, "an anchor"), "anchors[][0]"), i64(item(an, 1, "an anchor"), "anchors[][1]")});
      for (const json &l : array(at(r, key::lanes, "a ring"), "rings[].lanes")) {
        LaneSummary ls;
        ls.index = u32(at(l, key::lane, "a lane"), "lanes[].lane");
        ls.committed = u64(at(l, key::committed, "a lane"), "lanes[].committed");
        if (const json *v = opt(l, key::first_seq)) ls.first_seq = u64(*v, "lanes[].first_seq");
        if (const json *v = opt(l, key::last_seq)) ls.last_seq = u64(*v, "lanes[].last_seq");
        ls.in_flight = u64(at(l, key::in_flight, "a lane"), "lanes[].in_flight");
        d.lanes.push_back(std::move(ls));
      }
      rr.ring = std::move(d);
    }
    a_.rings.push_back(std::move(rr));
  }
}

Location Loader::location(const json &l, std::string_view what) const {
  Location x;
  x.address = hex_u64(at(l, key::address, what), what);
  if (const json *m = opt(l, key::module)) {
    x.in_module = true;
    x.module = str(*m, what);
    x.file_offset = hex_u64(at(l, key::file_offset, what), what);
  }
  if (const json *b = opt(l, key::build_id)) x.build_id = hex_bytes_of(*b, what);
  if (const json *fn = opt(l, key::function)) {
    x.function = str(*fn, what);
    x.function_offset = hex_u64(at(l, key::offset, what), what);
  }
  if (const json *s = opt(l, key::source)) {
    x.source_file = str(at(*s, key::file, what), what);
    x.line = i32(at(*s, key::line, what), what);
  }
  x.verification = named<Verification>(at(l, key::verification, what), verification_name, 3, what);
  x.mapping_changed = boolean(at(l, key::mapping_changed, what), what);
  if (const json *r = opt(l, key::refused_file)) {
    x.refused_file = str(at(*r, key::path, what), what);
    if (const json *b = opt(*r, key::build_id)) x.refused_build_id = hex_bytes_of(*b, what);
  }
  x.note = str_or_empty(opt(l, key::note), what);
  return x;
}

std::vector<StackFrame> Loader::frames(const json &v, std::string_view what) const {
  std::vector<StackFrame> out;
  for (const json &fr : array(v, what)) {
    StackFrame s;
    s.location = location(fr, what);
    s.from = named<FrameFrom>(at(fr, key::from, what), frame_from_name, 3, what);
    s.signal_frame = boolean(at(fr, key::signal_frame, what), what);
    out.push_back(std::move(s));
  }
  return out;
}

void Loader::tables() {
  const json &t = at(doc(), key::tables, "the document");
  for (const json &r : array(at(t, key::threads, "tables"), "tables.threads")) {
    const json &name = item(r, 1, "a thread row");
    threads_.push_back({u32(item(r, 0, "a thread row"), "a thread's tid"),
                        name.is_null() ? 0u : intern(str(name, "a thread's name")),
                        boolean(item(r, 2, "a thread row"), "a thread's tid_in_core")});
  }
  for (const json &r : array(at(t, key::types, "tables"), "tables.types")) {
    const std::uint32_t kind = u32(item(r, 0, "a type row"), "a type's kind");
    if (kind > UINT16_MAX) bad("a type's kind is out of range");
    const json &from = item(r, 4, "a type row");
    types_.push_back({static_cast<std::uint16_t>(kind), intern(str(item(r, 1, "a type row"), "a type's kind name")),
                      intern(str(item(r, 2, "a type row"), "a type's name")), boolean(item(r, 3, "a type row"), "named"),
                      from.is_null() ? NameFrom::kNone : named<NameFrom>(from, name_from_name, 3, "a type's name_from")});
  }
  const json &modules = array(at(t, key::modules, "tables"), "tables.modules");
  for (const json &r : array(at(t, key::locations, "tables"), "tables.locations")) {
    Location l;
    l.address = hex_u64(item(r, 0, "a location row"), "a location's address");
    if (const json &m = item(r, 1, "a location row"); !m.is_null()) {
      const json &mod = modules[index(m, modules.size(), "a location's module")];
      l.in_module = true;
      l.module = str(item(mod, 0, "a module row"), "a module's path");
      if (const json &b = item(mod, 1, "a module row"); !b.is_null()) l.build_id = hex_bytes_of(b, "a module's build_id");
      l.file_offset = hex_u64(item(r, 2, "a location row"), "a location's file_offset");
    }
    if (const json &fn = item(r, 3, "a location row"); !fn.is_null()) {
      l.function = str(fn, "a location's function");
      l.function_offset = hex_u64(item(r, 4, "a location row"), "a location's offset");
    }
    if (const json &file = item(r, 5, "a location row"); !file.is_null()) {
      l.source_file = str(file, "a location's file");
      l.line = i32(item(r, 6, "a location row"), "a location's line");
    }
    l.verification = named<Verification>(item(r, 7, "a location row"), verification_name, 3, "a location's verification");
    if (const json &more = item(r, 8, "a location row"); !more.is_null()) {
      if (const json *c = opt(more, key::mapping_changed)) l.mapping_changed = boolean(*c, "mapping_changed");
      l.note = str_or_empty(opt(more, key::note), "a location's note");
      if (const json *rf = opt(more, key::refused_file)) {
        l.refused_file = str(at(*rf, key::path, "refused_file"), "refused_file.path");
        if (const json *b = opt(*rf, key::build_id)) l.refused_build_id = hex_bytes_of(*b, "refused_file.build_id");
      }
    }
    a_.locations.push_back(std::move(l));
  }
  for (const json &m : array(at(t, key::mappings, "tables"), "tables.mappings")) {
    AddressMapping x;
    x.kind = named<MappingKind>(at(m, key::kind, "a mapping"), mapping_kind_name, 3, "a mapping's kind");
    x.path = str_or_empty(opt(m, key::path), "a mapping's path");
    x.start = hex_u64(at(m, key::start, "a mapping"), "a mapping's start");
    x.end = hex_u64(at(m, key::end, "a mapping"), "a mapping's end");
    x.perms = str(at(m, key::perms, "a mapping"), "a mapping's perms");
    x.dumped = boolean(at(m, key::dumped, "a mapping"), "a mapping's dumped");
    x.note = str_or_empty(opt(m, key::note), "a mapping's note");
    a_.mappings.push_back(std::move(x));
  }
  for (const json &c : array(at(t, key::crash_slots, "tables"), "tables.crash_slots")) {
    CrashSlot s;
    s.signo = i32(at(c, key::signal, "a crash slot"), "crash slot signal");
    s.signal_name = str(at(c, key::signal_name, "a crash slot"), "crash slot signal_name");
    s.si_code = i32(at(c, key::si_code, "a crash slot"), "crash slot si_code");
    s.si_code_name = str(at(c, key::si_code_name, "a crash slot"), "crash slot si_code_name");
    s.si_errno = i32(at(c, key::si_errno, "a crash slot"), "crash slot si_errno");
    s.sender_pid = i32(at(c, key::si_pid, "a crash slot"), "crash slot si_pid");
    s.sender_uid = u32(at(c, key::sender_uid, "a crash slot"), "crash slot sender_uid");
    s.fault_address = hex_u64(at(c, key::fault_address, "a crash slot"), "crash slot fault_address");
    s.sp = hex_u64(at(c, key::sp, "a crash slot"), "crash slot sp");
    s.handler_flags = u32(at(c, key::handler_flags, "a crash slot"), "crash slot handler_flags");
    s.chained = boolean(at(c, key::chained, "a crash slot"), "crash slot chained");
    s.repeated = boolean(at(c, key::repeated, "a crash slot"), "crash slot repeated");
    s.handed = boolean(at(c, key::handed, "a crash slot"), "crash slot handed");
    s.handed_outcome = named<HandedOutcome>(at(c, key::handed_outcome, "a crash slot"), handed_outcome_name, 4,
                                            "crash slot handed_outcome");
    s.handed_note = str(at(c, key::handed_note, "a crash slot"), "crash slot handed_note");
    a_.crash_slots.push_back(std::move(s));
  }
  for (const json &b : array(at(t, key::bytes, "tables"), "tables.bytes")) {
    if (b.is_null()) {  // left out of a journal copy (payload bytes)
      bytes_.emplace_back(0, 0);
      continue;
    }
    std::vector<std::uint8_t> v;
    if (b.is_string()) v.assign(b.get_ref<const std::string &>().begin(), b.get_ref<const std::string &>().end());
    else v = hex_bytes_of(at(b, key::hex, "inline bytes"), "inline bytes");
    if (v.size() > f::kInlineBytes) bad("inline bytes longer than a slot holds");
    bytes_.emplace_back(a_.inline_data.size(), static_cast<std::uint8_t>(v.size()));
    a_.inline_data.insert(a_.inline_data.end(), v.begin(), v.end());
  }
}

/* One "events" row; its timestamp is a step from the previous row's. */
void Loader::event(const json &r) {
  Event e;
  e.lane = u32(item(r, 0, "an event"), "an event's lane");
  e.seq = u64(item(r, 1, "an event"), "an event's seq");
  const ThreadRow &t = threads_[index(item(r, 2, "an event"), threads_.size(), "an event's thread")];
  e.tid = t.tid;
  e.thread = t.name;
  e.tid_in_core = t.in_core;
  const TypeRow &y = types_[index(item(r, 3, "an event"), types_.size(), "an event's type")];
  e.kind = y.kind;
  e.kind_name = y.kind_name;
  e.name = y.name;
  e.named = y.named;
  e.name_from = y.from;
  e.id = u32(item(r, 4, "an event"), "an event's id");
  e.arg0 = u64(item(r, 5, "an event"), "an event's arg0");
  e.arg1 = u64(item(r, 6, "an event"), "an event's arg1");
  if (const json &l = item(r, 7, "an event"); !l.is_null()) {
    e.location = static_cast<std::uint32_t>(index(l, a_.locations.size(), "an event's location"));
    e.return_address = a_.locations[e.location].address;
  }
  ticks_ += static_cast<std::uint64_t>(i64(item(r, 8, "an event"), "an event's timestamp step"));
  e.timestamp = ticks_;
  if (r.size() > 9) {
    const json &x = r[9];
    if (!x.is_object()) bad("an event's extras are not an object");
    if (const json *v = opt(x, key::x_ring)) e.ring = static_cast<std::uint32_t>(index(*v, a_.rings.size(), "an event's ring"));
    if (const json *v = opt(x, key::x_source)) e.source = named<Origin>(*v, origin_name, 2, "an event's source");
    if (const json *v = opt(x, key::x_pointer))
      e.pointer = static_cast<std::uint32_t>(index(*v, a_.mappings.size(), "an event's pointer"));
    if (const json *v = opt(x, key::x_bytes)) {
      const auto &[off, len] = bytes_[index(*v, bytes_.size(), "an event's bytes")];
      e.inline_at = off;
      e.inline_len = len;
    }
    if (const json *v = opt(x, key::x_stack)) {
      e.stack = named<StackState>(item(*v, 0, "an event's stack"), stack_state_name, 8, "an event's stack end");
      const json &fr = array(item(*v, 1, "an event's stack"), "an event's stack frames");
      if (fr.size() > 255) bad("an event's stack has more than 255 frames");
      e.frames_at = static_cast<std::uint32_t>(a_.frames.size());
      e.stack_depth = static_cast<std::uint8_t>(fr.size());
      for (const json &l : fr)
        a_.frames.push_back(static_cast<std::uint32_t>(index(l, a_.locations.size(), "a stack frame")));
    }
    if (const json *v = opt(x, key::x_crash))
      e.crash = static_cast<std::uint32_t>(index(*v, a_.crash_slots.size(), "an event's crash slot"));
    if (const json *v = opt(x, key::x_fd)) {
      e.fd_state = named<FdOrigin>(item(*v, 0, "an event's fd"), fd_origin_name, 4, "an event's fd origin");
      /* An index into the events, checked once all are read. */
      if (const json &o = item(*v, 1, "an event's fd"); !o.is_null())
        fd_origins_.emplace_back(a_.events.size(), u64(o, "an event's fd origin"));
    }
    if (const json *v = opt(x, key::x_span)) e.span = u32(*v, "an event's span");
  }
  if (e.kind == f::kKindCrash && e.crash == kNoIndex) bad("a CRASH event without its crash slot");
  a_.events.push_back(std::move(e));
}

/* The fd origins, which may point forward: one a cut copy left out, or
 * past the last event, is none. */
void Loader::end_events() {
  for (const auto &[i, n] : fd_origins_)
    a_.events[i].fd_origin =
        n >= first_ && n - first_ < a_.events.size() ? static_cast<std::uint32_t>(n - first_) : kNoIndex;
}

void Loader::spans() {
  for (const json &r : array(at(doc(), key::spans, "the document"), "spans")) {
    Span s;
    const std::string what = fmt::format("span {}", a_.spans.size());
    s.token = hex_u64(item(r, 0, what), what);
    s.state = named<Span::State>(item(r, 1, what), span_state_name, 5, what);
    if (const json &id = item(r, 2, what); id.is_null()) s.id_known = false;
    else s.id = u32(id, what);
    s.arg = u64(item(r, 3, what), what);
    s.begin = event_at(item(r, 4, what), what);
    s.end = event_at(item(r, 5, what), what);
    if (const json &v = item(r, 6, what); !v.is_null()) s.duration_ns = i64(v, what);
    if (const json &v = item(r, 7, what); !v.is_null()) s.open_for_ns = i64(v, what);
    if (const json &v = item(r, 8, what); !v.is_null()) s.parent = u32(v, what);
    s.depth = u32(item(r, 9, what), what);
    s.extra_ends = u32(item(r, 10, what), what);
    if (const json &v = item(r, 11, what); !v.is_null()) s.note = str(v, what);
    s.tid = u32(item(r, 12, what), what);
    s.end_tid = u32(item(r, 13, what), what);
    s.ring = u32(item(r, 14, what), what);
    a_.spans.push_back(std::move(s));
  }
  for (auto &s : a_.spans)
    if (s.parent && *s.parent >= a_.spans.size()) bad("a span's parent is out of bounds");
  for (auto &e : a_.events)
    if (e.span && *e.span >= a_.spans.size()) bad("an event's span is out of bounds");
}

void Loader::time() {
  const json &t = at(doc(), key::time, "the document");
  TimeBase &b = a_.time;
  if (const json *r = opt(t, key::reference))
    b.reference = named<TimeBase::Reference>(*r, reference_name, 4, "time.reference");
  if (const json *r = opt(t, key::reference_event)) b.reference_event = event_at(*r, "time.reference_event");
  b.reference_ticks = u64(at(t, key::reference_ticks, "time"), "time.reference_ticks");
  if (const json *r = opt(t, key::reference_ring)) b.reference_ring = u32(*r, "time.reference_ring");
  if (const json *r = opt(t, key::rate_from))
    b.rate_from = named<SlotClock::Rate>(*r, rate_source_name, 5, "time.rate_from");
  if (const json *r = opt(t, key::ticks_per_second)) b.ticks_per_second = number(*r, "time.ticks_per_second");
  if (const json *r = opt(t, key::rate_error)) b.rate_error = number(*r, "time.rate_error");
  for (const json &o : array(at(t, key::rate_offers, "time"), "time.rate_offers")) {
    SlotClock::Offer x;
    x.from = named<SlotClock::Rate>(at(o, key::from, "an offer"), rate_source_name, 5, "an offer's from");
    x.ticks_per_second = number(at(o, key::ticks_per_second, "an offer"), "an offer's ticks_per_second");
    if (const json *e = opt(o, key::rate_error)) x.error = number(*e, "an offer's rate_error");
    for (const json &d : array(at(o, key::disagrees_with, "an offer"), "disagrees_with"))
      x.disagrees_with.push_back(named<SlotClock::Rate>(d, rate_source_name, 5, "disagrees_with"));
    b.rate_offers.push_back(std::move(x));
  }
  b.wall_clock = boolean(at(t, key::wall_clock, "time"), "time.wall_clock");
  b.note = str_or_empty(opt(t, key::note), "time.note");
  /* Ages and wall-clock times, by the reader's own arithmetic
   * (analyze.cc place_in_time()). */
  const auto ring_at = [&](std::uint32_t i) -> const DecodedRing * {
    return i < a_.rings.size() && a_.rings[i].ring ? &*a_.rings[i].ring : nullptr;
  };
  const DecodedRing *reference = b.reference_ring ? ring_at(*b.reference_ring) : nullptr;
  for (auto &e : a_.events) {
    const DecodedRing *er = ring_at(e.ring);
    if (er == nullptr) continue;
    e.realtime_ns = ticks_to_realtime_ns(*er, e.timestamp);
    if (reference != nullptr) e.age_ns = ticks_delta_ns(*er, e.timestamp, b.reference_ticks);
  }
}

void Loader::summaries() {
  const auto spans_of = [&](const json &v, std::string_view what) {
    std::vector<std::uint32_t> out;
    for (const json &i : array(v, what)) {
      const std::size_t n = index(i, a_.spans.size(), what);
      /* An open span whose begin a cut copy left out is not listed. */
      if (a_.spans[n].begin) out.push_back(static_cast<std::uint32_t>(n));
    }
    return out;
  };
  for (const json &t : array(at(doc(), key::threads, "the document"), "threads")) {
    ThreadSummary s;
    s.tid = u32(at(t, key::tid, "a thread"), "threads[].tid");
    s.name = str_or_empty(opt(t, key::name), "threads[].name");
    s.events = u64(at(t, key::events, "a thread"), "threads[].events");
    s.crashed = boolean(at(t, key::crashed, "a thread"), "threads[].crashed");
    s.open_spans = spans_of(at(t, key::open_spans, "a thread"), "threads[].open_spans");
    a_.threads.push_back(std::move(s));
  }
  for (const json &w : array(at(doc(), key::windows, "the document"), "windows")) {
    SourceWindow x;
    const std::string &name = str(at(w, key::source, "a window"), "windows[].source");
    if (name == "user") x.source = f::kSourceUser;
    else if (name == "alloc") x.source = f::kSourceAlloc;
    else if (name == "io") x.source = f::kSourceIo;
    else bad("windows[].source is not user, alloc or io");
    x.name = name;
    x.events = u64(at(w, key::events, "a window"), "windows[].events");
    x.overwritten = u64(at(w, key::overwritten, "a window"), "windows[].overwritten");
    x.dropped = u64(at(w, key::dropped, "a window"), "windows[].dropped");
    x.torn = u64(at(w, key::torn, "a window"), "windows[].torn");
    x.losses_by_source = boolean(at(w, key::losses_by_source, "a window"), "windows[].losses_by_source");
    if (const json *v = opt(w, key::oldest_age_ns)) x.oldest_age_ns = i64(*v, "windows[].oldest_age_ns");
    if (const json *v = opt(w, key::complete_for_ns)) x.complete_for_ns = i64(*v, "windows[].complete_for_ns");
    x.complete_since_init = boolean(at(w, key::complete_since_init, "a window"), "windows[].complete_since_init");
    if (const json *v = opt(w, key::recorder_loaded)) x.recorder_loaded = boolean(*v, "windows[].recorder_loaded");
    x.enabled = boolean(at(w, key::enabled, "a window"), "windows[].enabled");
    x.lost = x.overwritten > 0 || x.dropped > 0;
    a_.windows.push_back(std::move(x));
  }
  for (const json &n : array(at(doc(), key::names, "the document"), "names")) {
    EventName x;
    x.name = str(at(n, key::name, "a name"), "names[].name");
    const json &an = at(n, key::arg_names, "a name");
    if (!item(an, 0, "arg_names").is_null()) x.arg0 = str(an[0], "arg_names[0]");
    if (!item(an, 1, "arg_names").is_null()) x.arg1 = str(an[1], "arg_names[1]");
    x.from = named<NameFrom>(at(n, key::name_from, "a name"), name_from_name, 3, "names[].name_from");
    a_.names.insert_or_assign(u32(at(n, key::id, "a name"), "names[].id"), std::move(x));
  }
  const json &mr = at(doc(), key::magic_rejected, "the document");
  a_.magic_rejected_total = u64(at(mr, key::total, "magic_rejected"), "magic_rejected.total");
  for (const json &m : array(at(mr, key::first, "magic_rejected"), "magic_rejected.first"))
    a_.magic_rejected.push_back({hex_u64(at(m, key::address, "a candidate"), "magic_rejected address"),
                                 str(at(m, key::reason, "a candidate"), "magic_rejected reason")});
  if (const json *s = opt(doc(), key::sidecar)) {
    a_.sidecar_path = str(at(*s, key::path, "sidecar"), "sidecar.path");
    a_.sidecar_status = named<SidecarStatus>(at(*s, key::status, "sidecar"), sidecar_status_name, 6, "sidecar.status");
    a_.sidecar_detail = str(at(*s, key::detail, "sidecar"), "sidecar.detail");
  }
  a_.absence_proves_nothing = boolean(at(doc(), key::absence_proves_nothing, "the document"), "absence_proves_nothing");
  for (const json &w : array(at(doc(), key::warnings, "the document"), "warnings")) a_.warnings.push_back(str(w, "warnings[]"));
  for (const json &t : array(at(doc(), key::thread_stacks, "the document"), "thread_stacks")) {
    ThreadStack s;
    s.tid = u32(at(t, key::tid, "a thread stack"), "thread_stacks[].tid");
    s.frames = frames(at(t, key::frames, "a thread stack"), "thread_stacks[].frames");
    s.end = str_or_empty(opt(t, key::end), "thread_stacks[].end");
    a_.thread_stacks.push_back(std::move(s));
  }
}

void Loader::crash() {
  const json *c = opt(doc(), key::crash);
  if (c == nullptr) return;
  CrashFacts x;
  if (const json *s = opt(*c, key::signal)) {
    x.signo = i32(*s, "crash.signal");
    x.signal_name = str(at(*c, key::signal_name, "crash"), "crash.signal_name");
  }
  x.signal_note = str_or_empty(opt(*c, key::signal_note), "crash.signal_note");
  if (const json *s = opt(*c, key::si_code)) {
    x.si_code = i32(*s, "crash.si_code");
    x.si_code_name = str(at(*c, key::si_code_name, "crash"), "crash.si_code_name");
  }
  x.si_code_note = str_or_empty(opt(*c, key::si_code_note), "crash.si_code_note");
  if (const json *v = opt(*c, key::fault_address)) x.fault_address = hex_u64(*v, "crash.fault_address");
  if (const json *v = opt(*c, key::sender_pid)) x.sender_pid = i32(*v, "crash.sender_pid");
  x.tid = u32(at(*c, key::tid, "crash"), "crash.tid");
  if (const json *v = opt(*c, key::pc)) {
    x.has_regs = true;
    x.pc = hex_u64(*v, "crash.pc");
    x.sp = hex_u64(at(*c, key::sp, "crash"), "crash.sp");
  }
  if (const json *v = opt(*c, key::location)) x.location = location(*v, "crash.location");
  x.ring_slot = boolean(at(*c, key::ring_slot, "crash"), "crash.ring_slot");
  x.source = named<SignalNote>(at(*c, key::from, "crash"), signal_note_name, 2, "crash.from");
  for (const json &i : array(at(*c, key::inside_spans, "crash"), "crash.inside_spans")) {
    const std::size_t n = index(i, a_.spans.size(), "crash.inside_spans[]");
    if (a_.spans[n].begin) x.inside_spans.push_back(static_cast<std::uint32_t>(n));
  }
  if (const json *s = opt(*c, key::stack)) {
    CrashStack cs;
    cs.frames = frames(at(*s, key::frames, "crash.stack"), "crash.stack.frames");
    cs.core_end = str(at(*s, key::core_end, "crash.stack"), "crash.stack.core_end");
    cs.ring_end = str_or_empty(opt(*s, key::ring_end), "crash.stack.ring_end");
    cs.agree = u32(at(*s, key::agree, "crash.stack"), "crash.stack.agree");
    cs.note = str_or_empty(opt(*s, key::note), "crash.stack.note");
    x.stack = std::move(cs);
  }
  if (const json *r = opt(*c, key::reraised)) {
    ReraisedFault f;
    f.signo = i32(at(*r, key::signal, "crash.reraised"), "crash.reraised.signal");
    f.signal_name = str(at(*r, key::signal_name, "crash.reraised"), "crash.reraised.signal_name");
    f.si_code = i32(at(*r, key::si_code, "crash.reraised"), "crash.reraised.si_code");
    f.si_code_name = str(at(*r, key::si_code_name, "crash.reraised"), "crash.reraised.si_code_name");
    if (const json *v = opt(*r, key::fault_address)) f.fault_address = hex_u64(*v, "crash.reraised.fault_address");
    if (const json *v = opt(*r, key::sender_pid)) f.sender_pid = i32(*v, "crash.reraised.sender_pid");
    f.pc = hex_u64(at(*r, key::pc, "crash.reraised"), "crash.reraised.pc");
    f.sp = hex_u64(at(*r, key::sp, "crash.reraised"), "crash.reraised.sp");
    f.frame_address = hex_u64(at(*r, key::frame_address, "crash.reraised"), "crash.reraised.frame_address");
    f.location = location(at(*r, key::location, "crash.reraised"), "crash.reraised.location");
    if (const json *h = opt(*r, key::handler)) f.handler = location(*h, "crash.reraised.handler");
    f.raised_with = str(at(*r, key::raised_with, "crash.reraised"), "crash.reraised.raised_with");
    f.recorded = boolean(at(*r, key::recorded, "crash.reraised"), "crash.reraised.recorded");
    x.reraised = std::move(f);
  }
  x.reraised_note = str_or_empty(opt(*c, key::reraised_note), "crash.reraised_note");
  a_.crash = std::move(x);
}

/* "cause" as cause_render.cc writes it; a cited event is found by its
 * ring, lane and sequence (one a cut copy left out is not cited). */
void Loader::cause() {
  const json *c = opt(doc(), key::cause);
  if (c == nullptr || c->is_null()) return;
  /* The events by slot, made when the first cited event is met. */
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::uint32_t> by_slot;
  const auto index_slots = [&] {
    if (!by_slot.empty()) return;
    for (std::size_t i = 0; i < a_.events.size(); ++i) {
      const Event &e = a_.events[i];
      by_slot.emplace(std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>(e.ring, e.lane, e.seq),
                      static_cast<std::uint32_t>(i));
    }
  };
  CauseReport report;
  for (const json &j : array(at(*c, key::causes, "cause"), "cause.causes")) {
    Cause x;
    x.kind = named<CauseKind>(at(j, key::kind, "a cause"), cause_kind_name, 6, "cause.causes[].kind");
    x.text = str(at(j, key::says, "a cause"), "cause.causes[].says");
    x.window = str_or_empty(opt(j, key::window), "cause.causes[].window");
    for (const json &p : array(at(j, key::pointers, "a cause"), "cause.causes[].pointers"))
      x.pointers.push_back({str(at(p, key::name, "a pointer"), "pointers[].name"),
                            hex_u64(at(p, key::value, "a pointer"), "pointers[].value")});
    if (const json *b = opt(j, key::block)) {
      x.block = hex_u64(at(*b, key::address, "a block"), "block.address");
      if (const json *v = opt(*b, key::size)) x.block_size = u64(*v, "block.size");
      if (const json *v = opt(*b, key::offset)) x.offset = i64(*v, "block.offset");
    }
    if (const json *v = opt(j, key::fd)) x.fd = i32(*v, "cause.causes[].fd");
    if (const json *v = opt(j, key::message)) x.message = str(*v, "cause.causes[].message");
    for (const json &e : array(at(j, key::events, "a cause"), "cause.causes[].events")) {
      index_slots();
      const auto found = by_slot.find({u64(at(e, key::ring, "a cited event"), "events[].ring"),
                                       u64(at(e, key::lane, "a cited event"), "events[].lane"),
                                       u64(at(e, key::seq, "a cited event"), "events[].seq")});
      if (found != by_slot.end()) x.events.push_back({found->second, str(at(e, key::role, "a cited event"), "role")});
    }
    report.causes.push_back(std::move(x));
  }
  for (const json &t : array(at(*c, key::cannot_tell, "cause"), "cause.cannot_tell"))
    report.cannot_tell.push_back(str(t, "cause.cannot_tell[]"));
  a_.cause = std::move(report);
}

/* "group" as group_json.cc writes it. */
void Loader::group() {
  namespace gk = core_timeline::document::group_key;
  const json *g = opt(doc(), gk::group);
  if (g == nullptr || g->is_null()) return;
  const auto strings = [&](const char *k) {
    std::vector<std::string> out;
    for (const json &v : array(at(*g, k, "group"), k)) out.push_back(str(v, k));
    return out;
  };
  GroupSignature x;
  x.id = str(at(*g, gk::id, "group"), "group.id");
  x.stack_id = str(at(*g, gk::stack_id, "group"), "group.stack_id");
  x.history_id = str_or_empty(opt(*g, gk::history_id), "group.history_id");
  x.history_used = str(at(*g, gk::basis, "group"), "group.basis") == gk::kHistoryAndStack;
  x.signal = str(at(*g, gk::signal, "group"), "group.signal");
  x.frames = strings(gk::frames);
  x.open_spans = strings(gk::open_spans);
  x.last_events = strings(gk::last_events);
  x.words = str(at(*g, gk::words, "group"), "group.words");
  x.stack_words = str(at(*g, gk::stack_words, "group"), "group.stack_words");
  x.note = str_or_empty(opt(*g, gk::note), "group.note");
  a_.group = std::move(x);
}

Analysis Loader::run(const json &doc) {
  d_ = &doc;
  prepare();
  const json &rows = array(at(doc, key::events, "the document"), "events");
  a_.events.reserve(rows.size());
  for (const json &r : rows) event(r);
  rest();
  return std::move(a_);
}

std::optional<std::string> Loader::row(const json &so_far, const json &r) {
  try {
    if (!prepared_) {
      /* Rings and tables first, as write_compact() writes them; else the
       * row waits for the whole document.  The rest (head() too) is read
       * from the whole document: a member after the events counts. */
      if (!is_compact(so_far) || !so_far.contains(key::rings) || !so_far.contains(key::tables)) {
        pending_.push_back(r);
        return std::nullopt;
      }
      d_ = &so_far;
      prepare();
    }
    event(r);
    return std::nullopt;
  } catch (const Bad &b) {
    return "compact document: " + b.what;
  }
}

Analysis Loader::finish(const json &doc) {
  d_ = &doc;
  if (!is_compact(doc)) bad("not a compact document (schema_version 7)");
  array(at(doc, key::events, "the document"), "events");
  if (!prepared_) {
    prepare();
    for (const json &r : pending_) event(r);
  }
  rest();
  return std::move(a_);
}

void Loader::rest() {
  head();
  end_events();
  spans();
  time();
  summaries();
  crash();
  cause();
  group();
}

}  // namespace

bool is_compact(const json &doc) noexcept { return document::compact::is_compact(doc); }

bool looks_compact(std::string_view bytes) noexcept {
  static constexpr std::string_view kStart = "{\"schema_version\":7,";
  return bytes.starts_with(kStart);
}

namespace {

/* f()'s result, the Loader's faults and bad_alloc as Errors. */
template <typename T, typename F>
Result<T> guarded(F &&f) noexcept {
  try {
    return f();
  } catch (const Bad &b) {
    return Error{Errc::kBadData, "compact document: " + b.what};
  } catch (const std::bad_alloc &) {
    return Error{Errc::kNoMemory, "out of memory while reading the compact document"};
  } catch (const std::exception &e) {
    return Error{Errc::kBadData, std::string("compact document: ") + e.what()};
  }
}

}  // namespace

Result<Analysis> analysis_of_compact(const json &doc) noexcept {
  return guarded<Analysis>([&]() -> Result<Analysis> {
    if (!is_compact(doc)) return Error{Errc::kBadData, "not a compact document (schema_version 7)"};
    return Loader().run(doc);
  });
}

Result<CompactDocument> read_compact_document(std::string_view bytes) noexcept {
  return guarded<CompactDocument>([&]() -> Result<CompactDocument> {
    Loader loader;
    static constexpr std::string_view kStreamed[] = {key::events};
    auto tree = document::parse_streaming(bytes, kStreamed,
                                          [&loader](const json &so_far, std::string_view, const json &r, std::size_t) {
                                            return loader.row(so_far, r);
                                          });
    if (!tree) return std::move(tree).error();
    if (!tree->is_object()) return Error{Errc::kBadData, "the document is not a JSON object"};
    if (const auto st = tree->find(key::status); st == tree->end() || !st->is_string())
      return Error{Errc::kBadData, "no \"status\" string"};
    if (!is_compact(*tree)) return Error{Errc::kBadData, "not a compact document (schema_version 7)"};
    CompactDocument out;
    if (tree->contains(key::events)) out.analysis = loader.finish(*tree);
    out.rest = std::move(*tree);
    return out;
  });
}

}  // namespace core_timeline::reader
