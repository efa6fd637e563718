/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/journal_entry.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>
#include <set>

#include <fmt/format.h>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/compact_shape.h"
#include "core_timeline/document/keys.h"

namespace core_timeline::document::journal {

namespace {

using reader::Errc;
using reader::Error;

const Json *member(const Json &o, const char *k) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}

const std::string *string_member(const Json &o, const char *k) {
  const Json *m = member(o, k);
  return m && m->is_string() ? &m->get_ref<const std::string &>() : nullptr;
}

/* The bytes `e` takes as an element of a top-level array of a document
 * serialize() writes: its dump at indent 2, each line indented 4 more, and
 * the ",\n" that separates it from the next. */
std::size_t size_in_document(const Json &e) {
  const std::string d = e.dump(2, ' ', false, Json::error_handler_t::replace);
  std::size_t lines = 1;
  for (const char ch : d) lines += ch == '\n';
  return d.size() + 4 * lines + 2;
}

/* The last lines of `text` within `budget` bytes, after a line saying how
 * much was left out. */
std::string text_tail(const std::string &text, std::size_t budget) {
  if (text.size() <= budget) return text;
  std::size_t from = text.size() - budget;
  const auto nl = text.find('\n', from);
  from = nl == std::string::npos ? text.size() : nl + 1;
  return fmt::format("[cut: the first {} of the text's {} bytes are not in this journal entry (see \"cut\"); the "
                     "timeline file has them]\n",
                     from, text.size()) +
         text.substr(from);
}

bool is_system_uid(std::uint64_t uid) { return uid <= 999 || uid == 65534; }

/* The byte ranges of the elements of the top-level "events" array in
 * `whole`, a document as serialize() writes it (indent 2: the member's
 * line is `  "events": [`, each element opens on a line `    {` and closes
 * on `    }` or `    },`; no string holds a raw newline), or nothing when
 * `whole` is not laid out so or holds another number of them.  Lets the
 * cut copy the newest events' bytes instead of serializing them again
 * (nlohmann's dump takes about 6 ms a MiB here). */
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> event_ranges(std::string_view whole,
                                                                             std::size_t expected) {
  static constexpr std::string_view kStart = "\n  \"events\": [\n";
  const auto at = whole.find(kStart);
  if (at == std::string_view::npos) return std::nullopt;
  std::vector<std::pair<std::size_t, std::size_t>> r;
  r.reserve(expected);
  std::size_t line = at + kStart.size(), open = std::string_view::npos;
  while (line < whole.size()) {
    const auto nl = whole.find('\n', line);
    const std::string_view l = whole.substr(line, nl == std::string_view::npos ? std::string_view::npos : nl - line);
    if (l == "    {") {
      open = line;
    } else if ((l == "    }" || l == "    },") && open != std::string_view::npos) {
      r.emplace_back(open, line + 5);
      open = std::string_view::npos;
    } else if (l == "  ]" || l == "  ],") {
      break;
    }
    if (nl == std::string_view::npos) return std::nullopt;
    line = nl + 1;
  }
  if (r.size() != expected) return std::nullopt;
  return r;
}

/* "2f6574" as the text writes hex bytes: "2f 65 74". */
std::string spaced(const std::string &hex) {
  std::string s;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    if (i) s += ' ';
    s.append(hex, i, 2);
  }
  return s;
}

/* Replaces every `from` in `text` by ` data=(omitted)`, and the cut marks
 * text_arg() writes after a quoted value ("..." and " (N bytes kept; may
 * be cut)"). */
void replace_all(std::string &text, const std::string &from) {
  const std::string to = fmt::format(" data={}", kPayloadOmittedText);
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    std::size_t end = at + from.size();
    if (from.back() == '"' && text.compare(end, 3, "...") == 0) {
      end += 3;
      if (text.compare(end, 2, " (") == 0)
        if (const auto close = text.find(" may be cut)", end); close != std::string::npos && text.find('\n', end) > close)
          end = close + 12;
    }
    text.replace(at, end - at, to);
  }
}

/* Whether an event of `doc` has payload bytes omit_payload() would take:
 * tells whether the document needs copying. */
