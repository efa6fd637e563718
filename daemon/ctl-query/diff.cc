/* SPDX-License-Identifier: MIT */
#include "diff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/document/status.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/number.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/tlmap.h"
#include "core_timeline/ring_format.h"
#include "document_reader.h"
#include "text.h"
#include "time_spec.h"

namespace core_timeline::ctl_query {

using json = nlohmann::ordered_json;
namespace key = core_timeline::document::key;
namespace format = core_timeline::format;

namespace {

/* Whether a side's document says "ok" (a timeline was recovered). */
bool says_ok(const SideInfo &i) {
  return core_timeline::document::parse_status(i.status) == core_timeline::document::Status::kOk;
}

const json *member(const json &o, const char *k) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}

std::optional<std::int64_t> i64_of(const json *v) {
  if (v && v->is_number_integer() && !v->is_number_unsigned()) return v->get<std::int64_t>();
  if (v && v->is_number_unsigned() && v->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->get<std::uint64_t>());
  return std::nullopt;
}

std::uint64_t u64_or_0(const json *v) {
  if (v && v->is_number_unsigned()) return v->get<std::uint64_t>();
  if (v && v->is_number_integer() && v->get<std::int64_t>() > 0) return static_cast<std::uint64_t>(v->get<std::int64_t>());
  return 0;
}

std::string string_or(const json *v, std::string fallback) {
  return v && v->is_string() ? v->get<std::string>() : std::move(fallback);
}

}  // namespace

DiffArgument classify_diff_argument(const std::string &arg, const std::string &cwd) {
  const auto slash = arg.find('/');
  if (slash == std::string::npos) return DiffArgument::kMatch;
  if (arg.find('=') < slash) return DiffArgument::kMatch;  // FIELD=VALUE: a field name has no '/'
  std::filesystem::path p(arg);
  if (p.is_relative()) p = std::filesystem::path(cwd) / p;
  reader::Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return DiffArgument::kMatch;
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode)) return DiffArgument::kMatch;
  unsigned char h[18];
  std::size_t got = 0;
  while (got < sizeof h) {
    const ssize_t n = ::read(fd.get(), h + got, sizeof h - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got < sizeof h || std::memcmp(h, "\x7f" "ELF", 4) != 0) return DiffArgument::kMatch;
  /* e_type at offset 16, in the byte order of e_ident[EI_DATA]. */
  const unsigned type = h[5] == 2 ? (h[16] << 8 | h[17]) : (h[17] << 8 | h[16]);
  return type == 4 /* ET_CORE */ ? DiffArgument::kCore : DiffArgument::kMatch;
}

std::string source_of_kind_name(std::string_view kind) {
  static const std::map<std::string, std::string, std::less<>> by_name = [] {
    std::map<std::string, std::string, std::less<>> m;
    for (unsigned k = 1; k < 0x100; ++k)
      if (const char *n = reader::kind_name(static_cast<std::uint16_t>(k)))
        m.emplace(n, format::source_name(format::source_of_kind(static_cast<std::uint16_t>(k))));
    return m;
  }();
  if (const auto it = by_name.find(kind); it != by_name.end()) return it->second;
  if (kind.starts_with("KIND_")) {
    if (const auto n = reader::parse_unsigned<std::uint16_t>(kind.substr(5)))
      return format::source_name(format::source_of_kind(*n));
  }
  return format::source_name(format::kSourceUser);
}

