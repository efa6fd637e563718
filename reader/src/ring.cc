/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/ring.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core_timeline/reader/cursor.h"
#include "core_timeline/reader/printable.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

namespace {

Error header_error(Errc code, std::string_view field, std::size_t offset, std::string detail) {
  return Error{code, fmt::format("ring header: {} at offset {:#x}: {}", field, offset, detail)};
}

#define CT_FIELD(name) #name, offsetof(f::RingHeader, name)

/* The header fields every version and the ring-less header share. */
RingHeaderInfo common_fields(const f::RingHeader &h, std::span<const std::uint8_t> bytes) {
  RingHeaderInfo info;
  info.version = h.version;
  info.header_size = h.header_size;
  info.incompat_flags = h.incompat_flags;
  info.compat_flags = h.compat_flags;
  info.slot_size = h.slot_size;
  info.slots_per_lane = h.slots_per_lane;
  info.lane_count = h.lane_count;
  info.header_crc = h.header_crc;
  info.region_size = h.region_size;
  info.process_start_ticks = h.process_start_ticks;
  info.pid = h.pid;
  info.writer_version = h.writer_version;
  info.pid_ns_inode = h.pid_ns_inode;
  info.pid_ns_dev = h.pid_ns_dev;
  info.build_id.assign(h.build_id, h.build_id + h.build_id_len);
  info.sidecar_dev = h.sidecar_dev;
  info.sidecar_ino = h.sidecar_ino;
  info.anchor_ticks = h.anchor_ticks;
  info.anchor_realtime_ns = h.anchor_realtime_ns;
  info.anchor_monotonic_ns = h.anchor_monotonic_ns;
  info.ticks_per_second = h.ticks_per_second;
  if (h.version >= 2) info.anchor_spread_ticks = h.anchor_spread_ticks;
  std::memcpy(info.immutable.data(), bytes.data(), f::kCrcEnd);
  return info;
}

/* A ring-less header (kIncompatNoRing): libtimeline was loaded and says why
 * it made no ring.  Its CRC, version and endianness are already checked. */
Result<RingHeaderInfo> no_ring_header(const f::RingHeader &h, std::span<const std::uint8_t> bytes,
                                      std::uint64_t mapping_size) {
  if (h.lane_count != 0 || h.slots_per_lane != 0 || h.names_capacity != 0)
    return header_error(Errc::kBadData, CT_FIELD(lane_count),
                        fmt::format("a ring-less header (kIncompatNoRing) claims {} lanes of {} slots and {} names",
                                    h.lane_count, h.slots_per_lane, h.names_capacity));
  if (h.region_size > mapping_size || h.region_size < f::kHeaderSize)
    return header_error(Errc::kBadData, CT_FIELD(region_size),
                        fmt::format("{:#x} is not in [{:#x}, the mapping's {:#x}]", h.region_size, f::kHeaderSize,
                                    mapping_size));
  if (h.build_id_len > f::kMaxBuildId)
    return header_error(Errc::kBadData, CT_FIELD(build_id_len),
                        fmt::format("{} is more than {}", h.build_id_len, f::kMaxBuildId));
  RingHeaderInfo info = common_fields(h, bytes);
  info.no_ring = true;
  info.init_error = h.init_error;
  info.init_error_text = printable({h.init_error_text, sizeof h.init_error_text}, {.stop_at_nul = true});
  return info;
}


/* A version-3 header's layout is a function of lane_count, slots_per_lane,
 * the pools and names_capacity (geometry_v3): every offset and the source
 * table must be that function's, so nothing below trusts an offset it
 * was handed.  The simpler checks (slot size, counts, region within the
 * mapping) have been made. */
Result<void> check_geometry_v3(const f::RingHeader &h) {
  if (h.source_count != f::kSourceCount)
    return header_error(Errc::kBadData, CT_FIELD(source_count),
                        fmt::format("{} is not {}", h.source_count, f::kSourceCount));
  if (h.lane_count % f::kSourceCount != 0)
    return header_error(Errc::kBadData, CT_FIELD(lane_count),
                        fmt::format("{} is not a multiple of the {} sources", h.lane_count, f::kSourceCount));
  if (h.names_capacity < 1 || h.names_capacity > f::kMaxNames || h.name_entry_size != f::kNameEntrySize)
    return header_error(Errc::kBadData, CT_FIELD(names_capacity),
                        fmt::format("{} entries of {} bytes is not 1 to {} of {}", h.names_capacity,
                                    h.name_entry_size, f::kMaxNames, f::kNameEntrySize));
  std::uint32_t pools[f::kSourceCount];
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
    const std::uint32_t p = h.sources[c].pool_slots;
    /* Version 5's pools are their exact share; earlier ones a power of two. */
    const bool shape_ok = h.version >= 5 || (p & (p - 1)) == 0;
    if (p != 0 && (!shape_ok || p < 2ull * h.slots_per_lane || p > f::kMaxRegionSize / f::kSlotSize))
      return header_error(Errc::kBadData, "sources[].pool_slots",
                          offsetof(f::RingHeader, sources) + c * sizeof(f::SourceArea) + offsetof(f::SourceArea, pool_slots),
                          fmt::format("source {}: {} is not 0 or a {}from {} to {}", c, p,
                                      h.version >= 5 ? "number of slots " : "power of two ",
                                      2ull * h.slots_per_lane, f::kMaxRegionSize / f::kSlotSize));
    pools[c] = p;
  }
  const std::uint32_t per_source = h.lane_count / f::kSourceCount;
  const f::GeometryV3 g = f::geometry_v3(per_source, h.slots_per_lane, pools, h.names_capacity);
  if (h.lane_table_offset != g.lane_table_offset || h.lanes_offset != g.lanes_offset ||
      h.names_offset != g.names_offset || h.region_size != g.region_size)
    return header_error(Errc::kBadData, CT_FIELD(region_size),
                        fmt::format("lane table {:#x}, slots {:#x}, names {:#x}, region {:#x} are not the layout of "
                                    "{} lanes of {} slots, pools of {}, {} and {} slots and {} names "
                                    "({:#x}, {:#x}, {:#x}, {:#x})",
                                    h.lane_table_offset, h.lanes_offset, h.names_offset, h.region_size, h.lane_count,
                                    h.slots_per_lane, pools[0], pools[1], pools[2], h.names_capacity,
                                    g.lane_table_offset, g.lanes_offset, g.names_offset, g.region_size));
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
    const f::SourceArea &a = h.sources[c];
    if (a.first_lane != c * per_source || a.lane_count != per_source || a.pool_first_slot != g.pool_first_slot[c])
      return header_error(Errc::kBadData, "sources[].first_lane",
                          offsetof(f::RingHeader, sources) + c * sizeof(f::SourceArea),
                          fmt::format("source {}: lanes [{}, +{}) and pool at slot {} are not [{}, +{}) and {}", c,
                                      a.first_lane, a.lane_count, a.pool_first_slot, c * per_source, per_source,
                                      g.pool_first_slot[c]));
  }
  return {};
}

}  // namespace

