// SPDX-License-Identifier: MIT
//
// document_test.cc (daemon_unit_test): the status rules and the stored
// document (document.h).

#include "daemon_unit_support.h"

// ---- statuses ------------------------------------------------------------

namespace {

// The reader's document `j`, through the parser the daemon uses.
ctdoc::ReaderDocument reader_document(const nlohmann::ordered_json &j) {
  auto d = ctdoc::parse_reader_document(j.dump());
  EXPECT_TRUE(d) << d.error().message;
  return d ? std::move(*d) : ctdoc::ReaderDocument{};
}

}  // namespace

TEST(Verdict, StatusRules) {
  using ctd::Status;
  auto e = ctd::validate_entry(genuine_entry(), policy());
  ASSERT_TRUE(e);
  ctd::DecodeResult d;
  d.decoded = false;
  d.failure = "the decoder was killed by SIGSEGV";
  EXPECT_EQ(ctd::judge(*e, d, std::nullopt).status, Status::kUndecodable);

  d.decoded = true;
  nlohmann::ordered_json j = {
      {"status", "mapping_absent"}, {"exit_code", 2}, {"reason", "excluded"}, {"core", {{"truncated", false}}}};
  d.document = reader_document(j);
  EXPECT_EQ(ctd::judge(*e, d, std::nullopt).status, Status::kMappingAbsent);
  // The same reader status in a truncated core: the truncation is the cause.
  j["core"]["truncated"] = true;
  d.document = reader_document(j);
  auto v = ctd::judge(*e, d, std::nullopt);
  EXPECT_EQ(v.status, Status::kCoreTruncated);
  EXPECT_EQ(v.reader_status, Status::kMappingAbsent);
  ctd::ExtractStats x;
  x.stream_truncated = true;
  x.stream_error = "zstd: truncated";
  j["core"]["truncated"] = false;
  d.document = reader_document(j);
  EXPECT_EQ(ctd::judge(*e, d, x).status, Status::kCoreTruncated);
  // A timeline recovered from a truncated core is still ok.
  j["status"] = "ok";
  j["exit_code"] = 0;
  d.document = reader_document(j);
  EXPECT_EQ(ctd::judge(*e, d, x).status, Status::kOk);
  // "usage" is the reader's command line, never a core's: a decoder that
  // says it (one taken over) has not decoded.
  j["status"] = "usage";
  j["exit_code"] = 7;
  d.document = reader_document(j);
  v = ctd::judge(*e, d, std::nullopt);
  EXPECT_EQ(v.status, Status::kUndecodable);
  EXPECT_EQ(v.reader_status, std::nullopt);
  EXPECT_NE(v.reason.find("a status the daemon does not store: usage"), std::string::npos) << v.reason;
}

TEST(ReaderDocument, RefusesWhatIsNotAReaderDocument) {
  EXPECT_FALSE(ctdoc::parse_reader_document("[]"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok"})"));                      // no exit_code
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"core_missing","exit_code":3})"));  // not the reader's
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":9})"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0,"core":{"truncated":1}})"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0,"events":{}})"));
  EXPECT_FALSE(ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0)"));
  // 64 levels parse; 65 do not, and the message says why.
  auto nested = [](int levels) {
    return R"({"status":"ok","exit_code":0,"x":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_TRUE(ctdoc::parse_reader_document(nested(64)));
  auto deep = ctdoc::parse_reader_document(nested(65));
  ASSERT_FALSE(deep);
  EXPECT_NE(deep.error().message.find("deeper than 64 levels"), std::string::npos) << deep.error().message;
  auto ok = ctdoc::parse_reader_document(R"({"status":"ok","exit_code":0,"events":[{},{}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->summary.event_count, 2u);
  EXPECT_EQ(ok->summary.status, ctdoc::Status::kOk);
}

// Guards against: a status whose name drifts from the documented one
// (docs/core-timelined.md, "Statuses"), or a name that does not read back.
TEST(Verdict, EachStatusHasItsDocumentedNameAndReadsBack) {
  const std::pair<ctd::Status, const char *> names[] = {
      {ctd::Status::kOk, "ok"},
      {ctd::Status::kNoRing, "no_ring"},
      {ctd::Status::kMappingAbsent, "mapping_absent"},
      {ctd::Status::kCoreUnreadable, "core_unreadable"},
      {ctd::Status::kRingInvalid, "ring_invalid"},
      {ctd::Status::kExecutableRefused, "executable_refused"},
      {ctd::Status::kSidecarMismatch, "sidecar_mismatch"},
      {ctd::Status::kCoreMissing, "core_missing"},
      {ctd::Status::kCoreTruncated, "core_truncated"},
      {ctd::Status::kUndecodable, "undecodable"},
  };
  for (const auto &[status, name] : names) {
    EXPECT_EQ(ctd::status_name(status), name);
    EXPECT_EQ(ctd::parse_status(name), status) << name;
  }
  EXPECT_EQ(ctd::parse_status("usage"), ctd::Status::kUsage);  // the reader's command line; never stored
  EXPECT_EQ(ctd::parse_status("OK"), std::nullopt);
  EXPECT_EQ(ctd::parse_status(""), std::nullopt);
}

TEST(Document, HasTheContractKeysEvenWithoutDecoding) {
  auto e = ctd::validate_entry(genuine_entry(), policy());
  ASSERT_TRUE(e);
  ctd::DocumentParts p;
  p.entry = &*e;
  p.verdict = {ctd::Status::kCoreMissing, "the core file is gone", std::nullopt};
  p.decoded_usec = 1796020112000000;
  auto doc = ctd::build_document(p);
  EXPECT_EQ(doc["status"], "core_missing");
  EXPECT_EQ(doc["coredump"]["journal_cursor"], "s=1;i=2;b=3");
  EXPECT_EQ(doc["coredump"]["boot_id"], kBoot);
  EXPECT_EQ(doc["coredump"]["realtime_usec"], 1796020111752952u);
  EXPECT_EQ(doc["coredump"]["storage"], "external");
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], "12654");
  EXPECT_FALSE(doc["coredump"]["fields"].contains("COREDUMP"));
  EXPECT_EQ(doc["daemon"]["version"], ctd::version());
  EXPECT_EQ(doc["daemon"]["decoded_usec"], 1796020112000000u);
  EXPECT_TRUE(doc["daemon"]["duration_ms"].is_number());
  // The compact document (schema_version 7) stores no text: readers say
  // "core-timeline: STATUS: REASON" from status and reason.
  EXPECT_EQ(doc["schema_version"], 7);
  EXPECT_FALSE(doc.contains("text"));
  // Invalid UTF-8 from a journal field does not break the file.
  e->fields["COREDUMP_CMDLINE"] = std::string("\xff\xfe", 2);
  EXPECT_NO_THROW(ctd::serialize(ctd::build_document(p)));
}
