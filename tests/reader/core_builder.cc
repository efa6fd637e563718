// SPDX-License-Identifier: MIT
#include "core_builder.h"

#include <elf.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace ct::test {

RingBuilder::RingBuilder(std::uint32_t lanes, std::uint32_t spl, std::uint32_t pid,
                         std::vector<std::uint8_t> build_id, std::uint32_t names)
    : spl_(spl) {
  bytes_.assign(fmtx::region_size_for(lanes, spl, names), 0);
  auto &h = header();
  std::memcpy(h.magic, fmtx::kMagic, 4);
  h.version = 2; // the version-2 layout (one lane set, no pools); fixtures of version 3 come from the writer
  h.header_size = fmtx::kHeaderSize;
  h.endian_marker = fmtx::kEndianMarker;
  h.compat_flags = fmtx::kCompatClockTsc | fmtx::kCompatHandlers;
  h.slot_size = fmtx::kSlotSize;
  h.slots_per_lane = spl;
  h.lane_count = lanes;
  h.lane_table_offset = fmtx::kHeaderSize;
  h.lanes_offset = fmtx::lanes_offset_for(lanes);
  h.region_size = bytes_.size();
  h.process_start_ticks = 777;
  h.pid = pid;
  h.writer_version = 0x000100;
  h.build_id_len = static_cast<std::uint32_t>(build_id.size());
  std::memcpy(h.build_id, build_id.data(), build_id.size());
  h.anchor_ticks = 1'000'000;
  h.anchor_realtime_ns = 1'700'000'000'000'000'000ull;
  h.anchor_monotonic_ns = 5'000'000'000ull;
  h.ticks_per_second = 1'000'000'000;  // 1 tick = 1 ns
  if (names > 0) {
    h.names_offset = fmtx::names_offset_for(lanes, spl);
    h.names_capacity = names;
    h.name_entry_size = fmtx::kNameEntrySize;
  }
  lane(lanes - 1).flags = fmtx::kLaneShared;
  seal();
}

fmtx::NameEntry &RingBuilder::name(std::uint32_t index, std::uint32_t id, const char *nm, const char *arg0,
                                   const char *arg1) {
  auto &e = *reinterpret_cast<fmtx::NameEntry *>(bytes_.data() + header().names_offset +
                                                 std::uint64_t{index} * fmtx::kNameEntrySize);
  std::memset(&e, 0, sizeof e);
  e.id = id;
  std::strncpy(e.name, nm, sizeof e.name - 1);
  std::strncpy(e.arg0, arg0, sizeof e.arg0 - 1);
  std::strncpy(e.arg1, arg1, sizeof e.arg1 - 1);
  e.arg_count = *arg1 ? 2 : *arg0 ? 1 : 0;
  e.state = fmtx::kNameCommitted;
  if (header().names_claimed <= index) header().names_claimed = index + 1;
  return e;
}

void RingBuilder::seal() { header().header_crc = fmtx::header_crc(bytes_.data()); }

RingBuilder three_events() {
  RingBuilder r;
  r.add(0, 1, fmtx::kKindUser, 0x1001, 41);
  r.add(0, 2, fmtx::kKindFree, 0, 0x7ffd00000100);
  r.add(0, 3, fmtx::kKindUser, 0x1003, 1001);
  return r;
}