bool has_payload(const Json &doc) {
  if (compact::is_compact(doc)) return compact::has_payload(doc);
  const Json *events = member(doc, key::events);
  if (!events || !events->is_array()) return false;
  for (const Json &e : *events) {
    const std::string *kind = string_member(e, key::kind);
    if (!kind || !is_payload_kind(*kind)) continue;
    const std::string *hex = string_member(e, key::inline_bytes);
    if ((hex && !hex->empty()) || string_member(e, key::inline_text)) return true;
  }
  return false;
}

/* Takes the coredump.fields values over kCutFieldMax bytes out of the
 * cut copy `c`; their names, in order. */
Json leave_out_big_fields(Json &c) {
  Json left_out = Json::array();
  Json *cd = c.contains(key::coredump) ? &c[key::coredump] : nullptr;
  if (!cd || !cd->is_object()) return left_out;
  auto f = cd->find(key::fields);
  if (f == cd->end() || !f->is_object()) return left_out;
  for (auto it = f->begin(); it != f->end();) {
    if (it->is_string() && it->get_ref<const std::string &>().size() > kCutFieldMax) {
      left_out.push_back(it.key());
      it = f->erase(it);
    } else {
      ++it;
    }
  }
  return left_out;
}

/* bound_document() of a compact document (compact_shape.h): its newest events
 * that fit, the first of them carrying its whole timestamp, and "cut";
 * every other member whole (there is no text to cut). */
reader::Result<EntryDocument> bound_compact(const Json &doc, std::string_view whole, std::uint64_t max_bytes) {
  Json c = Json::object();
  const Json *events = nullptr;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == key::events && it->is_array()) events = &*it;
    else c[it.key()] = *it;
  }
  const std::size_t total = events ? events->size() : 0;
  Json left_out = leave_out_big_fields(c);
  const auto set_cut = [&](std::size_t kept) {
    c[key::cut] = {
        {key::limit, max_bytes},
        {key::document_bytes, whole.size()},
        {key::events_total, total},
        {key::events_kept, kept},
        {key::fields_left_out, left_out},
        {key::kept, fmt::format("the newest {} of {} events; every coredump field but the {} larger than {} bytes; "
                                "every other member whole",
                                kept, total, left_out.size(), kCutFieldMax)},
    };
  };
  set_cut(total);  // the widest numbers, so the base size is an upper bound
  c[key::events] = Json::array();
  const std::size_t base = compact::serialize(c).size() + 2;
  if (base > max_bytes)
    return Error{Errc::kBadData, fmt::format("even without its events the document takes {} bytes, more than the "
                                             "bound of {}",
                                             base, max_bytes)};
  /* The first kept event's step may grow to a whole timestamp: 20 digits. */
  std::size_t budget = static_cast<std::size_t>(max_bytes) - base, kept = 0;
  budget = budget > 24 ? budget - 24 : 0;
  for (std::size_t i = total; i > 0; --i) {
    const std::size_t size = compact::event_size((*events)[i - 1]) + 2;
    if (size > budget) break;
    budget -= size;
    ++kept;
  }
  for (;;) {
    Json ev = Json::array();
    for (std::size_t i = total - kept; i < total; ++i) ev.push_back((*events)[i]);
    compact::rebase_ticks(ev, *events);
    c[key::events] = std::move(ev);
    set_cut(kept);
    std::string bytes = compact::serialize(c);
    if (bytes.size() <= max_bytes) return EntryDocument{std::move(bytes), true};
    if (kept == 0)
      return Error{Errc::kBadData, fmt::format("the cut document takes {} bytes, more than the bound of {}",
                                               bytes.size(), max_bytes)};
    --kept;
  }
}

}  // namespace

bool is_payload_kind(std::string_view kind) noexcept {
  return kind == "READ" || kind == "WRITE" || kind == "RECV" || kind == "SEND";
}

