// SPDX-License-Identifier: MIT
//
// recipe.cc - the interpreter of fuzz_recipe's inputs (recipe.h).
#include "recipe.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <optional>

#include "core_builder.h"
#include "core_timeline/ring_format.h"

namespace ct::fuzz {
namespace {

namespace fmtx = core_timeline::format;
using ct::test::CoreBuilder;
using ct::test::NoteSpec;
using ct::test::RingBuilder;

/** The recipe's bytes; a read past the end gives 0. */
class In {
 public:
  explicit In(std::span<const std::uint8_t> d) : d_(d) {}
  bool done() const { return p_ >= d_.size(); }
  std::uint8_t u8() { return p_ < d_.size() ? d_[p_++] : 0; }
  // Low part first: each read is its own statement (the operands of `|`
  // are unsequenced).
  std::uint16_t u16() {
    const std::uint16_t lo = u8();
    return static_cast<std::uint16_t>(lo | u8() << 8);
  }
  std::uint32_t u32() {
    const std::uint32_t lo = u16();
    return lo | std::uint32_t{u16()} << 16;
  }
  std::uint64_t u64() {
    const std::uint64_t lo = u32();
    return lo | std::uint64_t{u32()} << 32;
  }
  std::vector<std::uint8_t> bytes(std::size_t n) {
    std::vector<std::uint8_t> v;
    for (std::size_t i = 0; i < n && !done(); ++i) v.push_back(u8());
    return v;
  }

