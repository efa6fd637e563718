/* SPDX-License-Identifier: MIT */
/* compact_timeline.cc - see compact_timeline.h. */
#include "compact_timeline.h"

#include <algorithm>

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

}  // namespace

std::optional<std::string> read_compact(std::string_view bytes, const ReadRequest &request, Timeline &t) {
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
