// SPDX-License-Identifier: MIT
// ring_view.h - a test-only view of a ring's bytes, decoded with the format
// header (lib/include/core_timeline/ring_format.h).
//
// The writer's tests check what libtimeline put in memory and in real cores
// independently of the reader (reader/), so a bug shared by both cannot hide.
// It validates only what the tests need; the reader does the full job.
#pragma once

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core_timeline/ring_format.h"

namespace ct_test {

namespace fmt = core_timeline::format;

struct Event {
  uint32_t lane;
  uint64_t seq;
  fmt::Slot slot;
};

struct RingView {
  std::vector<uint8_t> bytes;  // a copy of the region
  fmt::RingHeader header{};
  uint64_t torn = 0;           // slots in the retained window not committed

  const fmt::LaneDesc &lane(uint32_t i) const {
    return *reinterpret_cast<const fmt::LaneDesc *>(bytes.data() + header.lane_table_offset +
                                                    uint64_t(i) * fmt::kLaneDescSize);
  }

  // Lane `i`'s slots: its extent (LaneDesc.extent, version 3; its
  // second segment when split, version 6).
  uint64_t lane_first_slot(uint32_t i) const { return fmt::extent_first_slot(lane(i).extent); }
  uint64_t lane_slots(uint32_t i) const { return fmt::extent_slots(lane(i).extent); }
  bool lane_split(uint32_t i) const { return fmt::extent_split(lane(i).extent); }
  uint64_t lane_second_slot(uint32_t i) const { return fmt::extent_second_slot(lane(i).extent); }
  // The slot (from lanes_offset) of lane `i`'s index `k`.
  uint64_t lane_slot(uint32_t i, uint64_t k) const {
    const uint64_t c = uint64_t(1) << fmt::extent_log2(lane(i).extent);
    return k < c ? lane_first_slot(i) + k : lane_second_slot(i) + (k - c);
  }
  // The lanes of `source`: [first, first + count), the last one shared.
  const fmt::SourceArea &source(uint32_t c) const { return header.sources[c]; }
  // The shared overflow lane of `source`.
  uint32_t overflow_lane(uint32_t c = fmt::kSourceUser) const {
    return header.sources[c].first_lane + header.sources[c].lane_count - 1;
  }

  // Every committed slot of every lane, lane by lane, oldest first.
  std::vector<Event> events() {
    std::vector<Event> out;
    torn = 0;
    for (uint32_t l = 0; l < header.lane_count; ++l) {
      const uint64_t wi = lane(l).write_index, n = lane_slots(l);
      uint64_t first = wi > n ? wi - n + 1 : 1;
      for (uint64_t seq = first; seq <= wi && wi != 0; ++seq) {
        fmt::Slot s;
        std::memcpy(&s,
                    bytes.data() + header.lanes_offset + lane_slot(l, (seq - 1) % n) * fmt::kSlotSize,
                    sizeof s);
        if (s.begin_seq == seq && s.end_seq == seq)
          out.push_back({l, seq, s});
        else
          ++torn;
      }
    }
    return out;
  }

  // The committed entries of the name table, in index order (the newest
  // entry of an id last).
  std::vector<fmt::NameEntry> names() const {
    std::vector<fmt::NameEntry> out;
    const uint64_t used = std::min<uint64_t>(header.names_claimed, header.names_capacity);
    for (uint64_t i = 0; i < used; ++i) {
      fmt::NameEntry e;
      std::memcpy(&e, bytes.data() + header.names_offset + i * fmt::kNameEntrySize, sizeof e);
      if (e.state == fmt::kNameCommitted) out.push_back(e);
    }
    return out;
  }
  // The newest committed entry naming `id`, if any.
  std::optional<fmt::NameEntry> name_of(uint32_t id) const {
    std::optional<fmt::NameEntry> found;
    for (const auto &e : names())
      if (e.id == id) found = e;
    return found;
  }