bool has_ring_magic(std::span<const std::uint8_t> bytes) noexcept {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), f::kMagic, 4) == 0;
}

const char *kind_name(std::uint16_t kind) noexcept {
  switch (kind) {
    case f::kKindUser: return "USER";
    case f::kKindUserPtr: return "USER_PTR";
    case f::kKindThreadName: return "THREAD_NAME";
    case f::kKindCrash: return "CRASH";
    case f::kKindLaneClaim: return "LANE_CLAIM";
    case f::kKindSpanBegin: return "SPAN_BEGIN";
    case f::kKindSpanEnd: return "SPAN_END";
    case f::kKindStack: return "STACK";
    case f::kKindMalloc: return "MALLOC";
    case f::kKindFree: return "FREE";
    case f::kKindCalloc: return "CALLOC";
    case f::kKindRealloc: return "REALLOC";
    case f::kKindOpen: return "OPEN";
    case f::kKindRead: return "READ";
    case f::kKindWrite: return "WRITE";
    case f::kKindConnect: return "CONNECT";
    case f::kKindClose: return "CLOSE";
    case f::kKindAccept: return "ACCEPT";
    case f::kKindRecv: return "RECV";
    case f::kKindSend: return "SEND";
    case f::kKindPread: return "PREAD";
    case f::kKindPwrite: return "PWRITE";
    case f::kKindSendfile: return "SENDFILE";
    case f::kKindSocket: return "SOCKET";
    case f::kKindFsync: return "FSYNC";
    case f::kKindDup: return "DUP";
    default: return nullptr;
  }
}

Result<RingHeaderInfo> validate_ring_header(std::span<const std::uint8_t> bytes,
                                            std::uint64_t mapping_size) {
  if (!has_ring_magic(bytes))
    return Error{Errc::kNotFound, "ring header: no \"CTLN\" magic at offset 0x0"};
  if (bytes.size() < f::kHeaderSize)
    return Error{Errc::kTruncated, fmt::format("ring header: only {} of its {} bytes are present",
                                               bytes.size(), f::kHeaderSize)};
  /* A version-1 or -2 header is 512 bytes: the rest reads as zero. */
  f::RingHeader h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(&h, bytes.data(), std::min<std::size_t>(bytes.size(), sizeof h));
  if (h.endian_marker != f::kEndianMarker)
    return header_error(Errc::kBadData, CT_FIELD(endian_marker),
                        fmt::format("{:#010x} is not {:#010x} (byte-swapped or not a ring)",
                                    h.endian_marker, f::kEndianMarker));
  if (h.version < f::kMinVersion || h.version > f::kVersion)
    return header_error(Errc::kUnsupported, CT_FIELD(version),
                        fmt::format("version {} is not supported (this reader knows {} to {})", h.version,
                                    f::kMinVersion, f::kVersion));
  const std::uint32_t crc = f::header_crc(bytes.data());
  if (crc != h.header_crc)
    return header_error(Errc::kBadData, CT_FIELD(header_crc),
                        fmt::format("stored {:#010x}, computed {:#010x} over [0, {:#x}): header corrupt",
                                    h.header_crc, crc, f::kCrcEnd));
  const std::uint32_t header_needed = h.version >= 3 ? f::kHeaderSizeV3 : f::kHeaderSize;
  if (h.header_size < header_needed)
    return header_error(Errc::kBadData, CT_FIELD(header_size),
                        fmt::format("{} is smaller than {} (version {})", h.header_size, header_needed, h.version));
  if (bytes.size() < header_needed)
    return Error{Errc::kTruncated, fmt::format("ring header: only {} of its {} bytes are present", bytes.size(),
                                               header_needed)};
  const std::uint32_t incompat_known = h.version >= 2 ? f::kIncompatKnown : 0;
  if ((h.incompat_flags & ~incompat_known) != 0)
    return header_error(Errc::kUnsupported, CT_FIELD(incompat_flags),
                        fmt::format("unknown incompatible flags {:#x} for version {}",
                                    h.incompat_flags & ~incompat_known, h.version));
  if ((h.incompat_flags & f::kIncompatNoRing) != 0) return no_ring_header(h, bytes, mapping_size);
  if (h.slot_size != f::kSlotSize)
    return header_error(Errc::kBadData, CT_FIELD(slot_size),
                        fmt::format("{} is not {}", h.slot_size, f::kSlotSize));
  if (h.slots_per_lane < f::kMinSlotsPerLane || h.slots_per_lane > f::kMaxSlotsPerLane ||
      (h.slots_per_lane & (h.slots_per_lane - 1)) != 0)
    return header_error(Errc::kBadData, CT_FIELD(slots_per_lane),
                        fmt::format("{} is not a power of two in [{}, {}]", h.slots_per_lane,
                                    f::kMinSlotsPerLane, f::kMaxSlotsPerLane));
  if (h.lane_count < 2 || h.lane_count > f::kMaxLanes)
    return header_error(Errc::kBadData, CT_FIELD(lane_count),
                        fmt::format("{} is not in [2, {}]", h.lane_count, f::kMaxLanes));
  if (h.lane_table_offset < h.header_size || h.lane_table_offset % 8 != 0)
    return header_error(Errc::kBadData, CT_FIELD(lane_table_offset),
                        fmt::format("{:#x} is inside the header ({} bytes) or not 8-byte aligned",
                                    h.lane_table_offset, h.header_size));
  const std::uint64_t table_end =
      std::uint64_t{h.lane_table_offset} + std::uint64_t{h.lane_count} * f::kLaneDescSize;
  if (h.lanes_offset < table_end)
    return header_error(Errc::kBadData, CT_FIELD(lanes_offset),
                        fmt::format("{:#x} overlaps the lane table, which ends at {:#x}", h.lanes_offset,
                                    table_end));
  if (h.region_size > f::kMaxRegionSize)
    return header_error(Errc::kBadData, CT_FIELD(region_size),
                        fmt::format("{:#x} is larger than the {:#x} limit", h.region_size, f::kMaxRegionSize));
  const std::uint64_t slot_bytes =
      std::uint64_t{h.lane_count} * h.slots_per_lane * std::uint64_t{h.slot_size};
  if (h.lanes_offset > h.region_size || h.region_size - h.lanes_offset < slot_bytes)
    return header_error(Errc::kBadData, CT_FIELD(region_size),
                        fmt::format("{:#x} cannot hold {} lanes of {} slots after offset {:#x}",
                                    h.region_size, h.lane_count, h.slots_per_lane, h.lanes_offset));
  if (h.region_size > mapping_size)
    return header_error(Errc::kBadData, CT_FIELD(region_size),
                        fmt::format("{:#x} exceeds the {:#x} bytes of the mapping that holds the ring",
                                    h.region_size, mapping_size));
  if (h.build_id_len > f::kMaxBuildId)
    return header_error(Errc::kBadData, CT_FIELD(build_id_len),
                        fmt::format("{} is more than {}", h.build_id_len, f::kMaxBuildId));
  if (h.version >= 3) {
    CT_TRY_VOID(check_geometry_v3(h));
  } else if (h.version >= 2 && h.names_capacity != 0) {
    const std::uint64_t names_at = f::names_offset_for(h.lane_count, h.slots_per_lane);
    if (h.names_capacity > f::kMaxNames)
      return header_error(Errc::kBadData, CT_FIELD(names_capacity),
                          fmt::format("{} is more than {}", h.names_capacity, f::kMaxNames));
    if (h.name_entry_size != f::kNameEntrySize)
      return header_error(Errc::kBadData, CT_FIELD(name_entry_size),
                          fmt::format("{} is not {}", h.name_entry_size, f::kNameEntrySize));
    if (h.names_offset != names_at || h.lanes_offset != f::lanes_offset_for(h.lane_count))
      return header_error(Errc::kBadData, CT_FIELD(names_offset),
                          fmt::format("{:#x} is not right after the slots ({:#x})", h.names_offset, names_at));
    if (h.region_size - h.names_offset < std::uint64_t{h.names_capacity} * f::kNameEntrySize)
      return header_error(Errc::kBadData, CT_FIELD(region_size),
                          fmt::format("{:#x} cannot hold {} name entries at {:#x}", h.region_size,
                                      h.names_capacity, h.names_offset));
  } else if (h.version >= 2 && h.names_offset != 0) {
    return header_error(Errc::kBadData, CT_FIELD(names_offset),
                        fmt::format("{:#x} with names_capacity 0", h.names_offset));
  }
  if (bytes.size() < table_end)
    return Error{Errc::kTruncated,
                 fmt::format("ring lane table: ends at offset {:#x}, but only {:#x} bytes of the ring are "
                             "present", table_end, bytes.size())};

  RingHeaderInfo info = common_fields(h, bytes);
  info.lane_table_offset = h.lane_table_offset;
  info.lanes_offset = h.lanes_offset;
  info.latest_anchor_valid = (h.latest_anchor_seq & 1) == 0 && h.latest_ticks > h.anchor_ticks &&
                             h.latest_monotonic_ns > h.anchor_monotonic_ns;
  info.latest_ticks = h.latest_ticks;
  info.latest_realtime_ns = h.latest_realtime_ns;
  info.latest_monotonic_ns = h.latest_monotonic_ns;
  info.dropped = h.dropped;
  info.mmap_generation = h.mmap_generation;
  info.sync_count = h.sync_count;
  info.enabled_sources = h.enabled_sources;
  if (h.version >= 2) {
    info.names_offset = h.names_offset;
    info.names_capacity = h.names_capacity;
    info.crash_anchor_valid = h.crash_anchor_state == f::kAnchorComplete && h.crash_ticks > h.anchor_ticks &&
                              h.crash_monotonic_ns > h.anchor_monotonic_ns;
    info.crash_ticks = h.crash_ticks;
    info.crash_realtime_ns = h.crash_realtime_ns;
    info.crash_monotonic_ns = h.crash_monotonic_ns;
    info.crash_spread_ticks = h.crash_spread_ticks;
    info.names_claimed = h.names_claimed;
  }
  if (h.version >= 3) {
    info.budget_bytes = h.budget_bytes;
    for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
      const f::SourceArea &a = h.sources[c];
      info.sources.push_back({a.first_lane, a.lane_count, a.pool_first_slot, a.pool_slots, a.share_percent,
                              (a.flags & f::kSourcePresent) != 0, a.pool_used, a.dropped, a.grown, a.moved,
                              h.version >= 5 ? a.lent : 0});
    }
  }
  return info;
}

