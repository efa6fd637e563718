/* SPDX-License-Identifier: MIT */
/* document.cc - see document.h. */
#include "document.h"

#include "options.h"

namespace core_timeline::daemon {

namespace doc = core_timeline::document;

Verdict judge(const CoredumpEntry &entry, const DecodeResult &decoded, const std::optional<ExtractStats> &extract) {
  Verdict v;
  if (!decoded.decoded) {
    v.status = Status::kUndecodable;
    v.reason = decoded.failure;
    return v;
  }
  const doc::ReaderSummary &reader = decoded.document.summary;
  if (reader.status == Status::kUsage) {
    v.status = Status::kUndecodable;
    v.reason = "the decoder gave a status the daemon does not store: usage (the reader's command line)";
    return v;
  }
  v.reader_status = reader.status;
  const std::string reader_reason = reader.reason.value_or("");
  const bool stream = extract && extract->stream_truncated;
  if ((stream || entry.truncated || reader.core_truncated) && reader.status != Status::kOk) {
    v.status = Status::kCoreTruncated;
    std::string why = stream ? "the stored core is cut short or corrupt (" + extract->stream_error + ")"
                      : entry.truncated ? "systemd-coredump truncated the core (COREDUMP_TRUNCATED=1: raise "
                                          "ProcessSizeMax=/ExternalSizeMax= in coredump.conf)"
                                        : "the core is truncated";
    v.reason = why + "; the reader says " + std::string(status_name(reader.status)) +
               (reader_reason.empty() ? "" : ": " + reader_reason);
    return v;
  }
  v.status = reader.status;
  v.reason = reader_reason;
  return v;
}

doc::Json build_document(const DocumentParts &p) {
  const CoredumpEntry &e = *p.entry;
  const bool decoded = p.decoded && p.decoded->decoded;
  doc::StoredParts s;
  s.reader = decoded ? &p.decoded->document : nullptr;
  s.status = p.verdict.status;
  s.reason = p.verdict.reason;
  s.coredump = {e.cursor, e.boot_id, e.realtime_usec, e.core_path, std::string(storage_name(e.storage)), e.fields};
  doc::DaemonFacts &d = s.daemon;
  d.version = version();
  d.decoded_usec = p.decoded_usec;
  d.duration_ms = p.duration_ms;
  d.latency_ms = p.decoded_usec >= e.realtime_usec && e.realtime_usec
                     ? static_cast<double>(p.decoded_usec - e.realtime_usec) / 1000.0
                     : 0.0;
  d.reader_status = p.verdict.reader_status;
  d.prepared_before_entry = p.prepared_before_entry;
  d.extraction = p.extract;
  if (p.decoded) {
    const DecodeResult &r = *p.decoded;
    d.decoder = doc::DecoderFacts{r.duration_ms, r.max_rss_kb,   r.anon_kb, r.timed_out,
                                  r.via_server,  r.landlock_abi, r.seccomp,
                                  r.decoded ? std::nullopt : std::optional<std::string>(r.failure),
                                  doc::DecoderRunAs{r.credentials.uid, r.credentials.gid,
                                                    std::string(decoder_as_name(r.credentials.as))}};
  }
  s.text = decoded ? p.decoded->text
                   : "core-timeline: " + std::string(status_name(p.verdict.status)) + ": " + p.verdict.reason + "\n";
  return doc::stored_document(s);
}

}  // namespace core_timeline::daemon
