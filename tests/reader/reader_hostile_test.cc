// SPDX-License-Identifier: MIT
//
// Hostile cores: inputs crafted to make the reader crash, hang, allocate
// without bound or open files it should not.  A privileged daemon runs the
// reader on every crash, and any local user shapes the crashed process's
// memory, so each test names the attack and the bound that holds it.
// Where the bound is on work, the test compares the instructions the reader
// executes on two sizes of the attack (instructions.h, callgrind): a count
// of the work, the same on every run, where a time would measure the
// machine.
// Cores are built in the test (core_builder.h); the program headers are
// patched afterwards where the builder lays bytes out the kernel's way.
#include <elf.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core_builder.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/ring.h"
#include "core_timeline/reader/symbolize.h"
#include "instructions.h"
#include "test_util.h"

namespace ctr = core_timeline::reader;
namespace fmtx = core_timeline::format;
using ct::test::CoreBuilder;
using ct::test::RingBuilder;
using ct::test::three_events;
using Bytes = std::vector<std::uint8_t>;

namespace {

ctr::Analysis analyze_bytes(const Bytes &bytes) {
  auto core = ctr::CoreFile::from_bytes(bytes, "hostile-core");
  if (!core) return ctr::analysis_of_error("hostile-core", core.error());
  ctr::ReadOptions opts;
  opts.symbolize = false;
  return ctr::analyze(*core, opts);
}

/* Program header `i` of a core built by CoreBuilder (0 is its PT_NOTE, 1.. its
 * loads in order), to edit in place. */
Elf64_Phdr *phdr(Bytes &core, std::size_t i) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, core.data(), sizeof eh);
  return reinterpret_cast<Elf64_Phdr *>(core.data() + eh.e_phoff + i * sizeof(Elf64_Phdr));
}

/* The instructions analyze_bytes() executes on each of `cores`
 * (instructions_of; empty, and the test failed, if it could not count). */
std::vector<std::uint64_t> analysis_instructions(const std::vector<Bytes> &cores) {
  std::vector<std::function<void()>> works;
  for (const Bytes &c : cores) works.emplace_back([&c] { analyze_bytes(c); });
  return ct::test::instructions_of(works);
}

double ratio(std::uint64_t a, std::uint64_t b) { return static_cast<double>(a) / static_cast<double>(b); }

/* For 4 times the input: work linear in it costs about 4 times the
 * instructions (less for the fixed part, a little more for a sort),
 * quadratic work 16 times. */
constexpr double kLinearAt4x = 6.0;
/* For inputs that differ only in what a bound leaves out (slots a header
 * claims but the core lacks, notes past the 8 KiB searched, more names of
 * an image already searched): about the same work.  The margin is for
 * what remains (wider numbers to format, one search of an image's notes);
 * without the bound these cost 4 to 64 times as much. */
constexpr double kUnchanged = 1.5;

/* A core with exactly these program headers (p_offset relative to `data`,
 * which follows the header table) and one PT_NOTE holding `notes`. */
Bytes raw_core(std::vector<Elf64_Phdr> phs, const Bytes &data, const Bytes &notes = {}) {
  const std::size_t n = phs.size() + (notes.empty() ? 0 : 1);
  const Elf64_Ehdr eh = ct::test::core_ehdr(static_cast<std::uint16_t>(n));
  const std::uint64_t data_off = sizeof eh + n * sizeof(Elf64_Phdr);
  for (auto &p : phs)
    if (p.p_filesz != 0) p.p_offset += data_off;
  if (!notes.empty()) {
    Elf64_Phdr p{};
    p.p_type = PT_NOTE;
    p.p_offset = data_off + data.size();
    p.p_filesz = notes.size();
    p.p_align = 4;
    phs.push_back(p);
  }
  Bytes out(sizeof eh);
  std::memcpy(out.data(), &eh, sizeof eh);
  const auto *ph = reinterpret_cast<const std::uint8_t *>(phs.data());
  out.insert(out.end(), ph, ph + phs.size() * sizeof(Elf64_Phdr));
  out.insert(out.end(), data.begin(), data.end());
  out.insert(out.end(), notes.begin(), notes.end());
  return out;
}