namespace {

/* Relative error of CLOCK_MONOTONIC's rate: NTP slews it by at most 500
 * ppm (adjtimex(2), "MAXFREQ"). */
constexpr double kMonotonicSlew = 500e-6;
/* Anchors closer than this give a rate too coarse to use. */
constexpr std::uint64_t kMinAnchorGapNs = 100'000;
/* A rate worse than this is not used: times would be guesses. */
constexpr double kMaxRateError = 0.01;

/* Who gave a rate, for notes: "the ring header", "the tl_init and crash
 * anchors"... */
std::string offer_text(SlotClock::Rate r) {
  switch (r) {
    case SlotClock::Rate::kHeader: return "the ring header";
    case SlotClock::Rate::kInitAndCrash: return "the tl_init and crash anchors";
    case SlotClock::Rate::kInitAndHelper: return "the tl_init and helper thread's anchors";
    case SlotClock::Rate::kInitAndSnapshot: return "the tl_init and snapshot anchors";
    case SlotClock::Rate::kUnknown: break;
  }
  return "?";
}

std::string offer_value(const SlotClock::Offer &o) {
  return o.error ? fmt::format("{:.6f} GHz (error at most {:.3f}%)", o.ticks_per_second / 1e9, *o.error * 100)
                 : fmt::format("{:.6f} GHz (error not bounded)", o.ticks_per_second / 1e9);
}

/* True if two offers' ranges, rate x (1 +- error), do not meet. */
bool disagree(const SlotClock::Offer &a, const SlotClock::Offer &b) {
  if (!a.error || !b.error) return false;
  const double lo_a = a.ticks_per_second * (1 - *a.error), hi_a = a.ticks_per_second * (1 + *a.error);
  const double lo_b = b.ticks_per_second * (1 - *b.error), hi_b = b.ticks_per_second * (1 + *b.error);
  return hi_a < lo_b || hi_b < lo_a;
}

/* The slot clock's rate: from the header, else from the init anchor and the
 * later anchor farthest from it (the crash handler's, else the helper
 * thread's latest).  Each anchor's ticks are the midpoint of two reads
 * around its clock_gettime calls, off by at most half their spread, so the
 * rate's relative error is at most (spread_a + spread_b) / 2 / ticks apart,
 * plus CLOCK_MONOTONIC's own slew.  Every rate the ring offers (the header's
 * and each anchor pair's) is checked against the others: a header rate the
 * anchors contradict is not used, and anchors that contradict each other
 * give no rate (SlotClock::offers). */
SlotClock derive_clock(const RingHeaderInfo &h, const std::optional<DecodeOptions::Anchor> &snap) {
  SlotClock c;
  c.anchors.push_back({h.anchor_ticks, static_cast<std::int64_t>(h.anchor_realtime_ns)});
  if (h.latest_anchor_valid)
    c.anchors.push_back({h.latest_ticks, static_cast<std::int64_t>(h.latest_realtime_ns)});
  if (h.crash_anchor_valid) c.anchors.push_back({h.crash_ticks, static_cast<std::int64_t>(h.crash_realtime_ns)});
  const bool snap_valid = snap && snap->ticks > h.anchor_ticks && snap->monotonic_ns > h.anchor_monotonic_ns &&
                          snap->realtime_ns > 0;
  if (snap_valid) c.anchors.push_back({snap->ticks, static_cast<std::int64_t>(snap->realtime_ns)});
  if (h.ticks_per_second != 0)
    c.offers.push_back({SlotClock::Rate::kHeader, static_cast<double>(h.ticks_per_second), kMonotonicSlew, {}});

  struct Pair {
    SlotClock::Rate from;
    std::uint64_t ticks, mono;
    std::optional<std::uint32_t> spread;
  };
  std::vector<Pair> pairs;
  if (h.crash_anchor_valid)
    pairs.push_back({SlotClock::Rate::kInitAndCrash, h.crash_ticks, h.crash_monotonic_ns, h.crash_spread_ticks});
  if (h.latest_anchor_valid)
    pairs.push_back({SlotClock::Rate::kInitAndHelper, h.latest_ticks, h.latest_monotonic_ns, std::nullopt});
  if (snap_valid)
    pairs.push_back({SlotClock::Rate::kInitAndSnapshot, snap->ticks, snap->monotonic_ns, snap->spread_ticks});
  /* The pair whose rate is used without a header: the farthest apart. */
  const Pair *best = nullptr;
  for (const auto &p : pairs)
    if (best == nullptr || p.mono > best->mono) best = &p;
  std::string best_refused;  /* why the farthest pair gives no rate */
  for (const auto &p : pairs) {
    const std::uint64_t dns = p.mono - h.anchor_monotonic_ns;
    const std::uint64_t dt = p.ticks - h.anchor_ticks;
    const char *what = p.from == SlotClock::Rate::kInitAndCrash      ? "crash"
                       : p.from == SlotClock::Rate::kInitAndSnapshot ? "snapshot's"
                                                                     : "helper thread's";
    std::string refused;
    const double tps = dns == 0 ? 0 : static_cast<double>(dt) * 1e9 / static_cast<double>(dns);
    /* The helper's anchor records no spread: bound its error by the init
     * anchor's, which was read the same way by the same process. */
    std::optional<double> err;
    if (h.anchor_spread_ticks != 0) {
      const double spread = static_cast<double>(h.anchor_spread_ticks) +
                            static_cast<double>(p.spread.value_or(h.anchor_spread_ticks));
      err = spread / 2 / static_cast<double>(dt) + kMonotonicSlew;
    }
    if (dns < kMinAnchorGapNs)
      refused = fmt::format("the slot clock's rate is unknown: the tl_init and {} anchors are only {} ns apart", what,
                            dns);
    /* A tick rate outside 1 MHz..100 GHz is not a clock. */
    else if (tps < 1e6 || tps > 1e11)
      refused = fmt::format("the slot clock's rate is unknown: the tl_init and {} anchors give {:.0f} ticks/s, "
                            "which is no clock", what, tps);
    else if (err && *err > kMaxRateError)
      refused = fmt::format("the slot clock's rate is unknown: the tl_init and {} anchors are {} ns apart, too close "
                            "for their read spreads ({:.2f}% error)", what, dns, *err * 100);
    if (!refused.empty()) {
      if (&p == best) best_refused = std::move(refused);
      continue;
    }
    c.offers.push_back({p.from, tps, err, {}});
  }
  for (auto &a : c.offers)
    for (const auto &b : c.offers)
      if (&a != &b && disagree(a, b)) a.disagrees_with.push_back(b.from);

  /* The anchors' own rate: the farthest pair's, when it gave one. */
  const SlotClock::Offer *anchors = nullptr;
  for (const auto &o : c.offers)
    if (best != nullptr && o.from == best->from) anchors = &o;
  /* Anchor pairs that contradict each other: which anchor is wrong cannot
   * be told, so no rate is. */
  for (const auto &a : c.offers) {
    if (a.from == SlotClock::Rate::kHeader) continue;
    for (const auto &b : c.offers) {
      if (b.from == SlotClock::Rate::kHeader || &a == &b || !disagree(a, b)) continue;
      c.note = fmt::format("the slot clock's rate is unknown: {} give {} and {} give {}, which disagree beyond "
                           "their bounds (an anchor is wrong, and which cannot be told)",
                           offer_text(a.from), offer_value(a), offer_text(b.from), offer_value(b));
      if (!c.offers.empty() && c.offers.front().from == SlotClock::Rate::kHeader)
        c.note += fmt::format("; the ring header says {:.6f} GHz", c.offers.front().ticks_per_second / 1e9);
      return c;
    }
  }
  if (h.ticks_per_second != 0) {
    const SlotClock::Offer &header = c.offers.front();
    if (header.disagrees_with.empty()) {
      c.rate_from = SlotClock::Rate::kHeader;
      c.ticks_per_second = header.ticks_per_second;
      c.rate_error = header.error;
      return c;
    }
    /* The header's rate is a bare claim; the anchors are measurements
     * that agree with each other: theirs is used. */
    const SlotClock::Offer &o = anchors != nullptr ? *anchors : c.offers[1];
    c.rate_from = o.from;
    c.ticks_per_second = o.ticks_per_second;
    c.rate_error = o.error;
    c.note = fmt::format("the ring header's rate, {}, disagrees with {}, {}, beyond their bounds: it is not used",
                         offer_value(header), offer_text(o.from), offer_value(o));
    return c;
  }
  if (best == nullptr) {
    c.note = h.version < 2
                 ? "the slot clock's rate is unknown: this version-1 ring has only its tl_init anchor (the process "
                   "died before the helper thread's first refresh, and version 1 records no crash anchor)"
                 : "the slot clock's rate is unknown: the ring has only its tl_init anchor (no crash anchor: the "
                   "crash handler did not run; no helper refresh: the process died within its first interval)";
    return c;
  }
  if (anchors == nullptr) {
    c.note = std::move(best_refused);
    return c;
  }
  c.rate_from = anchors->from;
  c.ticks_per_second = anchors->ticks_per_second;
  c.rate_error = anchors->error;
  if (!anchors->error) c.note = "the ring records no anchor spreads (version 1): the rate's error is not bounded";
  return c;
}

/* Printable ASCII other than space, 1..cap bytes before the first NUL. */
std::optional<std::string> name_field(const char *p, std::size_t cap, bool required) {
  std::size_t n = 0;
  while (n < cap && p[n] != '\0') {
    if (p[n] <= 0x20 || p[n] >= 0x7f) return std::nullopt;
    ++n;
  }
  if (n == cap || (required && n == 0)) return std::nullopt;
  return std::string(p, n);
}

/* The committed entries of the name table, bounded by the bytes present. */
void decode_names(std::span<const std::uint8_t> bytes, DecodedRing &r) {
  const auto &h = r.header;
  if (h.names_capacity == 0) return;
  const std::uint64_t claimed = std::min<std::uint64_t>(h.names_claimed, h.names_capacity);
  for (std::uint64_t i = 0; i < h.names_capacity; ++i) {
    const std::uint64_t off = h.names_offset + i * f::kNameEntrySize;
    if (off > bytes.size() || bytes.size() - off < f::kNameEntrySize) {
      if (i < claimed)
        r.warnings.push_back(fmt::format("the name table is cut off (truncated): {} of its {} registered names are "
                                         "not in the bytes available, so some events show ids, not names",
                                         claimed - i, claimed));
      break;
    }
    f::NameEntry e;
    std::memcpy(&e, bytes.data() + off, sizeof e);
    if (e.state == 0 && i >= claimed) continue;
    auto name = name_field(e.name, sizeof e.name, true);
    auto a0 = name_field(e.arg0, sizeof e.arg0, false);
    auto a1 = name_field(e.arg1, sizeof e.arg1, false);
    if (e.state != f::kNameCommitted || !name || !a0 || !a1 || e.arg_count > 2) {
      r.names_rejected++;
      continue;
    }
    r.names.push_back({static_cast<std::uint32_t>(i), e.id, std::move(*name), std::move(*a0), std::move(*a1)});
  }
  if (r.names_rejected > 0)
    r.warnings.push_back(fmt::format("{} name-table entries are not committed or not valid and were skipped",
                                     r.names_rejected));
  if (h.names_claimed > h.names_capacity)
    r.warnings.push_back(fmt::format("{} tl_name registrations were refused: the name table holds {}",
                                     h.names_claimed - h.names_capacity, h.names_capacity));
}

std::string bounded_name(const char *p, std::size_t n) {
  std::size_t len = 0;
  while (len < n && p[len] != '\0') ++len;
  return std::string(p, len);
}

}  // namespace

