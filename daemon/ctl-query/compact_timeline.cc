/* SPDX-License-Identifier: MIT */
/* compact_timeline.cc - see compact_timeline.h. */
#include "compact_timeline.h"

#include <algorithm>
#include <deque>
#include <string>

#include "core_timeline/document/compact_shape.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/render.h"

namespace core_timeline::ctl_query {

namespace key = core_timeline::document::key;
namespace ctr = core_timeline::reader;
using json = nlohmann::ordered_json;

namespace {

/* Whether a path of the request begins with the top-level `k`. */
bool wanted(const ReadRequest &r, std::string_view k) {
  for (const auto &p : r.paths)
    if (p.starts_with(k) && (p.size() == k.size() || p[k.size()] == '.')) return true;
  return false;
}

/* Whether the request needs the Analysis: events handed to on_event, the
 * text, or a path into events, spans, time or text. */
bool needs_analysis(const ReadRequest &r) {
  return r.on_event || r.want_text || wanted(r, key::events) || wanted(r, key::spans) || wanted(r, key::time) ||
         wanted(r, key::text);
}

struct TooDeep {};

/* The document without its bulk, for listing and selection: the elements
 * of "events" are counted and dropped as they are parsed (the last
 * kLastEvents kept aside), those of "spans" dropped; the tables stay for
 * naming those last events.  No Analysis is made, so a malformed event is
 * not seen here (show and events read the whole document). */
class Summary {
 public:
  static constexpr std::size_t kLastEvents = 64;
  bool has_events = false;
  std::size_t events = 0;
  std::deque<json> last;

  bool on(int depth, json::parse_event_t ev, json &parsed) {
    using E = json::parse_event_t;
    if ((ev == E::object_start || ev == E::array_start) && depth >= core_timeline::document::kMaxDepth) throw TooDeep{};
    if (depth == 1 && ev == E::key) member_ = parsed.is_string() ? parsed.get<std::string>() : std::string();
    if (depth == 1 && ev == E::array_start && member_ == key::events) has_events = true;
    /* An element of "events" or "spans" ends at depth 2. */
    if (depth != 2 || (ev != E::array_end && ev != E::object_end && ev != E::value)) return true;
    if (member_ == key::events) {
      ++events;
      last.push_back(std::move(parsed));
      if (last.size() > kLastEvents) last.pop_front();
      return false;
    }
    return member_ != key::spans;
  }

 private:
  std::string member_;
};

/* Timeline::last_event of a summary: the kind and name of the newest of
 * its last events that is not the CRASH slot nor, unless asked,
 * bookkeeping. */
json last_event_of(const json &doc, const Summary &sum, const ReadRequest &request) {
  namespace compact = core_timeline::document::compact;
  for (auto it = sum.last.rbegin(); it != sum.last.rend(); ++it) {
    const std::string *kind = compact::event_kind(doc, *it);
    const std::string *name = compact::event_name(doc, *it);
    if (!kind || !name) continue;
    const json e = {{key::kind, *kind}, {key::name, *name}};
    if (!request.bookkeeping && core_timeline::document::is_bookkeeping_event(e)) continue;
    if (*kind != "CRASH") return e;
  }
  return nullptr;
}

std::optional<std::string> read_summary(std::string_view bytes, const ReadRequest &request, Timeline &t) {
  Summary sum;
  json d;
  try {
    d = json::parse(bytes.begin(), bytes.end(),
                    [&sum](int depth, json::parse_event_t ev, json &parsed) { return sum.on(depth, ev, parsed); },
                    /*allow_exceptions=*/false);
  } catch (const TooDeep &) {
    return "the document nests deeper than " + std::to_string(core_timeline::document::kMaxDepth) + " levels";
  }
  if (d.is_discarded()) return "the document is not valid JSON";
  if (!d.is_object()) return "the document is not a JSON object";
  if (sum.events > kMaxEvents) return "more than " + std::to_string(kMaxEvents) + " events";
  t.has_events = sum.has_events;
  t.event_count = sum.events;
  if (sum.has_events) t.last_event = last_event_of(d, sum, request);
  for (const char *k : {key::events, key::tables, key::spans}) d.erase(k);
  t.top = std::move(d);
  if (const auto p = t.top.find(key::process); p != t.top.end() && p->is_object() && request.on_process)
    request.on_process(*p);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> read_compact(std::string_view bytes, const ReadRequest &request, Timeline &t) {
  if (!needs_analysis(request)) return read_summary(bytes, request, t);
  auto doc = core_timeline::document::parse_stored_document(bytes);
  if (!doc) return doc.error().message;
  json &d = *doc;
  const bool decoded = d.contains(key::events);
  std::optional<ctr::Analysis> a;
  if (decoded) {
    auto loaded = ctr::analysis_of_compact(d);
    if (!loaded) return loaded.error().message;
    a = std::move(*loaded);
    if (a->events.size() > kMaxEvents) return "more than " + std::to_string(kMaxEvents) + " events";
  }
  for (const char *k : {key::events, key::tables}) d.erase(k);
  if (a) {
    /* The members in the full document's shape for those who read them. */
    d[key::spans] = ctr::full_spans(*a);
    d[key::time] = ctr::full_time(*a);
  }
  t.top = std::move(d);
  if (const auto p = t.top.find(key::process); p != t.top.end() && p->is_object() && request.on_process)
    request.on_process(*p);
  if (a) {
    t.has_events = true;
    t.event_count = a->events.size();
    const bool all = wanted(request, key::events);
    json events = json::array();
    if (request.on_event || all)
      for (std::size_t i = 0; i < a->events.size(); ++i) {
        json e = request.summary_events && !all ? ctr::event_summary(*a, a->events[i])
                                                : ctr::full_event(*a, a->events[i]);
        if (request.on_event) request.on_event(e, i);
        if (all) events.push_back(std::move(e));
      }
    /* The last event that is not the CRASH slot nor, unless asked,
     * bookkeeping, among the last 64 (as document.cc's reader). */
    constexpr std::size_t kTail = 64;
    for (std::size_t back = 1; back <= std::min<std::size_t>(a->events.size(), kTail); ++back) {
      json e = ctr::full_event(*a, a->events[a->events.size() - back]);
      if (!request.bookkeeping && core_timeline::document::is_bookkeeping_event(e)) continue;
      if (e[key::kind] != "CRASH") {
        t.last_event = std::move(e);
        break;
      }
    }
    if (all) t.top[key::events] = std::move(events);
    if (request.want_text || wanted(request, key::text)) t.text = ctr::render_text(*a);
    /* A path into "text" (a FIELD=VALUE match) reads the rendered text. */
    if (wanted(request, key::text)) t.top[key::text] = *t.text;
  } else if (request.want_text) {
    /* Nothing was decoded: what core-timelined's document says. */
    const auto r = t.top.find(key::reason);
    const auto s = t.top.find(key::status);
    if (s != t.top.end() && s->is_string())
      t.text = "core-timeline: " + s->get<std::string>() +
               (r != t.top.end() && r->is_string() ? ": " + r->get<std::string>() : std::string()) + "\n";
  }
  return std::nullopt;
}

}  // namespace core_timeline::ctl_query
