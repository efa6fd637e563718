// SPDX-License-Identifier: MIT
//
// Unit tests of ct::reader over rings and cores built in the test
// (core_builder.h).  Each test names the rule it guards.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <functional>
#include <initializer_list>

#include <fmt/format.h>

#include "core_builder.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/cursor.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/elf_headers.h"
#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/number.h"
#include "core_timeline/reader/printable.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/ring.h"
#include "core_timeline/reader/tlmap.h"
#include "instructions.h"
#include "test_util.h"

namespace ctr = core_timeline::reader;
namespace fmtx = core_timeline::format;
using ct::test::CoreBuilder;
using ct::test::RingBuilder;
using ct::test::three_events;

namespace {

ctr::Analysis analyze_bytes(const std::vector<std::uint8_t> &bytes, ctr::ReadOptions opts = {}) {
  auto core = ctr::CoreFile::from_bytes(bytes, "test-core");
  if (!core) return ctr::analysis_of_error("test-core", core.error());
  opts.symbolize = false;
  return ctr::analyze(*core, opts);
}

std::vector<std::string> names(const ctr::Analysis &a) {
  std::vector<std::string> n;
  for (const auto &e : a.events) n.emplace_back(a.name_of(e));
  return n;
}

/* Every Analysis a test produces also goes through the JSON schema. */
void expect_schema_valid(const ctr::Analysis &a) {
  EXPECT_EQ(ct::test::schema_errors(ctr::render_json(a)), "");
}

}  // namespace

/* ------------------------------------------------------------------ cursor */

TEST(Cursor, ReadsLittleEndianAndFailsWithoutAdvancing) {
  const std::uint8_t b[] = {1, 0, 0, 0, 2, 0};
  ctr::Cursor c(b, 0x100, "thing");
  auto v = c.u32("first");
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 1u);
  auto w = c.u32("second");
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ctr::Errc::kTruncated);
  EXPECT_NE(w.error().message.find("second at offset 0x104"), std::string::npos) << w.error().message;
  EXPECT_EQ(c.pos(), 4u);  // a failed read does not advance
  auto h = c.u16("third");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, 2u);
}

TEST(Cursor, UnterminatedStringIsBadData) {
  const std::uint8_t b[] = {'a', 'b'};
  ctr::Cursor c(b, 0, "strings");
  auto s = c.cstring("name");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ctr::Errc::kBadData);
}

/* ------------------------------------------------------------- ELF headers */

namespace {

using Bytes = std::vector<std::uint8_t>;

/* An ELF core header followed by `phdrs` (e_phoff 64), with `edit` applied
 * to the header before it is written. */
template <class Edit>
Bytes elf_file(const std::vector<Elf64_Phdr> &phdrs, Edit &&edit) {
  Elf64_Ehdr eh = ct::test::core_ehdr(static_cast<std::uint16_t>(phdrs.size()));
  edit(eh);
  Bytes b(sizeof eh + phdrs.size() * sizeof(Elf64_Phdr));
  std::memcpy(b.data(), &eh, sizeof eh);
  if (!phdrs.empty()) std::memcpy(b.data() + sizeof eh, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr));
  return b;
}

Bytes elf_file(const std::vector<Elf64_Phdr> &phdrs) {
  return elf_file(phdrs, [](Elf64_Ehdr &) {});
}

Elf64_Phdr phdr_of(std::uint32_t type, std::uint64_t offset, std::uint64_t filesz) {
  Elf64_Phdr p{};
  p.p_type = type;
  p.p_offset = offset;
  p.p_filesz = filesz;
  p.p_memsz = filesz;
  return p;
}

/* The header read through `file`, which is then past it (at 64). */
Elf64_Ehdr header_of(ctr::Cursor &file) {
  auto eh = ctr::read_elf64_ehdr(file);
  EXPECT_TRUE(eh) << eh.error().message;
  EXPECT_EQ(file.pos(), sizeof(Elf64_Ehdr));
  return eh ? *eh : Elf64_Ehdr{};
}

bool says(const ctr::Error &e, const std::string &text) {
  return e.message.find(text) != std::string::npos;
}

/* The error of phdr_entries() over `b`, whose header and table extent are
 * sound; checks that the cursor stayed where it was, past the header. */
ctr::Error entries_error(const Bytes &b) {
  ctr::Cursor file(b, 0, "core");
  const Elf64_Ehdr eh = header_of(file);
  auto t = ctr::phdr_table(file, eh, 16);
  if (!t) return ctr::Error{ctr::Errc::kInternal, "phdr_table refused it: " + t.error().message};
  auto entries = ctr::phdr_entries(file, *t);
  EXPECT_EQ(file.pos(), sizeof(Elf64_Ehdr));  // did not advance
  if (entries) return ctr::Error{ctr::Errc::kInternal, "phdr_entries accepted it"};
  return entries.error();
}

}  // namespace

TEST(ElfHeaders, HeaderAndProgramHeadersAreReadInOrder) {
  const Bytes b = elf_file({phdr_of(PT_NOTE, 0x1000, 0x200), phdr_of(PT_LOAD, 0x2000, 0x3000)});
  ctr::Cursor file(b, 0, "core");
  const Elf64_Ehdr eh = header_of(file);
  EXPECT_EQ(eh.e_type, ET_CORE);
  auto t = ctr::phdr_table(file, eh, 16);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->e_phoff, 64u);
  EXPECT_EQ(t->e_phnum, 2u);
  EXPECT_EQ(t->end(), 64u + 2 * 56);
  auto entries = ctr::phdr_entries(file, *t);
  ASSERT_TRUE(entries) << entries.error().message;
  EXPECT_EQ(file.pos(), b.size());  // past the table
  EXPECT_EQ(entries->offset(), 64u);
  auto first = ctr::read_elf64_phdr(*entries);
  auto second = ctr::read_elf64_phdr(*entries);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->p_type, PT_NOTE);
  EXPECT_EQ(first->p_offset, 0x1000u);
  EXPECT_EQ(second->p_type, PT_LOAD);
  EXPECT_EQ(second->p_filesz, 0x3000u);
  auto third = ctr::read_elf64_phdr(*entries);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ctr::Errc::kTruncated);
  EXPECT_TRUE(says(third.error(), "program header table: p_type at offset 0xb0")) << third.error().message;
  EXPECT_EQ(entries->pos(), 2 * 56u);  // did not advance
}

TEST(ElfHeaders, HeaderThatIsNotElf64LittleEndianIsRefusedWithoutAdvancing) {
  struct Case {
    Bytes bytes;
    ctr::Errc code;
    const char *field_at;
  };
  Bytes elf32 = elf_file({});
  elf32[EI_CLASS] = ELFCLASS32;
  Bytes msb = elf_file({});
  msb[EI_DATA] = ELFDATA2MSB;
  Bytes cut = elf_file({});
  cut.resize(40);
  const Case cases[] = {
      {{'#', '!', '/', 'b', 'i', 'n'}, ctr::Errc::kNotElf, "e_ident at offset 0x10"},
      {elf32, ctr::Errc::kUnsupported, "e_ident[EI_CLASS] at offset 0x14"},
      {msb, ctr::Errc::kUnsupported, "e_ident[EI_DATA] at offset 0x15"},
      {cut, ctr::Errc::kTruncated, "Elf64_Ehdr at offset 0x10"},
  };
  for (const auto &c : cases) {
    ctr::Cursor file(c.bytes, 0x10, "file");
    auto eh = ctr::read_elf64_ehdr(file);
    ASSERT_FALSE(eh) << c.field_at;
    EXPECT_EQ(eh.error().code, c.code) << eh.error().message;
    EXPECT_TRUE(says(eh.error(), std::string("file: ") + c.field_at)) << eh.error().message;
    EXPECT_EQ(file.pos(), 0u) << c.field_at;
  }
}

/* e_phoff past the end of the bytes: the table's place is told by the header
 * alone (phdr_table), its bytes are not there (phdr_entries). */
TEST(ElfHeaders, PhoffPastTheEndIsTruncatedNamingEPhoff) {
  const ctr::Error e =
      entries_error(elf_file({phdr_of(PT_NOTE, 0, 0)}, [](Elf64_Ehdr &eh) { eh.e_phoff = 0x10000; }));
  EXPECT_EQ(e.code, ctr::Errc::kTruncated);
  EXPECT_TRUE(says(e, "core: e_phoff at offset 0x20: 0x10000 is past the end (0x78 bytes)")) << e.message;
}

/* e_phnum * e_phentsize is two 16-bit fields (with PN_XNUM a 32-bit sh_info
 * times 56), which cannot overflow 64 bits; e_phoff plus it can. */
TEST(ElfHeaders, TableEndPast2To64IsTruncatedNamingEPhoff) {
  const Bytes b = elf_file({phdr_of(PT_LOAD, 0, 0), phdr_of(PT_LOAD, 0, 0)},
                           [](Elf64_Ehdr &eh) { eh.e_phoff = UINT64_MAX - 100; });
  ctr::Cursor file(b, 0, "core");
  const Elf64_Ehdr eh = header_of(file);
  auto t = ctr::phdr_table(file, eh, UINT64_MAX);
  ASSERT_FALSE(t) << "end " << t->end();
  EXPECT_EQ(t.error().code, ctr::Errc::kTruncated);
  EXPECT_TRUE(says(t.error(), "core: e_phoff at offset 0x20: 0xffffffffffffff9b + 2 program headers"))
      << t.error().message;
  EXPECT_EQ(file.pos(), sizeof(Elf64_Ehdr));
  /* One entry ends below 2^64: only the sum is judged here. */
  ctr::Cursor again(b, 0, "core");
  Elf64_Ehdr one = header_of(again);
  one.e_phnum = 1;
  auto fits = ctr::phdr_table(again, one, UINT64_MAX);
  ASSERT_TRUE(fits) << fits.error().message;
  EXPECT_EQ(fits->end(), UINT64_MAX - 100 + 56);
}

TEST(ElfHeaders, PhentsizeOtherThanElf64PhdrIsBadDataNamingEPhentsize) {
  for (const std::uint16_t size : std::initializer_list<std::uint16_t>{0, 32 /* Elf32_Phdr */, 57, 112}) {
    const Bytes b = elf_file({phdr_of(PT_LOAD, 0, 0), phdr_of(PT_LOAD, 0, 0)},
                             [&](Elf64_Ehdr &eh) { eh.e_phentsize = size; });
    ctr::Cursor file(b, 0, "core");
    const Elf64_Ehdr eh = header_of(file);
    auto t = ctr::phdr_table(file, eh, 16);
    ASSERT_FALSE(t) << size;
    EXPECT_EQ(t.error().code, ctr::Errc::kBadData);
    EXPECT_TRUE(says(t.error(), fmt::format("core: e_phentsize at offset 0x36: {} is not sizeof(Elf64_Phdr) (56)",
                                             size)))
        << t.error().message;
    EXPECT_EQ(file.pos(), sizeof(Elf64_Ehdr));
  }
}

TEST(ElfHeaders, TableCutShortIsTruncatedNamingEPhnum) {
  Bytes b = elf_file({phdr_of(PT_NOTE, 0, 0), phdr_of(PT_LOAD, 0, 0), phdr_of(PT_LOAD, 0, 0)});
  b.resize(b.size() - 20);  // the third entry is cut
  const ctr::Error e = entries_error(b);
  EXPECT_EQ(e.code, ctr::Errc::kTruncated);
  EXPECT_TRUE(says(e, "core: e_phnum at offset 0x38: 3 program headers at e_phoff 0x40 need 0xa8 bytes, 0x94 are "
                      "there"))
      << e.message;
  /* Read entry by entry, the cut one fails and leaves the cursor on it. */
  ctr::Cursor raw(std::span<const std::uint8_t>(b).subspan(64), 64, "table");
  ASSERT_TRUE(ctr::read_elf64_phdr(raw));
  ASSERT_TRUE(ctr::read_elf64_phdr(raw));
  auto cut = ctr::read_elf64_phdr(raw);
  ASSERT_FALSE(cut);
  EXPECT_TRUE(says(cut.error(), "table: p_type at offset 0xb0: an Elf64_Phdr needs 56 bytes, 36 left"))
      << cut.error().message;
  EXPECT_EQ(raw.pos(), 2 * 56u);
}

/* PN_XNUM: the count is section header 0's sh_info (elf(5)), bounded like
 * e_phnum; without section header 0 the table cannot be told. */