namespace {

/* Where a lane's slots are: its first slots for version 1 and 2; its
 * LaneDesc.extent for version 3, once checked.  A lane with a `problem`
 * is not decoded. */
struct LaneExtent {
  std::uint64_t first_slot = 0;
  std::uint64_t slots = 0;
  std::uint64_t segment = 0;     /* slots of the first segment: `slots`, or
                                    half of them in a split lane (v6) */
  std::uint64_t second_slot = 0; /* a split lane's second segment */
  std::string problem;
  /* The slot (from lanes_offset) of the lane's `index`th slot. */
  std::uint64_t slot(std::uint64_t index) const {
    return index < segment ? first_slot + index : second_slot + (index - segment);
  }
  /* How many of the lane's first slots (by index) lie whole in `size`
   * bytes from region start: the decoder reads those. */
  std::uint64_t present(std::uint64_t lanes_offset, std::uint64_t size) const {
    const auto fit = [&](std::uint64_t first, std::uint64_t n) {
      const std::uint64_t base = lanes_offset + first * f::kSlotSize;
      return base >= size ? 0 : std::min<std::uint64_t>(n, (size - base) / f::kSlotSize);
    };
    const std::uint64_t a = fit(first_slot, segment);
    return a < segment || segment == slots ? a : segment + fit(second_slot, slots - segment);
  }
};

std::vector<LaneExtent> lane_extents(std::span<const std::uint8_t> bytes, const RingHeaderInfo &hd,
                                     std::vector<std::string> &warnings) {
  const std::uint64_t S = hd.slots_per_lane;
  std::vector<LaneExtent> out(hd.lane_count);
  for (std::uint32_t lane = 0; lane < hd.lane_count; ++lane) {
    out[lane].first_slot = std::uint64_t{lane} * S;
    out[lane].slots = S;
    out[lane].segment = S;
  }
  if (hd.version < 3) return out;
  const std::uint32_t per_source = hd.lane_count / f::kSourceCount;
  struct Taken {
    std::uint64_t first, slots;
    std::uint32_t lane;
  };
  std::vector<Taken> in_pools;
  const std::uint64_t pools_first = hd.sources[0].pool_first_slot;
  std::uint64_t pools_end = pools_first;
  for (const SourceInfo &src : hd.sources) pools_end += src.pool_slots;
  for (std::uint32_t lane = 0; lane < hd.lane_count; ++lane) {
    f::LaneDesc d;
    std::memcpy(&d, bytes.data() + hd.lane_table_offset + std::uint64_t{lane} * f::kLaneDescSize, sizeof d);
    const SourceInfo &src = hd.sources[lane / per_source];
    const std::uint64_t first = f::extent_first_slot(d.extent);
    const std::uint32_t log2 = f::extent_log2(d.extent);
    LaneExtent &x = out[lane];
    if (log2 < 3 || log2 > 25) {
      x.problem = fmt::format("its extent {:#x} gives 2^{} slots", d.extent, log2);
      continue;
    }
    /* Version 6 splits lanes (bits 40-62); before it those bits were
     * never written and are not read. */
    const bool split = hd.version >= f::kSplitLaneVersion && f::extent_split(d.extent);
    if (hd.version >= f::kSplitLaneVersion && (d.extent >> 63) != 0) {
      x.problem = fmt::format("its extent {:#x} has bit 63 set", d.extent);
      continue;
    }
    const std::uint64_t slots = std::uint64_t{1} << log2;
    if (split) {
      const std::uint64_t second = f::extent_second_slot(d.extent);
      if (second < pools_first || second + slots > pools_end) {
        x.problem = fmt::format("its second segment (slot {}, {} slots) is not inside the pools (slot {}, {} slots)",
                                second, slots, pools_first, pools_end - pools_first);
        continue;
      }
      x.second_slot = second;
      in_pools.push_back({second, slots, lane});
    }
    const bool first_slots = first == std::uint64_t{lane} * S && slots == S;
    /* Version 5 lends: a lane may hold slots of any pool (the pools are
     * contiguous, after every lane's first slots). */
    const std::uint64_t pool_from = hd.version >= 5 ? pools_first : src.pool_first_slot;
    const std::uint64_t pool_end = hd.version >= 5 ? pools_end : std::uint64_t{src.pool_first_slot} + src.pool_slots;
    const bool in_pool = first >= pool_from && slots >= 2 * S && first + slots <= pool_end;
    if (!first_slots && !in_pool) {
      x.problem = fmt::format("its extent (slot {}, {} slots) is neither its first slots nor inside {} "
                              "(slot {}, {} slots)", first, slots, hd.version >= 5 ? "the pools" : "its source's pool",
                              pool_from, pool_end - pool_from);
      continue;
    }
    x.first_slot = first;
    x.segment = slots;
    x.slots = split ? 2 * slots : slots;
    if (in_pool) in_pools.push_back({first, slots, lane});
  }
  /* Lanes never share slots: of two that claim the same, neither is read. */
  std::sort(in_pools.begin(), in_pools.end(), [](const Taken &a, const Taken &b) { return a.first < b.first; });
  for (std::size_t i = 1; i < in_pools.size(); ++i) {
    const Taken &a = in_pools[i - 1], &b = in_pools[i];
    if (b.first < a.first + a.slots) {
      for (const Taken *t : {&a, &b})
        out[t->lane].problem = fmt::format("its extent (slot {}, {} slots) overlaps lane {}'s", t->first, t->slots,
                                           t == &a ? b.lane : a.lane);
    }
  }
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c)
    if (hd.sources[c].pool_used > hd.sources[c].pool_slots)
      warnings.push_back(fmt::format("source {}: pool_used {} is more than its pool's {} slots (the counter is not "
                                     "trusted; each lane's extent was checked)", c, hd.sources[c].pool_used,
                                     hd.sources[c].pool_slots));
  return out;
}