 private:
  std::span<const std::uint8_t> d_;
  std::size_t p_ = 0;
};

struct Field {
  const char *name;
  std::uint32_t off;
  std::uint8_t width;
};

#define CT_F(T, m) Field{#m, static_cast<std::uint32_t>(offsetof(T, m)), sizeof(T::m)}
#define CT_FW(T, m, w) Field{#m, static_cast<std::uint32_t>(offsetof(T, m)), w}
using H = fmtx::RingHeader;
constexpr std::array kHeaderFields = {
    CT_FW(H, magic, 4), CT_F(H, version), CT_F(H, header_size), CT_F(H, endian_marker), CT_F(H, incompat_flags),
    CT_F(H, compat_flags), CT_F(H, slot_size), CT_F(H, slots_per_lane), CT_F(H, lane_count),
    CT_F(H, lane_table_offset), CT_F(H, header_crc), CT_F(H, lanes_offset), CT_F(H, region_size),
    CT_F(H, process_start_ticks), CT_F(H, pid), CT_F(H, writer_version), CT_F(H, pid_ns_inode),
    CT_F(H, pid_ns_dev), CT_F(H, build_id_len), CT_FW(H, build_id, 8), CT_F(H, sidecar_dev), CT_F(H, sidecar_ino),
    CT_F(H, anchor_ticks), CT_F(H, anchor_realtime_ns), CT_F(H, anchor_monotonic_ns), CT_F(H, ticks_per_second),
    CT_F(H, names_offset), CT_F(H, names_capacity), CT_F(H, name_entry_size), CT_F(H, anchor_spread_ticks),
    CT_F(H, init_error), CT_FW(H, init_error_text, 8), CT_F(H, latest_anchor_seq), CT_F(H, latest_ticks),
    CT_F(H, latest_realtime_ns), CT_F(H, latest_monotonic_ns), CT_F(H, crash_anchor_state), CT_F(H, crash_ticks),
    CT_F(H, crash_realtime_ns), CT_F(H, crash_monotonic_ns), CT_F(H, dropped), CT_F(H, mmap_generation),
    CT_F(H, sync_count), CT_F(H, enabled_sources), CT_F(H, crash_spread_ticks), CT_F(H, names_claimed),
    CT_F(H, budget_bytes), CT_F(H, source_count),
};
using S = fmtx::SourceArea;
constexpr std::array kSourceFields = {
    CT_F(S, first_lane), CT_F(S, lane_count), CT_F(S, pool_first_slot), CT_F(S, pool_slots),
    CT_F(S, share_percent), CT_F(S, flags), CT_F(S, pool_used), CT_F(S, dropped), CT_F(S, grown), CT_F(S, moved),
};
using L = fmtx::LaneDesc;
constexpr std::array kLaneFields = {
    CT_F(L, owner_tid), CT_F(L, flags), CT_F(L, write_index), CT_F(L, synced_index), CT_F(L, claims),
    CT_FW(L, owner_name, 8), CT_F(L, extent), CT_F(L, source), CT_F(L, grown),
};
using Sl = fmtx::Slot;
constexpr std::array kSlotFields = {
    CT_F(Sl, begin_seq), CT_F(Sl, timestamp), CT_F(Sl, tid), CT_F(Sl, kind), CT_F(Sl, inline_len), CT_F(Sl, id),
    CT_F(Sl, mmap_generation), CT_F(Sl, return_address), CT_F(Sl, arg0), CT_F(Sl, arg1),
    CT_FW(Sl, inline_data, 8), CT_F(Sl, end_seq),
};
using N = fmtx::NameEntry;
constexpr std::array kNameFields = {
    CT_F(N, state), CT_F(N, id), CT_F(N, arg_count), CT_FW(N, name, 8), CT_FW(N, arg0, 8), CT_FW(N, arg1, 8),
};
constexpr std::array kPhdrFields = {
    CT_F(Elf64_Phdr, p_type), CT_F(Elf64_Phdr, p_flags), CT_F(Elf64_Phdr, p_offset), CT_F(Elf64_Phdr, p_vaddr),
    CT_F(Elf64_Phdr, p_paddr), CT_F(Elf64_Phdr, p_filesz), CT_F(Elf64_Phdr, p_memsz), CT_F(Elf64_Phdr, p_align),
};
constexpr std::array kEhdrFields = {
    CT_FW(Elf64_Ehdr, e_ident, 8), CT_F(Elf64_Ehdr, e_type), CT_F(Elf64_Ehdr, e_machine),
    CT_F(Elf64_Ehdr, e_version), CT_F(Elf64_Ehdr, e_entry), CT_F(Elf64_Ehdr, e_phoff), CT_F(Elf64_Ehdr, e_shoff),
    CT_F(Elf64_Ehdr, e_flags), CT_F(Elf64_Ehdr, e_ehsize), CT_F(Elf64_Ehdr, e_phentsize),
    CT_F(Elf64_Ehdr, e_phnum), CT_F(Elf64_Ehdr, e_shentsize), CT_F(Elf64_Ehdr, e_shnum),
    CT_F(Elf64_Ehdr, e_shstrndx),
};
#undef CT_F
#undef CT_FW

constexpr std::array<std::uint16_t, 25> kKinds = {
    fmtx::kKindUser,  fmtx::kKindUserPtr, fmtx::kKindThreadName, fmtx::kKindCrash,   fmtx::kKindLaneClaim,
    fmtx::kKindSpanBegin, fmtx::kKindSpanEnd, fmtx::kKindMalloc, fmtx::kKindFree, fmtx::kKindCalloc,
    fmtx::kKindRealloc, fmtx::kKindOpen, fmtx::kKindRead, fmtx::kKindWrite, fmtx::kKindConnect, fmtx::kKindClose,
    fmtx::kKindAccept, fmtx::kKindRecv, fmtx::kKindSend, fmtx::kKindPread, fmtx::kKindPwrite,
    fmtx::kKindSendfile, fmtx::kKindSocket, fmtx::kKindFsync, fmtx::kKindDup,
};

constexpr const char *kPaths[] = {
    "/memfd:core-timeline (deleted)", "/memfd:core-timeline", "/memfd:core-timeline-2 (deleted)",
    "/memfd:other (deleted)", "/usr/bin/victim", "/usr/lib/libc.so.6", "", "/dev/zero (deleted)",
    "/run/core-timeline/ring.4242", "/memfd:core-timeline (deleted) (deleted)",
    "/\xff\xfe\x01\x1b[31m path with bytes", "/usr/bin/victim (deleted)",
};
constexpr const char *kComms[] = {"victim", "", "crash_demo", "a\x01\x7f\xff", "0123456789abcdefXYZ"};

const std::vector<std::uint8_t> kBuildId = {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x02, 0x03, 0x04};
constexpr std::uint32_t kPid = 4242;

std::uint64_t load(const std::vector<std::uint8_t> &b, std::uint64_t off, unsigned w) {
  std::uint64_t v = 0;
  if (off <= b.size() && b.size() - off >= w) std::memcpy(&v, b.data() + off, w);
  return v;
}
void store(std::vector<std::uint8_t> &b, std::uint64_t off, unsigned w, std::uint64_t v) {
  if (off <= b.size() && b.size() - off >= w) std::memcpy(b.data() + off, &v, w);
}

/** Reads a value selector and its operand; `c` is the current value. */
std::uint64_t value(In &in, std::uint64_t c, std::uint64_t size) {
  switch (in.u8()) {
    case kValZero: return 0;
    case kValOne: return 1;
    case kValAllOnes: return UINT64_MAX;
    case kValAddI8: return c + static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int8_t>(in.u8())));
    case kValDouble: return c * 2;
    case kValHalf: return c / 2;
    case kValBit: return std::uint64_t{1} << (in.u8() % 64);
    case kValFlipBit: return c ^ std::uint64_t{1} << (in.u8() % 64);
    case kValU8: return in.u8();
    case kValU16: return in.u16();
    case kValU32: return in.u32();
    case kValU64: return in.u64();
    case kValSize: return size;
    case kValI32Max: return 0x7fffffff;
    case kValI32Min: return 0x80000000;
    case kValU32Max: return 0xffffffff;
    default: return c;
  }
}

/** Applies a value to the field at `off` of `b`. */
void edit(In &in, std::vector<std::uint8_t> &b, std::uint64_t off, unsigned w, std::uint64_t size) {
  const std::uint64_t v = value(in, load(b, off, w), size);
  store(b, off, w, v);
}

/** A ring as built, and where its parts are (from the build, not from the
 *  header, which the edits may change). */