RingBuilder full_ring(std::uint32_t lanes, std::uint32_t slots) {
  RingBuilder r(lanes + 1, slots, 4242, {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04}, 4);
  r.name(0, 0x3001, "BR_STEP", "i");
  r.name(1, 0x3003, "BR_REQ", "i");
  const std::uint64_t sites[] = {0x401234, 0x401300, 0x401388, 0x4013f0};
  for (std::uint32_t lane = 0; lane < lanes; ++lane) {
    const std::uint32_t tid = lane == 0 ? 4242 : 5000 + lane;
    std::uint64_t span = 0;
    for (std::uint64_t seq = 1; seq <= slots; ++seq) {
      const std::uint64_t ts = 2'000'000 + seq * 1000 + lane;
      const std::uint64_t site = sites[seq % 4];
      if (seq == 1) {
        auto &s = r.add(lane, seq, fmtx::kKindThreadName, 0, 0, 0, tid, ts, site);
        const int n = std::snprintf(reinterpret_cast<char *>(s.inline_data), sizeof s.inline_data, "worker-%u", lane);
        s.inline_len = static_cast<std::uint16_t>(n);
      } else if (seq % 64 == 2) {
        r.add(lane, seq, fmtx::kKindSpanBegin, 0x3003, seq, 0, tid, ts, site);
        span = fmtx::span_token(lane, seq);
      } else if (seq % 64 == 1) {
        r.add(lane, seq, fmtx::kKindSpanEnd, 0x3003, span, 0, tid, ts, site);
      } else if (seq % 16 == 0) {
        auto &s = r.add(lane, seq, fmtx::kKindUserPtr, 0x3004, 0x7ffd00000100, 16, tid, ts, site);
        std::memset(s.inline_data, static_cast<int>(seq), 16);
        s.inline_len = 16;
      } else {
        r.add(lane, seq, fmtx::kKindUser, seq % 2 ? 0x3001 : 0x3002, seq, lane, tid, ts, site);
      }
    }
  }
  r.seal();
  return r;
}

void init_one_tick_later(RingBuilder &r) {
  r.header().anchor_ticks += 1;
  r.header().anchor_realtime_ns += 1;  // 1 tick = 1 ns
  r.header().anchor_monotonic_ns += 1;
  r.seal();
}

fmtx::Slot &RingBuilder::add(std::uint32_t l, std::uint64_t seq, std::uint16_t kind, std::uint32_t id,
                             std::uint64_t arg0, std::uint64_t arg1, std::uint32_t tid, std::uint64_t ts,
                             std::uint64_t ra) {
  fmtx::Slot &s = slot(l, (seq - 1) % spl_);
  std::memset(&s, 0, sizeof s);
  s.begin_seq = seq;
  s.end_seq = seq;
  s.timestamp = ts != 0 ? ts : 1'000'000 + seq * 1000 + l;
  s.tid = tid;
  s.kind = kind;
  s.id = id;
  s.return_address = ra;
  s.arg0 = arg0;
  s.arg1 = arg1;
  if (lane(l).write_index < seq) lane(l).write_index = seq;
  if (lane(l).owner_tid == 0) lane(l).owner_tid = tid;
  return s;
}

void CoreBuilder::map(std::uint64_t vaddr, std::vector<std::uint8_t> data, const std::string &path,
                      std::uint64_t memsz, std::uint32_t flags) {
  Load l;
  l.vaddr = vaddr;
  l.memsz = memsz != 0 ? memsz : (data.size() + 4095) & ~std::uint64_t{4095};
  l.data = std::move(data);
  l.flags = flags;
  if (!path.empty()) files.push_back({vaddr, vaddr + l.memsz, 0, path});
  loads.push_back(std::move(l));
}

void CoreBuilder::map_excluded(std::uint64_t vaddr, std::uint64_t memsz, const std::string &path) {
  Load l;
  l.vaddr = vaddr;
  l.memsz = memsz;
  loads.push_back(std::move(l));
  files.push_back({vaddr, vaddr + memsz, 0, path});
}

namespace {
template <class T>
void put(std::vector<std::uint8_t> &b, const T &v) {
  const auto *p = reinterpret_cast<const std::uint8_t *>(&v);
  b.insert(b.end(), p, p + sizeof v);
}
void pad4(std::vector<std::uint8_t> &b) {
  while (b.size() % 4) b.push_back(0);
}
void note(std::vector<std::uint8_t> &b, const std::string &name, std::uint32_t type,
          const std::vector<std::uint8_t> &desc) {
  put(b, static_cast<std::uint32_t>(name.size() + 1));
  put(b, static_cast<std::uint32_t>(desc.size()));
  put(b, type);
  b.insert(b.end(), name.begin(), name.end());
  b.push_back(0);
  pad4(b);
  b.insert(b.end(), desc.begin(), desc.end());
  pad4(b);
}
}  // namespace