Elf64_Phdr load(std::uint64_t vaddr, std::uint64_t memsz, std::uint64_t offset, std::uint64_t filesz) {
  Elf64_Phdr p{};
  p.p_type = PT_LOAD;
  p.p_flags = PF_R | PF_W;
  p.p_vaddr = vaddr;
  p.p_memsz = memsz;
  p.p_offset = offset;
  p.p_filesz = filesz;
  p.p_align = 4096;
  return p;
}

}  // namespace

/* Attack: N program headers over the same file bytes.  One ring in the file
 * listed by two PT_LOADs was two rings (every event twice); N of them over
 * a 1 MiB ring made N copies (2 MB of core, 5 GB of memory).  Likewise one
 * PT_NOTE listed twice doubled every thread.  The kernel writes each
 * segment's bytes once, one after another: overlap means a crafted core. */
TEST(HostileCore, ProgramHeadersOverTheSameFileBytesAreRefused) {
  {
    RingBuilder r = three_events();
    CoreBuilder c = ct::test::standard_core(r);
    c.map(ct::test::kRingAddr + 0x100000, r.bytes());  // phdr 4: a second copy
    Bytes bytes = c.build();
    phdr(bytes, 4)->p_offset = phdr(bytes, 2)->p_offset;  // now over the first copy
    auto core = ctr::CoreFile::from_bytes(bytes, "two-loads-one-ring");
    ASSERT_FALSE(core) << "two PT_LOADs over one ring were accepted";
    EXPECT_EQ(core.error().code, ctr::Errc::kBadData);
    EXPECT_NE(core.error().message.find("overlap"), std::string::npos) << core.error().message;
    auto a = analyze_bytes(bytes);
    EXPECT_EQ(a.status, ctr::Status::kCoreUnreadable);
    EXPECT_TRUE(a.events.empty());
  }
  {
    RingBuilder r = three_events();
    CoreBuilder c = ct::test::standard_core(r);
    c.map(0x7e0000000000, Bytes(64, 0));  // phdr 4, turned into a second PT_NOTE
    Bytes bytes = c.build();
    *phdr(bytes, 4) = *phdr(bytes, 0);
    auto core = ctr::CoreFile::from_bytes(bytes, "two-notes-one-blob");
    ASSERT_FALSE(core) << "the notes were read twice: " << (core ? core->notes().threads.size() : 0) << " threads";
    EXPECT_EQ(core.error().code, ctr::Errc::kBadData);
  }
  {
    /* Segments that merely touch, and excluded (p_filesz 0) segments at
     * offset 0, are what the kernel writes: still accepted. */
    RingBuilder r = three_events();
    CoreBuilder c = ct::test::standard_core(r);
    c.map_excluded(0x7e0000000000, 0x10000, "/memfd:other (deleted)");
    auto a = analyze_bytes(c.build());
    EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
    EXPECT_EQ(a.events.size(), 3u);
  }
}

/* Attack: many vaddr-contiguous PT_LOADs, each page starting with "CTLN".
 * For every candidate the magic scan asked mapped_extent(), which walked the
 * run of contiguous segments to its end: quadratic (32000 one-page segments
 * over one file page, 1.8 MB: 21 s).  The run's end is now computed once per
 * segment: 4 times the candidates and the run cost about 4 times the
 * instructions, not 16. */
Bytes contiguous_run(std::uint64_t candidates, std::uint64_t tail) {
  constexpr std::uint64_t kBase = 0x10000000000;
  std::vector<Elf64_Phdr> phs;
  Bytes data;
  for (std::uint64_t i = 0; i < candidates; ++i) {
    phs.push_back(load(kBase + i * 4096, 4096, data.size(), 4));
    data.insert(data.end(), {'C', 'T', 'L', 'N'});
  }
  for (std::uint64_t i = 0; i < tail; ++i) phs.push_back(load(kBase + candidates * 4096 + i, 1, 0, 0));
  return raw_core(phs, data);
}

