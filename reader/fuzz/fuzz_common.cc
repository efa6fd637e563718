// SPDX-License-Identifier: MIT
#include "fuzz_common.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core_timeline/document/stored.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/export.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/ring.h"

namespace ct::fuzz {
namespace ctr = core_timeline::reader;
namespace doc = core_timeline::document;

namespace {

[[noreturn]] void fail(const char *what, std::string_view detail) {
  std::fprintf(stderr, "fuzz oracle: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

std::string chrome_trace(ctr::ExportTimeline timeline, const ctr::Analysis *a, const doc::Json *top) {
  std::string out;
  auto w = ctr::chrome_trace_writer(std::move(timeline), [&](std::string_view s) {
    out.append(s);
    return true;
  });
  if (a != nullptr) {
    auto r = ctr::export_events(*a, *w);
    if (!r) fail("chrome-trace export of the Analysis", r.error().message);
    return out;
  }
  const auto ev = top->find("events");
  if (ev != top->end() && ev->is_array())
    for (const auto &e : *ev)
      if (auto x = ctr::export_event_of_json(e)) (void)w->event(*x);
  (void)w->finish();
  return out;
}

/* FNV-1a over the input: which large analyses take the JSON path is a
 * property of the input, so a finding replays. */
std::uint64_t fnv1a(std::span<const std::uint8_t> b) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const std::uint8_t c : b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

void exercise_core(std::vector<std::uint8_t> bytes, bool json) {
  const bool json_if_large = fnv1a(bytes) % kJsonLargeOneIn == 0;
  auto core = ctr::CoreFile::from_bytes(std::move(bytes), "fuzz");
  if (!core) return;
  ctr::ReadOptions opts;
  opts.symbolize = false;
  const ctr::Analysis a = ctr::analyze(*core, opts);
  const std::string shown = ctr::render_text(a);
  // CT_FUZZ_PRINT=1: show what the reader made of each input (to look at
  // seeds and findings: fuzz_recipe -runs=0 FILE...).
  static const bool print = std::getenv("CT_FUZZ_PRINT") != nullptr;
  if (print) std::fprintf(stderr, "%s\n", shown.c_str());
  if (!json || (a.events.size() > kJsonFullEvents && !json_if_large)) return;
  const std::string text = ctr::render_json(a);
  auto d = doc::parse_reader_document(text);
  if (!d) fail("parse_reader_document refused the reader's own document", d.error().message);
  if (d->summary.event_count != a.events.size())
    fail("summary event count", std::to_string(d->summary.event_count) + " != " + std::to_string(a.events.size()));
  if (d->summary.exit_code != ctr::exit_code(a.status)) fail("summary exit code", ctr::status_name(a.status));
  const std::string trace = chrome_trace(ctr::export_timeline_of(a), &a, nullptr);
  if (!nlohmann::json::accept(trace)) fail("chrome-trace export of the Analysis is not JSON", trace.substr(0, 200));
  ctr::DocumentEventScan scan;
  const auto ev = d->tree.find("events");
  if (ev != d->tree.end() && ev->is_array())
    for (const auto &e : *ev) scan.scan(e);
  const std::string trace2 = chrome_trace(ctr::export_timeline_of_document(d->tree, scan), nullptr, &d->tree);
  if (!nlohmann::json::accept(trace2)) fail("chrome-trace export of the document is not JSON", trace2.substr(0, 200));
}

void exercise_ring(std::span<const std::uint8_t> bytes, bool live) {
  if (!live) {
    auto d = ctr::decode_ring(bytes, bytes.size());
    if (!d) return;
    volatile std::size_t n = d->events.size() + d->rejected.size();
    (void)n;
    if (!d->events.empty()) (void)ctr::ticks_to_realtime_ns(*d, d->events.back().timestamp);
    return;
  }
  // As analyze() reads a live snapshot's ring: through a sink, with the
  // snapshot's own clock reading as a third anchor.
  struct Last final : ctr::RingEventSink {
    std::uint64_t events = 0, timestamp = 0;
    void reserve(std::uint64_t, std::uint64_t) override {}
    void event(const ctr::RingEvent &e) override {
      ++events;
      timestamp = e.timestamp;
    }
  } sink;
  ctr::DecodeOptions o;
  o.live = true;
  o.snapshot_anchor = ctr::DecodeOptions::Anchor{2'100'000, 5'002'000'000, 1'700'000'000'002'000'000ull, 40};
  auto d = ctr::decode_ring(bytes, bytes.size(), sink, o);
  if (d && sink.events > 0) (void)ctr::ticks_to_realtime_ns(*d, sink.timestamp);
}

}  // namespace ct::fuzz