f::Slot slot_at(std::span<const std::uint8_t> bytes, std::uint64_t off) {
  f::Slot s;
  std::memcpy(&s, bytes.data() + off, sizeof s);
  return s;
}

RingEvent event_of(const f::Slot &s, std::uint32_t lane, std::uint32_t slot) {
  RingEvent e;
  e.lane = lane;
  e.slot = slot;
  e.seq = s.begin_seq;
  e.timestamp = s.timestamp;
  e.tid = s.tid;
  e.kind = s.kind;
  e.inline_len = s.inline_len;
  e.stack = s.stack;
  e.id = s.id;
  e.mmap_generation = s.mmap_generation;
  e.return_address = s.return_address;
  e.arg0 = s.arg0;
  e.arg1 = s.arg1;
  std::memcpy(e.inline_data.data(), s.inline_data, f::kInlineBytes);
  return e;
}

/* decode_ring() without a sink: the events in DecodedRing::events. */
class VectorSink final : public RingEventSink {
 public:
  explicit VectorSink(std::vector<RingEvent> &out) : out_(out) {}
  void reserve(std::uint64_t events, std::uint64_t) override { out_.reserve(events); }
  void event(const RingEvent &e) override { out_.push_back(e); }

 private:
  std::vector<RingEvent> &out_;
};

