// SPDX-License-Identifier: MIT
//
// fuzz_reader - libFuzzer target over the reader's untrusted-input paths.
//
// The first byte picks the path, the rest is the input:
//   even: an ELF core -> CoreFile::from_bytes (program headers, every note
//         parser, module build-ids) -> analyze() without libdwfl (ring
//         discovery through NT_FILE and the magic scan, ring decoding,
//         identity checks, event building) -> render_text and render_json;
//   odd:  a ring region -> decode_ring(), as for a sidecar file.
// Seeds: reader/fuzz/corpus (made by tests/reader/gen_fuzz_corpus.cc).
// Inputs that ever crashed it go to reader/fuzz/regressions and are replayed
// by the reader_fuzz_smoke test.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/ring.h"

namespace ctr = core_timeline::reader;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  std::span<const std::uint8_t> in(data + 1, size - 1);
  if ((data[0] & 1) != 0) {
    auto d = ctr::decode_ring(in, in.size());
    if (d) {
      volatile std::size_t n = d->events.size() + d->rejected.size();
      (void)n;
      if (!d->events.empty()) (void)ctr::ticks_to_realtime_ns(*d, d->events.back().timestamp);
    }
    return 0;
  }
  auto core = ctr::CoreFile::from_bytes(std::vector<std::uint8_t>(in.begin(), in.end()), "fuzz");
  if (!core) return 0;
  ctr::ReadOptions opts;
  opts.symbolize = false;
  ctr::Analysis a = ctr::analyze(*core, opts);
  volatile std::size_t n = ctr::render_text(a).size() + ctr::render_json(a).size();
  (void)n;
  return 0;
}