  // Decode `region`; nullopt unless magic, version 3, CRC and geometry
  // (the pools' and the name table's included) hold, and every lane's
  // extent is its first slots or inside the pools.  A no-ring
  // header is not a ring.
  static std::optional<RingView> from_bytes(std::vector<uint8_t> region) {
    if (region.size() < fmt::kHeaderSizeV3) return std::nullopt;
    RingView v;
    std::memcpy(&v.header, region.data(), sizeof v.header);
    const auto &h = v.header;
    if (std::memcmp(h.magic, fmt::kMagic, 4) != 0 || h.version != fmt::kVersion ||
        h.slot_size != fmt::kSlotSize || h.header_crc != fmt::header_crc(region.data()) ||
        h.incompat_flags != 0)
      return std::nullopt;
    if (h.lane_count < 2 || h.lane_count > fmt::kMaxLanes || h.slots_per_lane < 8 ||
        h.slots_per_lane > fmt::kMaxSlotsPerLane || h.names_capacity < 1 ||
        h.names_capacity > fmt::kMaxNames || h.name_entry_size != fmt::kNameEntrySize ||
        h.lane_count % fmt::kSourceCount != 0 || h.source_count != fmt::kSourceCount)
      return std::nullopt;
    const uint32_t pools[fmt::kSourceCount] = {h.sources[0].pool_slots, h.sources[1].pool_slots,
                                               h.sources[2].pool_slots};
    const fmt::GeometryV3 g =
        fmt::geometry_v3(h.lane_count / fmt::kSourceCount, h.slots_per_lane, pools, h.names_capacity);
    if (h.lane_table_offset != g.lane_table_offset || h.lanes_offset != g.lanes_offset ||
        h.names_offset != g.names_offset || h.region_size != g.region_size || h.region_size > region.size())
      return std::nullopt;
    v.bytes = std::move(region);
    // The pools are contiguous; a lane may hold slots lent by another
    // source's pool.
    const uint64_t pools_first = g.pool_first_slot[0], pools_end = g.slot_count;
    for (uint32_t l = 0; l < h.lane_count; ++l) {
      const uint64_t first = v.lane_first_slot(l), c = uint64_t(1) << fmt::extent_log2(v.lane(l).extent);
      const bool own = first == uint64_t(l) * h.slots_per_lane && c == h.slots_per_lane;
      const bool pooled = first >= pools_first && first + c <= pools_end;
      if (!own && !pooled) return std::nullopt;
      const uint64_t second = v.lane_second_slot(l);
      if (v.lane_split(l) && (second < pools_first || second + c > pools_end)) return std::nullopt;
    }
    return v;
  }
};

// A no-ring header (kIncompatNoRing: tl_init made no ring and says why),
// if `region` holds one that validates: magic, version 3, CRC, the flag,
// and the empty geometry it promises.
inline std::optional<fmt::RingHeader> no_ring_from_bytes(const std::vector<uint8_t> &region) {
  if (region.size() < fmt::kHeaderSize) return std::nullopt;
  fmt::RingHeader h;
  std::memcpy(&h, region.data(), sizeof h);
  if (std::memcmp(h.magic, fmt::kMagic, 4) != 0 || h.version != fmt::kVersion ||
      h.header_crc != fmt::header_crc(region.data()) || h.incompat_flags != fmt::kIncompatNoRing ||
      h.lane_count != 0 || h.slots_per_lane != 0 || h.lanes_offset != 0 || h.names_offset != 0 ||
      h.names_capacity != 0 || h.region_size != 4096 || h.lane_table_offset != fmt::kHeaderSizeV3)
    return std::nullopt;
  return h;
}

// The bytes of each of this process's mappings named
// "/memfd:core-timeline (deleted)" in /proc/self/maps.
inline std::vector<std::vector<uint8_t>> own_timeline_mappings() {
  std::vector<std::vector<uint8_t>> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:core-timeline") == std::string::npos) continue;
    uint64_t lo = 0, hi = 0;
    char dash;
    std::istringstream in(line);
    in >> std::hex >> lo >> dash >> hi;
    const auto *p = reinterpret_cast<const uint8_t *>(lo);
    out.emplace_back(p, p + (hi - lo));
  }
  return out;
}

// This process's no-ring header, if its one timeline mapping is one.
inline std::optional<fmt::RingHeader> own_no_ring() {
  for (const auto &m : own_timeline_mappings())
    if (auto h = no_ring_from_bytes(m)) return h;
  return std::nullopt;
}

// The ring of this process, read from its own memory (/proc/self/maps names
// the mapping "/memfd:core-timeline (deleted)").
inline std::optional<RingView> own_ring() {
  for (auto &m : own_timeline_mappings()) return RingView::from_bytes(std::move(m));
  return std::nullopt;
}