TEST(HostileCore, ContiguousSegmentRunIsWalkedOncePerCore) {
  constexpr std::uint64_t kCounted = 100, kCountedTail = 1500;
  const auto ir = analysis_instructions({contiguous_run(kCounted, kCountedTail),
                                         contiguous_run(4 * kCounted, 4 * kCountedTail)});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 2u);
  EXPECT_LT(ratio(ir[1], ir[0]), kLinearAt4x)
      << ir[0] << " instructions for " << kCounted << " candidates in a run of " << kCounted + kCountedTail
      << " segments, " << ir[1] << " for 4 times as many";

  constexpr std::uint64_t kCandidates = 4000, kTail = 60000, kBase = 0x10000000000;
  const Bytes bytes = contiguous_run(kCandidates, kTail);
  auto core = ctr::CoreFile::from_bytes(bytes, "run");
  ASSERT_TRUE(core) << core.error().message;
  EXPECT_EQ(core->mapped_extent(kBase), kCandidates * 4096 + kTail);
  EXPECT_EQ(core->mapped_extent(kBase + kCandidates * 4096 + kTail - 1), 1u);
  const ctr::Analysis a = analyze_bytes(bytes);
  EXPECT_EQ(a.status, ctr::Status::kNoRing);
  EXPECT_EQ(a.magic_rejected_total, kCandidates);
}

/* Attack: NT_FILE entries that all continue one another.  find_rings()
 * follows each memfd entry's continuation entries to find the mapping's
 * extent, and started again from every one of them: N empty
 * "/memfd:x" entries at one address cost N^2/2 string compares (80000
 * entries, a 2.6 MB core: 5.7 s).  Entries that continue a mapping are no
 * longer starting points of their own: 4 times the entries cost about 4
 * times the instructions, not 16. */
Bytes continuation_chain(std::size_t entries) {
  CoreBuilder c;
  c.auxv = {};
  for (std::size_t i = 0; i < entries; ++i) c.files.push_back({0x5000, 0x5000, 0, "/memfd:x"});
  return c.build();
}

TEST(HostileCore, NtFileContinuationChainsAreFollowedOnce) {
  constexpr std::size_t kCounted = 1000;
  const auto ir = analysis_instructions({continuation_chain(kCounted), continuation_chain(4 * kCounted)});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 2u);
  EXPECT_LT(ratio(ir[1], ir[0]), kLinearAt4x)
      << ir[0] << " instructions for " << kCounted << " NT_FILE entries, " << ir[1] << " for " << 4 * kCounted;

  const ctr::Analysis a = analyze_bytes(continuation_chain(100000));
  EXPECT_EQ(a.status, ctr::Status::kNoRing) << a.reason;
}

/* Attack: NT_FILE entries that start 4 bytes apart over a segment full of
 * "CTLN".  Ring candidates are the starts NT_FILE lists; each start with
 * the magic cost a probe, a refusal message and a node in a set, so 4
 * dumped bytes and 26 bytes of note made a candidate (the page scan needs a
 * page per candidate): 4M entries, a 126 MB core, took 2.8 s and 780 MB
 * where the page scan took 0.5 s and 590 MB (memfd entries of another name
 * did the same before, in step 1).  The kernel lists mappings, which start
 * on a page: other starts are not candidates. */
TEST(HostileCore, NtFileStartsOffAPageAreNotCandidates) {
  constexpr std::uint64_t kEntries = 1u << 20, kBase = 0x10000000000;
  Bytes seg(kEntries * 4);
  for (std::uint64_t i = 0; i < kEntries; ++i) std::memcpy(seg.data() + i * 4, "CTLN", 4);
  /* Any file (step 2), and a memfd of another name (step 1: the same
   * probe and refusal per entry). */
  for (const char *name : {"x", "/memfd:x"}) {
    CoreBuilder c;
    c.auxv = {};
    c.map(kBase, seg);
    for (std::uint64_t i = 0; i < kEntries; ++i) c.files.push_back({kBase + i * 4, kBase + i * 4 + 4, 0, name});
    const Bytes bytes = c.build();
    auto core = ctr::CoreFile::from_bytes(bytes, "unaligned");
    ASSERT_TRUE(core) << core.error().message;
    ctr::ReadOptions opts;
    opts.symbolize = false;
    const ctr::Analysis a = ctr::analyze(*core, opts);
    EXPECT_EQ(a.status, ctr::Status::kNoRing) << name << ": " << a.reason;
    // The starts on a page are candidates, one per page as in the page scan
    // (counted, not timed: the count is what the cost follows).
    EXPECT_EQ(a.magic_rejected_total, kEntries * 4 / 4096) << name;
    EXPECT_TRUE(ctr::locate_rings(*core).empty()) << name;
  }
}

