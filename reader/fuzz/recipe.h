// SPDX-License-Identifier: MIT
//
// recipe.h - the input language of fuzz_recipe: a few bytes that the test
// core builder (tests/reader/core_builder.h) turns into a small ELF core or
// ring region with mutated notes, segments and ring headers.
//
// Why a recipe and not raw cores: a ring header is covered by a CRC-32C
// and a core's offsets must agree with each other, so a byte mutation of a
// raw core almost always dies at the first check (the CRC, the overlap
// check of the program headers).  A recipe names what to change ("lane 2's
// write_index becomes its capacity + 1", "PT_LOAD 1's p_filesz doubles")
// and the interpreter keeps the rest consistent (CRC resealed, offsets laid
// out by the builder), so every mutation reaches the check it is aimed at.
// A recipe is a few dozen bytes and the core it makes a few pages: both
// the mutation and the run are cheap.
//
// Format (little-endian; a read past the end gives 0, so every prefix is a
// recipe and the empty input is a healthy core with a version-2 ring):
//
//   shape   u8   bits 0-1: 0 core whose ring NT_FILE lists, 1 ring region
//                alone (decode_ring), 2 live snapshot (CORE-TIMELINE note,
//                no NT_SIGINFO), 3 core without NT_FILE (magic scan);
//                bit 2 version-3 ring (sources, pools, extents); bit 3 the
//                ring-less header (kIncompatNoRing); bit 4 the header CRC
//                is not resealed after the ring edits; bit 5 a second ring
//                (another tl_init) in the core; bit 6 render JSON too and
//                parse it with the document module; bit 7 the ring's
//                mapping excluded (p_filesz 0).
//   geom    u8   bits 0-1 lanes per source - 2; bits 2-3 log2(slots) - 3;
//                bits 4-6 name-table entries.
//   events  u8   count (at most kMaxEvents), then per event: lane u8, kind
//                u8 (index into kKinds, else the raw kind), arg u8.
//   ops     until the end: opcode u8 (mod kOpCount), then its operands
//                (Op below).  A value V is a selector u8 and what it needs
//                (Value below).
//
// Thread-safety: pure functions.  Not for production: inputs are trusted
// to be recipes, whatever their bytes (every byte string is one).
#ifndef CORE_TIMELINE_READER_FUZZ_RECIPE_H
#define CORE_TIMELINE_READER_FUZZ_RECIPE_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ct::fuzz {

inline constexpr std::size_t kMaxEvents = 96;

/** Shape bits (byte 0). */
enum Shape : std::uint8_t {
  kShapeCore = 0,
  kShapeRing = 1,
  kShapeLive = 2,
  kShapeNoFileNote = 3,
  kShapeV3 = 1u << 2,
  kShapeRingless = 1u << 3,
  kShapeNoReseal = 1u << 4,
  kShapeTwoRings = 1u << 5,
  kShapeJson = 1u << 6,
  kShapeExcluded = 1u << 7,
};

/** Opcodes.  Ring edits happen before the core is built, builder edits
 *  while it is described, ELF edits on its bytes. */
enum Op : std::uint8_t {
  kOpHeader = 0,    /**< field u8 (kHeaderFields, then the 4 SourceAreas), V */
  kOpLane = 1,      /**< lane u8, field u8 (LaneDesc), V */
  kOpSlot = 2,      /**< lane u8, slot u8, field u8 (Slot), V */
  kOpName = 3,      /**< entry u8, field u8 (NameEntry), V */
  kOpRingBytes = 4, /**< offset u16, len u8 (<= 16), bytes: raw ring write */
  kOpPhdr = 5,      /**< index u8, field u8 (Elf64_Phdr), V */
  kOpEhdr = 6,      /**< field u8 (Elf64_Ehdr), V */
  kOpNote = 7,      /**< kind u8 (NoteKind), len u8, desc bytes */
  kOpFile = 8,      /**< entry u8, field u8 (start, end, pgoff, path), V */
  kOpMap = 9,       /**< what u8, vaddr V, pages u8: another PT_LOAD */
  kOpThread = 10,   /**< tid u16, signo u8, pc V: another NT_PRSTATUS */
  kOpAuxv = 11,     /**< type u8, V: another NT_AUXV entry */
  kOpSiginfo = 12,  /**< signo u8, code u8, addr V */
  kOpTruncate = 13, /**< V: the core's length (mod its size) */
  kOpFileBytes = 14,/**< offset u32, len u8 (<= 16), bytes: raw core write */
  kOpProcess = 15,  /**< pid V, comm u8 (kComms), flags u8 */
  kOpCount = 16,
};

