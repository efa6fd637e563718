// SPDX-License-Identifier: MIT
//
// fuzz_common.h - what both fuzz targets do with an input once it is a core
// or a ring: the reader's untrusted-input paths without libdwfl, then the
// renderers and the document module on what the reader made of it.
//
// Oracles beyond the sanitizers (a failure aborts, so libFuzzer keeps the
// input): the reader's own JSON document must be accepted by the document
// module (parse_reader_document and summarize: the daemon stores and
// ctl-query reads exactly that text, so a document they refuse is a
// timeline lost; parse_stored_document is the same bounded parse with one
// check less, and would double the cost of a JSON input), its summary must count the Analysis's events
// and carry its status, and the chrome-trace export must be JSON.
#ifndef CORE_TIMELINE_READER_FUZZ_COMMON_H
#define CORE_TIMELINE_READER_FUZZ_COMMON_H

#include <cstdint>
#include <span>
#include <vector>

namespace ct::fuzz {

/** An analysis with more events than this takes the JSON path only for one
 *  input in kJsonLargeOneIn (by a hash of its bytes).  The JSON path's cost
 *  grows with the document (about 2 KB of JSON per event, rendered and
 *  parsed under ASan at about 6 MB/s), and it was 84% of the time of a
 *  replay of the campaign corpus.  Bounded so, that replay took 2.5 times
 *  less CPU and reached 31 of its 10,594 edges less: those only a large
 *  document reaches, in inputs the hash did not pick (docs/fuzzing.md,
 *  "Speed"). */
inline constexpr std::size_t kJsonFullEvents = 8;
inline constexpr std::uint64_t kJsonLargeOneIn = 16;

/** CoreFile::from_bytes, analyze() (symbolize off) and render_text; with
 *  `json` (and within the bound above), render_json, the document module's
 *  parse of it and the chrome-trace export of the Analysis and of the
 *  parsed document. */
void exercise_core(std::vector<std::uint8_t> bytes, bool json);

/** decode_ring() as for a sidecar (or, with `live`, as for a live
 *  snapshot's ring), and the clock conversion of its last event. */
void exercise_ring(std::span<const std::uint8_t> bytes, bool live);

}  // namespace ct::fuzz

#endif  // CORE_TIMELINE_READER_FUZZ_COMMON_H