struct Ring {
  std::vector<std::uint8_t> bytes;
  std::uint32_t lane_count = 0, lanes_per_source = 0, slots = 0, names = 0;
  std::uint64_t lane_table = 0, lanes_offset = 0, names_offset = 0;
  bool v3 = false;
  std::vector<std::uint64_t> extents;  // v3: per lane
  std::vector<std::uint64_t> seq;      // per lane: last sequence
  std::vector<std::uint64_t> token;    // per lane: last span token
  std::uint64_t last_ts = 0;

  fmtx::RingHeader &header() { return *reinterpret_cast<fmtx::RingHeader *>(bytes.data()); }
  std::uint64_t lane_off(std::uint32_t l) const { return lane_table + std::uint64_t{l} * fmtx::kLaneDescSize; }
  fmtx::LaneDesc &lane(std::uint32_t l) { return *reinterpret_cast<fmtx::LaneDesc *>(bytes.data() + lane_off(l)); }
  /** Offset of slot `index` (mod the lane's slots) of lane `l`. */
  std::uint64_t slot_off(std::uint32_t l, std::uint64_t index) const {
    if (!v3) return lanes_offset + (std::uint64_t{l} * slots + index % slots) * fmtx::kSlotSize;
    const std::uint64_t n = std::uint64_t{1} << fmtx::extent_log2(extents[l]);
    return lanes_offset + (fmtx::extent_first_slot(extents[l]) + index % n) * fmtx::kSlotSize;
  }
};

Ring ringless() {
  Ring r;
  r.bytes.assign(4096, 0);
  auto &h = r.header();
  std::memcpy(h.magic, fmtx::kMagic, 4);
  h.version = 2;
  h.header_size = fmtx::kHeaderSize;
  h.endian_marker = fmtx::kEndianMarker;
  h.incompat_flags = fmtx::kIncompatNoRing;
  h.compat_flags = fmtx::kCompatClockTsc;
  h.slot_size = fmtx::kSlotSize;
  h.region_size = 4096;
  h.pid = kPid;
  h.build_id_len = static_cast<std::uint32_t>(kBuildId.size());
  std::memcpy(h.build_id, kBuildId.data(), kBuildId.size());
  h.init_error = 12;  // ENOMEM
  std::strncpy(h.init_error_text, "slots_per_lane=1048576 lanes=4095 needs 512.01 GiB; the ring is at most 4 GiB",
               sizeof h.init_error_text - 1);
  return r;
}

Ring ring_v2(std::uint32_t lanes, std::uint32_t slots, std::uint32_t names) {
  RingBuilder b(lanes, slots, kPid, kBuildId, names);
  Ring r;
  r.bytes = std::move(b.bytes());
  r.lane_count = r.lanes_per_source = lanes;
  r.slots = slots;
  r.names = names;
  r.lane_table = fmtx::kHeaderSize;
  r.lanes_offset = fmtx::lanes_offset_for(lanes);
  r.names_offset = names > 0 ? fmtx::names_offset_for(lanes, slots) : 0;
  return r;
}

/** A version-3 ring as geometry_v3 lays it out (the writer's layout): user
 *  pool of 4 lanes' worth of slots, alloc pool of 2, no I/O pool. */
Ring ring_v3(std::uint32_t per_source, std::uint32_t slots, std::uint32_t names) {
  const std::uint32_t pools[fmtx::kSourceCount] = {4 * slots, 2 * slots, 0};
  const fmtx::GeometryV3 g = fmtx::geometry_v3(per_source, slots, pools, names);
  Ring r;
  r.v3 = true;
  r.bytes.assign(g.region_size, 0);
  r.lane_count = g.lane_count;
  r.lanes_per_source = per_source;
  r.slots = slots;
  r.names = names;
  r.lane_table = g.lane_table_offset;
  r.lanes_offset = g.lanes_offset;
  r.names_offset = names > 0 ? g.names_offset : 0;
  auto &h = r.header();
  std::memcpy(h.magic, fmtx::kMagic, 4);
  h.version = 3;
  h.header_size = fmtx::kHeaderSizeV3;
  h.endian_marker = fmtx::kEndianMarker;
  h.compat_flags = fmtx::kCompatClockTsc | fmtx::kCompatHandlers;
  h.slot_size = fmtx::kSlotSize;
  h.slots_per_lane = slots;
  h.lane_count = g.lane_count;
  h.lane_table_offset = g.lane_table_offset;
  h.lanes_offset = g.lanes_offset;
  h.region_size = g.region_size;
  h.process_start_ticks = 777;
  h.pid = kPid;
  h.writer_version = 0x000100;
  h.build_id_len = static_cast<std::uint32_t>(kBuildId.size());
  std::memcpy(h.build_id, kBuildId.data(), kBuildId.size());
  h.anchor_ticks = 1'000'000;
  h.anchor_realtime_ns = 1'700'000'000'000'000'000ull;
  h.anchor_monotonic_ns = 5'000'000'000ull;
  h.ticks_per_second = 1'000'000'000;
  if (names > 0) {
    h.names_offset = g.names_offset;
    h.names_capacity = names;
    h.name_entry_size = fmtx::kNameEntrySize;
  }
  h.source_count = fmtx::kSourceCount;
  h.enabled_sources = 7;
  std::uint32_t log2 = 0;
  while ((1u << log2) < slots) ++log2;
  for (std::uint32_t c = 0; c < fmtx::kSourceCount; ++c) {
    auto &a = h.sources[c];
    a.first_lane = c * per_source;
    a.lane_count = per_source;
    a.pool_first_slot = g.pool_first_slot[c];
    a.pool_slots = pools[c];
    a.share_percent = c == 0 ? 70 : c == 1 ? 30 : 0;
    a.flags = c < 2 ? fmtx::kSourcePresent : 0;
  }
  r.extents.resize(g.lane_count);
  for (std::uint32_t l = 0; l < g.lane_count; ++l) {
    r.extents[l] = fmtx::make_extent(l * slots, log2);
    r.lane(l).source = l / per_source;
    if (l % per_source == per_source - 1) r.lane(l).flags = fmtx::kLaneShared;
  }
  // Lane 0 grew once into the start of the user pool, as a busy thread's does.
  r.extents[0] = fmtx::make_extent(g.pool_first_slot[0], log2 + 1);
  h.sources[0].pool_used = 2 * slots;
  h.sources[0].grown = 1;
  r.lane(0).grown = 1;
  for (std::uint32_t l = 0; l < g.lane_count; ++l) r.lane(l).extent = r.extents[l];
  return r;
}