std::optional<std::int64_t> percentile(std::vector<std::int64_t> values, unsigned percent) {
  if (values.empty() || percent < 1 || percent > 100) return std::nullopt;
  const std::size_t n = values.size();
  /* ceil(percent * n / 100), at least 1: the nearest rank. */
  const std::size_t rank = std::max<std::size_t>(1, (percent * n + 99) / 100);
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

void DiffSide::add_event(const json &e) {
  ++event_count;
  if (const auto age = i64_of(member(e, key::age_ns))) {
    ++placed;
    oldest_age_ns = oldest_age_ns ? std::min(*oldest_age_ns, *age) : *age;
    newest_age_ns = newest_age_ns ? std::max(*newest_age_ns, *age) : *age;
  }
  const std::string kind = string_or(member(e, key::kind), "?");
  if (kind == "SPAN_BEGIN" || kind == "SPAN_END") return;  // spans[] counts them
  EventStats &s = events[string_or(member(e, key::name), "?")];
  if (s.count == 0) {
    s.kind = kind;
    s.source = source_of_kind_name(kind);
  }
  ++s.count;
}

void DiffSide::add_rest(const json &doc) {
  if (const json *sp = member(doc, key::spans); sp && sp->is_array())
    for (const auto &x : *sp) {
      if (!x.is_object()) continue;
      SpanStats &s = spans[string_or(member(x, key::name), "?")];
      ++s.count;
      const std::string state = string_or(member(x, key::state), "");
      if (state == "open") ++s.open;
      else if (state == "open_or_end_lost") ++s.open_or_end_lost;
      else if (state == "begin_lost") ++s.begin_lost;
      else if (state == "closed")
        if (const auto d = i64_of(member(x, key::duration_ns)); d && *d >= 0) s.closed_ns.push_back(*d);
    }
  if (const json *ws = member(doc, key::windows); ws && ws->is_array()) {
    has_windows = true;
    for (const auto &x : *ws) {
      if (!x.is_object() || !member(x, key::source) || !member(x, key::source)->is_string()) continue;
      WindowFacts w;
      w.source = member(x, key::source)->get<std::string>();
      w.events = u64_or_0(member(x, key::events));
      w.overwritten = u64_or_0(member(x, key::overwritten));
      w.dropped = u64_or_0(member(x, key::dropped));
      w.torn = u64_or_0(member(x, key::torn));
      w.complete_for_ns = i64_of(member(x, key::complete_for_ns));
      const json *csi = member(x, key::complete_since_init);
      w.complete_since_init = csi && csi->is_boolean() && csi->get<bool>();
      if (const json *rl = member(x, key::recorder_loaded); rl && rl->is_boolean()) w.recorder_loaded = rl->get<bool>();
      const json *en = member(x, key::enabled);
      w.enabled = !(en && en->is_boolean() && !en->get<bool>());
      w.says = string_or(member(x, key::says), "");
      windows.push_back(std::move(w));
    }
  }
  if (const json *t = member(doc, key::time)) reference = string_or(member(*t, key::reference), "");
}

DiffSide DiffSide::of_document(const json &doc) {
  DiffSide s;
  if (const json *ev = member(doc, key::events); ev && ev->is_array())
    for (const auto &e : *ev) s.add_event(e);
  s.add_rest(doc);
  return s;
}

std::optional<std::int64_t> DiffSide::window_ns() const {
  if (placed < 2 || !oldest_age_ns || !newest_age_ns || *newest_age_ns <= *oldest_age_ns) return std::nullopt;
  /* Ages from an untrusted document: a window wider than int64 (ages -1
   * and INT64_MAX) is no window, not a negative one. */
  std::int64_t w = 0;
  if (__builtin_sub_overflow(*newest_age_ns, *oldest_age_ns, &w)) return std::nullopt;
  return w;
}

std::string DiffSide::window_note() const {
  if (window_ns()) return {};
  if (event_count == 0) return "no events";
  if (placed == 0) return "no event is placed in time (time.note in the document says why)";
  if (placed == 1) return "only one event is placed in time";
  return "its events placed in time all have the same age";
}

std::optional<std::int64_t> DiffSide::reach_ns() const {
  if (!oldest_age_ns) return std::nullopt;
  if (*oldest_age_ns == std::numeric_limits<std::int64_t>::min()) return std::numeric_limits<std::int64_t>::max();
  return *oldest_age_ns < 0 ? -*oldest_age_ns : 0;
}

std::optional<double> DiffSide::rate_per_s(std::uint64_t count) const {
  const auto w = window_ns();
  if (!w) return std::nullopt;
  return static_cast<double>(count) * 1e9 / static_cast<double>(*w);
}

const WindowFacts *DiffSide::window(std::string_view source) const {
  for (const auto &w : windows)
    if (w.source == source) return &w;
  return nullptr;
}

std::string Absence::text() const { return proven ? "absent" : "not seen; " + note; }

Absence absence_on(const DiffSide &side, std::string_view source, std::optional<std::int64_t> compared_ns) {
  const WindowFacts *w = side.window(source);
  if (!w)
    return {false, side.has_windows ? fmt::format("no window for source {}", source)
                                    : std::string("window unknown (the document has no windows[])")};
  if (w->recorder_loaded && !*w->recorder_loaded && w->events == 0) return {false, "not recorded (its wrapper library was not loaded)"};
  if (!w->enabled) return {false, "recording was off at the end (tl_set_enabled)"};
  if (w->dropped > 0) return {false, fmt::format("window incomplete ({} dropped)", w->dropped)};
  if (w->torn > 0) return {false, fmt::format("window incomplete ({} torn)", w->torn)};
  if (w->complete_since_init) return {true, {}};
  if (w->complete_for_ns && compared_ns && *w->complete_for_ns >= *compared_ns) return {true, {}};
  return {false, fmt::format("window incomplete ({} overwritten)", w->overwritten)};
}

namespace {

double log2_ratio(double b, double a) { return std::log2(b / a); }

template <typename Row>
bool row_before(const Row &x, const Row &y, std::uint64_t x_total, std::uint64_t y_total) {
  if (x.tier != y.tier) return x.tier < y.tier;
  if (x.change != y.change) return x.change > y.change;
  if (x_total != y_total) return x_total > y_total;
  return x.name < y.name;
}

}  // namespace

Diff compare_sides(const DiffSide &a, const DiffSide &b) {
  Diff d;
  if (a.reach_ns() && b.reach_ns()) d.compared_ns = std::max(*a.reach_ns(), *b.reach_ns());

  std::map<std::string, std::pair<const EventStats *, const EventStats *>> names;
  for (const auto &[n, s] : a.events) names[n].first = &s;
  for (const auto &[n, s] : b.events) names[n].second = &s;
  for (const auto &[n, p] : names) {
    EventRow r;
    r.name = n;
    const EventStats &some = p.first ? *p.first : *p.second;
    r.kind = some.kind;
    r.source = some.source;
    r.a.count = p.first ? p.first->count : 0;
    r.b.count = p.second ? p.second->count : 0;
    r.a.rate_per_s = a.rate_per_s(r.a.count);
    r.b.rate_per_s = b.rate_per_s(r.b.count);
    if (r.a.count == 0 || r.b.count == 0) {
      EventCell &missing = r.a.count == 0 ? r.a : r.b;
      missing.absence = absence_on(r.a.count == 0 ? a : b, r.source, d.compared_ns);
      r.tier = missing.absence->proven ? 0 : 1;
      r.change = static_cast<double>(std::max(r.a.count, r.b.count));
    } else {
      r.tier = 2;
      r.of_rates = r.a.rate_per_s && r.b.rate_per_s;
      r.log2_ratio = r.of_rates ? log2_ratio(*r.b.rate_per_s, *r.a.rate_per_s)
                                : log2_ratio(static_cast<double>(r.b.count), static_cast<double>(r.a.count));
      r.change = std::fabs(*r.log2_ratio);
    }
    d.events.push_back(std::move(r));
  }
  std::sort(d.events.begin(), d.events.end(), [](const EventRow &x, const EventRow &y) {
    return row_before(x, y, x.a.count + x.b.count, y.a.count + y.b.count);
  });

  std::map<std::string, std::pair<const SpanStats *, const SpanStats *>> spans;
  for (const auto &[n, s] : a.spans) spans[n].first = &s;
  for (const auto &[n, s] : b.spans) spans[n].second = &s;
  const auto cell = [](const SpanStats *s) {
    SpanCell c;
    if (!s) return c;
    c.count = s->count;
    c.closed = s->closed_ns.size();
    c.open = s->open;
    c.open_or_end_lost = s->open_or_end_lost;
    c.begin_lost = s->begin_lost;
    c.p50_ns = percentile(s->closed_ns, 50);
    c.p95_ns = percentile(s->closed_ns, 95);
    return c;
  };
  for (const auto &[n, p] : spans) {
    SpanRow r;
    r.name = n;
    r.a = cell(p.first);
    r.b = cell(p.second);
    if (r.a.count == 0 || r.b.count == 0) {
      SpanCell &missing = r.a.count == 0 ? r.a : r.b;
      missing.absence = absence_on(r.a.count == 0 ? a : b, format::source_name(format::kSourceUser), d.compared_ns);
      r.tier = missing.absence->proven ? 0 : 1;
      r.change = static_cast<double>(std::max(r.a.count, r.b.count));
    } else {
      r.tier = r.a.open != r.b.open ? 2 : 3;
      r.change = std::fabs(log2_ratio(static_cast<double>(r.b.count), static_cast<double>(r.a.count)));
      if (r.a.p95_ns && r.b.p95_ns && *r.a.p95_ns > 0 && *r.b.p95_ns > 0)
        r.change += std::fabs(log2_ratio(static_cast<double>(*r.b.p95_ns), static_cast<double>(*r.a.p95_ns)));
    }
    d.spans.push_back(std::move(r));
  }
  std::sort(d.spans.begin(), d.spans.end(), [](const SpanRow &x, const SpanRow &y) {
    return row_before(x, y, x.a.count + x.b.count, y.a.count + y.b.count);
  });
  return d;
}

namespace {

json opt_json(const std::optional<std::int64_t> &v) { return v ? json(*v) : json(nullptr); }
json opt_json(const std::optional<double> &v) { return v ? json(*v) : json(nullptr); }

json absence_json(const std::optional<Absence> &a) {
  if (!a) return nullptr;
  return a->proven ? json("absent") : json("not_seen");
}

json side_json(const SideInfo &i, const DiffSide &s) {
  json j;
  j["argument"] = i.argument;
  j["from"] = i.from == DiffArgument::kCore ? "core" : "timeline";
  j["file"] = i.file.empty() ? json(nullptr) : json(i.file);
  j["source"] = i.source;
  j["entry_cursor"] = i.entry_cursor.empty() ? json(nullptr) : json(i.entry_cursor);
  j["matched"] = i.from == DiffArgument::kCore ? json(nullptr) : json(i.matched);
  j["time_usec"] = i.from == DiffArgument::kCore || i.time_usec == 0 ? json(nullptr) : json(i.time_usec);
  j["status"] = i.status;
  j["pid"] = i.pid ? json(*i.pid) : json(nullptr);
  j["comm"] = i.comm.empty() ? json(nullptr) : json(i.comm);
  j["exe"] = i.exe.empty() ? json(nullptr) : json(i.exe);
  j["signal_name"] = i.signal_name.empty() ? json(nullptr) : json(i.signal_name);
  j["reference"] = s.reference.empty() ? json(nullptr) : json(s.reference);
  j["events"] = s.event_count;
  j["placed"] = s.placed;
  j["window_ns"] = opt_json(s.window_ns());
  j["window_note"] = s.window_ns() ? json(nullptr) : json(s.window_note());
  j["reach_ns"] = opt_json(s.reach_ns());
  json ws = json::array();
  for (const auto &w : s.windows)
    ws.push_back({{"source", w.source},
                  {"events", w.events},
                  {"overwritten", w.overwritten},
                  {"dropped", w.dropped},
                  {"torn", w.torn},
                  {"complete_for_ns", opt_json(w.complete_for_ns)},
                  {"complete_since_init", w.complete_since_init},
                  {"recorder_loaded", w.recorder_loaded ? json(*w.recorder_loaded) : json(nullptr)},
                  {"enabled", w.enabled},
                  {"says", w.says}});
  j["windows"] = std::move(ws);
  return j;
}

}  // namespace

json diff_json(const SideInfo &ia, const DiffSide &a, const SideInfo &ib, const DiffSide &b, const Diff &d,
               const GroupDiff &group) {
  json j;
  j["a"] = side_json(ia, a);
  j["b"] = side_json(ib, b);
  j["group"] = group_diff_json(group);
  j["compared_ns"] = opt_json(d.compared_ns);
  json events = json::array();
  for (const auto &r : d.events) {
    const auto cell = [](const EventCell &c) {
      json x;
      x["count"] = c.count;
      x["rate_per_s"] = opt_json(c.rate_per_s);
      x["absence"] = absence_json(c.absence);
      x["absence_note"] = c.absence && !c.absence->proven ? json(c.absence->note) : json(nullptr);
      return x;
    };
    events.push_back({{"name", r.name},
                      {"kind", r.kind},
                      {"source", r.source},
                      {"a", cell(r.a)},
                      {"b", cell(r.b)},
                      {"tier", r.tier},
                      {"change", r.change},
                      {"log2_ratio", opt_json(r.log2_ratio)},
                      {"ratio_of", r.log2_ratio ? json(r.of_rates ? "rates" : "counts") : json(nullptr)}});
  }
  j["events"] = std::move(events);
  json spans = json::array();
  for (const auto &r : d.spans) {
    const auto cell = [](const SpanCell &c) {
      json x;
      x["count"] = c.count;
      x["closed"] = c.closed;
      x["p50_ns"] = opt_json(c.p50_ns);
      x["p95_ns"] = opt_json(c.p95_ns);
      x["open_at_end"] = c.open;
      x["open_or_end_lost"] = c.open_or_end_lost;
      x["begin_lost"] = c.begin_lost;
      x["absence"] = absence_json(c.absence);
      x["absence_note"] = c.absence && !c.absence->proven ? json(c.absence->note) : json(nullptr);
      return x;
    };
    spans.push_back({{"name", r.name}, {"a", cell(r.a)}, {"b", cell(r.b)}, {"tier", r.tier}, {"change", r.change}});
  }
  j["spans"] = std::move(spans);
  return j;
}

namespace {

std::string duration_text(const std::optional<std::int64_t> &ns) {
  return ns ? reader::format_duration(*ns) : std::string("-");
}

std::string rate_text(const std::optional<double> &r) { return r ? fmt::format("{:.1f}", *r) : std::string("-"); }

std::string ratio_text(double log2) {
  const double r = std::exp2(log2);
  return r >= 1 ? fmt::format("x{:.2f}", r) : fmt::format("/{:.2f}", 1 / r);
}

/* "only in A; absent in B", "only in B; not seen in A; window incomplete (…)". */
std::string one_side_text(bool in_a, const Absence &absence) {
  const char *present = in_a ? "A" : "B", *other = in_a ? "B" : "A";
  return absence.proven ? fmt::format("only in {}; absent in {}", present, other)
                        : fmt::format("only in {}; not seen in {}; {}", present, other, printable(absence.note));
}

std::string side_heading(const char *letter, const SideInfo &i, const DiffSide &s) {
  std::string who = i.pid ? fmt::format("pid {}", *i.pid) : std::string("pid ?");
  if (!i.comm.empty()) who += " (" + printable(i.comm) + ")";
  if (!i.signal_name.empty()) who += ", " + printable(i.signal_name);
  std::string h;
  if (i.from == DiffArgument::kCore) {
    h = fmt::format("{}: core {}: {}", letter, printable(i.label), who);
  } else {
    h = fmt::format("{}: timeline {}: {}", letter, printable(i.label), who);
    if (i.time_usec) h += ", crashed " + format_time(static_cast<std::int64_t>(i.time_usec));
    if (i.matched > 1) h += fmt::format(" (the newest of {} matching {})", i.matched, printable(i.argument));
  }
  if (!says_ok(i)) h += "; status " + printable(i.status);
  h += fmt::format("\n{}: {} events", letter, s.event_count);
  if (const auto w = s.window_ns())
    h += fmt::format(", kept window {} (oldest to newest placed in time)", reader::format_duration(*w));
  else
    h += "; rates cannot be told: " + s.window_note();
  if (s.reference == "crash") h += "; ages before its CRASH";
  else if (s.reference == "newest_event") h += "; ages before its newest event (no CRASH)";
  else if (s.reference == "snapshot") h += "; ages before the snapshot (a live process)";
  for (const auto &w : s.windows)
    if (w.overwritten > 0 || w.dropped > 0 || w.torn > 0) h += fmt::format("\n{} window: {}", letter, printable(w.says));
  return h;
}

}  // namespace

void print_diff_text(std::ostream &out, const SideInfo &ia, const DiffSide &a, const SideInfo &ib, const DiffSide &b,
                     const Diff &d, const GroupDiff &group, bool legend) {
  out << side_heading("A", ia, a) << '\n' << side_heading("B", ib, b) << '\n';
  print_group_section(out, group, legend);
  out << "compared: "
      << (d.compared_ns ? fmt::format("the last {} before each side's reference", reader::format_duration(*d.compared_ns))
                        : std::string("cannot be told (a side has no event placed in time): only a window complete "
                                      "since tl_init proves an absence"))
      << '\n';
  std::vector<std::vector<std::string>> cells;
  for (const auto &r : d.events) {
    std::string change;
    if (r.a.absence) change = one_side_text(false, *r.a.absence);
    else if (r.b.absence) change = one_side_text(true, *r.b.absence);
    else if (r.log2_ratio) change = (r.of_rates ? "rate " : "count ") + ratio_text(*r.log2_ratio);
    cells.push_back({printable(r.name), printable(r.source), std::to_string(r.a.count), rate_text(r.a.rate_per_s),
                     std::to_string(r.b.count), rate_text(r.b.rate_per_s), change});
  }
  if (!cells.empty()) out << '\n';
  print_table(out, {"EVENT", "SOURCE", "A", "A/s", "B", "B/s", "CHANGE"}, {false, false, true, true, true, true, false},
              cells, legend);
  cells.clear();
  const auto open_text = [](const SpanCell &c) {
    return c.open_or_end_lost ? fmt::format("{}+{}?", c.open, c.open_or_end_lost) : std::to_string(c.open);
  };
  for (const auto &r : d.spans) {
    std::string change;
    if (r.a.absence) change = one_side_text(false, *r.a.absence);
    else if (r.b.absence) change = one_side_text(true, *r.b.absence);
    else {
      std::vector<std::string> parts;
      if (r.a.open != r.b.open) parts.push_back(fmt::format("open at the end: A {}, B {}", r.a.open, r.b.open));
      if (r.a.count != r.b.count)
        parts.push_back("count " + ratio_text(log2_ratio(static_cast<double>(r.b.count), static_cast<double>(r.a.count))));
      if (r.a.p95_ns && r.b.p95_ns && *r.a.p95_ns > 0 && *r.b.p95_ns > 0 && *r.a.p95_ns != *r.b.p95_ns)
        parts.push_back("p95 " + ratio_text(log2_ratio(static_cast<double>(*r.b.p95_ns), static_cast<double>(*r.a.p95_ns))));
      for (const auto &p : parts) change += (change.empty() ? "" : "; ") + p;
      if (change.empty()) change = "same";
    }
    cells.push_back({printable(r.name), std::to_string(r.a.count), duration_text(r.a.p50_ns), duration_text(r.a.p95_ns),
                     open_text(r.a), std::to_string(r.b.count), duration_text(r.b.p50_ns), duration_text(r.b.p95_ns),
                     open_text(r.b), change});
  }
  if (!cells.empty()) out << '\n';
  print_table(out, {"SPAN", "A", "A P50", "A P95", "A OPEN", "B", "B P50", "B P95", "B OPEN", "CHANGE"},
              {false, true, true, true, true, true, true, true, true, false}, cells, legend);
}

namespace {

std::optional<std::uint64_t> u64_at(const json &doc, const char *outer, const char *inner) {
  const json *o = member(doc, outer);
  const json *v = o ? member(*o, inner) : nullptr;
  if (v && v->is_number_unsigned()) return v->get<std::uint64_t>();
  return std::nullopt;
}

std::string string_at(const json &doc, const char *outer, const char *inner) {
  const json *o = member(doc, outer);
  return string_or(o ? member(*o, inner) : nullptr, "");
}

void fill_from_document(SideInfo &i, const json &doc) {
  i.status = string_or(member(doc, key::status), "?");
  i.pid = u64_at(doc, key::process, key::pid);
  i.comm = string_at(doc, key::process, key::comm);
  i.exe = string_at(doc, key::process, key::exe);
  i.signal_name = string_at(doc, key::crash, key::signal_name);
}

/* A side that cannot be compared: its status and reason. */
std::string no_timeline(const json &doc) {
  std::string s = "no timeline to compare (status " + printable(string_or(member(doc, key::status), "?"));
  if (const json *r = member(doc, key::reason); r && r->is_string()) s += ": " + printable(r->get<std::string>());
  return s + ")";
}

class DiffRun {
 public:
  DiffRun(const QueryOptions &o, const DiffOptions &d, std::ostream &out, std::ostream &err)
      : o_(o), d_(d), out_(out), err_(err) {}

  int run() {
    if (d_.tlmap) {
      auto m = reader::TlMap::load(*d_.tlmap);
      if (!m) {
        err_ << "ctl-query: --tlmap " << printable(*d_.tlmap) << ": " << printable(m.error().message) << '\n';
        return kExitUsage;
      }
      tlmap_ = std::move(m.value());
    }
    SideInfo ia, ib;
    DiffSide a, b;
    SideGroup ga, gb;
    if (const int rc = resolve("A", d_.a, ia, a, ga)) return rc;
    if (const int rc = resolve("B", d_.b, ib, b, gb)) return rc;
    const GroupDiff group = compare_groups(std::move(ga), std::move(gb));
    if (ia.label == ib.label && !o_.quiet)
      err_ << "ctl-query: A and B are the same " << (ia.from == DiffArgument::kCore ? "core" : "timeline") << " ("
           << printable(ia.label) << ")\n";
    const Diff diff = compare_sides(a, b);
    if (o_.json) {
      const json j = diff_json(ia, a, ib, b, diff, group);
      out_ << (o_.json_pretty ? j.dump(2, ' ', false, json::error_handler_t::replace)
                              : j.dump(-1, ' ', false, json::error_handler_t::replace))
           << '\n';
    } else {
      print_diff_text(out_, ia, a, ib, b, diff, group, !o_.no_legend);
    }
    out_.flush();
    return kExitFound;
  }

 private:
  int resolve(const char *letter, const std::string &arg, SideInfo &info, DiffSide &side, SideGroup &group) {
    info.argument = arg;
    info.from = classify_diff_argument(arg, o_.cwd);
    return info.from == DiffArgument::kCore ? from_core(letter, arg, info, side, group)
                                            : from_match(letter, arg, info, side, group);
  }

  int from_core(const char *letter, const std::string &arg, SideInfo &info, DiffSide &side, SideGroup &group) {
    std::filesystem::path p(arg);
    if (p.is_relative()) p = std::filesystem::path(o_.cwd) / p;
    info.file = info.label = p.lexically_normal().string();
    info.source = "core";
    reader::FileFacts facts;
    auto core = reader::CoreFile::open(info.file, &facts);
    if (!core) {
      err_ << "ctl-query: " << letter << ": " << printable(info.file) << ": " << printable(core.error().message) << '\n';
      return kExitIncomplete;
    }
    reader::ReadOptions ro;
    ro.tlmap = tlmap_ ? &*tlmap_ : nullptr;  // symbols on: the group's stack part is function names
    const json doc = reader::to_json(reader::analyze(*core, ro));
    fill_from_document(info, doc);
    const json *events = member(doc, key::events);
    if (!events || !events->is_array() || (events->empty() && !says_ok(info))) {
      err_ << "ctl-query: " << letter << ": " << printable(info.file) << ": " << no_timeline(doc) << '\n';
      return kExitIncomplete;
    }
    side = DiffSide::of_document(doc);
    group = side_group_of(doc);
    return 0;
  }

  int from_match(const char *letter, const std::string &arg, SideInfo &info, DiffSide &side, SideGroup &group) {
    QueryOptions q = o_;
    q.matches = {arg};
    LocatedTimeline found;
    const int rc = locate_newest(q, err_, &found);
    if (rc == kExitNoMatch || rc == kExitIncomplete) {
      err_ << "ctl-query: " << letter << ": no timeline matches " << printable(arg)
           << (rc == kExitIncomplete ? " among those that could be read" : "");
      std::error_code ec;
      if (arg.find('/') != std::string::npos && std::filesystem::exists(std::filesystem::path(o_.cwd) / arg, ec))
        err_ << " (it names a file that is not a readable ELF core, so it was taken as an executable MATCH)";
      err_ << '\n';
    }
    if (rc != kExitFound) return rc;
    info.label = found.path;
    info.file = found.file;
    info.source = found.source;
    info.entry_cursor = found.entry_cursor;
    info.matched = found.matches;
    info.time_usec = found.time_usec;
    if (found.matches > 1 && !o_.quiet)
      err_ << "ctl-query: " << letter << ": " << found.matches << " timelines match " << printable(arg)
           << "; comparing the newest (" << printable(found.path) << ")\n";
    ReadRequest req;
    req.max_bytes = o_.max_bytes;
    req.paths = {key::spans, key::windows, key::time, core_timeline::document::group_key::group};
    req.on_event = [&side](const json &e, std::size_t) { side.add_event(e); };
    std::optional<Result<Timeline>> read;
    if (found.document) {
      /* From a journal entry: its document, read as a file is. */
      read = parse_timeline(*found.document, found.path, req);
    } else {
      reader::Fd dir(::open(found.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (dir.get() < 0) {
        err_ << "ctl-query: " << letter << ": " << printable(found.dir) << ": cannot open the directory: "
             << std::strerror(errno) << '\n';
        return kExitIncomplete;
      }
      read = read_timeline(dir.get(), found.dir, found.name, req);
    }
    auto &t = *read;
    if (!t) {
      err_ << "ctl-query: " << letter << ": " << printable(t.error().message) << '\n';
      return kExitIncomplete;
    }
    const Timeline &tl = t.value();
    fill_from_document(info, tl.top);
    if (const std::string *pid = tl.field("COREDUMP_PID"); pid && !info.pid) info.pid = reader::parse_unsigned(*pid);
    if (const std::string *c = tl.field("COREDUMP_COMM"); c && info.comm.empty()) info.comm = *c;
    if (const std::string *s = tl.field("COREDUMP_SIGNAL_NAME"); s && info.signal_name.empty()) info.signal_name = *s;
    if (!tl.has_events || (side.event_count == 0 && !says_ok(info))) {
      err_ << "ctl-query: " << letter << ": " << printable(found.path) << ": " << no_timeline(tl.top) << '\n';
      return kExitIncomplete;
    }
    side.add_rest(tl.top);
    group = side_group_of(tl.top);
    return 0;
  }

  const QueryOptions &o_;
  const DiffOptions &d_;
  std::ostream &out_, &err_;
  std::optional<reader::TlMap> tlmap_;
};

}  // namespace

int run_diff(const QueryOptions &o, const DiffOptions &d, std::ostream &out, std::ostream &err) noexcept {
  try {
    DiffRun r(o, d, out, err);
    return r.run();
  } catch (const std::exception &e) {
    err << "ctl-query: " << e.what() << '\n';
    return kExitIncomplete;
  }
}

}  // namespace core_timeline::ctl_query