/* What decode_lane() shares across a ring's lanes. */
struct LaneScratch {
  std::vector<std::uint64_t> begins;  /* begin_seq of each present slot of the lane being decoded */
  std::vector<std::uint64_t> seqs;    /* the accepted sequences, lane after lane */
  std::uint64_t inline_total = 0;     /* inline bytes of the accepted slots */
};

/* A lane's summary as its descriptor and extent give it, before its slots
 * are read. */
LaneSummary lane_summary(const f::LaneDesc &d, const RingHeaderInfo &hd, std::uint32_t lane, const LaneExtent &x) {
  LaneSummary ls;
  ls.index = lane;
  ls.owner_tid = d.owner_tid;
  ls.flags = d.flags;
  ls.shared = (d.flags & f::kLaneShared) != 0;
  ls.write_index = d.write_index;
  ls.synced_index = d.synced_index;
  ls.claims = d.claims;
  ls.owner_name = bounded_name(d.owner_name, sizeof d.owner_name);
  if (hd.version >= 3) {
    ls.source = lane / (hd.lane_count / f::kSourceCount);
    ls.grown = d.grown;
  }
  ls.first_slot = x.first_slot;
  ls.capacity = x.slots;
  return ls;
}

/* Each of the lane's first `present` slots (where `x` puts them) judged: a committed
 * one's seq into scratch.seqs, a torn or invalid one into `rejected` (and
 * counted in `ls`), a live snapshot's slot caught mid-write into the
 * returned list (DecodeOptions::live).  scratch.begins gets every slot's
 * begin_seq. */
std::vector<std::uint64_t> judge_slots(std::span<const std::uint8_t> bytes, const RingHeaderInfo &hd,
                                       const DecodeOptions &options, const LaneExtent &x, std::uint64_t present,
                                       LaneSummary &ls, LaneScratch &scratch, std::vector<RejectedSlot> &rejected) {
  const std::uint32_t lane = ls.index;
  const std::uint64_t S = ls.capacity;
  /* A live snapshot's slots caught mid-write: the lane's last reserved
   * sequences (DecodeOptions::live). */
  const std::uint64_t live_slack = ls.shared ? std::min<std::uint64_t>(kSharedLaneSlack, S) : kPrivateLaneSlack;
  const auto caught_writing = [&](std::uint64_t seq) {
    return options.live && seq != 0 && seq <= ls.write_index && ls.write_index - seq < live_slack;
  };
  std::vector<std::uint64_t> caught; /* at most live_slack: one slot per sequence */
  for (std::uint64_t i = 0; i < present; ++i) {
    const f::Slot s = slot_at(bytes, hd.lanes_offset + x.slot(i) * f::kSlotSize);
    scratch.begins[i] = s.begin_seq;
    if (s.begin_seq == 0 && s.end_seq == 0) continue; /* never written */
    RejectedSlot rej;
    rej.lane = lane;
    rej.slot = static_cast<std::uint32_t>(i);
    rej.seq = s.begin_seq & ~f::kSeqWriting;
    if ((s.begin_seq & f::kSeqWriting) != 0) {
      rej.torn = true;
      rej.reason = fmt::format("begin_seq has the WRITING bit: seq {} was being written", rej.seq);
    } else if (s.begin_seq != s.end_seq) {
      rej.torn = true;
      rej.reason = fmt::format("begin_seq {} != end_seq {}", s.begin_seq, s.end_seq);
    } else if (s.begin_seq == 0 || (s.begin_seq - 1) % S != i) {
      rej.reason = fmt::format("seq {} does not belong in slot {} (expected slot {})", s.begin_seq, i,
                               s.begin_seq == 0 ? 0 : (s.begin_seq - 1) % S);
    } else if (hd.version < 4 && s.stack != 0) {
      /* Before version 4, byte 23 is the high byte of a 16-bit inline_len. */
      rej.reason = fmt::format("inline_len {} exceeds {}", s.inline_len | s.stack << 8, f::kInlineBytes);
    } else if (s.inline_len > f::kInlineBytes) {
      rej.reason = fmt::format("inline_len {} exceeds {}", s.inline_len, f::kInlineBytes);
    } else if (s.kind == 0) {
      rej.reason = "kind 0 is never written";
    } else if (s.tid == 0) {
      rej.reason = "tid 0 (a writer always stores its gettid())";
    } else {
      scratch.seqs.push_back(s.begin_seq);
      scratch.inline_total += s.inline_len;
      continue;
    }
    if (rej.torn && caught_writing(rej.seq) && (rej.seq - 1) % S == i) {
      if (caught.size() < live_slack) {
        caught.push_back(rej.seq);
        continue;
      }
    }
    if (rej.torn) ls.torn++;
    else ls.invalid++;
    rejected.push_back(std::move(rej));
  }
  return caught;
}