/** kOpNote kinds: the note's name and type; the desc is the operand's
 *  bytes, laid over the well-formed desc the builder would write. */
enum NoteKind : std::uint8_t {
  kNoteFile = 0,      /**< CORE NT_FILE (replaces the builder's) */
  kNotePrstatus = 1,  /**< CORE NT_PRSTATUS */
  kNoteAuxv = 2,      /**< CORE NT_AUXV */
  kNoteBuildId = 3,   /**< GNU NT_GNU_BUILD_ID, in the executable's page */
  kNoteLive = 4,      /**< CORE-TIMELINE 1 (a live snapshot's) */
  kNoteSiginfo = 5,   /**< CORE NT_SIGINFO */
  kNotePrpsinfo = 6,  /**< CORE NT_PRPSINFO */
  kNoteOther = 7,     /**< name and type from the first desc bytes */
  kNoteKinds = 8,
};

/** Value selectors: how V's u64 is made from the field's current value c. */
enum Value : std::uint8_t {
  kValZero = 0,
  kValOne = 1,
  kValAllOnes = 2,
  kValAddI8 = 3,    /**< c + i8 */
  kValDouble = 4,   /**< c * 2 */
  kValHalf = 5,     /**< c / 2 */
  kValBit = 6,      /**< 1 << (u8 % 64) */
  kValFlipBit = 7,  /**< c ^ 1 << (u8 % 64) */
  kValU8 = 8,
  kValU16 = 9,
  kValU32 = 10,
  kValU64 = 11,
  kValSize = 12,    /**< the ring region's size (ring edits) or the core's */
  kValI32Max = 13,
  kValI32Min = 14,
  kValU32Max = 15,
  kValCount = 16,   /**< larger selectors: c unchanged */
};

/** What a recipe made. */
struct Made {
  bool ring_only = false;           /**< bytes are a ring region */
  bool render_json = false;         /**< shape bit 6 */
  std::vector<std::uint8_t> bytes;  /**< the core, or the ring region */
};

/** Interprets `recipe` (any bytes). */
Made make(std::span<const std::uint8_t> recipe);

/** Writes recipes, for the seed corpus (recipe_tool gen). */
class Writer {
 public:
  Writer &u8(std::uint8_t v) { b_.push_back(v); return *this; }
  Writer &u16(std::uint16_t v) { return u8(v & 0xff).u8(v >> 8); }
  Writer &u32(std::uint32_t v) { return u16(v & 0xffff).u16(v >> 16); }
  Writer &u64(std::uint64_t v) { return u32(v & 0xffffffff).u32(v >> 32); }
  Writer &bytes(std::span<const std::uint8_t> v) { b_.insert(b_.end(), v.begin(), v.end()); return *this; }
  /** A value: selector and its operand. */
  Writer &val(Value sel, std::uint64_t operand = 0);
  const std::vector<std::uint8_t> &data() const { return b_; }

 private:
  std::vector<std::uint8_t> b_;
};

/** Index of a named field in the kOpHeader table (for seeds and tests);
 *  -1 for an unknown name.  Names are RingHeader's members; "sources[i].x"
 *  for a SourceArea's. */
int header_field(const std::string &name);
/** Likewise for kOpLane (LaneDesc), kOpSlot (Slot), kOpPhdr and kOpEhdr. */
int lane_field(const std::string &name);
int slot_field(const std::string &name);
int phdr_field(const std::string &name);
int ehdr_field(const std::string &name);

}  // namespace ct::fuzz

#endif  // CORE_TIMELINE_READER_FUZZ_RECIPE_H