TEST(ElfHeaders, PnXnumTakesTheCountFromSectionHeaderZero) {
  Bytes b = elf_file({phdr_of(PT_LOAD, 0, 0), phdr_of(PT_LOAD, 0, 0)});
  const std::size_t shoff = b.size();
  Elf64_Shdr sh0{};
  sh0.sh_info = 2;
  b.resize(shoff + sizeof sh0);
  std::memcpy(b.data() + shoff, &sh0, sizeof sh0);
  Elf64_Ehdr xnum;
  std::memcpy(&xnum, b.data(), sizeof xnum);
  xnum.e_phnum = PN_XNUM;
  xnum.e_shoff = shoff;
  ctr::Cursor file(b, 0, "core");
  auto t = ctr::phdr_table(file, xnum, 16);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->e_phnum, 2u);
  auto over = ctr::phdr_table(file, xnum, 1);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, ctr::Errc::kBadData);
  EXPECT_TRUE(says(over.error(), fmt::format("core: sh_info at offset {:#x}: 2 program headers is more than 1",
                                              shoff + offsetof(Elf64_Shdr, sh_info))))
      << over.error().message;
  for (const std::uint64_t bad_shoff : {std::uint64_t{0}, std::uint64_t{shoff + 1}}) {
    xnum.e_shoff = bad_shoff;
    auto missing = ctr::phdr_table(file, xnum, 16);
    ASSERT_FALSE(missing) << bad_shoff;
    EXPECT_EQ(missing.error().code, ctr::Errc::kTruncated);
    EXPECT_TRUE(says(missing.error(), "core: e_shoff at offset 0x28: e_phnum is PN_XNUM")) << missing.error().message;
  }
  EXPECT_EQ(file.pos(), 0u);
}

/* ---------------------------------------------------------------------- Fd */

TEST(Fd, ClosesItsDescriptorOnceAndMovesIt) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  auto is_open = [](int fd) { return fcntl(fd, F_GETFD) != -1; };
  {
    ctr::Fd w(p[1]);
    ctr::Fd r(p[0]);
    ctr::Fd moved(std::move(r));
    EXPECT_FALSE(r.valid());  // NOLINT(bugprone-use-after-move): a move leaves it empty
    EXPECT_EQ(r.get(), -1);
    EXPECT_EQ(moved.get(), p[0]);
    moved.reset(p[0]);  // the one it holds: kept open
    EXPECT_TRUE(is_open(p[0]));
    moved.reset();
    EXPECT_FALSE(is_open(p[0]));
    EXPECT_EQ(errno, EBADF);
    EXPECT_FALSE(moved.valid());
    EXPECT_TRUE(is_open(p[1]));
  }
  EXPECT_FALSE(is_open(p[1]));  // closed by the destructor
  EXPECT_FALSE(ctr::Fd(-1).valid());
}

/* ------------------------------------------------------------ ring decoder */

TEST(Ring, HealthyRingDecodesInSequenceOrder) {
  RingBuilder r = three_events();
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->events.size(), 3u);
  EXPECT_EQ(d->events[0].id, 0x1001u);
  EXPECT_EQ(d->events[2].arg0, 1001u);
  EXPECT_EQ(d->lanes[0].first_seq, 1u);
  EXPECT_EQ(d->lanes[0].last_seq, 3u);
  EXPECT_FALSE(d->counter_inconsistent);
  EXPECT_EQ(d->torn, 0u);
}

TEST(Ring, BadCrcIsRefused) {
  RingBuilder r = three_events();
  r.header().pid ^= 1;  // edit the immutable part without resealing
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ctr::Errc::kBadData);
  EXPECT_NE(d.error().message.find("header_crc"), std::string::npos) << d.error().message;
}

TEST(Ring, UnknownVersionAndIncompatFlagsAreRefused) {
  RingBuilder r = three_events();
  r.header().version = fmtx::kVersion + 1;
  r.seal();
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ctr::Errc::kUnsupported);
  RingBuilder r2 = three_events();
  r2.header().incompat_flags = 1u << 5;
  r2.seal();
  auto d2 = ctr::decode_ring(r2.bytes(), r2.bytes().size());
  ASSERT_FALSE(d2);
  EXPECT_EQ(d2.error().code, ctr::Errc::kUnsupported);
}

TEST(Ring, OversizeGeometryIsRefusedBeforeAnyOffsetIsUsed) {
  struct Case {
    const char *field;
    void (*edit)(fmtx::RingHeader &);
  } cases[] = {
      {"slots_per_lane", [](fmtx::RingHeader &h) { h.slots_per_lane = 1u << 21; }},
      {"slots_per_lane", [](fmtx::RingHeader &h) { h.slots_per_lane = 12; }},
      {"lane_count", [](fmtx::RingHeader &h) { h.lane_count = 5000; }},
      {"lane_count", [](fmtx::RingHeader &h) { h.lane_count = 0xffffffffu; }},
      {"slot_size", [](fmtx::RingHeader &h) { h.slot_size = 4096; }},
      {"region_size", [](fmtx::RingHeader &h) { h.region_size = 1ull << 40; }},
      {"region_size", [](fmtx::RingHeader &h) { h.slots_per_lane = 1024; }},  // slots no longer fit
      {"lanes_offset", [](fmtx::RingHeader &h) { h.lanes_offset = 520; }},
      {"lane_table_offset", [](fmtx::RingHeader &h) { h.lane_table_offset = 16; }},
      {"build_id_len", [](fmtx::RingHeader &h) { h.build_id_len = 65; }},
      {"header_size", [](fmtx::RingHeader &h) { h.header_size = 100; }},
  };
  for (const auto &c : cases) {
    RingBuilder r = three_events();
    c.edit(r.header());
    r.seal();  // a consistent CRC: only geometry checks can catch it
    auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
    ASSERT_FALSE(d) << c.field;
    EXPECT_NE(d.error().message.find(c.field), std::string::npos) << c.field << ": " << d.error().message;
  }
}

TEST(Ring, RegionLargerThanItsMappingIsRefused) {
  RingBuilder r = three_events();
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size() - 4096);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("exceeds"), std::string::npos) << d.error().message;
}

TEST(Ring, TornSlotIsSkippedAndListed) {
  RingBuilder r = three_events();
  r.slot(0, 1).begin_seq = 2 | fmtx::kSeqWriting;  // seq 2 mid-write
  r.add(0, 4, fmtx::kKindUser, 0x1003, 5);
  r.slot(0, 3).end_seq = 3;  // seq 4: begin 4, end stale 3
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  ASSERT_EQ(d->events.size(), 2u);  // seqs 1 and 3 only
  EXPECT_EQ(d->events[0].seq, 1u);
  EXPECT_EQ(d->events[1].seq, 3u);
  ASSERT_EQ(d->rejected.size(), 2u);
  EXPECT_TRUE(d->rejected[0].torn);
  EXPECT_EQ(d->rejected[0].seq, 2u);
  EXPECT_TRUE(d->rejected[1].torn);
  EXPECT_EQ(d->torn, 2u);
  EXPECT_EQ(d->lanes[0].missing, 1u);  // seq 2 inside [1, 3]
}

TEST(Ring, SlotsThatCannotBeRealAreInvalidNotRendered) {
  RingBuilder r = three_events();
  r.slot(0, 0).inline_len = 200;  // a length beyond the slot
  r.add(1, 3, fmtx::kKindUser, 1, 1);
  r.slot(1, 2).begin_seq = r.slot(1, 2).end_seq = 5;  // seq 5 belongs in slot 4
  r.add(2, 1, fmtx::kKindUser, 1, 1).tid = 0;       // no writer stores tid 0
  r.add(2, 2, fmtx::kKindUser, 1, 1).kind = 0;
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->events.size(), 2u);  // lane 0 seqs 2, 3
  EXPECT_EQ(d->invalid, 4u);
  for (const auto &rej : d->rejected) EXPECT_FALSE(rej.torn) << rej.reason;
}

// Ring format 4 took slot byte 23 (the high byte of the older 16-bit
// inline_len) for the stack: in a ring older than 4 it must still be 0, so a
// version-2 slot with it set is what it always was, an inline_len above 64.
TEST(Ring, OlderRingsByte23IsStillPartOfInlineLen) {
  RingBuilder r = three_events();
  r.slot(0, 0).stack = 1;  // inline_len 256 for a version-2 reader
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->events.size(), 2u);
  ASSERT_EQ(d->rejected.size(), 1u);
  EXPECT_NE(d->rejected[0].reason.find("inline_len 256 exceeds 64"), std::string::npos) << d->rejected[0].reason;
}

TEST(Ring, InflatedIndexIsFlaggedAndTimelineKept) {
  RingBuilder r = three_events();
  r.lane(0).write_index = 3 + 8 + 5;  // more than a lane beyond seq 3
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->lanes[0].counter_inconsistent);
  EXPECT_NE(d->lanes[0].counter_reason.find("inflated"), std::string::npos);
  EXPECT_EQ(d->events.size(), 3u);

  RingBuilder r2 = three_events();
  r2.lane(0).write_index = 6;  // 3 sequences reserved, none begun: too many for a private lane
  auto d2 = ctr::decode_ring(r2.bytes(), r2.bytes().size());
  ASSERT_TRUE(d2);
  EXPECT_TRUE(d2->lanes[0].counter_inconsistent);

  RingBuilder r3 = three_events();
  r3.lane(0).write_index = UINT64_MAX;  // loops stay bounded whatever it says
  auto d3 = ctr::decode_ring(r3.bytes(), r3.bytes().size());
  ASSERT_TRUE(d3);
  EXPECT_TRUE(d3->counter_inconsistent);
  /* Bounded in instructions, counted by callgrind (instructions.h):
   * decoding the claim of 2^64 - 1 sequences costs what r's claim of 16
   * does, not more with the claim.  (A loop over the claim would not
   * return: ctest's timeout would fail the test.) */
  const auto ir = ct::test::instructions_of({[&] { (void)ctr::decode_ring(r.bytes(), r.bytes().size()); },
                                                [&] { (void)ctr::decode_ring(r3.bytes(), r3.bytes().size()); }});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 2u);
  EXPECT_LT(static_cast<double>(ir[1]) / static_cast<double>(ir[0]), 1.5)
      << ir[0] << " instructions to decode write_index " << r.lane(0).write_index << ", " << ir[1] << " for "
      << r3.lane(0).write_index;
}

TEST(Ring, InFlightReservationsAreNotInconsistent) {
  RingBuilder r = three_events();
  r.lane(0).write_index = 5;                         // 4 being written, 5 reserved
  r.slot(0, 3).begin_seq = 4 | fmtx::kSeqWriting;
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->lanes[0].counter_inconsistent) << d->lanes[0].counter_reason;
  EXPECT_EQ(d->lanes[0].in_flight, 2u);
  EXPECT_EQ(d->events.size(), 3u);
}

TEST(Ring, DeflatedIndexNeverHidesCommittedSlots) {
  RingBuilder r = three_events();
  r.lane(0).write_index = 1;
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->lanes[0].counter_inconsistent);
  EXPECT_NE(d->lanes[0].counter_reason.find("deflated"), std::string::npos);
  EXPECT_EQ(d->events.size(), 3u);
}

TEST(Ring, ZeroedIndexOnPopulatedRingIsFlagged) {
  RingBuilder r;
  r.add(0, 1, fmtx::kKindUser, 0x1001, 41);  // even a single event
  r.lane(0).write_index = 0;
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->lanes[0].counter_inconsistent);
  EXPECT_NE(d->lanes[0].counter_reason.find("zeroed"), std::string::npos);
  EXPECT_EQ(d->events.size(), 1u);
}

TEST(Ring, EmptyRingHasNoPhantomEvents) {
  RingBuilder r;
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->events.empty());
  EXPECT_FALSE(d->counter_inconsistent);
}

TEST(Ring, OverwrittenSequencesAreCounted) {
  RingBuilder r;
  for (std::uint64_t s = 1; s <= 12; ++s) r.add(0, s, fmtx::kKindUser, 7, s);
  auto d = ctr::decode_ring(r.bytes(), r.bytes().size());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->lanes[0].first_seq, 5u);
  EXPECT_EQ(d->lanes[0].last_seq, 12u);
  EXPECT_EQ(d->lanes[0].overwritten, 4u);
  EXPECT_EQ(d->overwritten, 4u);
  ASSERT_EQ(d->events.size(), 8u);
  EXPECT_EQ(d->events.front().arg0, 5u);
}

TEST(Ring, TruncatedRegionKeepsWhatIsPresent) {
  RingBuilder r = three_events();
  r.add(2, 1, fmtx::kKindUser, 9, 9);
  std::span<const std::uint8_t> part(r.bytes().data(), fmtx::lane_slots_offset(r.header(), 1) + 3 * 128);
  auto d = ctr::decode_ring(part, r.bytes().size());
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->truncated);
  EXPECT_EQ(d->events.size(), 3u);  // lane 2's event is past the cut
  EXPECT_EQ(d->lanes[1].slots_absent, 5u);
  EXPECT_EQ(d->lanes[2].slots_absent, 8u);

  std::span<const std::uint8_t> header_only(r.bytes().data(), 300);
  auto h = ctr::decode_ring(header_only, r.bytes().size());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ctr::Errc::kTruncated);
}

/* ---------------------------------------------------------------- ELF core */

