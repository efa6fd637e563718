// SPDX-License-Identifier: MIT
// bench_document_path - where core-timelined's time goes between the
// decoder's output and the journal entry, for big rings: each step of the
// daemon's document path (daemon/src/document.cc, daemon.cc
// send_timeline_entry()) timed alone on a reader document of N events.
//
// The document: the real stored document of the fixture
// fixtures/journal/timeline-entry-document-inside.export (crash_demo's 5
// events as core-timelined stored them), its reader part (without
// "coredump", "pids", "daemon", "text") with its events repeated to N
// (seq renumbered) and its text's event lines repeated with them: the
// shape of a reader document of N events, serialized as the decoder
// sends it (indent 2).  Steps, as the daemon runs them:
//   parse     document::parse_reader_document() of the decoder's bytes
//   build     document::stored_document(): the stored document's tree
//   serialize document::serialize(): the timeline file's bytes
//   entry     document::journal::entry_fields() at the default
//             --journal-document-max (1 MiB): the summary and the bounded copy
//   split     document::journal::split_document(): the two entries
// and, for scale, `dump`: the reader tree serialized once (what the
// decoder's own output costs).  Prints per N: ms of each step (median of
// RUNS), document bytes and bytes per event, and the process's peak RSS.
//
//   build/bin/bench_document_path [RUNS [N...]]    (default 3; 65536 131071)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/stored.h"

namespace doc = core_timeline::document;
namespace dj = core_timeline::document::journal;
using Json = doc::Json;

namespace {

// The CORE_TIMELINE_DOCUMENT of the first entry of an export-format file.
std::string document_of_export(const std::string &text) {
  const std::string name = "\nCORE_TIMELINE_DOCUMENT\n";
  const auto at = text.find(name);
  if (at == std::string::npos) return {};
  std::uint64_t n = 0;
  const std::size_t len = at + name.size();
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(text[len + i])) << (8 * i);
  return text.substr(len + 8, n);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Row {
  std::vector<double> parse, build, serialize, entry, split, dump;
  std::size_t reader_bytes = 0, stored_bytes = 0, entry_bytes = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 3;
  std::vector<std::size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {65536, 131071};
  std::ifstream in(CT_DOCUMENT_FIXTURE, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto stored = doc::parse_stored_document(document_of_export(text));
  if (!stored) {
    std::fprintf(stderr, "bench_document_path: %s: %s\n", CT_DOCUMENT_FIXTURE, stored.error().message.c_str());
    return 1;
  }
  Json base = *stored;
  const std::string base_text = base["text"].get<std::string>();
  for (const char *k : {"coredump", "pids", "daemon", "text"}) base.erase(k);
  const Json events = base["events"];
  std::vector<std::string> event_lines;  // the text's lines of events ("? tid ...")
  for (std::size_t at = 0, nl; at < base_text.size(); at = nl + 1) {
    nl = base_text.find('\n', at);
    if (nl == std::string::npos) break;
    const std::string line = base_text.substr(at, nl - at);
    if (line.rfind("           ? tid ", 0) == 0) event_lines.push_back(line + "\n");
  }
  std::printf("bench_document_path: %d runs each, median ms\n", runs);
  std::printf("| events | reader doc MiB | stored B/event | parse | build | serialize | entry (1 MiB) | split | "
              "total | dump (for scale) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::size_t n : sizes) {
    Json r = base;
    Json &ev = r["events"];
    ev = Json::array();
    std::string t;
    for (std::size_t i = 0; i < n; ++i) {
      Json e = events[i % events.size()];
      e["seq"] = i + 1;
      ev.push_back(std::move(e));
      if (!event_lines.empty()) t += event_lines[i % event_lines.size()];
    }
    const std::string reader_bytes = doc::serialize(r);
    const std::map<std::string, std::string> fields{{"COREDUMP_PID", "4100"}, {"COREDUMP_UID", "0"},
                                                    {"COREDUMP_TIMESTAMP", "1796120885000000"}};
    Row row;
    row.reader_bytes = reader_bytes.size();
    for (int k = 0; k < runs; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      auto parsed = doc::parse_reader_document(reader_bytes);
      row.parse.push_back(ms_since(t0));
      if (!parsed) {
        std::fprintf(stderr, "bench_document_path: %s\n", parsed.error().message.c_str());
        return 1;
      }
      doc::StoredParts parts;
      parts.reader = &*parsed;
      parts.status = parsed->summary.status;
      parts.coredump.fields = fields;
      parts.text = t;
      t0 = std::chrono::steady_clock::now();
      const Json s = doc::stored_document(parts);
      row.build.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      const std::string bytes = doc::serialize(s);
      row.serialize.push_back(ms_since(t0));
      row.stored_bytes = bytes.size();
      dj::EntryInput e;
      e.document = &s;
      e.document_bytes = bytes;
      e.coredump_fields = &fields;
      e.timeline_path = "/var/lib/systemd/coredump/core.x.timeline.json";
      t0 = std::chrono::steady_clock::now();
      auto f = dj::entry_fields(e);
      row.entry.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      const auto pair = dj::split_document(std::move(f), "0123456789abcdef0123456789abcdef");
      row.split.push_back(ms_since(t0));
      row.entry_bytes = 0;
      if (pair.document)
        for (const auto &[k2, v] : *pair.document) row.entry_bytes += k2.size() + v.size();
      t0 = std::chrono::steady_clock::now();
      const std::string again = doc::serialize(parsed->tree);
      row.dump.push_back(ms_since(t0));
    }
    const double total = median(row.parse) + median(row.build) + median(row.serialize) + median(row.entry) +
                         median(row.split);
    std::printf("| %zu | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.0f | %.0f |\n", n,
                static_cast<double>(row.reader_bytes) / 1048576.0, static_cast<double>(row.stored_bytes) / n,
                median(row.parse), median(row.build), median(row.serialize), median(row.entry), median(row.split),
                total, median(row.dump));
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("peak RSS: %.0f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}
