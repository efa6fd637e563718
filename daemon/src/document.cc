/* SPDX-License-Identifier: MIT */
/* document.cc - see document.h. */
#include "document.h"

#include "options.h"

namespace ctd {

Verdict judge(const CoredumpEntry &entry, const DecodeResult &decoded, const std::optional<ExtractStats> &extract) {
  Verdict v;
  if (!decoded.decoded) {
    v.status = Status::kUndecodable;
    v.reason = decoded.failure;
    return v;
  }
  const auto &doc = decoded.document;
  const std::string reader_status = doc.value("status", std::string("?"));
  v.reader_status = status_from_name(reader_status);
  if (!v.reader_status) {
    v.status = Status::kUndecodable;
    v.reason = "the decoder reported a status the daemon does not know: " + printable(reader_status, 64);
    return v;
  }
  const std::string reader_reason = doc.contains("reason") && doc["reason"].is_string() ? doc["reason"].get<std::string>() : "";
  bool doc_truncated = false;
  if (doc.contains("core") && doc["core"].is_object() && doc["core"].contains("truncated") &&
      doc["core"]["truncated"].is_boolean())
    doc_truncated = doc["core"]["truncated"].get<bool>();
  const bool stream = extract && extract->stream_truncated;
  if ((stream || entry.truncated || doc_truncated) && v.reader_status != Status::kOk) {
    v.status = Status::kCoreTruncated;
    std::string why = stream ? "the stored core is cut short or corrupt (" + extract->stream_error + ")"
                      : entry.truncated ? "systemd-coredump truncated the core (COREDUMP_TRUNCATED=1: raise "
                                          "ProcessSizeMax=/ExternalSizeMax= in coredump.conf)"
                                        : "the core is truncated";
    v.reason = why + "; the reader says " + reader_status + (reader_reason.empty() ? "" : ": " + reader_reason);
    return v;
  }
  v.status = *v.reader_status;
  v.reason = reader_reason;
  return v;
}

nlohmann::ordered_json build_document(const DocumentParts &p) {
  using json = nlohmann::ordered_json;
  const CoredumpEntry &e = *p.entry;
  json doc;
  if (p.decoded && p.decoded->decoded) {
    doc = p.decoded->document;
    doc["status"] = status_name(p.verdict.status);
    if (p.verdict.reader_status != p.verdict.status) doc["reason"] = p.verdict.reason;
  } else {
    doc["schema_version"] = 1;
    doc["status"] = status_name(p.verdict.status);
    doc["reason"] = p.verdict.reason;
  }

  json fields = json::object();
  for (const auto &[k, v] : e.fields) fields[k] = v;
  doc["coredump"] = {
      {"journal_cursor", e.cursor},
      {"boot_id", e.boot_id},
      {"realtime_usec", e.realtime_usec},
      {"core_file", e.core_path ? json(*e.core_path) : json(nullptr)},
      {"storage", std::string(storage_name(e.storage))},
      {"fields", std::move(fields)},
  };

  json daemon = {
      {"version", version()},
      {"decoded_usec", p.decoded_usec},
      {"duration_ms", p.duration_ms},
      {"latency_ms", p.decoded_usec >= e.realtime_usec && e.realtime_usec
                         ? static_cast<double>(p.decoded_usec - e.realtime_usec) / 1000.0
                         : 0.0},
      {"reader_status", p.verdict.reader_status ? json(status_name(*p.verdict.reader_status)) : json(nullptr)},
      {"prepared_before_entry", p.prepared_before_entry},
  };
  if (p.extract) {
    const auto &x = *p.extract;
    daemon["extraction"] = {
        {"compression", x.compression},   {"input_bytes", x.input_bytes},
        {"core_bytes", x.core_bytes},     {"kept_bytes", x.kept_bytes},
        {"sparse", x.sparse},             {"budget_exhausted", x.budget_exhausted},
        {"stream_truncated", x.stream_truncated},
        {"stream_error", x.stream_error.empty() ? json(nullptr) : json(x.stream_error)},
    };
  }
  if (p.decoded) {
    daemon["decoder"] = {
        {"duration_ms", p.decoded->duration_ms},
        {"max_rss_kb", p.decoded->max_rss_kb},
        {"anon_kb", p.decoded->anon_kb},
        {"timed_out", p.decoded->timed_out},
        {"via_server", p.decoded->via_server},
        {"landlock_abi", p.decoded->landlock_abi},
        {"seccomp", p.decoded->seccomp},
        {"failure", p.decoded->decoded ? json(nullptr) : json(p.decoded->failure)},
    };
  }
  doc["daemon"] = std::move(daemon);
  if (p.decoded && p.decoded->decoded)
    doc["text"] = p.decoded->text;
  else
    doc["text"] = "core-timeline: " + std::string(status_name(p.verdict.status)) + ": " + p.verdict.reason + "\n";
  return doc;
}

std::string serialize(const nlohmann::ordered_json &doc) {
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace ctd