TEST(CoreFile, EmptyAndNonElfAndNonCoreAreRefused) {
  auto e = ctr::CoreFile::from_bytes({}, "empty");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ctr::Errc::kNotElf);
  auto t = ctr::CoreFile::from_bytes({'h', 'e', 'l', 'l', 'o'}, "text");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, ctr::Errc::kNotElf);
  RingBuilder r;
  auto bytes = ct::test::standard_core(r).build();
  bytes[16] = ET_EXEC;
  auto x = ctr::CoreFile::from_bytes(bytes, "exec");
  ASSERT_FALSE(x);
  EXPECT_EQ(x.error().code, ctr::Errc::kUnsupported);
  auto a = analyze_bytes({});
  EXPECT_EQ(ctr::exit_code(a.status), 3);
  expect_schema_valid(a);
}

TEST(CoreFile, ProgramHeadersPastEndOfFileAreTruncated) {
  RingBuilder r;
  auto bytes = ct::test::standard_core(r).build();
  bytes.resize(sizeof(Elf64_Ehdr) + 10);
  auto c = ctr::CoreFile::from_bytes(bytes, "cut");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ctr::Errc::kTruncated);
}

TEST(CoreFile, NotesAreParsed) {
  RingBuilder r;
  auto core = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "core");
  ASSERT_TRUE(core) << core.error().message;
  const auto &n = core->notes();
  ASSERT_TRUE(n.process);
  EXPECT_EQ(n.process->pid, 4242u);
  EXPECT_EQ(n.process->fname, "victim");
  ASSERT_EQ(n.threads.size(), 1u);
  EXPECT_EQ(n.threads[0].pc, 0x401100u);
  ASSERT_TRUE(n.signal);
  EXPECT_EQ(n.signal->signo, 11);
  ASSERT_EQ(n.files.size(), 2u);
  EXPECT_EQ(n.files[1].name, "/memfd:core-timeline");
  EXPECT_TRUE(n.files[1].deleted);
  std::string how;
  const auto *exe = core->executable(&how);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->name, "/usr/bin/victim");
  EXPECT_EQ(ctr::hex_bytes(exe->build_id), "aabbccdd01020304");
}

TEST(CoreFile, HostileNtFileCountIsIgnoredWithWarning) {
  RingBuilder r;
  CoreBuilder c = ct::test::standard_core(r);
  c.with_file_note = false;
  std::vector<std::uint8_t> d(16 + 24, 0);
  const std::uint64_t count = 1ull << 60, page = 4096;
  std::memcpy(&d[0], &count, 8);
  std::memcpy(&d[8], &page, 8);
  c.extra_notes.push_back({"CORE", NT_FILE, d});
  auto core = ctr::CoreFile::from_bytes(c.build(), "core");
  ASSERT_TRUE(core);
  EXPECT_FALSE(core->notes().has_file_note);
  ASSERT_FALSE(core->notes().warnings.empty());
  EXPECT_NE(core->notes().warnings[0].find("count"), std::string::npos);
}

/* ---------------------------------------------------------------- analysis */

/* A thread name is bytes from the crashed process: an escape sequence in it
 * must not reach the terminal raw through the text output. */
TEST(Analyze, ThreadNamesAreEscapedInText) {
  RingBuilder r = three_events();
  fmtx::Slot &name = r.add(0, 4, fmtx::kKindThreadName, 0, 0);
  const char evil[] = "\x1b]0;pwned\x07x";
  std::memcpy(name.inline_data, evil, sizeof evil - 1);
  name.inline_len = sizeof evil - 1;
  r.add(0, 5, fmtx::kKindUser, 0x1003, 1001);
  std::memcpy(r.lane(0).owner_name, "\x1b[2Jlane", 9);
  auto a = analyze_bytes(ct::test::standard_core(r).build(), ctr::ReadOptions{});
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  const std::string text = ctr::render_text(a);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("\\x1b]0;pwned\\x07x"), std::string::npos) << text;
}

namespace {

/* A ring of three_events() and one more event in lane 0 (sequence 4) of
 * `kind` with `inline_bytes`, analysed; the new event is the last. */
ctr::Analysis with_inline_event(std::uint16_t kind, std::uint32_t id, std::uint64_t arg0, std::uint64_t arg1,
                                std::string_view inline_bytes) {
  RingBuilder r = three_events();
  fmtx::Slot &s = r.add(0, 4, kind, id, arg0, arg1);
  std::memcpy(s.inline_data, inline_bytes.data(), inline_bytes.size());
  s.inline_len = static_cast<std::uint16_t>(inline_bytes.size());
  return analyze_bytes(ct::test::standard_core(r).build());
}

/* A string literal's bytes, NULs and all, but its terminating NUL. */
template <std::size_t N>
std::string_view bytes_of(const char (&s)[N]) {
  return {s, N - 1};
}

/* The text's line of the last event (the last line with " tid " after
 * the 12 columns of its age), and that event in the JSON. */
std::string last_line(const ctr::Analysis &a) {
  const std::string text = ctr::render_text(a);
  std::string last;
  for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    const std::string line = text.substr(at, nl - at);
    if (line.size() > 17 && line.compare(12, 5, " tid ") == 0) last = line;
  }
  return last;
}
nlohmann::ordered_json last_event(const ctr::Analysis &a) { return ctr::to_json(a)["events"].back(); }

}  // namespace

// Guards against: a path shown as hex bytes nobody reads,
// or a JSON that has the string but not the exact bytes.
TEST(InlineText, PlainPathIsAQuotedStringBesideItsExactBytes) {
  auto a = with_inline_event(fmtx::kKindOpen, 0, 3, 0, "/etc/hostname");
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find(" OPEN "), std::string::npos) << last_line(a);
  EXPECT_NE(last_line(a).find(" result=3 path=\"/etc/hostname\""), std::string::npos) << last_line(a);
  const auto e = last_event(a);
  EXPECT_EQ(e["inline_text"], "/etc/hostname");
  EXPECT_EQ(e["inline_cut"], false);
  EXPECT_EQ(e["inline_bytes"], "2f6574632f686f73746e616d65");
  expect_schema_valid(a);
}

// Guards against: a quote, backslash or newline in a path that ends the
// quoted string early or breaks the line, and a non-ASCII byte reaching
// the terminal raw; and against the text and JSON escaping differently.
TEST(InlineText, QuoteBackslashNewlineAndNonAsciiAreEscaped) {
  auto a = with_inline_event(fmtx::kKindOpen, 0, static_cast<std::uint64_t>(-2), 0, "/tmp/a\"b\\c\nd\xc3\xa9\x1b");
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  const std::string want = R"(/tmp/a\"b\\c\nd\xc3\xa9\x1b)";
  EXPECT_NE(last_line(a).find("result=ENOENT path=\"" + want + "\""), std::string::npos) << last_line(a);
  EXPECT_EQ(ctr::render_text(a).find('\x1b'), std::string::npos);
  const auto e = last_event(a);
  EXPECT_EQ(e["inline_text"], want);
  EXPECT_EQ(e["inline_bytes"], "2f746d702f6122625c630a64c3a91b");
  expect_schema_valid(a);
}

// Guards against: bytes that are not text dressed up as a string.
TEST(InlineText, BinaryPayloadStaysHex) {
  auto a = with_inline_event(fmtx::kKindOpen, 0, 3, 0, bytes_of("\x01\x02\x00\xff\x7f" "ab"));
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find("result=3 path-bytes=[01 02 00 ff 7f 61 62]"), std::string::npos) << last_line(a);
  const auto e = last_event(a);
  EXPECT_FALSE(e.contains("inline_text"));
  EXPECT_FALSE(e.contains("inline_cut"));
  EXPECT_EQ(e["inline_bytes"], "010200ff7f6162");
  expect_schema_valid(a);
}

// Guards against: a path cut at the 64-byte inline limit shown as if it
// were whole (OPEN keeps at most 64 bytes and not how long the path was).
TEST(InlineText, PathThatFillsTheInlineLimitMayBeCut) {
  const std::string path = "/root/.pyenv/versions/3.12.1/lib/python3.12/site-packages/numpy/";
  ASSERT_EQ(path.size(), fmtx::kInlineBytes);
  auto a = with_inline_event(fmtx::kKindOpen, 0, 3, 0, path);
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find("result=3 path=\"" + path + "\"... (64 bytes kept; may be cut)"), std::string::npos)
      << last_line(a);
  const auto e = last_event(a);
  EXPECT_EQ(e["inline_text"], path);
  EXPECT_EQ(e["inline_cut"], true);
  expect_schema_valid(a);
  /* One byte shorter is whole: the path ended before the limit. */
  auto b = with_inline_event(fmtx::kKindOpen, 0, 3, 0, path.substr(0, 63));
  EXPECT_EQ(last_line(b).find("may be cut"), std::string::npos) << last_line(b);
  EXPECT_EQ(last_event(b)["inline_cut"], false);
}

// Guards against: a tl_mark_ptr snapshot of a string shown as hex only or
// without its exact bytes (it is memory, docs/design.md rule 7), its NUL
// padding shown as part of the string, a snapshot cut at 64 of its len
// bytes shown as whole, and a binary snapshot shown as a string.
TEST(InlineText, PointerSnapshotsThatAreTextAreStrings) {
  auto a = with_inline_event(fmtx::kKindUserPtr, 0x2000, 0x7ffd00000100, 8, bytes_of("hello\0\0\0"));
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find("ptr=0x7ffd00000100 len=8/8 bytes=[68 65 6c 6c 6f 00 00 00] text=\"hello\" -> anon"),
            std::string::npos)
      << last_line(a);
  EXPECT_EQ(last_event(a)["inline_bytes"], "68656c6c6f000000");
  EXPECT_EQ(last_event(a)["inline_text"], "hello");
  expect_schema_valid(a);

  auto cut = with_inline_event(fmtx::kKindUserPtr, 0x2000, 0x7ffd00000100, 100, std::string(64, 'x'));
  EXPECT_NE(last_line(cut).find("len=64/100 bytes=[78 78 "), std::string::npos) << last_line(cut);
  EXPECT_NE(last_line(cut).find(" 78] text=\"" + std::string(64, 'x') + "\"... -> anon"), std::string::npos)
      << last_line(cut);
  EXPECT_EQ(last_event(cut)["inline_cut"], true);

  auto binary = with_inline_event(fmtx::kKindUserPtr, 0x2000, 0x7ffd00000100, 8,
                                  bytes_of("\x00\x01\x7f\x00\x10\xff\x00\x00"));
  EXPECT_NE(last_line(binary).find("len=8/8 bytes=[00 01 7f 00 10 ff 00 00] -> anon"), std::string::npos)
      << last_line(binary);
  EXPECT_FALSE(last_event(binary).contains("inline_text"));
  expect_schema_valid(binary);
}

// Guards against: a sockaddr read as a string.  Only an AF_UNIX address has
// one (its sun_path, or an abstract name after a NUL); AF_INET is no
// inline_text but an address (io.peer), and an unknown family stays hex.
TEST(InlineText, UnixSocketAddressesAreStringsOthersStayHex) {
  const std::string_view un = bytes_of("\x01\x00/run/dbus/system_bus_socket\x00\x00\x00");
  auto a = with_inline_event(fmtx::kKindConnect, 5, 0, 0, un);
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find("fd=5 (origin not in the window) result=0 addr=\"unix:/run/dbus/system_bus_socket\""),
            std::string::npos)
      << last_line(a);
  EXPECT_EQ(last_event(a)["inline_text"], "unix:/run/dbus/system_bus_socket");
  EXPECT_EQ(last_event(a)["inline_cut"], false);
  expect_schema_valid(a);

  auto abstract = with_inline_event(fmtx::kKindConnect, 5, 0, 0, bytes_of("\x01\x00\x00/tmp/.X11-unix/X0"));
  EXPECT_NE(last_line(abstract).find("addr=\"unix:@/tmp/.X11-unix/X0\""), std::string::npos) << last_line(abstract);

  /* AF_INET 127.0.0.1:80: "\x02\x00\x00\x50\x7f\x00\x00\x01" and padding. */
  auto inet = with_inline_event(fmtx::kKindConnect, 5, static_cast<std::uint64_t>(-111), 0,
                                bytes_of("\x02\x00\x00\x50\x7f\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"));
  EXPECT_NE(last_line(inet).find("fd=5 (origin not in the window) result=ECONNREFUSED addr=127.0.0.1:80"),
            std::string::npos)
      << last_line(inet);
  EXPECT_FALSE(last_event(inet).contains("inline_text"));
  EXPECT_EQ(last_event(inet)["io"]["peer"], "127.0.0.1:80");
  expect_schema_valid(inet);

  /* AF_APPLETALK (5): no words for it. */
  auto other = with_inline_event(fmtx::kKindConnect, 5, 0, 0, bytes_of("\x05\x00\x01\x02"));
  EXPECT_NE(last_line(other).find("result=0 addr-bytes=[05 00 01 02]"), std::string::npos) << last_line(other);
  EXPECT_FALSE(last_event(other)["io"].contains("peer"));
}

// Guards against: bytes that only look like text given a string: REALLOC's
// old pointer is a number, whatever its bytes spell.
TEST(InlineText, PointersThatSpellTextAreNotStrings) {
  auto a = with_inline_event(fmtx::kKindRealloc, 0, 0x7ffd00000100, 16, "AAAAAAAA");
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find("old=0x4141414141414141"), std::string::npos) << last_line(a);
  EXPECT_FALSE(last_event(a).contains("inline_text"));
  expect_schema_valid(a);
}