std::vector<std::uint8_t> CoreBuilder::build() const {
  std::vector<std::uint8_t> notes;
  for (const auto &t : threads) {
    std::vector<std::uint8_t> d(336, 0);
    std::memcpy(&d[0], &t.signo, 4);
    std::int16_t cursig = static_cast<std::int16_t>(t.signo);
    std::memcpy(&d[12], &cursig, 2);
    std::memcpy(&d[32], &t.tid, 4);
    std::memcpy(&d[112 + 16 * 8], &t.pc, 8);
    std::memcpy(&d[112 + 19 * 8], &t.sp, 8);
    note(notes, "CORE", NT_PRSTATUS, d);
  }
  if (prpsinfo_pid) {
    std::vector<std::uint8_t> d(136, 0);
    d[1] = 'R';
    std::memcpy(&d[24], &*prpsinfo_pid, 4);
    std::memcpy(&d[40], comm.data(), std::min<std::size_t>(comm.size(), 15));
    std::memcpy(&d[56], comm.data(), std::min<std::size_t>(comm.size(), 79));
    note(notes, "CORE", NT_PRPSINFO, d);
  }
  if (sig_signo) {
    std::vector<std::uint8_t> d(128, 0);
    std::memcpy(&d[0], &*sig_signo, 4);
    std::memcpy(&d[8], &sig_code, 4);
    std::memcpy(&d[16], &sig_addr, 8);
    note(notes, "CORE", NT_SIGINFO, d);
  }
  if (!auxv.empty()) {
    std::vector<std::uint8_t> d;
    for (auto [k, v] : auxv) {
      put(d, k);
      put(d, v);
    }
    put(d, std::uint64_t{0});
    put(d, std::uint64_t{0});
    note(notes, "CORE", NT_AUXV, d);
  }
  if (with_file_note) {
    std::vector<std::uint8_t> d;
    put(d, static_cast<std::uint64_t>(files.size()));
    put(d, std::uint64_t{4096});
    for (const auto &f : files) {
      put(d, f.start);
      put(d, f.end);
      put(d, f.pgoff);
    }
    for (const auto &f : files) {
      d.insert(d.end(), f.path.begin(), f.path.end());
      d.push_back(0);
    }
    note(notes, "CORE", NT_FILE, d);
  }
  for (const auto &n : extra_notes) note(notes, n.name, n.type, n.desc);

  const std::size_t phnum = 1 + loads.size();
  std::vector<std::uint8_t> out(sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr), 0);
  const Elf64_Ehdr eh = core_ehdr(static_cast<std::uint16_t>(phnum), machine);
  std::memcpy(out.data(), &eh, sizeof eh);
  std::vector<Elf64_Phdr> ph(phnum);
  ph[0].p_type = PT_NOTE;
  ph[0].p_offset = out.size();
  ph[0].p_filesz = notes.size();
  ph[0].p_align = 4;
  out.insert(out.end(), notes.begin(), notes.end());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    while (out.size() % 4096) out.push_back(0);
    auto &p = ph[i + 1];
    p.p_type = PT_LOAD;
    p.p_flags = loads[i].flags;
    p.p_offset = loads[i].data.empty() ? 0 : out.size();
    p.p_vaddr = loads[i].vaddr;
    p.p_filesz = loads[i].data.size();
    p.p_memsz = loads[i].memsz;
    p.p_align = 4096;
    out.insert(out.end(), loads[i].data.begin(), loads[i].data.end());
  }
  std::memcpy(out.data() + sizeof(Elf64_Ehdr), ph.data(), phnum * sizeof(Elf64_Phdr));
  return out;
}