void add_event(Ring &r, std::uint8_t lane_b, std::uint8_t kind_b, std::uint8_t arg, std::size_t i) {
  if (r.lane_count == 0) return;
  const std::uint16_t kind = kind_b < 0xe0 ? kKinds[kind_b % kKinds.size()] : static_cast<std::uint16_t>(kind_b - 0xe0);
  std::uint32_t lane = lane_b % r.lane_count;
  // A version-3 event goes to a lane of its source unless the recipe says not.
  if (r.v3 && (lane_b & 0x80) == 0)
    lane = fmtx::source_of_kind(kind) * r.lanes_per_source + lane_b % r.lanes_per_source;
  const std::uint64_t seq = ++r.seq[lane];
  fmtx::Slot s{};
  s.begin_seq = s.end_seq = seq;
  s.timestamp = (arg & 0x40) != 0 && kind != fmtx::kKindCrash ? 0 : 2'000'000 + i * 1000 + lane;
  if (s.timestamp != 0) r.last_ts = std::max(r.last_ts, s.timestamp);
  s.tid = lane == 0 ? kPid : 5000 + lane;
  s.kind = kind;
  s.return_address = 0x401234 + (arg & 3) * 0x40;
  switch (kind) {
    case fmtx::kKindUser: s.id = 0x1001 + arg % 4; s.arg0 = arg; s.arg1 = i; break;
    case fmtx::kKindUserPtr:
      s.id = 0x1002; s.arg0 = 0x7ffd00000100; s.arg1 = 16;
      s.inline_len = static_cast<std::uint16_t>((arg & 0x3f) + 1);
      std::memset(s.inline_data, (arg & 0x80) ? 0xc3 : 'A' + arg % 26, s.inline_len);
      break;
    case fmtx::kKindThreadName:
      s.inline_len = static_cast<std::uint16_t>(std::snprintf(reinterpret_cast<char *>(s.inline_data),
                                                              sizeof s.inline_data, "worker-%u", lane));
      break;
    case fmtx::kKindCrash: {
      s.id = 11; s.arg0 = arg; s.arg1 = 0x7ffd0000f000; s.return_address = 0x401100;
      fmtx::CrashInfo c{};
      c.code = arg % 4;
      c.handler_flags = arg >> 6;
      std::memcpy(s.inline_data, &c, sizeof c);
      s.inline_len = sizeof c;
      auto &h = r.header();
      h.crash_anchor_state = fmtx::kAnchorComplete;
      h.crash_ticks = s.timestamp + 10;
      h.crash_realtime_ns = h.anchor_realtime_ns + (h.crash_ticks - h.anchor_ticks);
      h.crash_monotonic_ns = h.anchor_monotonic_ns + (h.crash_ticks - h.anchor_ticks);
      break;
    }
    case fmtx::kKindLaneClaim: s.arg0 = lane; s.arg1 = arg; break;
    case fmtx::kKindSpanBegin:
      s.id = 0x1004; s.arg0 = arg;
      r.token[lane] = fmtx::span_token(lane, seq);
      break;
    case fmtx::kKindSpanEnd:
      s.id = 0x1004; s.arg0 = (arg & 0x80) ? fmtx::span_token(arg % r.lane_count, arg) : r.token[lane];
      break;
    case fmtx::kKindMalloc: case fmtx::kKindCalloc: s.arg0 = 0x55550000 + arg * 16; s.arg1 = arg; break;
    case fmtx::kKindFree: s.arg0 = (arg & 1) ? 0x7ffd00000100 : 0x55550000 + arg * 16; break;
    case fmtx::kKindRealloc: {
      s.arg0 = 0x55560000; s.arg1 = arg;
      const std::uint64_t old = 0x55550000 + arg * 16;
      std::memcpy(s.inline_data, &old, 8);
      s.inline_len = 8;
      break;
    }
    case fmtx::kKindOpen: {
      s.arg0 = arg & 1 ? static_cast<std::uint64_t>(-2) : 3;
      const char *p = (arg & 2) ? "/etc/\x01\xff" : "/var/lib/victim/state.db";
      s.inline_len = static_cast<std::uint16_t>(std::strlen(p));
      std::memcpy(s.inline_data, p, s.inline_len);
      break;
    }
    case fmtx::kKindConnect: {
      s.id = 4; s.arg0 = 0;
      const std::uint16_t fam = (arg & 1) ? 2 : 1;  // AF_INET, AF_UNIX
      std::memcpy(s.inline_data, &fam, 2);
      std::memcpy(s.inline_data + 2, "/run/victim.sock", 16);
      s.inline_len = static_cast<std::uint16_t>(2 + (arg % 20));
      break;
    }
    case fmtx::kKindAccept: {
      /* fds 3..6 made, used and closed again: the reader ties them. */
      s.id = 3; s.arg0 = (arg & 1) ? static_cast<std::uint64_t>(-11) : 3 + arg % 4; s.arg1 = (arg & 2) ? 0x80800 : 0;
      const std::uint8_t peer[16] = {2, 0, 0xd0, 0xae, 127, 0, 0, 1};
      std::memcpy(s.inline_data, peer, sizeof peer);
      s.inline_len = static_cast<std::uint16_t>(arg % 17);
      break;
    }
    case fmtx::kKindPread: case fmtx::kKindPwrite: case fmtx::kKindSendfile: {
      s.id = 3 + arg % 4; s.arg0 = arg; s.arg1 = arg;
      const std::int64_t at[2] = {(arg & 1) ? -1 : static_cast<std::int64_t>(arg) * 4096, 3 + arg % 4};
      std::memcpy(s.inline_data, at, sizeof at);
      s.inline_len = static_cast<std::uint16_t>(arg % 17);
      break;
    }
    default: s.id = arg; s.arg0 = arg; s.arg1 = arg * 3; break;
  }
  const std::uint64_t off = r.slot_off(lane, seq - 1);
  if (off + sizeof s <= r.bytes.size()) std::memcpy(r.bytes.data() + off, &s, sizeof s);
  auto &ld = r.lane(lane);
  ld.write_index = seq;
  if (ld.owner_tid == 0) {
    ld.owner_tid = s.tid;
    ld.claims = 1;
    std::snprintf(ld.owner_name, sizeof ld.owner_name, "worker-%u", lane);
  }
}