/* The untrusted write_index cross-checked with what the slots show
 * (docs/design.md: integrity by cross-check, not by CRC): sets
 * ls.counter_inconsistent with its reason, or ls.in_flight. */
void check_write_index(LaneSummary &ls, std::uint64_t present, const std::vector<std::uint64_t> &begins) {
  const std::uint64_t S = ls.capacity;
  const std::uint64_t W = ls.write_index;
  if (ls.committed > 0 && W == 0) {
    ls.counter_inconsistent = true;
    ls.counter_reason = fmt::format("write_index is 0 but {} slots hold events up to seq {} (zeroed counter)",
                                    ls.committed, ls.last_seq);
  } else if (W < ls.last_seq) {
    ls.counter_inconsistent = true;
    ls.counter_reason = fmt::format("write_index {} is below seq {}, which is committed (deflated counter)",
                                    W, ls.last_seq);
  } else if (W > ls.last_seq) {
    const std::uint64_t gap = W - ls.last_seq;
    if (gap > S) {
      ls.counter_inconsistent = true;
      ls.counter_reason = fmt::format(
          "write_index {} is more than a lane ({} slots) beyond the highest committed seq {} "
          "(inflated counter)", W, S, ls.last_seq);
    } else {
      /* Sequences in (last_seq, W] whose slot shows them being written
       * (begin_seq == seq | WRITING).  The range holds at most one
       * sequence per slot, so this looks at each present slot once. */
      std::uint64_t writing = 0;
      const auto reserved = [&](std::uint64_t seq, std::uint64_t i) {
        return seq > ls.last_seq && seq <= W && (seq - 1) % S == i;
      };
      for (std::uint64_t i = 0; i < present; ++i) {
        const std::uint64_t b = begins[i];
        if ((b & f::kSeqWriting) != 0 && (reserved(b & ~f::kSeqWriting, i) || reserved(b, i))) writing++;
      }
      const std::uint64_t not_begun = gap - writing;
      const std::uint64_t slack = ls.shared ? std::min<std::uint64_t>(kSharedLaneSlack, S) : kPrivateLaneSlack;
      ls.in_flight = gap;
      if (not_begun > slack) {
        ls.counter_inconsistent = true;
        ls.counter_reason = fmt::format(
            "write_index {} claims {} events after seq {} that no slot shows begun (at most {} can be "
            "reserved and not yet begun; inflated counter)", W, not_begun, ls.last_seq, slack);
      }
    }
  }
}

/* One lane of the ring: its summary into r.lanes, its committed slots'
 * seqs (sorted) appended to scratch.seqs, its rejected slots, warnings and
 * counts into r. */
void decode_lane(std::span<const std::uint8_t> bytes, const DecodeOptions &options, std::uint32_t lane,
                 const LaneExtent &x, LaneScratch &scratch, DecodedRing &r) {
  const RingHeaderInfo &hd = r.header;
  f::LaneDesc d;
  std::memcpy(&d, bytes.data() + hd.lane_table_offset + std::uint64_t{lane} * f::kLaneDescSize, sizeof d);
  LaneSummary ls = lane_summary(d, hd, lane, x);
  const std::uint64_t S = x.slots;
  std::vector<std::uint64_t> &seqs = scratch.seqs;
  const std::size_t lane_start = seqs.size();
  if (!x.problem.empty()) {
    ls.counter_inconsistent = true;
    ls.counter_reason = x.problem;
    r.counter_inconsistent = true;
    r.lanes.push_back(std::move(ls));
    return;
  }
  std::uint64_t backwards = 0;
  const std::uint64_t present = x.present(hd.lanes_offset, bytes.size());
  ls.slots_absent = S - present;
  const std::vector<std::uint64_t> caught = judge_slots(bytes, hd, options, x, present, ls, scratch, r.rejected);
  const auto first = seqs.begin() + static_cast<std::ptrdiff_t>(lane_start);
  std::sort(first, seqs.end());
  ls.committed = static_cast<std::uint64_t>(seqs.end() - first);
  const auto timestamp_of = [&](std::uint64_t seq) {
    std::uint64_t t;
    std::memcpy(&t, bytes.data() + hd.lanes_offset + x.slot((seq - 1) % S) * f::kSlotSize + offsetof(f::Slot, timestamp), sizeof t);
    return t;
  };
  std::uint64_t previous = 0;
  for (auto it = first; it != seqs.end(); ++it) {
    const std::uint64_t t = timestamp_of(*it);
    if (it != first && t != 0 && previous > t) backwards++;
    previous = t;
  }
  if (ls.committed > 0) {
    ls.first_seq = *first;
    ls.first_timestamp = timestamp_of(*first);
    ls.last_seq = seqs.back();
    ls.overwritten = ls.first_seq - 1;
    ls.missing = (ls.last_seq - ls.first_seq + 1) - ls.committed;
  }
  /* Caught below the last committed sequence (a signal handler's event
   * committed above one being written): in flight, not missing.  Those
   * above it are counted with the reserved ones, below. */
  std::uint64_t caught_below = 0;
  for (const std::uint64_t seq : caught) caught_below += ls.committed > 0 && seq > ls.first_seq && seq < ls.last_seq;
  ls.missing -= std::min(ls.missing, caught_below);

  check_write_index(ls, present, scratch.begins);
  ls.in_flight += caught_below;
  if (backwards > 0)
    r.warnings.push_back(fmt::format("lane {}: {} events have an earlier timestamp than the event before "
                                     "them in the lane (slot clock not monotonic across owners/CPUs)",
                                     lane, backwards));
  r.counter_inconsistent |= ls.counter_inconsistent;
  r.overwritten += ls.overwritten;
  r.torn += ls.torn;
  r.invalid += ls.invalid;
  r.missing += ls.missing;
  r.in_flight += ls.in_flight;
  r.lanes.push_back(std::move(ls));
}

}  // namespace