std::vector<std::uint8_t> fake_elf_page(const std::vector<std::uint8_t> &build_id) {
  std::vector<std::uint8_t> page(4096, 0);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_phoff = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  std::memcpy(page.data(), &eh, sizeof eh);
  std::vector<std::uint8_t> n;
  note(n, "GNU", NT_GNU_BUILD_ID, build_id);
  Elf64_Phdr ph{};
  ph.p_type = PT_NOTE;
  ph.p_offset = 0x200;
  ph.p_vaddr = 0x200;
  ph.p_filesz = n.size();
  ph.p_memsz = n.size();
  ph.p_align = 4;
  std::memcpy(page.data() + sizeof eh, &ph, sizeof ph);
  std::memcpy(page.data() + 0x200, n.data(), n.size());
  return page;
}

fmtx::Slot &RingV3::slot_of(std::uint32_t l, std::uint64_t seq) {
  const std::uint64_t extent = lane(l).extent;
  const std::uint64_t n = fmtx::extent_slots(extent);
  return slot_at(fmtx::extent_slot(extent, (seq - 1) % n));
}

fmtx::Slot &RingV3::commit(std::uint32_t l, std::uint64_t seq) {
  fmtx::Slot &s = slot_of(l, seq);
  s = {};
  s.begin_seq = s.end_seq = seq;
  s.timestamp = 1'000'000 + seq;
  s.tid = 4242;
  s.kind = fmtx::kKindUser;
  s.id = 0x31;
  s.arg0 = seq;
  if (lane(l).write_index < seq) lane(l).write_index = seq;
  return s;
}

RingV3 ring_v3(std::uint64_t seqs) {
  constexpr std::uint32_t kPerSource = RingV3::kPerSource, kSlots = RingV3::kSlots;
  const std::uint32_t pools[fmtx::kSourceCount] = {RingV3::kUserPool, 0, 0};
  const fmtx::GeometryV3 g = fmtx::geometry_v3(kPerSource, kSlots, pools, 4);
  RingV3 r;
  r.bytes.assign(g.region_size, 0);
  auto &h = r.header();
  std::memcpy(h.magic, fmtx::kMagic, 4);
  h.version = 3;
  h.header_size = fmtx::kHeaderSizeV3;
  h.endian_marker = fmtx::kEndianMarker;
  h.compat_flags = fmtx::kCompatClockTsc;
  h.slot_size = fmtx::kSlotSize;
  h.slots_per_lane = kSlots;
  h.lane_count = g.lane_count;
  h.lane_table_offset = g.lane_table_offset;
  h.lanes_offset = g.lanes_offset;
  h.region_size = g.region_size;
  h.names_offset = g.names_offset;
  h.names_capacity = 4;
  h.name_entry_size = fmtx::kNameEntrySize;
  h.pid = 4242;
  h.anchor_ticks = 1'000'000;
  h.ticks_per_second = 1'000'000'000;
  h.source_count = fmtx::kSourceCount;
  for (std::uint32_t c = 0; c < fmtx::kSourceCount; ++c) {
    auto &a = h.sources[c];
    a.first_lane = c * kPerSource;
    a.lane_count = kPerSource;
    a.pool_first_slot = g.pool_first_slot[c];
    a.pool_slots = pools[c];
  }
  for (std::uint32_t l = 0; l < g.lane_count; ++l) {
    r.lane(l).extent = fmtx::make_extent(l * kSlots, 3);
    r.lane(l).source = l / kPerSource;
    if (l % kPerSource == kPerSource - 1) r.lane(l).flags = fmtx::kLaneShared;
  }
  /* Lane 0 grew once: 16 slots at the start of the user pool. */
  r.lane(0).extent = fmtx::make_extent(g.pool_first_slot[0], 4);
  h.sources[0].pool_used = 16;
  for (std::uint64_t s = 1; s <= seqs; ++s) r.commit(0, s);
  r.seal();
  return r;
}

