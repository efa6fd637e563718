/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/stored.h"

#include <new>

#include <fmt/format.h>

#include "core_timeline/document/compact_shape.h"
#include "core_timeline/document/ids.h"
#include "core_timeline/document/keys.h"

namespace core_timeline::document {

namespace {

using reader::Errc;
using reader::Error;

Error bad(std::string message) { return Error{Errc::kBadData, std::move(message)}; }

/* Thrown by the parser callback to stop at the first level too deep. */
struct TooDeep {};

Json optional_string(const std::optional<std::string> &s) { return s ? Json(*s) : Json(nullptr); }

}  // namespace

reader::Result<ReaderSummary> summarize(const Json &doc) {
  if (!doc.is_object()) return bad("the document is not a JSON object");
  ReaderSummary s;
  const auto status = doc.find(key::status);
  if (status == doc.end() || !status->is_string()) return bad("no \"status\" string");
  const auto parsed = parse_status(status->get_ref<const std::string &>());
  if (!parsed || !is_reader_status(*parsed)) return bad("\"status\" is not one the reader gives");
  s.status = *parsed;
  const auto code = doc.find(key::exit_code);
  if (code == doc.end() || !code->is_number_unsigned() || code->get<std::uint64_t>() > 8)
    return bad("no \"exit_code\" 0..8");
  s.exit_code = code->get<int>();
  if (const auto reason = doc.find(key::reason); reason != doc.end() && reason->is_string())
    s.reason = reason->get<std::string>();
  if (const auto core = doc.find(key::core); core != doc.end()) {
    if (!core->is_object()) return bad("\"core\" is not an object");
    if (const auto t = core->find(key::truncated); t != core->end()) {
      if (!t->is_boolean()) return bad("\"core.truncated\" is not a boolean");
      s.core_truncated = t->get<bool>();
    }
  }
  if (const auto events = doc.find(key::events); events != doc.end()) {
    if (!events->is_array()) return bad("\"events\" is not an array");
    s.event_count = events->size();
  }
  return s;
}

namespace {

/* `bytes` as JSON, refusing nesting deeper than kMaxDepth (copying and
 * dumping a value recurse once per level).  Never throws. */
reader::Result<Json> parse_bounded(std::string_view bytes) noexcept {
  try {
    const Json::parser_callback_t depth_check = [](int depth, nlohmann::json::parse_event_t event, Json &) {
      if ((event == nlohmann::json::parse_event_t::object_start ||
           event == nlohmann::json::parse_event_t::array_start) &&
          depth >= kMaxDepth)
        throw TooDeep{};
      return true;
    };
    Json doc = Json::parse(bytes.begin(), bytes.end(), depth_check, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return bad("the document is not valid JSON");
    return doc;
  } catch (const TooDeep &) {
    return bad(fmt::format("the document nests deeper than {} levels", kMaxDepth));
  } catch (const std::bad_alloc &) {
    return Error{Errc::kNoMemory, "out of memory while parsing the document"};
  } catch (const std::exception &e) {
    return bad(std::string("the document does not parse: ") + e.what());
  }
}

}  // namespace

reader::Result<ReaderDocument> parse_reader_document(std::string_view bytes) noexcept {
  auto tree = parse_bounded(bytes);
  if (!tree) return std::move(tree).error();
  try {
    ReaderDocument d;
    d.tree = std::move(*tree);
    auto summary = summarize(d.tree);
    if (!summary) return std::move(summary).error();
    d.summary = std::move(*summary);
    return d;
  } catch (const std::bad_alloc &) {
    return Error{Errc::kNoMemory, "out of memory while parsing the document"};
  } catch (const std::exception &e) {
    return bad(std::string("the document does not parse: ") + e.what());
  }
}

reader::Result<Json> parse_stored_document(std::string_view bytes) noexcept {
  auto doc = parse_bounded(bytes);
  if (!doc) return doc;
  if (!doc->is_object()) return bad("the document is not a JSON object");
  const auto status = doc->find(key::status);
  if (status == doc->end() || !status->is_string()) return bad("no \"status\" string");
  return doc;
}

Json stored_document(const StoredParts &p) {
  Json doc;
  /* A compact reader's document (document/compact_shape.h) keeps no text: readers render
   * it from the document; so does one with nothing decoded. */
  const bool compact = !p.reader || compact::is_compact(p.reader->tree);
  if (p.reader) {
    doc = p.reader->tree;
    doc[key::status] = std::string(status_name(p.status));
    if (p.status != p.reader->summary.status) doc[key::reason] = p.reason;
  } else {
    doc[key::schema_version] = kCompactSchemaVersion;
    doc[key::status] = std::string(status_name(p.status));
    doc[key::reason] = p.reason;
  }
  /* The compact document's bulk (tables, spans, events) stays last. */
  Json tail = Json::object();
  if (compact)
    for (const char *k : {key::tables, key::spans, key::events})
      if (auto it = doc.find(k); it != doc.end()) {
        tail[k] = std::move(*it);
        doc.erase(k);
      }

  const Coredump &c = p.coredump;
  Json fields = Json::object();
  for (const auto &[k, v] : c.fields) fields[k] = v;
  doc[key::coredump] = {
      {key::journal_cursor, c.journal_cursor}, {key::boot_id, c.boot_id},
      {key::realtime_usec, c.realtime_usec},   {key::core_file, optional_string(c.core_file)},
      {key::storage, c.storage},               {key::fields, std::move(fields)},
  };
  const std::optional<int> d_mode = dumpable(c.fields);
  doc[key::coredump][key::dumpable] = d_mode ? Json(*d_mode) : Json(nullptr);
  doc[key::pids] = ids_json(process_ids(c.fields, p.reader ? &p.reader->tree : nullptr));

  const DaemonFacts &d = p.daemon;
  Json daemon = {
      {key::version, d.version},
      {key::decoded_usec, d.decoded_usec},
      {key::duration_ms, d.duration_ms},
      {key::latency_ms, d.latency_ms},
      {key::reader_status, d.reader_status ? Json(std::string(status_name(*d.reader_status))) : Json(nullptr)},
      {key::prepared_before_entry, d.prepared_before_entry},
  };
  if (const auto &x = d.extraction) {
    daemon[key::extraction] = {
        {key::compression, x->compression},
        {key::input_bytes, x->input_bytes},
        {key::core_bytes, x->core_bytes},
        {key::kept_bytes, x->kept_bytes},
        {key::sparse, x->sparse},
        {key::budget_exhausted, x->budget_exhausted},
        {key::stream_truncated, x->stream_truncated},
        {key::stream_error, x->stream_error.empty() ? Json(nullptr) : Json(x->stream_error)},
    };
  }
  if (const auto &r = d.decoder) {
    daemon[key::decoder] = {
        {key::duration_ms, r->duration_ms}, {key::max_rss_kb, r->max_rss_kb},
        {key::anon_kb, r->anon_kb},         {key::timed_out, r->timed_out},
        {key::via_server, r->via_server},   {key::landlock_abi, r->landlock_abi},
        {key::seccomp, r->seccomp},         {key::failure, optional_string(r->failure)},
    };
    if (const auto &u = r->run_as)
      daemon[key::decoder][key::run_as] = {{key::uid, u->uid}, {key::gid, u->gid}, {key::as, u->as}};
  }
  doc[key::daemon] = std::move(daemon);
  if (!compact) doc[key::text] = p.text;
  for (auto it = tail.begin(); it != tail.end(); ++it) doc[it.key()] = std::move(*it);
  return doc;
}

std::string serialize(const Json &doc) {
  if (compact::is_compact(doc)) return compact::serialize(doc);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

bool is_bookkeeping_event(const Json &event) noexcept {
  if (!event.is_object()) return false;
  const auto kind = event.find(key::kind);
  if (kind == event.end() || !kind->is_string()) return false;
  return is_bookkeeping_kind(kind->get_ref<const std::string &>());
}

bool is_bookkeeping_kind(std::string_view kind) noexcept { return kind == "LANE_CLAIM" || kind == "STACK"; }

}  // namespace core_timeline::document