// Guards against: an error result shown as a bare negative number (-2)
// where a person reads ENOENT, and a JSON that loses the number for the
// name or gives a name to a result that is not an error.
TEST(IoEvents, ErrorResultsAreErrnoNamesInTextNumberAndNameInJson) {
  auto a = with_inline_event(fmtx::kKindOpen, O_RDONLY, static_cast<std::uint64_t>(-2), fmtx::kOpenFlagsRecorded,
                             "/nonexistent");
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_NE(last_line(a).find(" OPEN "), std::string::npos) << last_line(a);
  EXPECT_NE(last_line(a).find("result=ENOENT flags=O_RDONLY path=\"/nonexistent\""), std::string::npos)
      << last_line(a);
  auto e = last_event(a);
  EXPECT_EQ(e["args"][0], static_cast<std::uint64_t>(-2));
  EXPECT_EQ(e["io"]["result"], -2);
  EXPECT_EQ(e["io"]["errno"], 2);
  EXPECT_EQ(e["io"]["errno_name"], "ENOENT");
  EXPECT_EQ(e["io"]["fd"], nullptr);
  EXPECT_EQ(e["io"]["flags"], "O_RDONLY");
  expect_schema_valid(a);

  auto eagain = with_inline_event(fmtx::kKindRecv, 9, static_cast<std::uint64_t>(-EAGAIN), 512, "");
  EXPECT_NE(last_line(eagain).find("fd=9 (origin not in the window) result=EAGAIN count=512"), std::string::npos)
      << last_line(eagain);
  EXPECT_EQ(last_event(eagain)["io"]["errno_name"], "EAGAIN");

  auto ok = with_inline_event(fmtx::kKindPwrite, 3, 4096, 4096, bytes_of("\x00\x20\x00\x00\x00\x00\x00\x00"));
  EXPECT_NE(last_line(ok).find("fd=3 (origin not in the window) result=4096 count=4096 offset=8192"),
            std::string::npos)
      << last_line(ok);
  e = last_event(ok);
  EXPECT_EQ(e["io"]["errno"], nullptr);
  EXPECT_EQ(e["io"]["errno_name"], nullptr);
  EXPECT_EQ(e["io"]["offset"], 8192);
  expect_schema_valid(ok);

  /* An OPEN of a ring written before flags were recorded: no flags made up. */
  auto old = with_inline_event(fmtx::kKindOpen, 0, 3, 0, "/etc/hostname");
  EXPECT_EQ(last_line(old).find("flags="), std::string::npos) << last_line(old);
  EXPECT_FALSE(last_event(old)["io"].contains("flags"));
  auto created = with_inline_event(fmtx::kKindOpen, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 4,
                                   fmtx::kOpenFlagsRecorded | 0644, "/tmp/out");
  EXPECT_NE(last_line(created).find("result=4 flags=O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC mode=0644 path=\"/tmp/out\""),
            std::string::npos)
      << last_line(created);
}

namespace {

/* The text line of the `nth` event (from 1): with every timestamp 0 the
 * events of lane 0 are in sequence order. */
std::string line_of_seq(const std::string &text, std::size_t nth) {
  std::size_t seen = 0;
  for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    const std::string line = text.substr(at, nl - at);
    if (line.size() > 17 && line.compare(12, 5, " tid ") == 0 && ++seen == nth) return line;
  }
  return {};
}

void put_inline(fmtx::Slot &s, std::string_view bytes) {
  std::memcpy(s.inline_data, bytes.data(), bytes.size());
  s.inline_len = static_cast<std::uint8_t>(bytes.size());
}

}  // namespace

// Guards against: an fd shown as a bare number when the window holds the
// OPEN, ACCEPT or CONNECT that made it; an fd tied to what it was before a
// CLOSE, or to an origin after the event; and a wrong origin guessed when
// none is in the window.
TEST(IoEvents, FdsAreNamedByTheLatestOriginBeforeThemUntilClosed) {
  RingBuilder r(3, 32);
  std::uint64_t seq = 0;
  const auto add = [&](std::uint16_t kind, std::uint32_t id, std::int64_t arg0, std::uint64_t arg1 = 0) -> fmtx::Slot & {
    return r.add(0, ++seq, kind, id, static_cast<std::uint64_t>(arg0), arg1);
  };
  put_inline(add(fmtx::kKindOpen, O_WRONLY | O_APPEND, 5, fmtx::kOpenFlagsRecorded), "/var/log/nginx/error.log");  // 1
  add(fmtx::kKindWrite, 5, 80, 80);                                                                               // 2
  add(fmtx::kKindSocket, AF_INET, 3, SOCK_STREAM);                                                                // 3
  /* AF_INET 127.0.0.1:53422 (0xd0ae). */
  put_inline(add(fmtx::kKindAccept, 3, 11, SOCK_CLOEXEC), bytes_of("\x02\x00\xd0\xae\x7f\x00\x00\x01\0\0\0\0\0\0\0\0"));  // 4
  add(fmtx::kKindRecv, 11, 29, 16384);                                                                            // 5
  add(fmtx::kKindClose, 5, 0);                                                                                    // 6
  add(fmtx::kKindWrite, 5, 10, 10);                                                                               // 7
  add(fmtx::kKindRead, 9, 1, 1);                                                                                  // 8
  add(fmtx::kKindClose, 11, 0);                                                                                   // 9
  put_inline(add(fmtx::kKindOpen, O_RDWR, 11, fmtx::kOpenFlagsRecorded), "/data/app.db");                         // 10
  put_inline(add(fmtx::kKindPread, 11, 4096, 4096), bytes_of("\x00\x10\x00\x00\x00\x00\x00\x00"));              // 11
  add(fmtx::kKindClose, 7, -EBADF);                                                                               // 12
  add(fmtx::kKindSocket, AF_INET6, 7, SOCK_STREAM);                                                               // 13
  put_inline(add(fmtx::kKindConnect, 7, -EINPROGRESS), bytes_of("\x0a\x00\x18\xeb\0\0\0\0" "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01" "\0\0\0\0"));  // 14
  add(fmtx::kKindSend, 7, 12, 12);                                                                                // 15
  add(fmtx::kKindAccept, 3, -EAGAIN, 0);                                                                          // 16
  add(fmtx::kKindFsync, 11, 0, 1);                                                                                // 17
  add(fmtx::kKindDup, 11, 2);                                                                                     // 18
  add(fmtx::kKindDup, 2, 20, O_CLOEXEC);                                                                          // 19
  add(fmtx::kKindWrite, 20, 5, 5);                                                                                // 20
  add(fmtx::kKindDup, 9, 21);                                                                                     // 21
  add(fmtx::kKindRead, 21, 1, 1);                                                                                 // 22
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  const std::string text = ctr::render_text(a);
  const auto line = [&](std::size_t n) { return line_of_seq(text, n); };
  EXPECT_NE(line(2).find("fd=5 (/var/log/nginx/error.log) result=80 count=80"), std::string::npos) << line(2);
  EXPECT_NE(line(4).find("fd=3 (socket AF_INET SOCK_STREAM at -0.019ms) result=11 from=127.0.0.1:53422 flags=SOCK_CLOEXEC"),
            std::string::npos)
      << line(4);
  EXPECT_NE(line(5).find("fd=11 (accepted from 127.0.0.1:53422 at -0.018ms) result=29 count=16384"), std::string::npos)
      << line(5);
  EXPECT_NE(line(6).find("fd=5 (/var/log/nginx/error.log) result=0"), std::string::npos) << line(6);
  EXPECT_NE(line(7).find("fd=5 (closed at -0.016ms; what made it again was not recorded) result=10"), std::string::npos) << line(7);
  EXPECT_NE(line(8).find("fd=9 (origin not in the window) result=1"), std::string::npos) << line(8);
  EXPECT_NE(line(11).find("fd=11 (/data/app.db) result=4096 count=4096 offset=4096"), std::string::npos)
      << line(11);
  /* A close that failed with EBADF closed nothing. */
  EXPECT_NE(line(12).find("fd=7 (origin not in the window) result=EBADF"), std::string::npos) << line(12);
  EXPECT_NE(line(14).find("fd=7 (socket AF_INET6 SOCK_STREAM at -0.009ms) result=EINPROGRESS addr=[::1]:6379"), std::string::npos)
      << line(14);
  EXPECT_NE(line(15).find("fd=7 (connected to [::1]:6379 at -0.008ms) result=12"), std::string::npos) << line(15);
  EXPECT_NE(line(16).find("fd=3 (socket AF_INET SOCK_STREAM at -0.019ms) result=EAGAIN"), std::string::npos) << line(16);
  EXPECT_NE(line(17).find("fd=11 (/data/app.db) result=0 (fdatasync)"), std::string::npos) << line(17);
  /* A DUP's new fd is what its old fd was, through a chain of them. */
  EXPECT_NE(line(19).find("fd=2 (duplicate of fd 11 at -0.004ms: /data/app.db) result=20 flags=O_CLOEXEC"),
            std::string::npos)
      << line(19);
  EXPECT_NE(line(20).find("fd=20 (duplicate of fd 2 at -0.003ms: /data/app.db) result=5"), std::string::npos)
      << line(20);
  EXPECT_NE(line(22).find("fd=21 (duplicate of fd 9 at -0.001ms; its origin not in the window) result=1"),
            std::string::npos)
      << line(22);

  const auto doc = ctr::to_json(a);
  const auto &events = doc["events"];
  ASSERT_EQ(events.size(), 22u);
  const auto &recv = events[4]["io"];
  EXPECT_EQ(recv["fd"], 11);
  EXPECT_EQ(recv["origin"]["state"], "found");
  EXPECT_EQ(recv["origin"]["event"]["kind"], "ACCEPT");
  EXPECT_EQ(recv["origin"]["event"]["seq"], 4);
  EXPECT_EQ(recv["origin"]["says"], "accepted from 127.0.0.1:53422 at -0.018ms");
  EXPECT_EQ(recv["origin"]["event"]["age_ns"], -18000);
  EXPECT_EQ(events[3]["io"]["flags"], "SOCK_CLOEXEC");
  EXPECT_EQ(events[3]["io"]["peer"], "127.0.0.1:53422");
  EXPECT_EQ(events[6]["io"]["origin"]["state"], "closed");
  EXPECT_EQ(events[6]["io"]["origin"]["event"]["seq"], 6);
  EXPECT_EQ(events[7]["io"]["origin"]["state"], "not_in_window");
  EXPECT_EQ(events[7]["io"]["origin"]["event"], nullptr);
  EXPECT_EQ(events[10]["io"]["origin"]["event"]["seq"], 10);
  EXPECT_EQ(events[0]["io"]["origin"], nullptr);
  EXPECT_EQ(events[0]["io"]["flags"], "O_WRONLY|O_APPEND");
  EXPECT_EQ(events[12]["io"]["domain"], "AF_INET6");
  EXPECT_EQ(events[16]["io"]["call"], "fdatasync");
  EXPECT_EQ(events[18]["io"]["flags"], "O_CLOEXEC");
  EXPECT_EQ(events[19]["io"]["origin"]["event"]["kind"], "DUP");
  expect_schema_valid(a);
}

TEST(Analyze, HealthyCoreGivesNamedTimeline) {
  RingBuilder r = three_events();
  auto tl = ctr::TlMap::parse("0x1001 REQ_PARSE\n0x1003 BEFORE_DIE\n", "t");
  ASSERT_TRUE(tl);
  ctr::ReadOptions o;
  o.tlmap = &*tl;
  auto a = analyze_bytes(ct::test::standard_core(r).build(), o);
  EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_EQ(a.source, ctr::TimelineSource::kCoreOnly);
  EXPECT_EQ(names(a), (std::vector<std::string>{"REQ_PARSE", "FREE", "BEFORE_DIE"}));
  ASSERT_EQ(a.rings.size(), 1u);
  EXPECT_EQ(a.rings[0].found_by, ctr::FoundBy::kNtFile);
  EXPECT_EQ(a.rings[0].pid.result, ctr::Check::kMatch);
  EXPECT_EQ(a.rings[0].build_id.result, ctr::Check::kMatch);
  ASSERT_TRUE(a.pointer_of(a.events[1]));
  EXPECT_EQ(a.pointer_of(a.events[1])->kind, ctr::MappingKind::kAnonymous);
  EXPECT_EQ(a.pointer_of(a.events[1])->note, "stack of tid 4242");
  ASSERT_TRUE(a.crash);
  EXPECT_EQ(a.crash->signal_name, "SIGSEGV");
  EXPECT_EQ(a.crash->si_code_name, "SEGV_MAPERR");
  EXPECT_FALSE(a.crash->ring_slot);
  ASSERT_TRUE(a.location_of(a.events[0]));
  EXPECT_EQ(a.location_of(a.events[0])->module, "/usr/bin/victim");
  EXPECT_EQ(a.location_of(a.events[0])->file_offset, 0x1234u);
  EXPECT_FALSE(a.absence_proves_nothing);
  expect_schema_valid(a);
  const std::string text = ctr::render_text(a);
  EXPECT_NE(text.find("REQ_PARSE        arg=41"), std::string::npos) << text;
  EXPECT_NE(text.find("core-timeline: core-only"), std::string::npos) << text;
}