std::size_t omit_payload(Json &doc) {
  if (compact::is_compact(doc)) return compact::omit_payload(doc);
  Json *events = doc.is_object() && doc.contains(key::events) ? &doc[key::events] : nullptr;
  if (!events || !events->is_array()) return 0;
  std::vector<std::string> in_text;
  std::size_t n = 0;
  for (Json &e : *events) {
    const std::string *kind = string_member(e, key::kind);
    if (!kind || !is_payload_kind(*kind)) continue;
    const std::string *hex = string_member(e, key::inline_bytes);
    const std::string *text = string_member(e, key::inline_text);
    if ((!hex || hex->empty()) && !text) continue;
    if (text) in_text.push_back(" data=\"" + *text + "\"");
    if (hex && !hex->empty()) in_text.push_back(" data-bytes=[" + spaced(*hex) + "]");
    e[key::inline_bytes] = nullptr;
    e.erase(key::inline_text);
    e.erase(key::inline_cut);
    ++n;
  }
  if (n == 0) return 0;
  if (auto t = doc.find(key::text); t != doc.end() && t->is_string()) {
    std::string &text = t->get_ref<std::string &>();
    /* Longest first, so that a shorter payload inside a longer one does
     * not split it. */
    std::sort(in_text.begin(), in_text.end(), [](const auto &a, const auto &b) { return a.size() > b.size(); });
    for (const auto &from : in_text) replace_all(text, from);
    text.insert(0, fmt::format("[payload: the bytes of {} I/O events (READ, WRITE, RECV, SEND) are omitted from this "
                               "journal copy, shown as data={}; the timeline file beside the core has them]\n",
                               n, kPayloadOmittedText));
  }
  return n;
}

reader::Result<EntryDocument> bound_document(const Json &doc, std::string_view whole, std::uint64_t max_bytes) {
  if (whole.size() <= max_bytes) return EntryDocument{std::string(whole), false};
  if (!doc.is_object()) return Error{Errc::kBadData, "the document is not a JSON object"};
  if (compact::is_compact(doc)) return bound_compact(doc, whole, max_bytes);
  /* Everything but the events, copied; the events are chosen below. */
  Json c = Json::object();
  const Json *events = nullptr;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == key::events && it->is_array()) {
      events = &*it;
      c[key::events] = Json::array();
    } else {
      c[it.key()] = *it;
    }
  }
  const std::size_t total = events ? events->size() : 0;
  Json left_out = leave_out_big_fields(c);
  std::size_t text_bytes = 0, text_kept = 0;
  if (auto t = c.find(key::text); t != c.end() && t->is_string()) {
    const std::string &text = t->get_ref<const std::string &>();
    text_bytes = text.size();
    std::string tail = text_tail(text, static_cast<std::size_t>(max_bytes / 8));
    text_kept = tail.size();
    *t = std::move(tail);
  }
  const auto set_cut = [&](std::size_t kept) {
    c[key::cut] = {
        {key::limit, max_bytes},
        {key::document_bytes, whole.size()},
        {key::events_total, total},
        {key::events_kept, kept},
        {key::text_bytes, text_bytes},
        {key::text_kept_bytes, text_kept},
        {key::fields_left_out, left_out},
        {key::kept, fmt::format("the newest {} of {} events; the last {} of the text's {} bytes; every coredump "
                                "field but the {} larger than {} bytes; every other member whole",
                                kept, total, text_kept, text_bytes, left_out.size(), kCutFieldMax)},
    };
  };
  set_cut(total);  // the widest numbers, so the base size is an upper bound
  if (const auto ranges = total ? event_ranges(whole, total) : std::nullopt) {
    /* The newest events' bytes, spliced into the rest serialized: what
     * serialize() of the cut document writes, byte for byte. */
    static constexpr std::string_view kEmpty = "\n  \"events\": [],\n";
    const std::string base = serialize(c);
    if (base.size() + 4 > max_bytes)
      return Error{Errc::kBadData, fmt::format("even without its events the document takes {} bytes, more than the "
                                               "bound of {}",
                                               base.size(), max_bytes)};
    std::size_t room = static_cast<std::size_t>(max_bytes) - base.size() - 4, k = 0, used = 0;
    for (std::size_t i = total; i > 0; --i) {
      const auto &[b, e] = (*ranges)[i - 1];
      const std::size_t add = e - b + (k ? 2 : 0);
      if (used + add > room) break;
      used += add;
      ++k;
    }
    set_cut(k);
    std::string out = serialize(c);
    const auto at = out.find(kEmpty);
    if (at != std::string::npos) {
      std::string spliced = "[";
      if (k) {
        spliced += '\n';
        const std::size_t from = (*ranges)[total - k].first, to = (*ranges)[total - 1].second;
        spliced.append(whole.substr(from, to - from));
        spliced += "\n  ]";
      } else {
        spliced += ']';
      }
      out.replace(at + kEmpty.size() - 4, 2, spliced);
      if (out.size() <= max_bytes) return EntryDocument{std::move(out), true};
    }
    /* Not laid out as expected after all: the slow way below. */
    set_cut(total);
  }
  const std::size_t base = serialize(c).size() + 8;  // + the events array's own "\n  " around its elements
  if (base > max_bytes)
    return Error{Errc::kBadData, fmt::format("even without its events the document takes {} bytes, more than the "
                                             "bound of {}",
                                             base, max_bytes)};
  std::size_t budget = static_cast<std::size_t>(max_bytes) - base, kept = 0;
  for (std::size_t i = total; i > 0; --i) {
    const std::size_t s = size_in_document((*events)[i - 1]);
    if (s > budget) break;
    budget -= s;
    ++kept;
  }
  for (;;) {
    Json &ev = c[key::events];
    ev = Json::array();
    for (std::size_t i = total - kept; i < total; ++i) ev.push_back((*events)[i]);
    set_cut(kept);
    std::string bytes = serialize(c);
    if (bytes.size() <= max_bytes) return EntryDocument{std::move(bytes), true};
    if (kept == 0)
      return Error{Errc::kBadData, fmt::format("the cut document takes {} bytes, more than the bound of {}",
                                               bytes.size(), max_bytes)};
    --kept;  // the estimate was short by a few bytes: one event less
  }
}

