/* SPDX-License-Identifier: MIT */
/* compact_shape.cc - the compact document's shape (document/compact_shape.h). */
#include "core_timeline/document/compact_shape.h"

#include <set>

#include "core_timeline/document/keys.h"

namespace core_timeline::document::compact {

namespace {

const Json *member(const Json &o, const char *k) noexcept {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}

const Json *element(const Json &a, std::size_t i) noexcept {
  return a.is_array() && i < a.size() ? &a[i] : nullptr;
}

const Json *type_row(const Json &doc, const Json &e) noexcept {
  const Json *t = element(e, kType);
  const Json *types = member(doc, key::tables);
  types = types ? member(*types, key::types) : nullptr;
  if (!t || !types || !t->is_number_unsigned()) return nullptr;
  return element(*types, t->get<std::size_t>());
}

const std::string *string_at(const Json *row, std::size_t i) noexcept {
  const Json *v = row ? element(*row, i) : nullptr;
  return v && v->is_string() ? &v->get_ref<const std::string &>() : nullptr;
}

std::string dump(const Json &v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

/* Members whose elements go one a line. */
bool by_line(std::string_view k) {
  return k == key::rings || k == key::threads || k == key::spans || k == key::events;
}

void lines(std::string &out, const Json &array) {
  out += '[';
  for (std::size_t i = 0; i < array.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += dump(array[i]);
  }
  out += array.empty() ? "]" : "\n]";
}

bool is_payload(const std::string *kind) noexcept {
  return kind && (*kind == "READ" || *kind == "WRITE" || *kind == "RECV" || *kind == "SEND");
}

}  // namespace

bool is_compact(const Json &doc) noexcept {
  const Json *v = member(doc, key::schema_version);
  return v && v->is_number_integer() && v->get<std::int64_t>() == kCompactSchemaVersion;
}

const std::string *event_kind(const Json &doc, const Json &e) noexcept { return string_at(type_row(doc, e), kTypeKindName); }
const std::string *event_name(const Json &doc, const Json &e) noexcept { return string_at(type_row(doc, e), kTypeName); }

std::size_t first_event(const Json &doc) noexcept {
  const Json *cut = member(doc, key::cut);
  const Json *total = cut ? member(*cut, key::events_total) : nullptr;
  const Json *kept = cut ? member(*cut, key::events_kept) : nullptr;
  if (!total || !kept || !total->is_number_unsigned() || !kept->is_number_unsigned()) return 0;
  const auto t = total->get<std::uint64_t>(), k = kept->get<std::uint64_t>();
  return k <= t ? static_cast<std::size_t>(t - k) : 0;
}

const std::string *span_name(const Json &doc, const Json &span) noexcept {
  const Json *id = element(span, kSpanId);
  const Json *events = member(doc, key::events);
  if (!id || id->is_null() || !events || !events->is_array()) return nullptr;
  const std::size_t first = first_event(doc);
  for (const std::size_t at : {kSpanBegin, kSpanEnd}) {
    const Json *i = element(span, at);
    if (!i || !i->is_number_unsigned() || i->get<std::size_t>() < first) continue;
    if (const Json *e = element(*events, i->get<std::size_t>() - first)) return event_name(doc, *e);
  }
  return nullptr;
}

std::string serialize(const Json &doc) {
  std::string out = "{";
  bool first = true;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    out += first ? "" : ",\n";
    first = false;
    out += dump(Json(it.key()));
    out += ':';
    if (by_line(it.key()) && it->is_array()) {
      lines(out, *it);
    } else if (it.key() == key::tables && it->is_object()) {
      out += '{';
      bool first_table = true;
      for (auto t = it->begin(); t != it->end(); ++t) {
        out += first_table ? "\n" : ",\n";
        first_table = false;
        out += dump(Json(t.key()));
        out += ':';
        if (t->is_array()) lines(out, *t);
        else out += dump(*t);
      }
      out += '}';
    } else {
      out += dump(*it);
    }
  }
  return out + "}\n";
}

std::size_t event_size(const Json &e) { return dump(e).size(); }

bool has_payload(const Json &doc) noexcept {
  const Json *events = member(doc, key::events);
  if (!events || !events->is_array()) return false;
  for (const Json &e : *events) {
    const Json *x = element(e, kExtras);
    const Json *b = x ? member(*x, key::x_bytes) : nullptr;
    if (b && !b->is_null() && is_payload(event_kind(doc, e))) return true;
  }
  return false;
}

std::size_t omit_payload(Json &doc) {
  if (!doc.is_object() || !doc.contains(key::events) || !doc[key::events].is_array()) return 0;
  std::set<std::size_t> taken, still_used;
  std::size_t n = 0;
  for (Json &e : doc[key::events]) {
    if (!e.is_array() || e.size() <= kExtras || !e[kExtras].is_object()) continue;
    Json &x = e[kExtras];
    const auto b = x.find(key::x_bytes);
    if (b == x.end() || !b->is_number_unsigned()) continue;
    if (!is_payload(event_kind(doc, e))) {
      still_used.insert(b->get<std::size_t>());
      continue;
    }
    taken.insert(b->get<std::size_t>());
    *b = nullptr;
    ++n;
  }
  if (doc.contains(key::tables) && doc[key::tables].is_object() && doc[key::tables].contains(key::bytes)) {
    Json &bytes = doc[key::tables][key::bytes];
    for (const std::size_t i : taken)
      if (!still_used.count(i) && bytes.is_array() && i < bytes.size()) bytes[i] = nullptr;
  }
  return n;
}

void rebase_ticks(Json &kept, const Json &all) {
  if (!kept.is_array() || kept.empty() || !all.is_array() || all.size() < kept.size()) return;
  const std::size_t first = all.size() - kept.size();
  std::uint64_t ticks = 0;
  for (std::size_t i = 0; i <= first; ++i) {
    const Json *step = element(all[i], kTicks);
    if (!step || !step->is_number_integer()) return;
    ticks += static_cast<std::uint64_t>(step->get<std::int64_t>());
  }
  if (kept[0].is_array() && kept[0].size() > kTicks) kept[0][kTicks] = static_cast<std::int64_t>(ticks);
}

}  // namespace core_timeline::document::compact
