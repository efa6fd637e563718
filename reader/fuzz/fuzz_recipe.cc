// SPDX-License-Identifier: MIT
//
// fuzz_recipe - libFuzzer target whose input is a recipe (recipe.h): a few
// bytes the test core builder turns into a small core or ring region with
// mutated notes, segments and ring headers, read as fuzz_reader reads its
// inputs (fuzz_common.h).  Seeds: reader/fuzz/corpus-recipe (written by
// `fuzz_recipe_tool gen`, then minimized with -merge=1).  `fuzz_recipe_tool
// build RECIPE CORE` writes the core a recipe makes, to read a finding
// with core-timeline-read or eu-readelf.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "fuzz_common.h"
#include "recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  ct::fuzz::Made m = ct::fuzz::make(std::span<const std::uint8_t>(data, size));
  if (m.ring_only) ct::fuzz::exercise_ring(m.bytes, m.render_json);
  else ct::fuzz::exercise_core(std::move(m.bytes), m.render_json);
  return 0;
}