TEST(Analyze, MappingChangedOnlyBetweenKnownGenerations) {
  RingBuilder r = three_events();
  r.header().mmap_generation = 9;   // mutable part: no reseal needed
  r.slot(0, 0).mmap_generation = 8;  // loaded objects changed after seq 1
  r.slot(0, 1).mmap_generation = 9;
  r.slot(0, 2).mmap_generation = 0;  // written before the writer knew
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  ASSERT_EQ(a.events.size(), 3u);
  EXPECT_TRUE(a.location_of(a.events[0])->mapping_changed);
  EXPECT_FALSE(a.location_of(a.events[1])->mapping_changed);
  EXPECT_FALSE(a.location_of(a.events[2])->mapping_changed);
}

TEST(Analyze, UnnamedUserIdsShowTheirId) {
  RingBuilder r = three_events();
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  EXPECT_EQ(names(a), (std::vector<std::string>{"id=0x1001", "FREE", "id=0x1003"}));
}

TEST(Analyze, CrashSlotIsDecoded) {
  RingBuilder r = three_events();
  auto &s = r.add(0, 4, fmtx::kKindCrash, 11, 0, 0x7ffd0000f000, 4242, 0, 0x401100);
  fmtx::CrashInfo ci{};
  ci.code = 1;
  std::memcpy(s.inline_data, &ci, sizeof ci);
  s.inline_len = sizeof ci;
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  ASSERT_EQ(a.events.size(), 4u);
  ASSERT_TRUE(a.crash_of(a.events[3]));
  EXPECT_EQ(a.crash_of(a.events[3])->signal_name, "SIGSEGV");
  EXPECT_EQ(a.crash_of(a.events[3])->si_code_name, "SEGV_MAPERR");
  EXPECT_TRUE(a.crash->ring_slot);
  expect_schema_valid(a);
}

TEST(Analyze, MissingNtFileFindsRingByValidatedMagic) {
  RingBuilder r = three_events();
  CoreBuilder c = ct::test::standard_core(r);
  c.with_file_note = false;
  auto a = analyze_bytes(c.build());
  EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
  ASSERT_EQ(a.rings.size(), 1u);
  EXPECT_EQ(a.rings[0].found_by, ctr::FoundBy::kMagicScan);
  EXPECT_EQ(a.rings[0].address, ct::test::kRingAddr);
  EXPECT_EQ(a.events.size(), 3u);
  expect_schema_valid(a);
}

TEST(Analyze, RenamedMemfdAndSharedAnonRingsAreFound) {
  for (const char *path : {"/memfd:core-timeline", "/memfd:renamed-ring (deleted)", "/dev/zero (deleted)"}) {
    RingBuilder r = three_events();
    CoreBuilder c;
    c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4}),
          "/usr/bin/victim", 0x2000, 5);
    c.map(ct::test::kRingAddr, r.bytes(), path);
    auto a = analyze_bytes(c.build());
    EXPECT_EQ(a.status, ctr::Status::kOk) << path << ": " << a.reason;
    ASSERT_EQ(a.rings.size(), 1u) << path;
    EXPECT_EQ(a.rings[0].found_by, std::string(path).rfind("/memfd:", 0) == 0 ? ctr::FoundBy::kNtFile : ctr::FoundBy::kMagicScan) << path;
    EXPECT_EQ(a.events.size(), 3u) << path;
  }
}

/* A process may copy its own ring into private memory (a tool reading its
 * ring; an allocator handing out page-aligned blocks makes the copy start a
 * page).  The copy validates, but it is not a ring: its events must not be
 * shown twice, nor stand in for a ring the core lost. */
TEST(Analyze, ACopyOfTheRingInPrivateMemoryIsNotASecondRing) {
  RingBuilder r = three_events();
  for (bool ring_dumped : {true, false}) {
    CoreBuilder c;
    c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4}),
          "/usr/bin/victim", 0x2000, 5);
    if (ring_dumped)
      c.map(ct::test::kRingAddr, r.bytes(), "/memfd:core-timeline (deleted)");
    else
      c.map_excluded(ct::test::kRingAddr, r.bytes().size(), "/memfd:core-timeline (deleted)");
    c.map(0x7f1000000000, r.bytes());  // private anonymous: not in NT_FILE
    auto a = analyze_bytes(c.build());
    if (ring_dumped) {
      EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
      ASSERT_EQ(a.rings.size(), 1u);
      EXPECT_EQ(a.rings[0].address, ct::test::kRingAddr);
      EXPECT_EQ(a.events.size(), 3u) << "events of the copy merged in";
    } else {
      EXPECT_EQ(a.status, ctr::Status::kMappingAbsent) << a.reason;
      EXPECT_TRUE(a.rings.empty() || a.rings[0].address == ct::test::kRingAddr);
    }
    // With NT_FILE, only the starts of the mappings it lists are candidates:
    // private memory is not looked at, so the copy is not even a miss.
    EXPECT_EQ(a.magic_rejected_total, 0u);
    for (const auto &found : ctr::locate_rings(*ctr::CoreFile::from_bytes(c.build(), "copy")))
      EXPECT_EQ(found.address, ct::test::kRingAddr);
    expect_schema_valid(a);
  }
}

TEST(Analyze, MagicInOrdinaryDataIsNotARing) {
  /* No library: a page that starts with "CTLN", and another with a whole
   * copied header whose CRC no longer matches.  Without NT_FILE every page
   * is a candidate; with it, only the starts of the mappings it lists (here
   * a /dev/zero shared mapping). */
  RingBuilder r = three_events();
  std::vector<std::uint8_t> data(8192, 0);
  std::memcpy(data.data(), "CTLN and then some program text", 31);
  std::memcpy(data.data() + 4096, r.bytes().data(), 1024);
  data[4096 + 100] ^= 0xff;
  for (bool file_note : {false, true}) {
    CoreBuilder c;
    c.with_file_note = file_note;
    c.map(ct::test::kExeAddr, ct::test::fake_elf_page({1, 2, 3, 4}), "/usr/bin/victim", 0x2000, 5);
    c.map(0x600000, data);
    c.map(0x700000, std::vector<std::uint8_t>(data.begin() + 4096, data.end()), "/dev/zero (deleted)");
    auto a = analyze_bytes(c.build());
    EXPECT_EQ(a.status, ctr::Status::kNoRing);
    EXPECT_EQ(ctr::exit_code(a.status), 1);
    EXPECT_EQ(a.magic_rejected_total, file_note ? 1u : 3u);
    EXPECT_TRUE(a.events.empty());
    expect_schema_valid(a);
  }
}

/* Finding the ring does not read the core's bytes beyond the notes, the
 * module headers and the candidates' first bytes: a big core whose other
 * pages are never touched finds it the same. */
TEST(Analyze, LocateRingsValidatesHeadersWithoutDecoding) {
  RingBuilder r = three_events();
  CoreBuilder c;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4}),
        "/usr/bin/victim", 0x2000, 5);
  c.map(ct::test::kRingAddr, r.bytes(), "/memfd:core-timeline (deleted)");
  auto core = ctr::CoreFile::from_bytes(c.build(), "locate");
  ASSERT_TRUE(core) << core.error().message;
  auto rings = ctr::locate_rings(*core);
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_EQ(rings[0].state, ctr::RingReport::State::kValid) << rings[0].reason;
  EXPECT_EQ(rings[0].found_by, ctr::FoundBy::kNtFile);
  EXPECT_EQ(rings[0].address, ct::test::kRingAddr);
  EXPECT_FALSE(rings[0].ring.has_value());
  // A bad header CRC is found the same way, and refused.
  RingBuilder bad = three_events();
  bad.bytes()[100] ^= 0xff;
  CoreBuilder c2;
  c2.map(ct::test::kRingAddr, bad.bytes(), "/memfd:core-timeline (deleted)");
  auto core2 = ctr::CoreFile::from_bytes(c2.build(), "locate-bad");
  ASSERT_TRUE(core2) << core2.error().message;
  auto rings2 = ctr::locate_rings(*core2);
  ASSERT_EQ(rings2.size(), 1u);
  EXPECT_EQ(rings2[0].state, ctr::RingReport::State::kInvalid);
}

TEST(Analyze, NoLibraryAtAllIsNoRing) {
  CoreBuilder c;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page({1, 2, 3, 4}), "/usr/bin/victim", 0x2000, 5);
  auto a = analyze_bytes(c.build());
  EXPECT_EQ(a.status, ctr::Status::kNoRing);
  EXPECT_NE(a.reason.find("no CTLN mapping found"), std::string::npos);
}

TEST(Analyze, ExcludedMappingIsTimelineMappingAbsent) {
  RingBuilder r = three_events();
  CoreBuilder c;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa}), "/usr/bin/victim", 0x2000, 5);
  c.map_excluded(ct::test::kRingAddr, r.bytes().size(), "/memfd:core-timeline (deleted)");
  auto a = analyze_bytes(c.build());
  EXPECT_EQ(a.status, ctr::Status::kMappingAbsent);
  EXPECT_EQ(ctr::exit_code(a.status), 2);
  EXPECT_NE(a.reason.find("timeline mapping absent"), std::string::npos);
  EXPECT_NE(a.reason.find("excluded"), std::string::npos) << a.reason;
  expect_schema_valid(a);
}

TEST(Analyze, TruncatedBeforeTheRingIsAbsentByTruncation) {
  RingBuilder r = three_events();
  CoreBuilder c;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa}), "/usr/bin/victim", 0x2000, 5);
  c.map(0x500000, std::vector<std::uint8_t>(16384, 1));
  c.map(ct::test::kRingAddr, r.bytes(), "/memfd:core-timeline (deleted)");
  auto bytes = c.build();
  bytes.resize(bytes.size() - r.bytes().size() - 100);  // ends before the ring
  auto a = analyze_bytes(bytes);
  EXPECT_TRUE(a.core_truncated);
  EXPECT_EQ(a.status, ctr::Status::kMappingAbsent);
  EXPECT_NE(a.reason.find("cut off by truncation"), std::string::npos) << a.reason;
  expect_schema_valid(a);
}

TEST(Analyze, TruncatedInsideTheRingKeepsThePresentLanes) {
  RingBuilder r = three_events();
  r.add(2, 1, fmtx::kKindUser, 9, 9);
  auto bytes = ct::test::standard_core(r).build();
  /* The ring is the second PT_LOAD; the stack page follows it.  Cut the
   * file in lane 1 of the ring. */
  auto core = ctr::CoreFile::from_bytes(bytes, "x");
  ASSERT_TRUE(core);
  const auto *seg = core->segment_for(ct::test::kRingAddr);
  ASSERT_NE(seg, nullptr);
  bytes.resize(seg->offset + fmtx::lane_slots_offset(r.header(), 1) + 128);
  auto a = analyze_bytes(bytes);
  EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_EQ(a.events.size(), 3u);
  EXPECT_TRUE(a.rings[0].ring->truncated);
  EXPECT_TRUE(a.absence_proves_nothing);
  expect_schema_valid(a);
}

TEST(Analyze, TwoRingsAreBothReportedAndMerged) {
  RingBuilder r1, r2;
  r1.add(0, 1, fmtx::kKindUser, 1, 1, 0, 4242, 1'000'100);
  r1.add(0, 2, fmtx::kKindUser, 3, 3, 0, 4242, 1'000'300);
  r2.add(0, 1, fmtx::kKindUser, 2, 2, 0, 4243, 1'000'200);
  ct::test::init_one_tick_later(r2);  // a second tl_init: its own anchor
  CoreBuilder c = ct::test::standard_core(r1);
  c.map(ct::test::kRingAddr + 0x100000, r2.bytes(), "/memfd:core-timeline (deleted)");
  auto a = analyze_bytes(c.build());
  EXPECT_EQ(a.status, ctr::Status::kOk);
  ASSERT_EQ(a.rings.size(), 2u);
  ASSERT_EQ(a.events.size(), 3u);
  EXPECT_EQ(a.events[0].id, 1u);
  EXPECT_EQ(a.events[1].id, 2u);  // merged by timestamp across rings
  EXPECT_EQ(a.events[1].ring, 1u);
  EXPECT_EQ(a.events[2].id, 3u);
  expect_schema_valid(a);
}

/* One ring seen twice - its memfd mapped a second time (mremap with old
 * size 0), or a copy written at the start of a private file mapping, which
 * NT_FILE lists and the default coredump_filter dumps - is one ring: the
 * second header is byte-for-byte the first's, which no second tl_init
 * writes (its clock anchor differs). */
