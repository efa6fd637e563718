// SPDX-License-Identifier: MIT
//
// core_builder.h - test-only builders for rings and ELF cores.
//
// RingBuilder lays out a ring region exactly as ring_format.h says (header,
// lane table, slots, CRC); CoreBuilder writes an ET_CORE ELF64 file with
// PT_NOTE (NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE) and
// PT_LOAD segments, the way fs/binfmt_elf.c does, so malformed cores can be
// made inside the tests.  Not for production: no input checking.
#ifndef CORE_TIMELINE_TESTS_READER_CORE_BUILDER_H
#define CORE_TIMELINE_TESTS_READER_CORE_BUILDER_H

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core_timeline/ring_format.h"

namespace ct::test {

namespace fmtx = core_timeline::format;

class RingBuilder {
 public:
  RingBuilder(std::uint32_t lanes = 3, std::uint32_t slots_per_lane = 8, std::uint32_t pid = 4242,
              std::vector<std::uint8_t> build_id = {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04},
              std::uint32_t names = 0);

  fmtx::RingHeader &header() { return *reinterpret_cast<fmtx::RingHeader *>(bytes_.data()); }
  fmtx::LaneDesc &lane(std::uint32_t i) {
    return *reinterpret_cast<fmtx::LaneDesc *>(bytes_.data() + header().lane_table_offset +
                                               std::uint64_t{i} * fmtx::kLaneDescSize);
  }
  fmtx::Slot &slot(std::uint32_t lane, std::uint64_t index) {
    return *reinterpret_cast<fmtx::Slot *>(bytes_.data() + fmtx::lane_slots_offset(header(), lane) +
                                           index * fmtx::kSlotSize);
  }
  /** Commits event `seq` of `lane` (begin == end == seq), raising the lane's
   *  write_index to seq if it is lower.  Returns the slot. */
  fmtx::Slot &add(std::uint32_t lane, std::uint64_t seq, std::uint16_t kind, std::uint32_t id,
                  std::uint64_t arg0, std::uint64_t arg1 = 0, std::uint32_t tid = 4242,
                  std::uint64_t timestamp = 0, std::uint64_t return_address = 0x401234);
  /** Commits name-table entry `index` (the ring needs names > index). */
  fmtx::NameEntry &name(std::uint32_t index, std::uint32_t id, const char *name, const char *arg0 = "",
                        const char *arg1 = "");
  /** Recomputes header_crc (call after editing the immutable part). */
  void seal();
  std::vector<std::uint8_t> &bytes() { return bytes_; }
  std::uint32_t slots_per_lane() const { return spl_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::uint32_t spl_;
};

/** A version-3 ring laid out by geometry_v3 (the writer's own layout): 2
 *  lanes per source (one per-thread, one overflow), 8 first slots, a user
 *  pool of 32 slots, 4 name entries.  Lane 0 has grown once, to 16 slots
 *  at the start of the user pool.  Version 3 unless a test sets another
 *  (versions 4 and 5 have its layout); seal() after editing the header. */
struct RingV3 {
  static constexpr std::uint32_t kPerSource = 2, kSlots = 8, kUserPool = 32;
  std::vector<std::uint8_t> bytes;
  fmtx::RingHeader &header() { return *reinterpret_cast<fmtx::RingHeader *>(bytes.data()); }
  fmtx::LaneDesc &lane(std::uint32_t i) {
    return *reinterpret_cast<fmtx::LaneDesc *>(bytes.data() + header().lane_table_offset + i * fmtx::kLaneDescSize);
  }
  fmtx::Slot &slot_at(std::uint64_t index) {
    return *reinterpret_cast<fmtx::Slot *>(bytes.data() + header().lanes_offset + index * fmtx::kSlotSize);
  }
  /** The slot of sequence `seq` of `lane`, by its extent. */
  fmtx::Slot &slot_of(std::uint32_t lane, std::uint64_t seq);
  /** Commits event `seq` of `lane`: a USER 0x31 with arg0 = seq, tid 4242,
   *  timestamp 1000000 + seq; raises write_index to seq.  Returns the slot. */
  fmtx::Slot &commit(std::uint32_t lane, std::uint64_t seq);
  void seal() { header().header_crc = fmtx::header_crc(bytes.data()); }
  /** Commits `seq` of lane 0 as `kind` (return address 0x401100). */
  fmtx::Slot &put(std::uint64_t seq, std::uint16_t kind, std::uint32_t id, std::uint64_t arg0, std::uint64_t arg1,
                  std::uint8_t stack);
  /** A CRASH (SIGSEGV, SEGV_MAPERR) at `seq` of lane 0 with Slot.stack `stack`. */
  fmtx::Slot &crash(std::uint64_t seq, std::uint8_t stack);
  /** Part `k` of the stack chain (ring format 5) of a walk of `depth`
   *  frames (chain_frame(0), ...) that ended `end`, of the event
   *  `host_seq` (a CRASH), at `seq` of lane 0: what the writer stores
   *  (fmt::stack_part_byte). */
  fmtx::Slot &stack_part(std::uint64_t seq, std::uint64_t host_seq, std::uint32_t depth, std::uint32_t end,
                         std::uint32_t k);
};
/** A RingV3 with `seqs` events in lane 0, sealed. */
RingV3 ring_v3(std::uint64_t seqs);
/** Frame i of ring_with_crash_chain's walk: an address in the executable. */
constexpr std::uint64_t chain_frame(std::uint32_t i) { return 0x401200 + 0x10 * std::uint64_t{i}; }
/** A version-5 ring (RingV3's layout, the build-id of standard_core's
 *  executable): a USER event at seq 1 of lane 0, a CRASH at seq 2 whose
 *  walk of `depth` frames ended `end`, and its chain of STACK slots at
 *  seqs 3, 4, ...  Sealed. */
RingV3 ring_with_crash_chain(std::uint32_t depth, std::uint32_t end);

struct NoteSpec {
  std::string name;  // "CORE"
  std::uint32_t type;
  std::vector<std::uint8_t> desc;
};

class CoreBuilder {
 public:
  struct Load {
    std::uint64_t vaddr = 0;
    std::uint64_t memsz = 0;
    std::vector<std::uint8_t> data;  // dumped bytes (p_filesz = data.size())
    std::uint32_t flags = 6;         // PF_R | PF_W
  };
  struct File {
    std::uint64_t start, end, pgoff;
    std::string path;
  };