// The names (comm) of this process's threads, from /proc/self/task.
inline std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string name;
      std::getline(comm, name);
      names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

// Every ring in an ELF core: the PT_LOAD segments NT_FILE names
// "/memfd:core-timeline" (or, in a core without that note, every PT_LOAD
// whose bytes start with a header that validates).  Also reports, through `empty_ring_segments`, the
// PT_LOAD segments NT_FILE names "/memfd:core-timeline" whose p_filesz is 0
// (the mapping was excluded from the dump).
struct FileMapping {
  uint64_t start, end, page_offset;
  std::string name;
};

struct CoreRings {
  std::vector<RingView> rings;
  std::vector<fmt::RingHeader> no_rings;  // no-ring headers (kIncompatNoRing)
  std::vector<FileMapping> files;  // the NT_FILE note
  int nt_file_ring_mappings = 0;
  int empty_ring_segments = 0;
  int signo = 0;       // NT_SIGINFO si_signo
  int si_code = 0;     // NT_SIGINFO si_code
};

inline CoreRings rings_in_core(const std::string &path) {
  CoreRings out;
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (d.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, d.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_type != ET_CORE) return out;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr) > d.size()) return out;
  std::memcpy(ph.data(), d.data() + eh.e_phoff, ph.size() * sizeof(Elf64_Phdr));
  std::vector<uint64_t> ring_starts;  // vaddrs NT_FILE names as the ring
  for (const auto &p : ph) {
    if (p.p_type != PT_NOTE || p.p_offset + p.p_filesz > d.size()) continue;
    uint64_t off = p.p_offset, end = p.p_offset + p.p_filesz;
    while (off + sizeof(Elf64_Nhdr) <= end) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, d.data() + off, sizeof nh);
      uint64_t desc = off + sizeof nh + ((nh.n_namesz + 3) & ~3u);
      uint64_t next = desc + ((nh.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (nh.n_type == NT_SIGINFO && nh.n_descsz >= 12) {
        std::memcpy(&out.signo, d.data() + desc, 4);
        std::memcpy(&out.si_code, d.data() + desc + 8, 4);
      }
      if (nh.n_type == NT_FILE && nh.n_descsz >= 16) {
        uint64_t count, page;
        std::memcpy(&count, d.data() + desc, 8);
        std::memcpy(&page, d.data() + desc + 8, 8);
        uint64_t names = desc + 16 + count * 24;
        if (names <= desc + nh.n_descsz) {
          uint64_t q = names;
          for (uint64_t i = 0; i < count && q < desc + nh.n_descsz; ++i) {
            std::string name(reinterpret_cast<const char *>(d.data() + q));
            uint64_t start, fend, pgoff;
            std::memcpy(&start, d.data() + desc + 16 + i * 24, 8);
            std::memcpy(&fend, d.data() + desc + 16 + i * 24 + 8, 8);
            std::memcpy(&pgoff, d.data() + desc + 16 + i * 24 + 16, 8);
            out.files.push_back({start, fend, pgoff, name});
            if (name.rfind("/memfd:core-timeline", 0) == 0) ring_starts.push_back(start);
            q += name.size() + 1;
          }
        }
      }
      off = next;
    }
  }
  out.nt_file_ring_mappings = static_cast<int>(ring_starts.size());
  for (const auto &p : ph) {
    if (p.p_type != PT_LOAD) continue;
    bool named = false;
    for (uint64_t s : ring_starts) named |= s == p.p_vaddr;
    if (named && p.p_filesz == 0) ++out.empty_ring_segments;
    // When NT_FILE names the ring, only its segments are rings: a copy of a
    // ring in the heap validates too (a program that reads its own ring,
    // an allocator that hands out page-aligned blocks).
    if (!ring_starts.empty() && !named) continue;
    if (p.p_filesz < fmt::kHeaderSize || p.p_offset + p.p_filesz > d.size()) continue;
    if (std::memcmp(d.data() + p.p_offset, fmt::kMagic, 4) != 0) continue;
    std::vector<uint8_t> region(d.begin() + long(p.p_offset), d.begin() + long(p.p_offset + p.p_filesz));
    if (auto h = no_ring_from_bytes(region)) out.no_rings.push_back(*h);
    if (auto v = RingView::from_bytes(std::move(region))) out.rings.push_back(std::move(*v));
  }
  return out;
}

}  // namespace ct_test