/* Attack: a core that maps many files.  Each module lookup compared paths
 * with every module: fill_build_ids() did so for every module without a
 * mapping at file offset 0, module_for() for every event's return address
 * and symbolize_all() for every location without a build-id.  20000
 * events into 40000 modules (an 18 MB core): 4.6 s, quadratic.  Modules
 * are now found through an index built once: 4 times the events and
 * modules cost about 4 times the instructions, not 16. */
Bytes many_modules(std::uint64_t modules, std::uint64_t events) {
  constexpr std::uint64_t kBase = 0x100000000;
  std::uint32_t slots = 8;
  while (slots < events) slots *= 2;
  RingBuilder r(2, slots);
  for (std::uint64_t i = 0; i < events; ++i)
    r.add(0, i + 1, fmtx::kKindUser, 0x1001, i, 0, 4242, 0, kBase + (i * 7 % modules) * 4096 + 16);
  CoreBuilder c = ct::test::standard_core(r);
  for (std::uint64_t i = 0; i < modules; ++i)  // page offset 1: no ELF header of theirs is dumped
    c.files.push_back({kBase + i * 4096, kBase + i * 4096 + 4096, 1, "/lib/m" + std::to_string(i)});
  return c.build();
}

TEST(HostileCore, ModuleLookupsAreIndexed) {
  constexpr std::uint64_t kCountedModules = 2000, kCountedEvents = 1000;
  const auto ir = analysis_instructions({many_modules(kCountedModules, kCountedEvents),
                                         many_modules(4 * kCountedModules, 4 * kCountedEvents)});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 2u);
  EXPECT_LT(ratio(ir[1], ir[0]), kLinearAt4x) << ir[0] << " instructions for " << kCountedEvents << " events into "
                                              << kCountedModules << " modules, " << ir[1] << " for 4 times as many";

  constexpr std::uint64_t kModules = 50000, kEvents = 20000, kBase = 0x100000000;
  const Bytes bytes = many_modules(kModules, kEvents);
  const ctr::Analysis a = analyze_bytes(bytes);
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  ASSERT_EQ(a.events.size(), kEvents);
  const auto &l = *a.location_of(a.events[5]);
  EXPECT_EQ(l.module, "/lib/m35");
  EXPECT_EQ(l.file_offset, 4096u + 16u);
  auto core = ctr::CoreFile::from_bytes(bytes, "modules");
  ASSERT_TRUE(core);
  const auto *m = core->module_for(kBase + 35 * 4096 + 100);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, "/lib/m35");
  EXPECT_EQ(m->base, kBase + 35 * 4096);  // its first mapping, for want of one at offset 0
  EXPECT_NE(m->build_id_note.find("offset 0"), std::string::npos) << m->build_id_note;
}

/* Attack: many threads and many pointer events.  describe() looked for a
 * thread whose stack holds the pointer by going through every NT_PRSTATUS
 * for every MALLOC/FREE/... event, formatting a note for each match: 20000
 * threads on one stack and 20000 FREE events into it (15 MB) took 18 s.
 * The threads' stack pointers are now sorted once: 4 times the threads and
 * events cost about 4 times the instructions, not 16. */
Bytes threads_on_one_stack(std::uint32_t threads, std::uint32_t events) {
  std::uint32_t slots = 8;
  while (slots < events) slots *= 2;
  RingBuilder r(2, slots);
  for (std::uint64_t i = 0; i < events; ++i) r.add(0, i + 1, fmtx::kKindFree, 0, 0x7ffd00000100, 0, 4242, 0, 0);
  CoreBuilder c = ct::test::standard_core(r);  // its stack: 0x7ffd00000000 + 64 KiB, thread 4242's sp in it
  for (std::uint32_t i = 0; i < threads; ++i)
    c.threads.push_back({5000 + i, 0, 0x401000, 0x7ffd00000800ull + i * 2ull});
  return c.build();
}