Result<DecodedRing> decode_ring(std::span<const std::uint8_t> bytes, std::uint64_t mapping_size) {
  std::vector<RingEvent> events;
  VectorSink sink(events);
  CT_TRY(r, decode_ring(bytes, mapping_size, sink));
  r.events = std::move(events);
  return r;
}

Result<DecodedRing> decode_ring(std::span<const std::uint8_t> bytes, std::uint64_t mapping_size,
                                RingEventSink &sink) {
  return decode_ring(bytes, mapping_size, sink, DecodeOptions{});
}

Result<DecodedRing> decode_ring(std::span<const std::uint8_t> bytes, std::uint64_t mapping_size,
                                RingEventSink &sink, const DecodeOptions &options) {
  CT_TRY(h, validate_ring_header(bytes, mapping_size));
  DecodedRing r;
  r.live = options.live;
  r.header = std::move(h);
  const auto &hd = r.header;
  r.bytes_present = std::min<std::uint64_t>(bytes.size(), hd.region_size);
  r.truncated = bytes.size() < hd.region_size;
  r.clock = derive_clock(hd, options.snapshot_anchor);
  r.ticks_per_second = r.clock.ticks_per_second;
  if (hd.no_ring) return r;
  decode_names(bytes, r);
  const std::vector<LaneExtent> extents = lane_extents(bytes, hd, r.warnings);
  std::uint64_t widest = 0;
  for (const auto &x : extents) widest = std::max(widest, x.slots);
  /* Where the lane's `index`th slot is, from region start. */
  const auto slot_offset = [&](std::uint32_t lane, std::uint64_t index) {
    return hd.lanes_offset + extents[lane].slot(index) * f::kSlotSize;
  };

  /* begin_seq of each present slot of the lane being decoded, for the
   * in-flight check; reused across lanes.  Only slots whose bytes are there
   * are visited: a header may claim a region of 4 GiB with one page in the
   * core, and the work must follow the bytes, not the claim. */
  LaneScratch scratch;
  scratch.begins.resize(std::min<std::uint64_t>(widest, bytes.size() / f::kSlotSize));
  /* The accepted sequences, lane after lane, each lane's sorted: the events
   * are read from their slots ((seq - 1) % S) once every lane is judged, in
   * this order.  At most one per slot present: reserving that many costs
   * address space, and memory only for what is written. */
  std::vector<std::uint64_t> &seqs = scratch.seqs;
  seqs.reserve(bytes.size() / f::kSlotSize);
  std::vector<std::size_t> lane_start(hd.lane_count + std::size_t{1}, 0);
  for (std::uint32_t lane = 0; lane < hd.lane_count; ++lane) {
    lane_start[lane] = seqs.size();
    decode_lane(bytes, options, lane, extents[lane], scratch, r);
  }
  lane_start[hd.lane_count] = seqs.size();
  sink.reserve(seqs.size(), scratch.inline_total);
  for (std::uint32_t lane = 0; lane < hd.lane_count; ++lane)
    for (std::size_t k = lane_start[lane]; k < lane_start[lane + 1]; ++k) {
      const std::uint64_t slot = (seqs[k] - 1) % extents[lane].slots;
      sink.event(event_of(slot_at(bytes, slot_offset(lane, slot)), lane,
                          static_cast<std::uint32_t>(slot)));
    }
  std::uint64_t absent = 0, lanes_cut = 0, first_cut = 0;
  for (const auto &l : r.lanes)
    if (l.slots_absent > 0) {
      if (lanes_cut++ == 0) first_cut = l.index;
      absent += l.slots_absent;
    }
  if (absent > 0)
    r.warnings.push_back(fmt::format("truncated: {} slots in {} lanes (from lane {} on) are not in the bytes "
                                     "available ({} of {})", absent, lanes_cut, first_cut, r.bytes_present,
                                     hd.region_size));
  return r;
}

std::optional<std::int64_t> ticks_delta_ns(const DecodedRing &ring, std::uint64_t ticks, std::uint64_t reference) {
  if (ticks == 0 || reference == 0 || ring.ticks_per_second <= 0) return std::nullopt;
  const long double delta = static_cast<long double>(static_cast<std::int64_t>(ticks - reference));
  const long double ns = delta * 1e9L / static_cast<long double>(ring.ticks_per_second);
  if (ns < -9.2e18L || ns > 9.2e18L) return std::nullopt;
  return static_cast<std::int64_t>(ns);
}

std::optional<std::int64_t> ticks_to_realtime_ns(const DecodedRing &ring, std::uint64_t ticks) {
  if (ticks == 0 || ring.ticks_per_second <= 0) return std::nullopt;
  const SlotClock::Anchor *near = nullptr;
  std::uint64_t best = UINT64_MAX;
  for (const auto &a : ring.clock.anchors) {
    if (a.realtime_ns <= 0 || a.ticks == 0) continue;
    const std::uint64_t d = ticks > a.ticks ? ticks - a.ticks : a.ticks - ticks;
    if (d < best) best = d, near = &a;
  }
  if (near == nullptr) return std::nullopt;
  const auto delta = ticks_delta_ns(ring, ticks, near->ticks);
  if (!delta) return std::nullopt;
  const long double ns = static_cast<long double>(near->realtime_ns) + static_cast<long double>(*delta);
  if (ns < 0 || ns > 9.2e18L) return std::nullopt;
  return static_cast<std::int64_t>(ns);
}

std::string_view rate_source_name(SlotClock::Rate r) noexcept {
  switch (r) {
    case SlotClock::Rate::kUnknown: return "";
    case SlotClock::Rate::kHeader: return "header";
    case SlotClock::Rate::kInitAndCrash: return "init_and_crash_anchors";
    case SlotClock::Rate::kInitAndHelper: return "init_and_helper_anchors";
    case SlotClock::Rate::kInitAndSnapshot: return "init_and_snapshot_anchors";
  }
  return "";
}

}  // namespace core_timeline::reader