void add_names(Ring &r) {
  for (std::uint32_t i = 0; i < r.names; ++i) {
    fmtx::NameEntry e{};
    e.state = fmtx::kNameCommitted;
    e.id = 0x1001 + i;
    e.arg_count = i % 3;
    std::snprintf(e.name, sizeof e.name, "EVENT_%u", i);
    if (e.arg_count > 0) std::strcpy(e.arg0, "request_id");
    if (e.arg_count > 1) std::strcpy(e.arg1, "bytes");
    std::memcpy(r.bytes.data() + r.names_offset + std::uint64_t{i} * fmtx::kNameEntrySize, &e, sizeof e);
  }
  if (r.names > 0) r.header().names_claimed = r.names;
}

/** The well-formed desc of a note kind, before the recipe's bytes. */
std::vector<std::uint8_t> default_desc(NoteKind k, const CoreBuilder &c, std::uint64_t last_ts) {
  std::vector<std::uint8_t> d;
  auto put = [&](auto v) {
    const auto *p = reinterpret_cast<const std::uint8_t *>(&v);
    d.insert(d.end(), p, p + sizeof v);
  };
  switch (k) {
    case kNoteFile:
      put(std::uint64_t{c.files.size()});
      put(std::uint64_t{4096});
      for (const auto &f : c.files) { put(f.start); put(f.end); put(f.pgoff); }
      for (const auto &f : c.files) { d.insert(d.end(), f.path.begin(), f.path.end()); d.push_back(0); }
      break;
    case kNotePrstatus: {
      d.assign(336, 0);
      const std::uint32_t tid = kPid + 1;
      std::memcpy(&d[32], &tid, 4);
      const std::uint64_t pc = 0x401200, sp = 0x7ffd0000e000;
      std::memcpy(&d[112 + 16 * 8], &pc, 8);
      std::memcpy(&d[112 + 19 * 8], &sp, 8);
      break;
    }
    case kNoteAuxv:
      put(std::uint64_t{AT_PHDR}); put(std::uint64_t{ct::test::kExeAddr + 0x40});
      put(std::uint64_t{AT_ENTRY}); put(std::uint64_t{ct::test::kExeAddr + 0x1000});
      put(std::uint64_t{AT_NULL}); put(std::uint64_t{0});
      break;
    case kNoteBuildId: d = kBuildId; break;
    case kNoteLive: {
      std::uint8_t n[48] = {};
      const std::uint32_t version = 1, pid = kPid;
      const std::int64_t mono = 5'000'000'000 + 2'000'000, real = 1'700'000'000'002'000'000, dur = 1000;
      const std::uint64_t ticks = last_ts + 1000;
      std::memcpy(n, &version, 4); std::memcpy(n + 4, &pid, 4);
      std::memcpy(n + 8, &mono, 8); std::memcpy(n + 16, &real, 8);
      std::memcpy(n + 24, &ticks, 8); std::memcpy(n + 32, &dur, 8);
      d.assign(n, n + 48);
      break;
    }
    case kNoteSiginfo: {
      d.assign(128, 0);
      const std::int32_t signo = 11, code = 1;
      std::memcpy(&d[0], &signo, 4); std::memcpy(&d[8], &code, 4);
      break;
    }
    case kNotePrpsinfo: {
      d.assign(136, 0);
      d[1] = 'R';
      std::memcpy(&d[24], &kPid, 4);
      std::memcpy(&d[40], "victim", 6);
      std::memcpy(&d[56], "victim --flag", 13);
      break;
    }
    default: break;
  }
  return d;
}