TEST(HostileCore, StackOwnerLookupIsIndexed) {
  constexpr std::uint32_t kCounted = 1000;
  const auto ir = analysis_instructions({threads_on_one_stack(kCounted, kCounted),
                                         threads_on_one_stack(4 * kCounted, 4 * kCounted)});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 2u);
  EXPECT_LT(ratio(ir[1], ir[0]), kLinearAt4x) << ir[0] << " instructions for " << kCounted
                                              << " pointer events and threads, " << ir[1] << " for " << 4 * kCounted;

  constexpr std::uint32_t kThreads = 15000, kEvents = 15000;
  const ctr::Analysis a = analyze_bytes(threads_on_one_stack(kThreads, kEvents));
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  ASSERT_EQ(a.events.size(), kEvents);
  ASSERT_TRUE(a.pointer_of(a.events[0]));
  EXPECT_EQ(a.pointer_of(a.events[0])->kind, ctr::MappingKind::kAnonymous);
  EXPECT_EQ(a.pointer_of(a.events[0])->note, "stack of tid 5000 (and 15000 more threads)");
}

/* Attack: a ring header that claims a region of almost 4 GiB (31 lanes of
 * 2^20 slots) with only its first page in the core.  decode_ring() went
 * through every absent slot, and through every sequence up to a write_index
 * of 2^20 per lane: 32M iterations per ring for 4 KiB of core (50 such
 * rings, a 200 kB core, took 1.5 s).  Only the slots present are visited
 * now; the absent ones are counted: the page claiming 2^20 slots per lane
 * costs about the instructions of the same page claiming 2^14, not 64
 * times as many. */
struct ClaimedRing {
  Bytes page;             /* the ring's first page: all the core holds */
  std::uint64_t mapping;  /* = the region it claims */
};

ClaimedRing ring_claiming(std::uint32_t lanes, std::uint32_t slots) {
  RingBuilder r(lanes, 8);
  auto &h = r.header();
  h.slots_per_lane = slots;
  h.lanes_offset = fmtx::lanes_offset_for(lanes);
  h.region_size = fmtx::region_size_for(lanes, slots);
  r.seal();
  r.add(0, 1, fmtx::kKindUser, 1, 1);
  r.add(0, 2, fmtx::kKindUser, 2, 2);
  r.slot(0, 2).begin_seq = 3 | fmtx::kSeqWriting;  // seq 3 being written, seq 4 reserved
  r.lane(0).write_index = 4;
  r.lane(1).write_index = 2;      // two reserved, none begun: allowed
  r.lane(2).write_index = slots;  // a whole lane reserved, none begun: inflated
  return {Bytes(r.bytes().begin(), r.bytes().begin() + 4096), h.region_size};
}

TEST(HostileCore, AbsentSlotsAreCountedNotVisited) {
  constexpr std::uint32_t kLanes = 31, kSlots = 1u << 20;
  const ClaimedRing ring = ring_claiming(kLanes, kSlots), fewer = ring_claiming(kLanes, kSlots >> 6);
  const auto ir = ct::test::instructions_of({[&] { (void)ctr::decode_ring(fewer.page, fewer.mapping); },
                                                [&] { (void)ctr::decode_ring(ring.page, ring.mapping); }});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 2u);
  EXPECT_LT(ratio(ir[1], ir[0]), kUnchanged) << "a 4 KiB ring: " << ir[0] << " instructions claiming "
                                             << (kSlots >> 6) << " slots per lane, " << ir[1] << " claiming "
                                             << kSlots;

  const std::uint64_t present0 = (4096 - fmtx::lanes_offset_for(kLanes)) / fmtx::kSlotSize;
  const ctr::Result<ctr::DecodedRing> d = ctr::decode_ring(ring.page, ring.mapping);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->truncated);
  ASSERT_EQ(d->events.size(), 2u);
  EXPECT_EQ(d->lanes[0].slots_absent, kSlots - present0);
  EXPECT_EQ(d->lanes[1].slots_absent, kSlots);
  EXPECT_EQ(d->lanes[kLanes - 1].slots_absent, kSlots);
  EXPECT_EQ(d->lanes[0].in_flight, 2u);
  EXPECT_FALSE(d->lanes[0].counter_inconsistent) << d->lanes[0].counter_reason;
  EXPECT_EQ(d->lanes[1].in_flight, 2u);
  EXPECT_FALSE(d->lanes[1].counter_inconsistent) << d->lanes[1].counter_reason;
  EXPECT_TRUE(d->lanes[2].counter_inconsistent);
}