fmtx::Slot &RingV3::put(std::uint64_t seq, std::uint16_t kind, std::uint32_t id, std::uint64_t arg0,
                        std::uint64_t arg1, std::uint8_t stack) {
  fmtx::Slot &s = commit(0, seq);
  s.kind = kind;
  s.id = id;
  s.arg0 = arg0;
  s.arg1 = arg1;
  s.stack = stack;
  s.return_address = kExeAddr + 0x1100;
  return s;
}

fmtx::Slot &RingV3::crash(std::uint64_t seq, std::uint8_t stack) {
  fmtx::Slot &s = put(seq, fmtx::kKindCrash, 11, 0, 0x7ffd0000f000, stack);
  fmtx::CrashInfo ci{};
  ci.code = 1;  // SEGV_MAPERR
  std::memcpy(s.inline_data, &ci, sizeof ci);
  s.inline_len = sizeof ci;
  return s;
}

fmtx::Slot &RingV3::stack_part(std::uint64_t seq, std::uint64_t host_seq, std::uint32_t depth, std::uint32_t end,
                               std::uint32_t k) {
  const std::uint8_t b = fmtx::stack_part_byte(depth, end, k);
  fmtx::Slot &s = put(seq, fmtx::kKindStack, fmtx::kKindCrash, host_seq, k * fmtx::kMaxStackDepth, b);
  for (std::uint32_t i = 0; i < fmtx::stack_depth(b); ++i) {
    const std::uint64_t f = chain_frame(k * fmtx::kMaxStackDepth + i);
    std::memcpy(s.inline_data + 8 * i, &f, 8);
  }
  s.inline_len = static_cast<std::uint8_t>(8 * fmtx::stack_depth(b));
  return s;
}

RingV3 ring_with_crash_chain(std::uint32_t depth, std::uint32_t end) {
  RingV3 r = ring_v3(1);
  r.header().version = 5;
  const std::uint8_t bid[] = {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04};
  std::memcpy(r.header().build_id, bid, sizeof bid);
  r.header().build_id_len = sizeof bid;
  r.crash(2, static_cast<std::uint8_t>(fmtx::stack_part_byte(depth, end, 0) | fmtx::kStackNext));
  for (std::uint32_t k = 0; k < fmtx::stack_parts(depth); ++k) r.stack_part(3 + k, 2, depth, end, k);
  r.seal();
  return r;
}

CoreBuilder standard_core(RingV3 &ring) {
  CoreBuilder c;
  std::vector<std::uint8_t> bid(ring.header().build_id, ring.header().build_id + ring.header().build_id_len);
  c.map(kExeAddr, fake_elf_page(bid), "/usr/bin/victim", 0x2000, 5);
  c.map(kRingAddr, ring.bytes, "/memfd:core-timeline (deleted)");
  c.map(0x7ffd00000000, std::vector<std::uint8_t>(4096, 0x5a), "", 0x10000, 6);  // a stack
  return c;
}

CoreBuilder standard_core(RingBuilder &ring) {
  CoreBuilder c;
  std::vector<std::uint8_t> bid(ring.header().build_id, ring.header().build_id + ring.header().build_id_len);
  c.map(kExeAddr, fake_elf_page(bid), "/usr/bin/victim", 0x2000, 5);
  c.map(kRingAddr, ring.bytes(), "/memfd:core-timeline (deleted)");
  c.map(0x7ffd00000000, std::vector<std::uint8_t>(4096, 0x5a), "", 0x10000, 6);  // a stack
  return c;
}

std::string write_temp(const std::vector<std::uint8_t> &bytes, const std::string &stem) {
  const char *tmp = getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/ct-reader-" + stem + "-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back(0);
  int fd = mkstemp(buf.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed for " + path);
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = write(fd, bytes.data() + off, bytes.size() - off);
    if (w <= 0) {
      close(fd);
      throw std::runtime_error("write failed for " + path);
    }
    off += static_cast<std::size_t>(w);
  }
  close(fd);
  return buf.data();
}

Elf64_Ehdr core_ehdr(std::uint16_t phnum, std::uint16_t machine) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = phnum;
  return eh;
}

}  // namespace ct::test