void add_note(In &in, CoreBuilder &c, std::vector<std::uint8_t> &exe_build_id, std::uint64_t last_ts) {
  const auto kind = static_cast<NoteKind>(in.u8() % kNoteKinds);
  const std::uint8_t size = in.u8(), at = in.u8(), len = in.u8();
  const std::vector<std::uint8_t> over = in.bytes(len);
  std::vector<std::uint8_t> d = default_desc(kind, c, last_ts);
  if (size != 0) d.resize(std::size_t{size - 1u} * 4);
  for (std::size_t i = 0; i < over.size(); ++i)
    if (std::size_t{at} * 4 + i < d.size()) d[std::size_t{at} * 4 + i] = over[i];
    else if (kind == kNoteOther || kind == kNoteBuildId) d.push_back(over[i]);
  static constexpr const char *kOtherNames[] = {"CORE", "LINUX", "GNU", "CORE-TIMELINE", ""};
  switch (kind) {
    case kNoteFile: c.with_file_note = false; c.extra_notes.push_back({"CORE", NT_FILE, d}); break;
    case kNotePrstatus: c.extra_notes.push_back({"CORE", NT_PRSTATUS, d}); break;
    case kNoteAuxv: c.auxv.clear(); c.extra_notes.push_back({"CORE", NT_AUXV, d}); break;
    case kNoteBuildId: exe_build_id = d; break;
    case kNoteLive: c.extra_notes.push_back({"CORE-TIMELINE", 1, d}); break;
    case kNoteSiginfo: c.sig_signo.reset(); c.extra_notes.push_back({"CORE", NT_SIGINFO, d}); break;
    case kNotePrpsinfo: c.prpsinfo_pid.reset(); c.extra_notes.push_back({"CORE", NT_PRPSINFO, d}); break;
    default: c.extra_notes.push_back({kOtherNames[at % 5], size, d}); break;
  }
}

void ring_op(In &in, Op op, Ring &r) {
  const std::uint64_t size = r.bytes.size();
  switch (op) {
    case kOpHeader: {
      const std::size_t f = in.u8() % (kHeaderFields.size() + fmtx::kSourceTableSize * kSourceFields.size());
      if (f < kHeaderFields.size()) {
        edit(in, r.bytes, kHeaderFields[f].off, kHeaderFields[f].width, size);
      } else {
        const std::size_t s = (f - kHeaderFields.size()) / kSourceFields.size();
        const Field &sf = kSourceFields[(f - kHeaderFields.size()) % kSourceFields.size()];
        edit(in, r.bytes, offsetof(H, sources) + s * sizeof(S) + sf.off, sf.width, size);
      }
      break;
    }
    case kOpLane: {
      const std::uint32_t l = in.u8() % std::max<std::uint32_t>(r.lane_count, 1);
      const Field &f = kLaneFields[in.u8() % kLaneFields.size()];
      edit(in, r.bytes, r.lane_off(l) + f.off, f.width, size);
      break;
    }
    case kOpSlot: {
      const std::uint32_t l = in.u8() % std::max<std::uint32_t>(r.lane_count, 1);
      const std::uint8_t idx = in.u8();
      const Field &f = kSlotFields[in.u8() % kSlotFields.size()];
      const std::uint64_t off = r.lane_count > 0 ? r.slot_off(l, idx) : size;  // no slots: no write
      edit(in, r.bytes, off + f.off, f.width, size);
      break;
    }
    case kOpName: {
      const std::uint32_t e = in.u8() % std::max<std::uint32_t>(r.names, 1);
      const Field &f = kNameFields[in.u8() % kNameFields.size()];
      const std::uint64_t off = r.names > 0 ? r.names_offset + std::uint64_t{e} * fmtx::kNameEntrySize : size;
      edit(in, r.bytes, off + f.off, f.width, size);
      break;
    }
    case kOpRingBytes: {
      const std::uint64_t off = in.u16() % size;
      const std::vector<std::uint8_t> b = in.bytes(in.u8() % 17);
      for (std::size_t i = 0; i < b.size() && off + i < size; ++i) r.bytes[off + i] = b[i];
      break;
    }
    default: break;
  }
}