/* Attack: ring headers whose regions overlap.  Each header is its own valid
 * ring, but their lanes all point at one shared slot area, so every slot
 * was decoded once per header: 200 headers over 16384 shared slots (a
 * 2.9 MB core) made 3.3 million events and 2.7 GB of memory.  One process
 * has one ring per region: a ring whose region overlaps one already found
 * is refused before it is decoded. */
TEST(HostileCore, OverlappingRingsAreDecodedOnce) {
  constexpr std::uint32_t kHeaders = 50, kSlots = 1024;
  RingBuilder proto(2, kSlots);
  for (std::uint64_t q = 1; q <= kSlots; ++q) proto.add(0, q, fmtx::kKindUser, 0x1001, q);
  const std::uint64_t slots_at = kHeaders * 4096, slot_bytes = 2ull * kSlots * fmtx::kSlotSize;
  Bytes seg(slots_at + slot_bytes, 0);
  std::memcpy(seg.data() + slots_at, proto.bytes().data() + proto.header().lanes_offset, slot_bytes);
  for (std::uint64_t k = 0; k < kHeaders; ++k) {
    std::uint8_t *at = seg.data() + k * 4096;
    std::memcpy(at, proto.bytes().data(), fmtx::kHeaderSize + 2 * fmtx::kLaneDescSize);
    auto *h = reinterpret_cast<fmtx::RingHeader *>(at);
    h->lanes_offset = slots_at - k * 4096;
    h->region_size = seg.size() - k * 4096;
    h->header_crc = fmtx::header_crc(at);
  }
  CoreBuilder c;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page({0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4}), "/usr/bin/victim",
        0x2000, 5);
  c.map(0x10000000000, seg);
  /* Without NT_FILE the magic scan is all there is (with it, headers not at
   * the start of a listed mapping are refused as copies before this check). */
  c.with_file_note = false;
  auto a = analyze_bytes(c.build());
  ASSERT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_EQ(a.rings.size(), 1u);
  EXPECT_EQ(a.events.size(), kSlots) << "the shared slots were decoded once per header";
  EXPECT_EQ(a.magic_rejected_total, kHeaders - 1);
  ASSERT_FALSE(a.magic_rejected.empty());
  EXPECT_NE(a.magic_rejected[0].reason.find("overlaps"), std::string::npos) << a.magic_rejected[0].reason;
  /* Two rings side by side are still two rings. */
  RingBuilder r1 = three_events(), r2 = three_events();
  ct::test::init_one_tick_later(r2);
  CoreBuilder two = ct::test::standard_core(r1);
  two.map(ct::test::kRingAddr + r1.bytes().size(), r2.bytes(), "/memfd:core-timeline (deleted)");
  auto b = analyze_bytes(two.build());
  EXPECT_EQ(b.rings.size(), 2u);
  EXPECT_EQ(b.events.size(), 6u);
}

/* Attack: NT_FILE lists a ring mapping a million times.  Each entry became a
 * ring report (and a warning), 1.4 kB of memory per 45 bytes of note: a
 * 45 MB core took 2.7 GB and printed 292 MB of JSON.  A core holds at most
 * 64 rings; further candidates are counted in one warning. */
TEST(HostileCore, RingReportsAreBounded) {
  constexpr std::uint64_t kEntries = 100000;
  CoreBuilder c;
  c.auxv = {};
  for (std::uint64_t i = 0; i < kEntries; ++i)
    c.files.push_back({0x100000000 + i * 4096, 0x100000000 + i * 4096 + 4096, 0, "/memfd:core-timeline (deleted)"});
  auto a = analyze_bytes(c.build());
  EXPECT_EQ(a.status, ctr::Status::kMappingAbsent);
  EXPECT_EQ(a.rings.size(), 64u);
  bool said = false;
  for (const auto &w : a.warnings)
    said |= w.find(std::to_string(kEntries - 64) + " more ring candidates") != std::string::npos;
  EXPECT_TRUE(said) << "no warning counts the candidates not examined";
  EXPECT_LT(ctr::render_json(a).size(), 200000u);
}