TEST(Analyze, OneRingSeenTwiceIsOneRing) {
  RingBuilder r = three_events();
  for (const char *second : {"/memfd:core-timeline (deleted)", "/home/user/data.bin"}) {
    CoreBuilder c = ct::test::standard_core(r);
    c.map(0x500000000, r.bytes(), second);
    auto a = analyze_bytes(c.build());
    EXPECT_EQ(a.status, ctr::Status::kOk) << second << ": " << a.reason;
    EXPECT_EQ(a.events.size(), 3u) << second << ": events shown twice";
    std::size_t valid = 0;
    for (const auto &ring : a.rings) valid += ring.state == ctr::RingReport::State::kValid;
    EXPECT_EQ(valid, 1u) << second;
    bool said = false;
    for (const auto &ring : a.rings) said |= ring.reason.find("byte-for-byte copy") != std::string::npos;
    for (const auto &m : a.magic_rejected) said |= m.reason.find("byte-for-byte copy") != std::string::npos;
    EXPECT_TRUE(said) << second << ": the second sighting is not named as a copy";
    std::size_t located = 0;
    for (const auto &ring : ctr::locate_rings(*ctr::CoreFile::from_bytes(c.build(), "twice")))
      located += ring.state == ctr::RingReport::State::kValid;
    EXPECT_EQ(located, 1u) << second;
    expect_schema_valid(a);
  }
}

TEST(Analyze, LanesMergeByTimestampThenLaneThenSeq) {
  RingBuilder r;
  r.add(1, 1, fmtx::kKindUser, 10, 0, 0, 5001, 500);
  r.add(0, 1, fmtx::kKindUser, 11, 0, 0, 4242, 400);
  r.add(0, 2, fmtx::kKindUser, 12, 0, 0, 4242, 500);  // same tick as lane 1 seq 1
  r.add(0, 3, fmtx::kKindUser, 13, 0, 0, 4242, 1);    // clock went back: stays after seq 2
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  std::vector<std::uint32_t> ids;
  for (const auto &e : a.events) ids.push_back(e.id);
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{11, 12, 13, 10}));
}

TEST(Analyze, ForeignPidRingIsNotThisProcesssTimeline) {
  RingBuilder r(3, 8, /*pid=*/999);
  r.add(0, 1, fmtx::kKindUser, 1, 1);
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  EXPECT_EQ(a.status, ctr::Status::kRingInvalid);
  EXPECT_EQ(ctr::exit_code(a.status), 4);
  EXPECT_EQ(a.rings[0].state, ctr::RingReport::State::kForeign);
  EXPECT_NE(a.reason.find("pid 999"), std::string::npos) << a.reason;
  EXPECT_TRUE(a.events.empty());
  expect_schema_valid(a);
}

TEST(Analyze, ForeignBuildIdRingIsRejected) {
  RingBuilder r = three_events();
  CoreBuilder c = ct::test::standard_core(r);
  c.loads[0].data = ct::test::fake_elf_page({9, 9, 9, 9});
  auto a = analyze_bytes(c.build());
  EXPECT_EQ(a.status, ctr::Status::kRingInvalid);
  EXPECT_EQ(a.rings[0].build_id.result, ctr::Check::kMismatch);
}

TEST(Analyze, CorruptRingInNamedMemfdIsRingInvalid) {
  RingBuilder r = three_events();
  r.header().lane_count = 3000;  // CRC now wrong
  auto a = analyze_bytes(ct::test::standard_core(r).build());
  EXPECT_EQ(a.status, ctr::Status::kRingInvalid);
  EXPECT_NE(a.reason.find("header_crc"), std::string::npos) << a.reason;
}

TEST(Analyze, SymbolizerFailureCostsSymbolsNotTheTimeline) {
  RingBuilder r = three_events();
  auto core = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "synthetic");
  ASSERT_TRUE(core);
  ctr::ReadOptions o;  // symbolize = true: libdwfl finds no files for /usr/bin/victim
  auto a = ctr::analyze(*core, o);
  EXPECT_EQ(a.status, ctr::Status::kOk);
  EXPECT_EQ(a.events.size(), 3u);
  for (const auto &e : a.events) {
    if (const ctr::Location *l = a.location_of(e)) {
      EXPECT_EQ(l->verification, ctr::Verification::kRaw);
    }
  }
  expect_schema_valid(a);
}

TEST(Analyze, SymbolizerCrashCostsOnlySymbols) {
  RingBuilder r = three_events();
  auto core = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "synthetic");
  ASSERT_TRUE(core);
  setenv("CT_READER_TEST_KILL_SYMBOLIZER", "1", 1);
  auto a = ctr::analyze(*core, ctr::ReadOptions{});
  unsetenv("CT_READER_TEST_KILL_SYMBOLIZER");
  EXPECT_EQ(a.status, ctr::Status::kOk);
  EXPECT_EQ(a.events.size(), 3u);
  bool said = false;
  for (const auto &w : a.warnings) said |= w.find("symbols unavailable (libdwfl crashed") != std::string::npos;
  EXPECT_TRUE(said) << ctr::render_text(a);
  expect_schema_valid(a);
}

/* ------------------------------------------------------------------ sidecar */

class Sidecar : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto &p : files_) unlink(p.c_str());
  }
  std::string keep(const std::string &p) {
    files_.push_back(p);
    return p;
  }
  std::vector<std::string> files_;
};

TEST_F(Sidecar, SameRingMergesOlderEvents) {
  RingBuilder old_copy;
  for (std::uint64_t s = 1; s <= 8; ++s) old_copy.add(0, s, fmtx::kKindUser, 7, s);
  RingBuilder now = old_copy;  // the core: 4 more events overwrote seqs 1..4
  for (std::uint64_t s = 9; s <= 12; ++s) now.add(0, s, fmtx::kKindUser, 7, s);
  const std::string sc = keep(ct::test::write_temp(old_copy.bytes(), "sidecar"));
  ctr::ReadOptions o;
  o.sidecar_path = sc;
  auto a = analyze_bytes(ct::test::standard_core(now).build(), o);
  EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_EQ(a.source, ctr::TimelineSource::kCoreAndSidecar);
  ASSERT_EQ(a.events.size(), 12u);
  EXPECT_EQ(a.events[0].source, ctr::Origin::kSidecar);
  EXPECT_EQ(a.events[0].arg0, 1u);
  EXPECT_EQ(a.events[11].source, ctr::Origin::kCore);
  EXPECT_EQ(a.rings[0].start_time.result, ctr::Check::kMatch);
  expect_schema_valid(a);
}

TEST_F(Sidecar, ForeignPidIsRefusedUnlessCoreOnly) {
  RingBuilder core_ring = three_events();
  RingBuilder other(3, 8, /*pid=*/5555);
  other.add(0, 1, fmtx::kKindUser, 0x1002, 7, 0, 5555);
  const std::string sc = keep(ct::test::write_temp(other.bytes(), "sidecar"));
  ctr::ReadOptions o;
  o.sidecar_path = sc;
  auto bytes = ct::test::standard_core(core_ring).build();
  auto a = analyze_bytes(bytes, o);
  EXPECT_EQ(a.status, ctr::Status::kSidecarMismatch);
  EXPECT_EQ(ctr::exit_code(a.status), 6);
  EXPECT_NE(a.reason.find("pid 5555"), std::string::npos) << a.reason;
  expect_schema_valid(a);
  o.core_only = true;
  auto b = analyze_bytes(bytes, o);
  EXPECT_EQ(b.status, ctr::Status::kOk);
  EXPECT_EQ(b.sidecar_status, ctr::SidecarStatus::kIgnored);
  EXPECT_EQ(b.events.size(), 3u);
  expect_schema_valid(b);
}

TEST_F(Sidecar, SamePidOtherStartTimeIsRefused) {
  RingBuilder core_ring = three_events();
  RingBuilder reused = three_events();  // pid reused by a later process
  reused.header().process_start_ticks = 9999;
  reused.seal();
  ctr::ReadOptions o;
  o.sidecar_path = keep(ct::test::write_temp(reused.bytes(), "sidecar"));
  auto a = analyze_bytes(ct::test::standard_core(core_ring).build(), o);
  EXPECT_EQ(a.status, ctr::Status::kSidecarMismatch);
  EXPECT_NE(a.reason.find("start"), std::string::npos) << a.reason;
}

TEST_F(Sidecar, DegradedModeIsLoudAndKeepsExitTwo) {
  RingBuilder r = three_events();
  CoreBuilder c;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4}),
        "/usr/bin/victim", 0x2000, 5);
  c.map_excluded(ct::test::kRingAddr, r.bytes().size(), "/memfd:core-timeline (deleted)");
  ctr::ReadOptions o;
  o.sidecar_path = keep(ct::test::write_temp(r.bytes(), "sidecar"));
  auto a = analyze_bytes(c.build(), o);
  EXPECT_EQ(a.status, ctr::Status::kMappingAbsent);
  EXPECT_EQ(a.source, ctr::TimelineSource::kDegradedSidecar);
  EXPECT_EQ(a.events.size(), 3u);
  bool loud = false;
  for (const auto &w : a.warnings) loud |= w.find("DEGRADED") != std::string::npos;
  EXPECT_TRUE(loud);
  expect_schema_valid(a);
}

/* -------------------------------------------------------------------- tlmap */

TEST(TlMap, ParsesHexDecimalAndComments) {
  auto m = ctr::TlMap::parse("# ids\n0x1001 REQ_PARSE\n\n4098\tCONFIG_RELOAD  \n", "x");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_NE(m->find(0x1001), nullptr);
  EXPECT_EQ(*m->find(0x1001), "REQ_PARSE");
  EXPECT_EQ(*m->find(4098), "CONFIG_RELOAD");
  EXPECT_EQ(m->find(1), nullptr);
}

TEST(TlMap, RejectsDuplicatesAndBadNames) {
  auto d = ctr::TlMap::parse("1 A\n1 B\n", "f");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("f:2"), std::string::npos);
  EXPECT_FALSE(ctr::TlMap::parse("1 bad name!\n", "f"));
  EXPECT_FALSE(ctr::TlMap::parse("0x1ffffffff X\n", "f"));
  EXPECT_FALSE(ctr::TlMap::parse("zz X\n", "f"));
}

/* instructions_of() (instructions.h), on which the bounds on work in these
 * tests and reader_hostile_test rest: each work's count is its own (an
 * empty work counts next to nothing) and follows the work done (a loop 4
 * times as long, 4 times the instructions). */
TEST(Instructions, CountEachWorksOwnInstructions) {
  const auto loop = [](int n) {
    volatile int sink = 0;
    for (int i = 0; i < n; ++i) sink = sink + i;
  };
  const auto ir = ct::test::instructions_of({[&] { loop(10000); }, [&] { loop(40000); }, [] {}});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 3u);
  EXPECT_NEAR(static_cast<double>(ir[1]) / static_cast<double>(ir[0]), 4.0, 0.05) << ir[0] << ", " << ir[1];
  EXPECT_LT(ir[2], 100u);
}

// Guards against: an escaper that lets a control byte, an escape sequence
// or a byte above 0x7e reach a terminal, or that differs between the tools.
TEST(Printable, UntrustedBytesBecomeHexEscapes) {
  using core_timeline::reader::printable;
  const std::string nasty("a\x1b[31m\n\t\\b\xff\0c", 13);
  EXPECT_EQ(printable(nasty), "a\\x1b[31m\\x0a\\x09\\b\\xff\\x00c");
  EXPECT_EQ(printable(nasty, {.keep_lines = true}), "a\\x1b[31m\n\t\\b\\xff\\x00c");
  EXPECT_EQ(printable(nasty, {.escape_backslash = true}), "a\\x1b[31m\\x0a\\x09\\x5cb\\xff\\x00c");
  EXPECT_EQ(printable(nasty, {.stop_at_nul = true}), "a\\x1b[31m\\x0a\\x09\\b\\xff");
  EXPECT_EQ(printable("abcdef", {.max_len = 3}), "abc...");
  EXPECT_EQ(printable("abc", {.max_len = 3}), "abc");
  EXPECT_EQ(printable(""), "");
}

// Guards against: the cut at max_len moving when the escaper copies runs of
// plain bytes whole (the "..." only when something is left out; an escape
// finishes before the cut; the first NUL ends a C string before any cut).
TEST(Printable, MaxLenCutsAfterWholeEscapes) {
  using core_timeline::reader::printable;
  EXPECT_EQ(printable("ab\x01" "cd", {.max_len = 3}), "ab\\x01...");
  EXPECT_EQ(printable("ab\x01", {.max_len = 3}), "ab\\x01");
  EXPECT_EQ(printable("ab\x01\x02", {.max_len = 2}), "ab...");
  EXPECT_EQ(printable("ab\x01\x02", {.max_len = 3}), "ab\\x01...");
  EXPECT_EQ(printable(std::string("abc\0d", 5), {.stop_at_nul = true, .max_len = 3}), "abc");
  EXPECT_EQ(printable(std::string("abc\0d", 5), {.max_len = 3}), "abc...");
  EXPECT_EQ(printable("abc", {.max_len = 0}), "...");
  EXPECT_EQ(printable("x\"y", {.max_len = 1, .quoted = true}), "x...");
  EXPECT_EQ(printable(std::string(100000, 'a') + "\n", {.keep_lines = true}), std::string(100000, 'a') + "\n");
  /* is_printable(): printable() would give the bytes back unchanged. */
  using core_timeline::reader::is_printable;
  EXPECT_TRUE(is_printable(std::string(100000, 'a') + "\n", {.keep_lines = true}));
  EXPECT_FALSE(is_printable(std::string(100000, 'a') + "\n"));
  EXPECT_FALSE(is_printable(std::string(5000, 'a') + "\xff" + std::string(5000, 'a')));
  EXPECT_FALSE(is_printable("abcd", {.max_len = 3}));
  EXPECT_TRUE(is_printable("abc", {.max_len = 3}));
  EXPECT_TRUE(is_printable(""));
}