void builder_op(In &in, Op op, CoreBuilder &c, const Ring &ring, std::vector<std::uint8_t> &exe_build_id) {
  switch (op) {
    case kOpNote: add_note(in, c, exe_build_id, ring.last_ts); break;
    case kOpFile: {
      const std::size_t e = in.u8() % (c.files.size() + 1);
      if (e == c.files.size()) c.files.push_back(c.files.empty() ? CoreBuilder::File{0, 4096, 0, ""} : c.files[0]);
      auto &f = c.files[e];
      const std::uint8_t field = in.u8() % 4;
      if (field == 0) f.start = value(in, f.start, 0);
      else if (field == 1) f.end = value(in, f.end, 0);
      else if (field == 2) f.pgoff = value(in, f.pgoff, 0);
      else f.path = kPaths[value(in, 0, 0) % std::size(kPaths)];
      break;
    }
    case kOpMap: {
      const std::uint8_t what = in.u8();
      const std::uint64_t vaddr = value(in, ct::test::kRingAddr + 0x200000, 0);
      const std::size_t pages = in.u8() % 4 + 1;
      const char *path = kPaths[(what >> 2) % std::size(kPaths)];
      switch (what % 4) {
        case 0: c.map(vaddr, std::vector<std::uint8_t>(pages * 4096, 0), (what & 0x80) ? path : ""); break;
        case 1: c.map(vaddr, ring.bytes, path); break;  // the same ring twice
        case 2: c.map_excluded(vaddr, pages * 4096, path); break;
        default: c.map(vaddr, ct::test::fake_elf_page({1, 2, 3, 4}), path, 0x2000, 5); break;
      }
      break;
    }
    case kOpThread: {
      const std::uint32_t tid = in.u16();
      const std::int32_t signo = in.u8();
      c.threads.push_back({tid, signo, value(in, 0x401100, 0), 0x7ffd0000f000});
      break;
    }
    case kOpAuxv: {
      const std::uint64_t type = in.u8();
      c.auxv.insert(c.auxv.begin(), {type, value(in, ct::test::kExeAddr + 0x40, 0)});
      break;
    }
    case kOpSiginfo: {
      c.sig_signo = in.u8();
      c.sig_code = static_cast<std::int8_t>(in.u8());
      c.sig_addr = value(in, 0, 0);
      break;
    }
    case kOpProcess: {
      const std::uint64_t pid = value(in, kPid, 0);
      c.comm = kComms[in.u8() % std::size(kComms)];
      if (in.u8() & 1) c.prpsinfo_pid.reset();
      else c.prpsinfo_pid = static_cast<std::uint32_t>(pid);
      break;
    }
    default: break;
  }
}

void elf_op(In &in, Op op, std::vector<std::uint8_t> &b) {
  const std::uint64_t size = b.size();
  switch (op) {
    case kOpPhdr: {
      const std::uint16_t phnum = static_cast<std::uint16_t>(load(b, offsetof(Elf64_Ehdr, e_phnum), 2));
      const std::uint64_t i = in.u8() % std::max<std::uint16_t>(phnum, 1);
      const Field &f = kPhdrFields[in.u8() % kPhdrFields.size()];
      edit(in, b, sizeof(Elf64_Ehdr) + i * sizeof(Elf64_Phdr) + f.off, f.width, size);
      break;
    }
    case kOpEhdr: {
      const Field &f = kEhdrFields[in.u8() % kEhdrFields.size()];
      edit(in, b, f.off, f.width, size);
      break;
    }
    case kOpTruncate: b.resize(value(in, size, size) % (size + 1)); break;
    case kOpFileBytes: {
      const std::uint64_t off = in.u32() % std::max<std::uint64_t>(size, 1);
      const std::vector<std::uint8_t> v = in.bytes(in.u8() % 17);
      for (std::size_t i = 0; i < v.size() && off + i < size; ++i) b[off + i] = v[i];
      break;
    }
    default: break;
  }
}

Ring make_ring(std::uint8_t shape, std::uint8_t geom) {
  if (shape & kShapeRingless) return ringless();
  const std::uint32_t per = 2 + (geom & 3), slots = 8u << ((geom >> 2) & 3), names = (geom >> 4) & 7;
  Ring r = (shape & kShapeV3) ? ring_v3(per, slots, names) : ring_v2(per, slots, names);
  r.seq.assign(r.lane_count, 0);
  r.token.assign(r.lane_count, 0);
  add_names(r);
  return r;
}

template <std::size_t K>
int find_field(const std::array<Field, K> &t, const std::string &name) {
  for (std::size_t i = 0; i < K; ++i)
    if (name == t[i].name) return static_cast<int>(i);
  return -1;
}

}  // namespace