  std::uint16_t machine = 62;  // EM_X86_64
  std::vector<Load> loads;
  std::vector<File> files;
  bool with_file_note = true;
  std::optional<std::uint32_t> prpsinfo_pid = 4242;
  std::string comm = "victim";
  struct Thread {
    std::uint32_t tid;
    std::int32_t signo;
    std::uint64_t pc, sp;
  };
  std::vector<Thread> threads = {{4242, 11, 0x401100, 0x7ffd0000f000}};
  std::optional<std::int32_t> sig_signo = 11;
  std::int32_t sig_code = 1;  // SEGV_MAPERR
  std::uint64_t sig_addr = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> auxv = {{3, 0x400040}, {9, 0x401000}};
  std::vector<NoteSpec> extra_notes;

  /** A mapping with bytes, listed in NT_FILE under `path` if not empty. */
  void map(std::uint64_t vaddr, std::vector<std::uint8_t> data, const std::string &path = "",
           std::uint64_t memsz = 0, std::uint32_t flags = 6);
  /** A mapping the kernel left out (p_filesz 0), listed in NT_FILE. */
  void map_excluded(std::uint64_t vaddr, std::uint64_t memsz, const std::string &path);

  std::vector<std::uint8_t> build() const;
};

/** A ring with crash_demo's path-a story in lane 0: USER 0x1001 (41), FREE
 *  (0x7ffd00000100), USER 0x1003 (1001), sequences 1 to 3. */
RingBuilder three_events();

/** A full ring of `lanes` x `slots` events as a program leaves it: each
 *  lane a thread (lane 0 the core's thread 4242) that named itself, then
 *  events from four call sites in the executable, every 16th a USER_PTR
 *  with 16 inline bytes into the stack, a span begun and ended every 64,
 *  two ids named in the ring; lane `lanes` is the shared one, empty.  For
 *  the memory bounds of big rings. */
RingBuilder full_ring(std::uint32_t lanes, std::uint32_t slots);

/** Makes `r` a ring of a second tl_init one tick after the first: its clock
 *  anchor, and so its immutable header, differ from an unchanged builder's
 *  (the reader takes byte-identical headers for one ring seen twice). */
void init_one_tick_later(RingBuilder &r);

/** The ELF header of a 64-bit little-endian ET_CORE file whose `phnum`
 *  program headers follow it directly (e_phoff = sizeof(Elf64_Ehdr)), as
 *  fs/binfmt_elf.c writes it.  Shared by every test that builds a core. */
Elf64_Ehdr core_ehdr(std::uint16_t phnum, std::uint16_t machine = 62 /* EM_X86_64 */);

/** The first page of an ELF executable with an NT_GNU_BUILD_ID note, as the
 *  kernel dumps it (coredump_filter bit 4). */
std::vector<std::uint8_t> fake_elf_page(const std::vector<std::uint8_t> &build_id);

/** A core with the usual process: executable /usr/bin/victim at 0x400000
 *  (build-id aabbccdd01020304), one thread 4242 that died of SIGSEGV, and
 *  the ring `ring` mapped at 0x7f0000000000 as "/memfd:core-timeline
 *  (deleted)". */
CoreBuilder standard_core(RingBuilder &ring);
/** The same core with a RingV3 (its build-id must be aabbccdd01020304 for
 *  the executable's to match). */
CoreBuilder standard_core(RingV3 &ring);

inline constexpr std::uint64_t kRingAddr = 0x7f0000000000;
inline constexpr std::uint64_t kExeAddr = 0x400000;

/** Writes bytes to a fresh file under $TMPDIR and returns its path. */
std::string write_temp(const std::vector<std::uint8_t> &bytes, const std::string &stem);

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_READER_CORE_BUILDER_H