// Guards against: a quoted string that a quote, a backslash or a control
// byte can end early or forge (path="..." in the text, "inline_text").
TEST(Printable, QuotedWritesCEscapes) {
  using core_timeline::reader::printable;
  const std::string nasty("a\"b\\c\n\t\r\x1b\xc3\xa9\0d", 13);
  EXPECT_EQ(printable(nasty, {.quoted = true}), R"(a\"b\\c\n\t\r\x1b\xc3\xa9\x00d)");
  EXPECT_EQ(printable(nasty, {.keep_lines = true, .escape_backslash = true, .quoted = true}),
            R"(a\"b\\c\n\t\r\x1b\xc3\xa9\x00d)");
}

// Guards against: binary bytes called text, or text called binary because
// of its NUL padding, a few odd bytes, or UTF-8.
TEST(Printable, PayloadTextIsMostlyPrintableWithoutInnerNul) {
  using core_timeline::reader::payload_text;
  const auto text = [](std::string_view s) {
    auto t = payload_text({reinterpret_cast<const std::uint8_t *>(s.data()), s.size()});
    return t ? t->text : std::string("<not text>");
  };
  EXPECT_EQ(text("/etc/hostname"), "/etc/hostname");
  EXPECT_EQ(text(bytes_of("/etc\0\0\0")), "/etc");
  EXPECT_EQ(payload_text({reinterpret_cast<const std::uint8_t *>("/etc\0\0"), 6})->length, 4u);
  EXPECT_EQ(text(bytes_of("/etc\0x")), "<not text>");
  EXPECT_EQ(text(bytes_of("\0\0")), "<not text>");
  EXPECT_EQ(text(""), "<not text>");
  /* Cyrillic: every byte belongs to a well-formed UTF-8 character. */
  EXPECT_EQ(text("/home/\xd0\xb8\xd0\xb2\xd0\xb0\xd0\xbd"), R"(/home/\xd0\xb8\xd0\xb2\xd0\xb0\xd0\xbd)");
  /* A Latin-1 byte or an escape sequence in a path: still text. */
  EXPECT_EQ(text("/srv/caf\xe9.txt"), R"(/srv/caf\xe9.txt)");
  /* Mostly not printable: a pointer's bytes, a UTF-8 lead byte with no
   * continuation, an overlong or surrogate form. */
  EXPECT_EQ(text("\x10\x32\x54\x76\x98\xba\xdc\xfe"), "<not text>");
  EXPECT_EQ(text("a\xc3\xc3\xc3"), "<not text>");
  EXPECT_EQ(text("a\xc0\xaf\xc0\xaf"), "<not text>");
  EXPECT_EQ(text("a\xed\xa0\x80\xed\xa0\x80"), "<not text>");
  /* Three quarters printable is text, less is not. */
  EXPECT_EQ(text("abc\x01"), R"(abc\x01)");
  EXPECT_EQ(text("ab\x01\x02"), "<not text>");
}

// Guards against: a parser that takes a sign, a space, a suffix or an
// overflowing value as a number (journal fields and file names are
// untrusted).
TEST(Number, OnlyWholeUnsignedNumbersParse) {
  using core_timeline::reader::parse_unsigned;
  EXPECT_EQ(parse_unsigned("0"), 0u);
  EXPECT_EQ(parse_unsigned("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_unsigned("0042"), 42u);
  for (const char *bad : {"", "-1", "+1", " 1", "1 ", "1k", "18446744073709551616", "0x10", "1.5"})
    EXPECT_FALSE(parse_unsigned(bad)) << '"' << bad << '"';
  EXPECT_EQ(parse_unsigned("0x10", true), 16u);
  EXPECT_EQ(parse_unsigned("0XfF", true), 255u);
  EXPECT_FALSE(parse_unsigned("0x", true));
  EXPECT_FALSE(parse_unsigned("0x-1", true));
  EXPECT_EQ(parse_unsigned<std::uint32_t>("4294967295"), 4294967295u);
  EXPECT_FALSE(parse_unsigned<std::uint32_t>("4294967296"));
}

// ---------------------------------------------------------------- format 3
// A version-3 ring laid out by geometry_v3 (core_builder.h's RingV3): lane
// 0 has grown into the user pool with `seqs` events.
namespace v3 {
using Ring3 = ct::test::RingV3;
constexpr std::uint32_t kUserPool = ct::test::RingV3::kUserPool;
Ring3 make(std::uint64_t seqs) { return ct::test::ring_v3(seqs); }
}  // namespace v3

// Guards against: a version-3 lane read at its first slots after it grew
// (its events are in its pool extent), or its source lost.
TEST(RingV3, AGrownLaneIsReadFromItsExtentWithItsSource) {
  v3::Ring3 r = v3::make(20);  // 20 events in 16 slots: 4 overwritten
  auto d = ctr::decode_ring(r.bytes, r.bytes.size());
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->lanes.size(), 6u);
  const auto &l = d->lanes[0];
  EXPECT_EQ(l.capacity, 16u);
  ASSERT_TRUE(l.source.has_value());
  EXPECT_EQ(*l.source, fmtx::kSourceUser);
  EXPECT_EQ(l.committed, 16u);
  EXPECT_EQ(l.first_seq, 5u);
  EXPECT_EQ(l.overwritten, 4u);
  EXPECT_FALSE(l.counter_inconsistent) << l.counter_reason;
  EXPECT_EQ(*d->lanes[2].source, fmtx::kSourceAlloc);
  ASSERT_EQ(d->header.sources.size(), fmtx::kSourceCount);
  EXPECT_EQ(d->header.sources[0].pool_slots, v3::kUserPool);
}

// Guards against: a hostile extent making the reader read another lane's
// slots, another source's pool, or past the pools.
TEST(RingV3, AnExtentOutsideItsSourcesPoolOrOverlappingAnotherIsNotRead) {
  {
    v3::Ring3 r = v3::make(10);
    r.lane(2).extent = r.lane(0).extent;  // an alloc lane pointing into the user pool
    auto d = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->lanes[2].counter_inconsistent);
    EXPECT_NE(d->lanes[2].counter_reason.find("inside its source's pool"), std::string::npos)
        << d->lanes[2].counter_reason;
    EXPECT_EQ(d->lanes[2].committed, 0u);
    EXPECT_EQ(d->lanes[0].committed, 10u) << "the lane that owns the slots is still read";
  }
  {
    v3::Ring3 r = v3::make(10);
    // The user overflow lane claims the second half of lane 0's extent.
    r.lane(1).extent = fmtx::make_extent(fmtx::extent_first_slot(r.lane(0).extent) + 8, 4);
    auto d = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->lanes[0].counter_inconsistent);
    EXPECT_TRUE(d->lanes[1].counter_inconsistent);
    EXPECT_NE(d->lanes[1].counter_reason.find("overlaps lane 0"), std::string::npos) << d->lanes[1].counter_reason;
    EXPECT_TRUE(d->counter_inconsistent);
  }
  {
    v3::Ring3 r = v3::make(10);
    r.lane(0).extent = fmtx::make_extent(0, 40);  // 2^40 slots
    auto d = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->lanes[0].counter_inconsistent);
    EXPECT_EQ(d->lanes[0].committed, 0u);
  }
}

// Guards against: a version-5 lane whose slots another source's pool lent
// read as hostile (it is where the writer grows a lane whose own pool is
// spent), the lent count lost, or the rule relaxed for older versions.
TEST(RingV5, ALaneMayHoldSlotsLentByAnotherSourcesPool) {
  for (const std::uint16_t version : {std::uint16_t{3}, std::uint16_t{5}}) {
    SCOPED_TRACE(version);
    v3::Ring3 r = v3::make(10);
    r.header().version = version;
    // The alloc lane (2) grew into the user pool's second half, 16 slots.
    r.lane(2).extent = fmtx::make_extent(fmtx::extent_first_slot(r.lane(0).extent) + 16, 4);
    for (std::uint64_t s = 1; s <= 20; ++s) r.commit(2, s);
    if (version >= 5) r.header().sources[0].lent = 16;
    r.header().sources[0].pool_used = 32;
    r.seal();
    auto d = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->lanes[0].committed, 10u);
    if (version < 5) {
      EXPECT_TRUE(d->lanes[2].counter_inconsistent) << "version 3 lends nothing";
      continue;
    }
    EXPECT_FALSE(d->lanes[2].counter_inconsistent) << d->lanes[2].counter_reason;
    EXPECT_EQ(d->lanes[2].committed, 16u);
    EXPECT_EQ(d->lanes[2].first_seq, 5u);
    EXPECT_EQ(d->lanes[2].overwritten, 4u);
    EXPECT_EQ(d->header.sources[0].lent, 16u);
    // Still refused: a lent extent over another lane's, or beyond the pools.
    r.lane(2).extent = fmtx::make_extent(fmtx::extent_first_slot(r.lane(0).extent) + 8, 4);
    auto overlap = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(overlap) << overlap.error().message;
    EXPECT_TRUE(overlap->lanes[2].counter_inconsistent);
    EXPECT_NE(overlap->lanes[2].counter_reason.find("overlaps lane 0"), std::string::npos)
        << overlap->lanes[2].counter_reason;
    r.lane(2).extent = fmtx::make_extent(fmtx::extent_first_slot(r.lane(0).extent) + 24, 4);
    auto beyond = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(beyond) << beyond.error().message;
    EXPECT_TRUE(beyond->lanes[2].counter_inconsistent);
    EXPECT_NE(beyond->lanes[2].counter_reason.find("inside the pools"), std::string::npos)
        << beyond->lanes[2].counter_reason;
  }
}

// Guards against: a version-6 split lane read as one segment (its second
// half taken from the slots after its first), its second segment trusted
// outside the pools or over another lane's slots, or the bits that say
// "split" read in a version-5 ring, whose writer never set them.
TEST(RingV6, ASplitLaneIsReadFromBothSegmentsInOrder) {
  for (const std::uint16_t version : {std::uint16_t{5}, std::uint16_t{6}}) {
    SCOPED_TRACE(version);
    v3::Ring3 r = v3::make(10);
    r.header().version = version;
    // The alloc lane (2): its 8 first slots and 8 lent by the user pool
    // (slots 16-23 of it).
    const std::uint32_t head = fmtx::extent_first_slot(r.lane(2).extent);
    const std::uint32_t lent = fmtx::extent_first_slot(r.lane(0).extent) + 16;
    r.lane(2).extent = fmtx::make_split_extent(head, 3, lent);
    for (std::uint64_t s = 1; s <= 20; ++s) r.commit(2, s);  // 20 events in 16 slots
    r.header().sources[0].lent = 8;
    r.header().sources[0].pool_used = 24;
    r.seal();
    auto d = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->lanes[0].committed, 10u);
    const auto &l = d->lanes[2];
    if (version < 6) {
      EXPECT_EQ(l.capacity, 8u) << "version 5 has no split lanes";
      continue;
    }
    EXPECT_FALSE(l.counter_inconsistent) << l.counter_reason;
    EXPECT_EQ(l.capacity, 16u);
    EXPECT_EQ(l.committed, 16u);
    EXPECT_EQ(l.first_seq, 5u);
    EXPECT_EQ(l.overwritten, 4u);
    EXPECT_EQ(l.invalid, 0u);
    std::uint64_t next = 5;
    for (const auto &e : d->events)
      if (e.lane == 2) {
        EXPECT_EQ(e.seq, next);
        EXPECT_EQ(e.arg0, next);
        ++next;
      }
    EXPECT_EQ(next, 21u);
    // Refused: a second segment over lane 0's slots, or beyond the pools.
    r.lane(2).extent = fmtx::make_split_extent(head, 3, lent - 8);
    auto overlap = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(overlap) << overlap.error().message;
    EXPECT_TRUE(overlap->lanes[2].counter_inconsistent);
    EXPECT_NE(overlap->lanes[2].counter_reason.find("overlaps lane 0"), std::string::npos)
        << overlap->lanes[2].counter_reason;
    EXPECT_EQ(overlap->lanes[2].committed, 0u);
    r.lane(2).extent = fmtx::make_split_extent(head, 3, lent + 16);
    auto beyond = ctr::decode_ring(r.bytes, r.bytes.size());
    ASSERT_TRUE(beyond) << beyond.error().message;
    EXPECT_TRUE(beyond->lanes[2].counter_inconsistent);
    EXPECT_NE(beyond->lanes[2].counter_reason.find("second segment"), std::string::npos)
        << beyond->lanes[2].counter_reason;
  }
}