int header_field(const std::string &name) {
  if (int i = find_field(kHeaderFields, name); i >= 0) return i;
  // "sources[i].x"
  if (name.rfind("sources[", 0) == 0 && name.size() > 11 && name[9] == ']' && name[10] == '.') {
    const int s = name[8] - '0';
    const int f = find_field(kSourceFields, name.substr(11));
    if (s >= 0 && s < static_cast<int>(fmtx::kSourceTableSize) && f >= 0)
      return static_cast<int>(kHeaderFields.size() + s * kSourceFields.size() + f);
  }
  return -1;
}
int lane_field(const std::string &name) { return find_field(kLaneFields, name); }
int slot_field(const std::string &name) { return find_field(kSlotFields, name); }
int phdr_field(const std::string &name) { return find_field(kPhdrFields, name); }
int ehdr_field(const std::string &name) { return find_field(kEhdrFields, name); }

Writer &Writer::val(Value sel, std::uint64_t operand) {
  u8(sel);
  switch (sel) {
    case kValAddI8: case kValBit: case kValFlipBit: case kValU8: return u8(static_cast<std::uint8_t>(operand));
    case kValU16: return u16(static_cast<std::uint16_t>(operand));
    case kValU32: return u32(static_cast<std::uint32_t>(operand));
    case kValU64: return u64(operand);
    default: return *this;
  }
}

Made make(std::span<const std::uint8_t> recipe) {
  In in(recipe);
  const std::uint8_t shape = in.u8(), geom = in.u8();
  Made out;
  out.render_json = (shape & kShapeJson) != 0;
  Ring ring = make_ring(shape, geom);
  const std::size_t events = std::min<std::size_t>(in.u8(), kMaxEvents);
  for (std::size_t i = 0; i < events && !in.done(); ++i) {
    const std::uint8_t lane = in.u8(), kind = in.u8(), arg = in.u8();
    add_event(ring, lane, kind, arg, i);
  }
  // The ring edits come first (the ring's bytes go into the core), the
  // builder's next, the ELF edits on the built bytes last, each stage in
  // recipe order: three passes over the operations, each applying its
  // stage's and parsing the others' operands into scratch state (what an
  // operation reads of the recipe never depends on the state).
  const In ops = in;
  CoreBuilder scratch_c;
  std::vector<std::uint8_t> scratch_b, scratch_id;
  Ring scratch_r = ring;
  enum Stage { kRing, kBuilder, kElf };
  auto stage_of = [](Op op) {
    return op <= kOpRingBytes ? kRing
           : (op == kOpPhdr || op == kOpEhdr || op == kOpTruncate || op == kOpFileBytes) ? kElf
                                                                                        : kBuilder;
  };
  CoreBuilder c;
  std::vector<std::uint8_t> exe_build_id = kBuildId;
  auto pass = [&](Stage want, std::vector<std::uint8_t> *elf) {
    In p = ops;
    while (!p.done()) {
      const Op op = static_cast<Op>(p.u8() % kOpCount);
      const Stage st = stage_of(op);
      if (st == kRing) ring_op(p, op, st == want ? ring : scratch_r);
      else if (st == kBuilder) builder_op(p, op, st == want ? c : scratch_c, ring, st == want ? exe_build_id : scratch_id);
      else elf_op(p, op, st == want && elf ? *elf : scratch_b);
    }
  };
  pass(kRing, nullptr);
  if (!(shape & kShapeNoReseal)) ring.header().header_crc = fmtx::header_crc(ring.bytes.data());
  if ((shape & 3) == kShapeRing) {
    out.ring_only = true;
    out.bytes = std::move(ring.bytes);
    return out;
  }

  const char *memfd = "/memfd:core-timeline (deleted)";
  c.files.clear();
  c.loads.clear();
  if ((shape & 3) == kShapeLive) {
    c.sig_signo.reset();
    c.threads = {{kPid, 0, 0x401100, 0x7ffd0000f000}};
    c.extra_notes.push_back({"CORE-TIMELINE", 1, default_desc(kNoteLive, c, ring.last_ts)});
  }
  if ((shape & 3) == kShapeNoFileNote) c.with_file_note = false;
  c.map(ct::test::kExeAddr, ct::test::fake_elf_page(exe_build_id), "/usr/bin/victim", 0x2000, 5);
  if (shape & kShapeExcluded) c.map_excluded(ct::test::kRingAddr, ring.bytes.size(), memfd);
  else c.map(ct::test::kRingAddr, ring.bytes, memfd);
  if (shape & kShapeTwoRings) {
    Ring second = make_ring(static_cast<std::uint8_t>(shape & ~kShapeRingless), 0);
    add_event(second, 0, 2, 5, 0);
    add_event(second, 0, 0, 7, 1);
    second.header().anchor_ticks += 1;
    second.header().anchor_realtime_ns += 1;
    second.header().header_crc = fmtx::header_crc(second.bytes.data());
    c.map(ct::test::kRingAddr + 0x100000, second.bytes, memfd);
  }
  c.map(0x7ffd00000000, std::vector<std::uint8_t>(4096, 0x5a), "", 0x10000, 6);  // a stack
  // The builder edits see the standard mappings (and may change their
  // NT_FILE entries); the build-id note kind changes the executable's page.
  pass(kBuilder, nullptr);
  if (exe_build_id != kBuildId) c.loads[0].data = ct::test::fake_elf_page(exe_build_id);
  out.bytes = c.build();
  pass(kElf, &out.bytes);
  return out;
}

}  // namespace ct::fuzz