Fields entry_fields(const EntryInput &in, std::string *note) {
  Fields f;
  const Json &doc = *in.document;
  if (in.coredump_fields)
    for (const std::string_view k : kJoinKeys)
      if (const auto it = in.coredump_fields->find(std::string(k)); it != in.coredump_fields->end())
        f.emplace_back(std::string(k), it->second);
  if (!in.coredump_boot_id.empty()) f.emplace_back(std::string(kBootId), in.coredump_boot_id);
  if (const std::string *s = string_member(doc, key::status)) f.emplace_back(std::string(kStatus), *s);
  const std::string *signal = nullptr;
  if (const Json *crash = member(doc, key::crash)) signal = string_member(*crash, key::signal_name);
  if (!signal && in.coredump_fields)
    if (const auto it = in.coredump_fields->find("COREDUMP_SIGNAL_NAME"); it != in.coredump_fields->end())
      signal = &it->second;
  if (signal) f.emplace_back(std::string(kSignal), *signal);
  group_entry_fields(doc, &f);

  const Json *events = member(doc, key::events);
  const std::size_t n = events && events->is_array() ? events->size() : 0;
  f.emplace_back(std::string(kEvents), std::to_string(n));
  /* A full document's events and spans are objects; a compact one's
   * arrays that refer to its tables (compact_shape.h). */
  const bool is_compact = compact::is_compact(doc);
  const auto kind_of = [&](const Json &e) { return is_compact ? compact::event_kind(doc, e) : string_member(e, key::kind); };
  const auto name_of = [&](const Json &e) { return is_compact ? compact::event_name(doc, e) : string_member(e, key::name); };
  for (std::size_t i = n; i > 0; --i) {
    const Json &e = (*events)[i - 1];
    const std::string *kind = kind_of(e);
    if (kind && (*kind == "CRASH" || *kind == "LANE_CLAIM" || *kind == "STACK")) continue;
    if (const std::string *name = name_of(e)) f.emplace_back(std::string(kLastEvent), *name);
    break;
  }
  std::size_t open = 0;
  std::set<std::string> span_names;
  if (const Json *spans = member(doc, key::spans); spans && spans->is_array()) {
    for (const Json &s : *spans) {
      const Json *st = is_compact ? (s.is_array() && s.size() > compact::kSpanState ? &s[compact::kSpanState] : nullptr)
                                  : member(s, key::state);
      const std::string *state = st && st->is_string() ? &st->get_ref<const std::string &>() : nullptr;
      if (!state || (*state != "open" && *state != "open_or_end_lost")) continue;
      ++open;
      const std::string *name = is_compact ? compact::span_name(doc, s) : string_member(s, key::name);
      if (name && span_names.size() < kMaxOpenSpanNames && span_names.insert(*name).second)
        f.emplace_back(std::string(kOpenSpan), *name);
    }
  }
  f.emplace_back(std::string(kOpenSpans), std::to_string(open));
  std::set<std::string> names;
  bool complete = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string *name = name_of((*events)[i]);
    if (!name || names.count(*name)) continue;
    if (names.size() == kMaxEventNames) {
      complete = false;
      break;
    }
    names.insert(*name);
    f.emplace_back(std::string(kEventName), *name);
  }
  f.emplace_back(std::string(kEventNamesComplete), complete ? "1" : "0");
  /* An integer either way: unsigned when parsed, signed when built. */
  if (const Json *v = member(doc, key::schema_version); v && v->is_number_integer() && v->get<std::int64_t>() >= 0)
    f.emplace_back(std::string(kSchemaVersion), std::to_string(v->get<std::int64_t>()));
  if (!in.timeline_path.empty()) f.emplace_back(std::string(kTimelinePath), in.timeline_path);
  if (const Json *ids = member(doc, key::pids)) {
    const Json *ns = member(*ids, key::namespaced), *pid = member(*ids, key::pid);
    if (ns && ns->is_boolean() && ns->get<bool>() && pid && pid->is_number_integer() && pid->get<std::int64_t>() >= 0)
      f.emplace_back(std::string(kNamespacePid), std::to_string(pid->get<std::int64_t>()));
  }
  f.emplace_back(std::string(kDocumentBytes), std::to_string(in.document_bytes.size()));
  /* The payload bytes: left out of a copy of the document, which then
   * stands for it (serialized as the stored one is). */
  std::optional<Json> without;
  std::string without_bytes;
  if (in.keep_payload) {
    f.emplace_back(std::string(kPayload), "kept");
  } else {
    std::size_t omitted = 0;
    if (has_payload(doc)) {
      without = doc;
      omitted = omit_payload(*without);
      without_bytes = serialize(*without);
    }
    f.emplace_back(std::string(kPayload), "omitted");
    f.emplace_back(std::string(kPayloadOmitted), std::to_string(omitted));
  }
  if (in.document_max == 0) return f;
  auto bounded = without ? bound_document(*without, without_bytes, in.document_max)
                         : bound_document(doc, in.document_bytes, in.document_max);
  if (!bounded) {
    if (note) *note = "no document in the journal entry: " + bounded.error().message;
    f.emplace_back(std::string(kDocumentCut), "1");
    return f;
  }
  if (bounded->cut) f.emplace_back(std::string(kDocumentCut), "1");
  f.emplace_back(std::string(kDocument), std::move(bounded->bytes));
  return f;
}

Trust sender_trust(const Sender &s) noexcept {
  if (!s.transport || *s.transport != "journal" || !s.uid) return Trust::kNone;
  if (*s.uid == "0") return Trust::kDaemon;
  if (!s.coredump_uid || *s.uid != *s.coredump_uid) return Trust::kNone;
  std::uint64_t uid = 0;
  const std::string_view u = *s.uid;
  const auto [end, ec] = std::from_chars(u.data(), u.data() + u.size(), uid);
  if (ec != std::errc() || end != u.data() + u.size() || u.empty() || (u.size() > 1 && u[0] == '0')) return Trust::kNone;
  if (is_system_uid(uid) || uid >= 0xffffffffull) return Trust::kNone;
  return s.cgroup && *s.cgroup == kDaemonCgroup ? Trust::kDaemon : Trust::kUser;
}

}  // namespace core_timeline::document::journal
