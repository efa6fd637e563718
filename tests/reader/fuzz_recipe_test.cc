// SPDX-License-Identifier: MIT
//
// fuzz_recipe_test - the recipe interpreter of reader/fuzz/fuzz_recipe
// (reader/fuzz/recipe.h) makes what its recipes say: the empty recipe a
// core the reader reads whole, and each kind of edit a core whose
// reading fails at the check the edit aims at (not at the header CRC or
// the program headers' overlap check, where raw byte mutations die).
// Guards against a recipe language that fuzzes nothing but its own
// interpreter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/ring_format.h"
#include "recipe.h"

namespace ctr = core_timeline::reader;
namespace fz = ct::fuzz;

namespace {

ctr::Analysis read(const fz::Writer &w) {
  fz::Made m = fz::make(w.data());
  EXPECT_FALSE(m.ring_only);
  auto core = ctr::CoreFile::from_bytes(std::move(m.bytes), "recipe");
  if (!core) return ctr::analysis_of_error("recipe", core.error(), {});
  ctr::ReadOptions o;
  o.symbolize = false;
  return ctr::analyze(*core, o);
}

/** The events of a small story: lane claim, span, mark, free, crash. */
fz::Writer &story(fz::Writer &w) {
  const std::uint8_t ev[][3] = {{0, 4, 0}, {0, 5, 41}, {0, 0, 1}, {0, 8, 0}, {0, 6, 0}, {0, 3, 1}};
  w.u8(static_cast<std::uint8_t>(std::size(ev)));
  for (const auto &e : ev) w.u8(e[0]).u8(e[1]).u8(e[2]);
  return w;
}

fz::Writer base(std::uint8_t shape = 0) {
  fz::Writer w;
  w.u8(shape).u8(0x21);
  story(w);
  return w;
}

}  // namespace

TEST(FuzzRecipe, TheStoryIsACoreTheReaderReadsWhole) {
  for (std::uint8_t shape : {std::uint8_t{0}, std::uint8_t{fz::kShapeV3}, std::uint8_t{fz::kShapeLive},
                             std::uint8_t{fz::kShapeNoFileNote}}) {
    const ctr::Analysis a = read(base(shape));
    EXPECT_EQ(a.status, ctr::Status::kOk) << int(shape) << ": " << a.reason;
    EXPECT_EQ(a.events.size(), 6u) << int(shape);
  }
}

TEST(FuzzRecipe, AHeaderEditIsResealedAndReachesItsFieldsCheck) {
  fz::Writer w = base();
  w.u8(fz::kOpHeader).u8(static_cast<std::uint8_t>(fz::header_field("slots_per_lane"))).val(fz::kValAddI8, 1);
  const ctr::Analysis a = read(w);
  EXPECT_EQ(a.status, ctr::Status::kRingInvalid);
  EXPECT_NE(a.reason.find("slots_per_lane"), std::string::npos) << a.reason;
  EXPECT_EQ(a.reason.find("crc"), std::string::npos) << a.reason;
}

TEST(FuzzRecipe, WithoutResealTheCrcCatchesTheSameEdit) {
  fz::Writer w = base(fz::kShapeNoReseal);
  w.u8(fz::kOpHeader).u8(static_cast<std::uint8_t>(fz::header_field("slots_per_lane"))).val(fz::kValAddI8, 1);
  const ctr::Analysis a = read(w);
  EXPECT_EQ(a.status, ctr::Status::kRingInvalid);
  EXPECT_NE(a.reason.find("header_crc"), std::string::npos) << a.reason;
}

TEST(FuzzRecipe, ASlotEditMakesThatSlotTorn) {
  fz::Writer w = base();
  w.u8(fz::kOpSlot).u8(0).u8(2).u8(static_cast<std::uint8_t>(fz::slot_field("begin_seq"))).val(fz::kValFlipBit, 63);
  const ctr::Analysis a = read(w);
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  ASSERT_EQ(a.rings.size(), 1u);
  ASSERT_TRUE(a.rings[0].ring.has_value());
  EXPECT_EQ(a.rings[0].ring->torn, 1u);
  EXPECT_EQ(a.events.size(), 5u);
}

TEST(FuzzRecipe, ASegmentEditReachesTheOverlapCheck) {
  fz::Writer w = base();
  // PT_LOAD 2 (the ring) starts one page early: over the executable's bytes.
  w.u8(fz::kOpPhdr).u8(2).u8(static_cast<std::uint8_t>(fz::phdr_field("p_offset"))).val(fz::kValU32, 4096);
  const ctr::Analysis a = read(w);
  EXPECT_EQ(a.status, ctr::Status::kCoreUnreadable);
  EXPECT_NE(a.reason.find("overlap"), std::string::npos) << a.reason;
}

TEST(FuzzRecipe, ATruncationInTheRingIsTold) {
  fz::Writer w = base();
  w.u8(fz::kOpTruncate).val(fz::kValU32, 4096 * 2 + 700);
  const ctr::Analysis a = read(w);
  EXPECT_TRUE(a.core_truncated);
  EXPECT_NE(a.status, ctr::Status::kOk) << a.reason;
}

TEST(FuzzRecipe, ANoteEditReplacesTheBuildersNote) {
  fz::Writer w = base();
  // NT_FILE cut to 8 bytes (its count, nothing else): the ring is no longer
  // listed, and is found by the magic scan instead.
  w.u8(fz::kOpNote).u8(fz::kNoteFile).u8(3).u8(0).u8(0);
  const ctr::Analysis a = read(w);
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  ASSERT_EQ(a.rings.size(), 1u);
  EXPECT_EQ(a.rings[0].found_by, ctr::FoundBy::kMagicScan);
  bool named = false;
  for (const auto &x : a.warnings) named = named || x.find("NT_FILE") != std::string::npos;
  EXPECT_TRUE(named) << (a.warnings.empty() ? "no warnings" : a.warnings[0]);
}
