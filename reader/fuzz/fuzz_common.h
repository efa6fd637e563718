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

/** CoreFile::from_bytes, analyze() (symbolize off) and render_text; with
 *  `json`, render_json, the document module's parse of it and the
 *  chrome-trace export of the Analysis and of the parsed document. */
void exercise_core(std::vector<std::uint8_t> bytes, bool json);

/** decode_ring() as for a sidecar (or, with `live`, as for a live
 *  snapshot's ring), and the clock conversion of its last event. */
void exercise_ring(std::span<const std::uint8_t> bytes, bool live);

}  // namespace ct::fuzz

#endif  // CORE_TIMELINE_READER_FUZZ_COMMON_H
