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
#include "view.h"

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

/* The document without its bulk, for listing and selection: the elements
 * of "events" are counted and dropped as they are parsed (the last
 * kLastEvents kept aside), those of "spans" dropped; the tables stay for
 * naming those last events.  No Analysis is made, so a malformed event is
 * not seen here (show and events read the whole document). */
struct Summary {
  static constexpr std::size_t kLastEvents = 64;
  std::size_t events = 0;
  std::deque<json> last;

  std::optional<std::string> on(std::string_view member, const json &element) {
    if (member != key::events) return std::nullopt;
    ++events;
    if (element.is_null()) return std::nullopt;  // not built (ReadRequest::last_event)
    last.push_back(element);
    if (last.size() > kLastEvents) last.pop_front();
    return std::nullopt;
  }
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
    if (!request.bookkeeping && core_timeline::document::is_bookkeeping_kind(*kind)) continue;
    if (*kind != "CRASH") return {{key::kind, *kind}, {key::name, *name}};
  }
  return nullptr;
}

std::optional<std::string> read_summary(std::string_view bytes, const ReadRequest &request, Timeline &t) {
  Summary sum;
  static constexpr std::string_view kStreamed[] = {key::events, key::spans};
  auto parsed = core_timeline::document::parse_streaming(
      bytes, kStreamed,
      [&sum](const json &, std::string_view member, const json &element, std::size_t) { return sum.on(member, element); },
      request.last_event);
  if (!parsed) return parsed.error().message;
  json &d = *parsed;
  if (!d.is_object()) return "the document is not a JSON object";
  if (sum.events > kMaxEvents) return "more than " + std::to_string(kMaxEvents) + " events";
  t.has_events = d.contains(key::events) && d[key::events].is_array();
  t.event_count = sum.events;
  if (t.has_events && request.last_event) t.last_event = last_event_of(d, sum, request);
  for (const char *k : {key::events, key::tables, key::spans}) d.erase(k);
  t.top = std::move(d);
  if (const auto p = t.top.find(key::process); p != t.top.end() && p->is_object() && request.on_process)
    request.on_process(*p);
  return std::nullopt;
}

/* What show's view needs of an event (ViewEvent::of() of its full
 * event object, without making one). */
ViewEvent view_event(const ctr::Analysis &a, const ctr::Event &e) {
  ViewEvent v;
  v.kind = a.kind_name_of(e);
  v.name = a.name_of(e);
  v.tid = e.tid;
  v.time_ns = e.realtime_ns;
  if (e.stack != ctr::StackState::kNone) v.stack_lines = a.frames_of(e).size() + 1;
  v.bookkeeping = core_timeline::document::is_bookkeeping_kind(v.kind);
  return v;
}

/* `t` from a compact document read whole (the rest of its tree, `d`, and
 * its Analysis when it has events), as `request` asks. */
std::optional<std::string> fill(json &&d, const std::optional<ctr::Analysis> &a, const ReadRequest &request,
                                Timeline &t) {
  if (a && a->events.size() > kMaxEvents) return "more than " + std::to_string(kMaxEvents) + " events";
  for (const char *k : {key::events, key::tables}) d.erase(k);
  if (a) {
    /* The members in the full document's shape for those who ask. */
    if (wanted(request, key::spans)) d[key::spans] = ctr::full_spans(*a);
    if (wanted(request, key::time)) d[key::time] = ctr::full_time(*a);
  }
  t.top = std::move(d);
  if (const auto p = t.top.find(key::process); p != t.top.end() && p->is_object() && request.on_process)
    request.on_process(*p);
  if (a) {
    t.has_events = true;
    t.event_count = a->events.size();
    const bool all = wanted(request, key::events);
    json events = json::array();
    if (request.view_events) {
      request.view_events->reserve(a->events.size());
      for (const ctr::Event &e : a->events) request.view_events->push_back(view_event(*a, e));
    }
    const bool call = request.on_event && !request.view_events;
    if (call || all)
      for (std::size_t i = 0; i < a->events.size(); ++i) {
        const bool wanted_event = call && (!request.event_name || a->name_of(a->events[i]) == *request.event_name) &&
                                  (!request.event_kind || a->kind_name_of(a->events[i]) == *request.event_kind);
        if (!wanted_event && !all) continue;
        json e = ctr::full_event(*a, a->events[i]);
        if (wanted_event) request.on_event(e, i);
        if (all) events.push_back(std::move(e));
      }
    /* The last event that is not the CRASH slot nor, unless asked,
     * bookkeeping, among the last 64 (as document.cc's reader). */
    constexpr std::size_t kTail = 64;
    const std::size_t tail = request.last_event ? std::min<std::size_t>(a->events.size(), kTail) : 0;
    for (std::size_t back = 1; back <= tail; ++back) {
      const ctr::Event &e = a->events[a->events.size() - back];
      const std::string_view kind = a->kind_name_of(e);
      if (!request.bookkeeping && core_timeline::document::is_bookkeeping_kind(kind)) continue;
      if (kind != "CRASH") {
        t.last_event = ctr::full_event(*a, e);
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

}  // namespace

std::optional<std::string> read_compact(std::string_view bytes, const ReadRequest &request, Timeline &t) {
  CompactCache *cache = request.compact_cache.get();
  if (cache && cache->doc && cache->path == t.path) {
    /* Read whole already (the selection's read of the same file). */
    ctr::CompactDocument doc = std::move(*cache->doc);
    cache->doc.reset();
    return fill(std::move(doc.rest), doc.analysis, request, t);
  }
  if (!needs_analysis(request) && !cache) return read_summary(bytes, request, t);
  auto doc = ctr::read_compact_document(bytes);
  if (!doc) return doc.error().message;
  if (!cache) return fill(std::move(doc->rest), doc->analysis, request, t);
  json rest = doc->rest;
  auto problem = fill(std::move(rest), doc->analysis, request, t);
  if (!problem) {
    cache->path = t.path;
    cache->doc = std::move(*doc);
  }
  return problem;
}

}  // namespace core_timeline::ctl_query
