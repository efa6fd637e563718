// SPDX-License-Identifier: MIT
//
// fuzz_reader - libFuzzer target over the reader's untrusted-input paths,
// on raw bytes (fuzz_recipe is the structure-aware one: docs/fuzzing.md).
//
// The first byte picks the path, the rest is the input:
//   bit 0 clear: an ELF core -> CoreFile::from_bytes (program headers, every
//         note parser, module build-ids) -> analyze() without libdwfl (ring
//         discovery through NT_FILE and the magic scan, ring decoding,
//         identity checks, event building) -> render_text, and unless bit 1
//         is set render_json, the document module's parse of it and the
//         chrome-trace export (fuzz_common.h);
//   bit 0 set: a ring region -> decode_ring(), as for a sidecar file, or
//         with bit 1 as for a live snapshot's ring.
// Seeds: reader/fuzz/corpus (made by tests/reader/gen_fuzz_corpus.cc, then
// minimized with -merge=1).  Inputs that ever crashed it go to
// reader/fuzz/regressions and are replayed by the reader_fuzz_smoke test.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  std::span<const std::uint8_t> in(data + 1, size - 1);
  const bool second = (data[0] & 2) != 0;
  if ((data[0] & 1) != 0) ct::fuzz::exercise_ring(in, second);
  else ct::fuzz::exercise_core(std::vector<std::uint8_t>(in.begin(), in.end()), !second);
  return 0;
}