/* Attack: a million tiny notes that each earn a warning ("second
 * NT_PRPSINFO ..., ignoring"): 20 bytes of core became a warning of 60,
 * copied into the analysis and printed (a 40 MB core: 865 MB of memory,
 * 111 MB of output).  A problem is said once: the first 16 note warnings
 * are kept and the rest counted. */
TEST(HostileCore, NoteWarningsAreBounded) {
  constexpr std::size_t kNotes = 100000;
  RingBuilder r = three_events();
  CoreBuilder c = ct::test::standard_core(r);
  for (std::size_t i = 0; i < kNotes; ++i) c.extra_notes.push_back({"CORE", NT_PRPSINFO, {}});
  auto core = ctr::CoreFile::from_bytes(c.build(), "notes");
  ASSERT_TRUE(core) << core.error().message;
  const auto &w = core->notes().warnings;
  EXPECT_LE(w.size(), 17u);
  ASSERT_FALSE(w.empty());
  EXPECT_NE(w.back().find(std::to_string(kNotes - 16) + " more"), std::string::npos) << w.back();
  ctr::ReadOptions opts;
  opts.symbolize = false;
  auto a = ctr::analyze(*core, opts);
  EXPECT_EQ(a.status, ctr::Status::kOk) << a.reason;
  EXPECT_LT(a.warnings.size(), 30u);
}

namespace {
/* An ELF header at `at` of `seg` whose 256 program headers (at `phoff`
 * from it) are all PT_NOTE over `notes_len` bytes of empty notes. */
void noisy_elf_header(Bytes &seg, std::size_t at, std::size_t phoff, std::size_t notes_at, std::size_t notes_len) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_type = ET_DYN;
  eh.e_phoff = phoff;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 256;
  std::memcpy(seg.data() + at, &eh, sizeof eh);
  for (std::size_t i = 0; i < 256; ++i) {
    Elf64_Phdr p{};
    p.p_type = PT_NOTE;
    p.p_offset = notes_at;
    p.p_filesz = notes_len;
    p.p_align = 4;
    std::memcpy(seg.data() + at + phoff + i * sizeof p, &p, sizeof p);
  }
}

/* A core of `images` such headers 64 bytes apart, named /img0, /img1...,
 * sharing one program header table, each seeing `notes_len` bytes of empty
 * notes at the same offset from itself; and `same_base` more NT_FILE
 * entries (/same0...) naming the first. */
Bytes noisy_images(std::size_t images, std::size_t same_base, std::size_t notes_len) {
  constexpr std::size_t kStride = 64;
  constexpr std::uint64_t kAt = 0x500000000;
  const std::size_t table = images * kStride, notes_at = table + 256 * sizeof(Elf64_Phdr);
  Bytes seg(notes_at + images * kStride + notes_len, 0);
  for (std::size_t k = 0; k < images; ++k)
    noisy_elf_header(seg, k * kStride, table - k * kStride, notes_at, notes_len);
  CoreBuilder c;
  c.auxv = {};
  c.map(kAt, seg, "", 0, 5);
  for (std::size_t k = 0; k < images; ++k)
    c.files.push_back({kAt + k * kStride, kAt + seg.size(), 0, "/img" + std::to_string(k)});
  for (std::size_t k = 0; k < same_base; ++k)
    c.files.push_back({kAt, kAt + seg.size(), 0, "/same" + std::to_string(k)});
  return c.build();
}
}  // namespace

/* Attack: modules whose dumped ELF header lists 256 PT_NOTE segments over
 * 16-48 KiB of empty notes, up to 1M notes to walk per module.
 * build_id_at() walked them for every module: 2000 NT_FILE entries naming
 * one such image (a 131 kB core) took 36 s.  Build-ids are now read once
 * per address, and from at most 8 KiB of notes per image (real ones hold a
 * few hundred bytes).  Counted: 1000 names of one image cost about the
 * instructions whether its notes are empty or 8 KiB (searched once, not
 * once per name), and 32 KiB of notes cost about what 8 KiB do (not 4
 * times as much). */