// Guards against: trusting a version-3 header's offsets or source table
// instead of recomputing them from its geometry.
TEST(RingV3, AHeaderWhoseLayoutIsNotItsGeometrysIsRefused) {
  const std::vector<std::pair<const char *, std::function<void(fmtx::RingHeader &)>>> edits = {
      {"pool_first_slot", [](fmtx::RingHeader &h) { h.sources[1].pool_first_slot += 1; }},
      {"pool_slots", [](fmtx::RingHeader &h) { h.sources[0].pool_slots = 24; }},
      {"first_lane", [](fmtx::RingHeader &h) { h.sources[2].first_lane = 0; }},
      {"names_offset", [](fmtx::RingHeader &h) { h.names_offset += 128; }},
      {"source_count", [](fmtx::RingHeader &h) { h.source_count = 4; }},
      {"lane_count", [](fmtx::RingHeader &h) { h.lane_count = 7; }},
  };
  for (const auto &[what, edit] : edits) {
    v3::Ring3 r = v3::make(3);
    edit(r.header());
    r.seal();
    auto d = ctr::decode_ring(r.bytes, r.bytes.size());
    EXPECT_FALSE(d) << what << " was accepted";
    if (!d) {
      EXPECT_EQ(d.error().code, ctr::Errc::kBadData) << what << ": " << d.error().message;
    }
  }
  // A version-3 header needs its 1024 bytes.
  v3::Ring3 r = v3::make(3);
  auto d = ctr::decode_ring(std::span<const std::uint8_t>(r.bytes.data(), 700), r.bytes.size());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ctr::Errc::kTruncated);
}

// ------------------------------------------------------- the stack chain
// Ring format 5 (ring_format.h, "the stack chain"): a CRASH walk of more
// than 8 frames in a chain of STACK slots after the CRASH slot, 8 frames
// each, arg1 the walk's index of a part's first frame, kStackNext on every
// part but the last.  Hand-built version-5 rings (core_builder.h's
// ring_with_crash_chain: version 3's layout, lane 0 grown to 16 slots): a
// USER event at seq 1, the CRASH at seq 2, then its parts.
namespace chain {

using Ring5 = ct::test::RingV3;
using ct::test::chain_frame;

/* A USER event at seq 1, the CRASH at seq 2 with a walk of `depth` frames
 * that ended `end`, and every part of its chain after it. */
Ring5 with_chain(std::uint32_t depth, std::uint32_t end = fmtx::kStackComplete) {
  return ct::test::ring_with_crash_chain(depth, end);
}

ctr::Analysis analyze(Ring5 &r) {
  r.seal();
  return analyze_bytes(ct::test::standard_core(r).build());
}

const ctr::Event *event_of_kind(const ctr::Analysis &a, std::uint16_t kind) {
  for (const auto &e : a.events)
    if (e.kind == kind) return &e;
  return nullptr;
}

std::size_t count_of_kind(const ctr::Analysis &a, std::uint16_t kind) {
  std::size_t n = 0;
  for (const auto &e : a.events) n += e.kind == kind;
  return n;
}

/* The event's frames are the walk's frames [first, first + n). */
void expect_frames(const ctr::Analysis &a, const ctr::Event &e, std::uint32_t first, std::uint32_t n) {
  const auto frames = a.frames_of(e);
  ASSERT_EQ(frames.size(), n);
  for (std::uint32_t i = 0; i < n; ++i) EXPECT_EQ(a.locations[frames[i]].address, chain_frame(first + i)) << "frame " << i;
}

}  // namespace chain

// Guards against: a CRASH stack kept to its first 8 frames, or a chain's
// parts shown as events of their own.
TEST(StackChain, TheCrashEventGetsEveryFrameOfItsChain) {
  for (const std::uint32_t depth : {3u, 8u, 9u, 20u, 64u}) {
    chain::Ring5 r = chain::with_chain(depth);
    const ctr::Analysis a = chain::analyze(r);
    const ctr::Event *crash = chain::event_of_kind(a, fmtx::kKindCrash);
    ASSERT_NE(crash, nullptr) << depth;
    EXPECT_EQ(crash->stack, ctr::StackState::kComplete) << depth;
    chain::expect_frames(a, *crash, 0, depth);
    EXPECT_EQ(chain::count_of_kind(a, fmtx::kKindStack), 0u) << depth << ": every part attached";
    EXPECT_EQ(a.events.size(), 2u) << depth;
    expect_schema_valid(a);
  }
  // The walk's end is the last part's.
  chain::Ring5 r = chain::with_chain(64, fmtx::kStackDepthLimit);
  const ctr::Analysis a = chain::analyze(r);
  EXPECT_EQ(chain::event_of_kind(a, fmtx::kKindCrash)->stack, ctr::StackState::kDepthLimit);
  EXPECT_NE(ctr::render_text(a).find("CRASH"), std::string::npos);
}

// Guards against: a chain whose end the ring no longer holds (the process
// died between two parts, or the last was torn) shown as the whole walk,
// or not at all.
TEST(StackChain, AChainWithoutItsLastPartIsCutAndKeepsTheFramesThatAreThere) {
  {
    chain::Ring5 r = chain::with_chain(20);  // parts at seqs 3, 4, 5
    r.lane(0).write_index = 4;  // seq 5 never written
    r.slot_of(0, 5) = {};
    const ctr::Analysis a = chain::analyze(r);
    const ctr::Event *crash = chain::event_of_kind(a, fmtx::kKindCrash);
    ASSERT_NE(crash, nullptr);
    EXPECT_EQ(crash->stack, ctr::StackState::kCut);
    chain::expect_frames(a, *crash, 0, 16);
    EXPECT_EQ(ctr::stack_state_name(crash->stack), "cut");
    expect_schema_valid(a);
  }
  {
    chain::Ring5 r = chain::with_chain(20);
    r.slot_of(0, 5).begin_seq = 5 | fmtx::kSeqWriting;  // torn
    const ctr::Analysis a = chain::analyze(r);
    const ctr::Event *crash = chain::event_of_kind(a, fmtx::kKindCrash);
    ASSERT_NE(crash, nullptr);
    EXPECT_EQ(crash->stack, ctr::StackState::kCut);
    chain::expect_frames(a, *crash, 0, 16);
  }
}

// Guards against: parts whose CRASH slot the ring wrapped over (the shared
// lane: other threads' events after the chain) attached to nothing, lost,
// or claimed for another event; they are one STACK event, whose arg1 says
// at which frame of the walk its frames begin.
TEST(StackChain, PartsWhoseCrashIsGoneAreOneStackEventFromTheirFirstFrame) {
  chain::Ring5 r = chain::with_chain(20);  // CRASH 2, parts 3, 4, 5
  // 14 more events, seqs 6..19, in 16 slots: seq 17 overwrites seq 1, 18
  // the CRASH, 19 part 0.
  for (std::uint64_t s = 6; s <= 19; ++s) r.put(s, fmtx::kKindUser, 0x31, s, 0, 0);
  const ctr::Analysis a = chain::analyze(r);
  EXPECT_EQ(chain::event_of_kind(a, fmtx::kKindCrash), nullptr);
  ASSERT_EQ(chain::count_of_kind(a, fmtx::kKindStack), 1u);
  const ctr::Event *s = chain::event_of_kind(a, fmtx::kKindStack);
  EXPECT_EQ(s->arg0, 2u) << "the CRASH's seq";
  EXPECT_EQ(s->arg1, 8u) << "its frames begin at the walk's frame 8";
  EXPECT_EQ(s->stack, ctr::StackState::kComplete);
  chain::expect_frames(a, *s, 8, 12);
  expect_schema_valid(a);
}

// Guards against: untrusted parts believed.  Each malformed part is shown
// malformed (no frame), a chain stops before it, and a CRASH whose first
// part it is shows its stack malformed, never frames from elsewhere.
TEST(StackChain, MalformedPartsAreRefusedAndEndTheChainBeforeThem) {
  const auto slot_of = [](chain::Ring5 &r, std::uint64_t seq) -> fmtx::Slot & { return r.slot_of(0, seq); };
  struct Case {
    const char *what;
    std::function<void(chain::Ring5 &)> edit;
    ctr::StackState crash;
    std::uint32_t frames;
  };
  const std::vector<Case> cases = {
      {"a continued part that is not full", [&](chain::Ring5 &r) { slot_of(r, 4).stack = 7 | fmtx::kStackNext; },
       ctr::StackState::kCut, 8},
      {"a continued part that gives an end",
       [&](chain::Ring5 &r) { slot_of(r, 3).stack = fmtx::make_stack(8, fmtx::kStackComplete) | fmtx::kStackNext; },
       ctr::StackState::kMalformed, 0},
      {"a last part without an end", [&](chain::Ring5 &r) { slot_of(r, 5).stack = fmtx::make_stack(4, 0); },
       ctr::StackState::kCut, 16},
      {"an end above 4", [&](chain::Ring5 &r) { slot_of(r, 5).stack = fmtx::make_stack(4, 5); },
       ctr::StackState::kCut, 16},
      {"an inline_len that is not 8 x depth", [&](chain::Ring5 &r) { slot_of(r, 4).inline_len = 56; },
       ctr::StackState::kCut, 8},
      {"an arg1 not a multiple of 8", [&](chain::Ring5 &r) { slot_of(r, 4).arg1 = 9; }, ctr::StackState::kCut, 8},
      {"an arg1 that skips a part", [&](chain::Ring5 &r) { slot_of(r, 4).arg1 = 16; }, ctr::StackState::kCut, 8},
      {"an arg1 past the 64th frame", [&](chain::Ring5 &r) { slot_of(r, 5).arg1 = UINT64_MAX - 7; },
       ctr::StackState::kCut, 16},
      {"another thread's part", [&](chain::Ring5 &r) { slot_of(r, 4).tid = 4243; }, ctr::StackState::kCut, 8},
      {"another kind's part", [&](chain::Ring5 &r) { slot_of(r, 4).id = fmtx::kKindRealloc; },
       ctr::StackState::kCut, 8},
  };
  for (const auto &c : cases) {
    chain::Ring5 r = chain::with_chain(20);
    c.edit(r);
    const ctr::Analysis a = chain::analyze(r);
    const ctr::Event *crash = chain::event_of_kind(a, fmtx::kKindCrash);
    ASSERT_NE(crash, nullptr) << c.what;
    EXPECT_EQ(crash->stack, c.crash) << c.what;
    EXPECT_EQ(crash->stack_depth, c.frames) << c.what;
    if (crash->stack != ctr::StackState::kMalformed) {
      chain::expect_frames(a, *crash, 0, c.frames);
    }
    for (const auto &e : a.events) {
      if (e.kind == fmtx::kKindStack && e.stack == ctr::StackState::kMalformed) {
        EXPECT_EQ(e.stack_depth, 0u) << c.what;
      }
    }
    expect_schema_valid(a);
  }
}

// Guards against: a chain longer than 64 frames (9 parts) believed whole:
// the ninth part is malformed, so the first 64 frames are a cut walk.
TEST(StackChain, AChainOfMoreThan64FramesIsCutAt64) {
  chain::Ring5 r = chain::with_chain(64, fmtx::kStackComplete);  // parts at 3..10
  // Part 7 (seq 10) says another follows, and the ninth (seq 11) is there.
  r.stack_part(10, 2, 72, fmtx::kStackComplete, 7);
  r.stack_part(11, 2, 72, fmtx::kStackComplete, 8);
  const ctr::Analysis a = chain::analyze(r);
  const ctr::Event *crash = chain::event_of_kind(a, fmtx::kKindCrash);
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash->stack, ctr::StackState::kCut);
  chain::expect_frames(a, *crash, 0, 64);
  expect_schema_valid(a);
}

// Guards against: a chain read in a version-4 ring, where STACK slots do
// not chain (arg1 is 0, kStackNext never set on one): its first part is
// malformed, and so is the CRASH event's stack.
TEST(StackChain, AChainInAVersion4RingIsMalformed) {
  chain::Ring5 r = chain::with_chain(20);
  r.header().version = 4;
  const ctr::Analysis a = chain::analyze(r);
  const ctr::Event *crash = chain::event_of_kind(a, fmtx::kKindCrash);
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash->stack, ctr::StackState::kMalformed);
  EXPECT_EQ(crash->stack_depth, 0u);
  // Version 4's one STACK slot, as it always was.
  chain::Ring5 one = chain::with_chain(6);
  one.header().version = 4;
  const ctr::Analysis b = chain::analyze(one);
  EXPECT_EQ(chain::event_of_kind(b, fmtx::kKindCrash)->stack, ctr::StackState::kComplete);
  chain::expect_frames(b, *chain::event_of_kind(b, fmtx::kKindCrash), 0, 6);
}
