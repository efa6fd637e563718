// SPDX-License-Identifier: MIT
// bench_document_path - where core-timelined's time goes between the
// decoder's output and the journal entry, for big rings: each step of the
// daemon's document path (daemon/src/decode.cc decode_fd3() and
// decoded_from(), document.cc build_document(), daemon.cc make_document()
// and send_timeline_entry()) timed alone on a document of N events.
//
// The events: the Analysis of the real core
// fixtures/cores/crash_demo-a.core.zst (crash_demo's 5 events; decompressed
// by zstd(1), analyzed by analyze() as the decoder analyzes a core), its
// events repeated to N (seq renumbered, each round's timestamps after the
// last round's).  Two documents of it, each through the same steps:
//   compact  what core-timelined stores: the decoder's write_compact()
//            output (schema_version 7, compact.h), no text;
//   full     the full document (write_json(), schema_version 6) with
//            render_text()'s text, the shape the daemon stored before:
//            the peer the compact path's ratios are quoted against.
// Steps, as the daemon runs them:
//   write     the decoder's bytes (write_compact(), or write_json() and
//             render_text()): the decoder's cost, not the daemon's, so
//             not in the total
//   parse     document::parse_reader_document() of the decoder's bytes
//   build     document::stored_document(): the stored document's tree
//   serialize document::serialize(): the timeline file's bytes
//   entry     document::journal::entry_fields() at the default
//             --journal-document-max (1 MiB): the summary and the bounded copy
//   split     document::journal::split_document(): the two entries
// Prints per N and document: ms of each step (median of RUNS), the
// decoder's bytes, stored bytes per event, then the compact path's total
// over the full one's, and the process's peak RSS.
//
//   build/bin/bench_document_path [RUNS [N...]]    (default 3; 65536 131071)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"

namespace doc = core_timeline::document;
namespace dj = core_timeline::document::journal;
namespace ctr = core_timeline::reader;
using Json = doc::Json;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Row {
  std::vector<double> write, parse, build, serialize, entry, split;
  std::size_t reader_bytes = 0, stored_bytes = 0;
  double total() const {
    return median(parse) + median(build) + median(serialize) + median(entry) + median(split);
  }
};

// The bytes `zstd -dc PATH` prints; empty when it fails.
std::vector<std::uint8_t> decompressed(const char *path) {
  std::vector<std::uint8_t> bytes;
  const std::string cmd = std::string("/usr/bin/zstd -dcq -- '") + path + "'";
  std::FILE *p = popen(cmd.c_str(), "r");
  if (!p) return bytes;
  std::uint8_t buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) bytes.insert(bytes.end(), buf, buf + n);
  if (pclose(p) != 0) bytes.clear();
  return bytes;
}

// `a` with its events repeated to n: seq 1..n, each round's timestamps
// after the round before's.
ctr::Analysis grown(const ctr::Analysis &a, std::size_t n) {
  ctr::Analysis b = a;
  b.events.clear();
  b.events.reserve(n);
  const std::size_t k = a.events.size();
  const std::uint64_t period = a.events.back().timestamp - a.events.front().timestamp + 1;
  for (std::size_t i = 0; i < n; ++i) {
    ctr::Event e = a.events[i % k];
    e.seq = i + 1;
    e.timestamp += (i / k) * period;
    b.events.push_back(e);
  }
  return b;
}

const std::map<std::string, std::string> kFields{
    {"COREDUMP_PID", "23318"}, {"COREDUMP_UID", "0"}, {"COREDUMP_TIMESTAMP", "1796120885000000"}};

// One run of the daemon's steps on the decoder's bytes, into row.
bool run_steps(const std::string &bytes, const std::string &text, Row &row) {
  auto t0 = std::chrono::steady_clock::now();
  auto parsed = doc::parse_reader_document(bytes);
  row.parse.push_back(ms_since(t0));
  if (!parsed) {
    std::fprintf(stderr, "bench_document_path: %s\n", parsed.error().message.c_str());
    return false;
  }
  doc::StoredParts parts;
  parts.reader = &*parsed;
  parts.status = parsed->summary.status;
  parts.coredump.fields = kFields;
  parts.text = text;
  t0 = std::chrono::steady_clock::now();
  const Json s = doc::stored_document(parts);
  row.build.push_back(ms_since(t0));
  t0 = std::chrono::steady_clock::now();
  const std::string stored = doc::serialize(s);
  row.serialize.push_back(ms_since(t0));
  row.stored_bytes = stored.size();
  dj::EntryInput e;
  e.document = &s;
  e.document_bytes = stored;
  e.coredump_fields = &kFields;
  e.coredump_boot_id = "777596d8f9e04b9793490b21c155e03e";
  e.timeline_path = "/var/lib/systemd/coredump/core.x.timeline.json";
  t0 = std::chrono::steady_clock::now();
  auto f = dj::entry_fields(e);
  row.entry.push_back(ms_since(t0));
  t0 = std::chrono::steady_clock::now();
  const auto pair = dj::split_document(std::move(f), "0123456789abcdef0123456789abcdef");
  row.split.push_back(ms_since(t0));
  return true;
}

// RUNS runs of the compact (or the full) path on `a`.
bool measure(const ctr::Analysis &a, bool compact, int runs, Row &row) {
  for (int k = 0; k < runs; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string bytes = compact ? ctr::render_compact(a) : ctr::render_json(a);
    const std::string text = compact ? std::string() : ctr::render_text(a);
    row.write.push_back(ms_since(t0));
    row.reader_bytes = bytes.size();
    if (!run_steps(bytes, text, row)) return false;
  }
  return true;
}

void print_row(std::size_t n, const char *name, const Row &r) {
  std::printf("| %zu | %s | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.0f |\n", n, name,
              static_cast<double>(r.reader_bytes) / 1048576.0, static_cast<double>(r.stored_bytes) / n,
              median(r.write), median(r.parse), median(r.build), median(r.serialize), median(r.entry),
              median(r.split), r.total());
}

}  // namespace

int main(int argc, char **argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  std::vector<std::size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {65536, 131071};
  auto core = ctr::CoreFile::from_bytes(decompressed(CT_CORE_FIXTURE), CT_CORE_FIXTURE);
  if (!core) {
    std::fprintf(stderr, "bench_document_path: %s: %s\n", CT_CORE_FIXTURE, core.error().message.c_str());
    return 1;
  }
  const ctr::Analysis base = ctr::analyze(*core, ctr::ReadOptions{});
  if (base.events.empty()) {
    std::fprintf(stderr, "bench_document_path: %s: no events (%s)\n", CT_CORE_FIXTURE, base.reason.c_str());
    return 1;
  }
  std::printf("bench_document_path: %d runs each, median ms\n", runs);
  std::printf("| events | document | decoder's MiB | stored B/event | write (decoder) | parse | build | serialize | "
              "entry (1 MiB) | split | total |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::vector<double> ratios;
  for (const std::size_t n : sizes) {
    const ctr::Analysis a = grown(base, n);
    Row compact, full;
    if (!measure(a, true, runs, compact) || !measure(a, false, runs, full)) return 1;
    print_row(n, "compact", compact);
    print_row(n, "full", full);
    ratios.push_back(compact.total() / full.total());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i)
    std::printf("%zu events: compact total / full total = %.2f x\n", sizes[i], ratios[i]);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("peak RSS: %.0f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}