TEST(HostileCore, BuildIdSearchIsBoundedPerImage) {
  constexpr std::size_t kSameBase = 1000, kImages = 500;
  const Bytes quiet = noisy_images(1, kSameBase, 0), noisy = noisy_images(1, kSameBase, 0x2000),
              noisier = noisy_images(1, kSameBase, 0x8000);
  const auto ir = ct::test::instructions_of({[&] { (void)ctr::CoreFile::from_bytes(quiet, "quiet"); },
                                                [&] { (void)ctr::CoreFile::from_bytes(noisy, "noisy"); },
                                                [&] { (void)ctr::CoreFile::from_bytes(noisier, "noisier"); }});
  CT_SKIP_UNLESS_COUNTED();
  ASSERT_EQ(ir.size(), 3u);
  EXPECT_LT(ratio(ir[1], ir[0]), kUnchanged) << kSameBase + 1 << " names of one image: " << ir[0]
                                             << " instructions with empty notes, " << ir[1] << " with 8 KiB";
  EXPECT_LT(ratio(ir[2], ir[1]), kUnchanged) << kSameBase + 1 << " names of one image: " << ir[1]
                                             << " instructions with 8 KiB of notes, " << ir[2] << " with 32 KiB";

  const Bytes bytes = noisy_images(kImages, kSameBase, 0x4000);
  const ctr::Result<ctr::CoreFile> core = ctr::CoreFile::from_bytes(bytes, "images");
  ASSERT_TRUE(core) << core.error().message;
  EXPECT_EQ(core->modules().size(), kImages + kSameBase);
  EXPECT_NE(core->modules()[0].build_id_note.find("no NT_GNU_BUILD_ID"), std::string::npos)
      << core->modules()[0].build_id_note;
  /* A build-id in the first notes is still found (fake_elf_page: one
   * PT_NOTE at 0x200). */
  RingBuilder r = three_events();
  auto healthy = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "healthy");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(ctr::hex_bytes(healthy->executable()->build_id), "aabbccdd01020304");
}

/* Attack: a FIFO where a file is expected.  CoreFile::open, the sidecar
 * and EXECUTABLE were opened with a plain O_RDONLY, which blocks on a FIFO
 * until someone writes to it, before the "not a regular file" check could
 * run: whoever can put a FIFO at the path (the crashed process owns its
 * sidecar directory) hung the reader.  They are opened O_NONBLOCK now. */
TEST(HostileCore, FifoInsteadOfAFileDoesNotBlock) {
  const std::string fifo = ct::test::write_temp({}, "fifo");
  ASSERT_EQ(unlink(fifo.c_str()), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int failures = 0;
    auto core = ctr::CoreFile::open(fifo);
    if (core || core.error().message.find("not a regular file") == std::string::npos) failures |= 1;
    RingBuilder r = three_events();
    auto good = ctr::CoreFile::from_bytes(ct::test::standard_core(r).build(), "core");
    ctr::ReadOptions opts;
    opts.symbolize = false;
    opts.sidecar_path = fifo;
    auto a = ctr::analyze(*good, opts);
    if (a.sidecar_status != ctr::SidecarStatus::kUnusable || a.status != ctr::Status::kOk) failures |= 2;
    if (ctr::file_build_id(fifo)) failures |= 4;
    _exit(failures);
  }
  int st = 0;
  pid_t done = 0;
  // Waited for until it exits; the minute only bounds a hang (a child
  // that blocks on the FIFO is killed and fails below).
  for (int i = 0; i < 1200 && done == 0; ++i) {
    done = waitpid(pid, &st, WNOHANG);
    if (done == 0) usleep(50000);  // the poll's period
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  unlink(fifo.c_str());
  ASSERT_NE(done, 0) << "blocked for 10 s opening a FIFO";
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "failed checks (bits: 1 core, 2 sidecar, 4 executable)";
}
