/* SPDX-License-Identifier: MIT */
/*
 * ring.h - validating and decoding one core-timeline ring from its bytes.
 *
 * The layout is lib/include/core_timeline/ring_format.h (docs/ring-format.md).
 * These functions are pure: they look only at the bytes given, never at the
 * core or the host, so the fuzzer and the sidecar path use them as they are.
 *
 * Validation follows "The reader's validation steps" of docs/design.md and the format's
 * rules, in this order, before any offset from the header is used:
 *   magic "CTLN"; 512 header bytes present (1024 for version 3);
 *   endian_marker; version 1, 2 or 3;
 *   header CRC-32C over [0, 384); header_size; unknown incompat_flags;
 *   (a version-2 header with kIncompatNoRing is a ring-less header: only
 *   lane_count 0, region_size <= the mapping and the error text are
 *   checked, and no slot is decoded);
 *   slot_size 128; slots_per_lane a power of two in [8, 2^20]; lane_count in
 *   [2, 4096]; lane table after the header and before the slots; slots
 *   inside region_size; region_size <= 4 GiB and <= the mapping; (version
 *   2) the name table right after the slots, inside region_size; (version
 *   3) every offset and the source table equal to what geometry_v3 gives
 *   for lane_count, slots_per_lane, the pools and names_capacity, each pool
 *   a power of two of at least 2 x slots_per_lane slots, or none.
 * Each version-3 lane's extent must be its first slots, or lie inside its
 * own source's pool and overlap no other lane's; a lane whose extent
 * breaks that is not decoded (counter_inconsistent says why).
 * Then every lane is scanned slot by slot (never by trusting write_index):
 *   a slot is accepted only if begin_seq == end_seq == a sequence whose
 *   position (seq - 1) % slots_per_lane is this slot, with inline_len <= 64,
 *   a known-nonzero kind and a nonzero tid; a slot with the WRITING bit, or
 *   begin_seq != end_seq, is torn; other nonzero slots are invalid.  Both
 *   are listed, never rendered.  The lane's write_index is then compared
 *   with what the slots show (counter_inconsistent).
 *
 * Memory: decoding allocates per accepted event: the RingEvent (128 bytes)
 * in DecodedRing::events, or nothing when a RingEventSink takes them, plus
 * 8 bytes per accepted event while the ring is decoded (each lane's
 * sequences, sorted); the vector is reserved exactly, never grown.  The
 * work is bounded by the bytes present (at most 4 GiB / 128 slots),
 * whatever the counters say.
 * Thread-safety: pure functions; safe from any thread.
 */
#ifndef CORE_TIMELINE_READER_RING_H
#define CORE_TIMELINE_READER_RING_H

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core_timeline/reader/result.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::reader {

/** One source's lanes and pool, as read (version 3; format::SourceArea). */
struct SourceInfo {
  std::uint32_t first_lane = 0;
  std::uint32_t lane_count = 0;
  std::uint32_t pool_first_slot = 0;
  std::uint32_t pool_slots = 0;
  std::uint32_t share_percent = 0;
  bool present = false;            /**< kSourcePresent */
  /* mutable (untrusted) */
  std::uint64_t pool_used = 0;
  std::uint64_t dropped = 0;
  std::uint64_t grown = 0;
  std::uint64_t moved = 0;
  std::uint64_t lent = 0;          /**< (v5) its pool's slots taken by other
                                        sources' lanes */
};

/** The header fields, as read (the CRC-covered ones are verified). */
struct RingHeaderInfo {
  std::uint16_t version = 0;
  std::uint16_t header_size = 0;
  std::uint32_t incompat_flags = 0;
  std::uint32_t compat_flags = 0;
  std::uint32_t slot_size = 0;
  std::uint32_t slots_per_lane = 0;
  std::uint32_t lane_count = 0;
  std::uint32_t lane_table_offset = 0;
  std::uint32_t header_crc = 0;
  std::uint64_t lanes_offset = 0;
  std::uint64_t region_size = 0;
  std::uint64_t process_start_ticks = 0;
  std::uint32_t pid = 0;
  std::uint32_t writer_version = 0;
  std::uint64_t pid_ns_inode = 0;
  std::uint64_t pid_ns_dev = 0;
  std::vector<std::uint8_t> build_id;
  std::uint64_t sidecar_dev = 0;
  std::uint64_t sidecar_ino = 0;
  std::uint64_t anchor_ticks = 0;
  std::uint64_t anchor_realtime_ns = 0;
  std::uint64_t anchor_monotonic_ns = 0;
  std::uint64_t ticks_per_second = 0;
  /* version 2 (zero for a version-1 ring) */
  std::uint64_t names_offset = 0;
  std::uint32_t names_capacity = 0;
  std::uint32_t anchor_spread_ticks = 0;  /**< 0: unknown */
  bool no_ring = false;                   /**< kIncompatNoRing */
  std::int32_t init_error = 0;            /**< errno, with no_ring */
  std::string init_error_text;            /**< printable, with no_ring */
  /* mutable part (not CRC-covered; untrusted) */
  bool latest_anchor_valid = false;  /**< seqlock even and values plausible */
  std::uint64_t latest_ticks = 0;
  std::uint64_t latest_realtime_ns = 0;
  std::uint64_t latest_monotonic_ns = 0;
  bool crash_anchor_valid = false;   /**< kAnchorComplete, after the init
                                          anchor on both clocks */
  std::uint64_t crash_ticks = 0;
  std::uint64_t crash_realtime_ns = 0;
  std::uint64_t crash_monotonic_ns = 0;
  std::uint32_t crash_spread_ticks = 0;
  std::uint64_t names_claimed = 0;
  std::uint64_t dropped = 0;
  std::uint64_t mmap_generation = 0;
  std::uint64_t sync_count = 0;
  std::uint32_t enabled_sources = 0;
  /* version 3 (empty, 0 for older rings) */
  std::vector<SourceInfo> sources; /**< by format::Source */
  std::uint64_t budget_bytes = 0;
  /** The CRC-covered bytes [0, 384), to compare a sidecar with a ring. */
  std::array<std::uint8_t, format::kCrcEnd> immutable{};
};

/** One accepted (committed) slot. */
struct RingEvent {
  std::uint32_t lane = 0;
  std::uint32_t slot = 0;
  std::uint64_t seq = 0;
  std::uint64_t timestamp = 0;   /**< slot clock ticks; 0: none */
  std::uint32_t tid = 0;
  std::uint16_t kind = 0;        /**< format::Kind */
  std::uint16_t inline_len = 0;  /**< <= 64 */
  std::uint8_t stack = 0;        /**< Slot.stack (version 4; 0 before) */
  std::uint32_t id = 0;
  std::uint32_t mmap_generation = 0;
  std::uint64_t return_address = 0;
  std::uint64_t arg0 = 0;
  std::uint64_t arg1 = 0;
  std::array<std::uint8_t, format::kInlineBytes> inline_data{};
};

/** A slot that was not accepted. */
struct RejectedSlot {
  std::uint32_t lane = 0;
  std::uint32_t slot = 0;
  std::uint64_t seq = 0;       /**< the sequence it claims (begin_seq without
                                    the WRITING bit) */
  bool torn = false;           /**< true: torn (mid-write or begin != end);
                                    false: invalid contents */
  std::string reason;
};

/** What one lane holds and how it compares with its counters. */
struct LaneSummary {
  std::uint32_t index = 0;
  /** The lane's source (version 3); nullopt for a version-1 or -2 lane,
   *  which may hold events of every source. */
  std::optional<std::uint32_t> source;
  std::uint64_t first_slot = 0;  /**< its extent, in slots from lanes_offset */
  std::uint64_t capacity = 0;    /**< slots in its extent */
  std::uint32_t grown = 0;       /**< times it grew (version 3) */
  std::uint32_t owner_tid = 0;
  std::uint32_t flags = 0;
  bool shared = false;           /**< the overflow lane (kLaneShared) */
  std::uint64_t write_index = 0; /**< as written (untrusted) */
  std::uint64_t synced_index = 0;
  std::uint64_t claims = 0;
  std::string owner_name;        /**< raw bytes up to the first NUL */
  std::uint64_t committed = 0;   /**< accepted slots */
  std::uint64_t first_seq = 0;   /**< lowest accepted seq, 0 if none */
  std::uint64_t first_timestamp = 0; /**< the timestamp of first_seq's event
                                      (0: none, or no events) */
  std::uint64_t last_seq = 0;    /**< highest accepted seq, 0 if none */
  std::uint64_t overwritten = 0; /**< sequences before first_seq: recorded,
                                      then overwritten by newer events */
  std::uint64_t missing = 0;     /**< sequences in [first_seq, last_seq] not
                                      accepted (torn, invalid, never
                                      finished) */
  std::uint64_t torn = 0;
  std::uint64_t invalid = 0;
  std::uint64_t in_flight = 0;   /**< write_index beyond last_seq that the
                                      slots explain (reserved, being written);
                                      in a live snapshot also the slots
                                      caught being written below last_seq
                                      (DecodeOptions::live) */
  std::uint64_t slots_absent = 0;/**< slots whose bytes are not present
                                      (truncated core) */
  bool counter_inconsistent = false;
  std::string counter_reason;
};

/** A name the program registered with tl_name (ring format version 2). */
struct RingName {
  std::uint32_t index = 0;     /**< entry in the table */
  std::uint32_t id = 0;
  std::string name;            /**< checked: printable ASCII, no space */
  std::string arg0, arg1;      /**< "" when not given */
};

/** What the reader knows of the slot clock, from the header's anchors.
 *  docs/ring-format.md, "Time", gives the method and the error bound. */
struct SlotClock {
  /** kInitAndSnapshot: the init anchor and a live snapshot's own
   *  (DecodeOptions::snapshot_anchor). */
  enum class Rate { kUnknown, kHeader, kInitAndCrash, kInitAndHelper, kInitAndSnapshot };
  Rate rate_from = Rate::kUnknown;
  double ticks_per_second = 0;   /**< 0: unknown (see note) */
  /** Bound on the relative error of ticks_per_second (0.0005 is 500 ppm);
   *  nullopt when the ring records no anchor spreads (version 1). */
  std::optional<double> rate_error;
  std::string note;              /**< why the rate is unknown, or what
                                      limits it, or which offered rate
                                      was not used; "" if nothing to say */
  /** One rate the ring offers: the header's ticks_per_second (its bound
   *  taken as CLOCK_MONOTONIC's slew), or the init anchor and one later
   *  anchor (crash, helper, snapshot) whose rate passes the checks of
   *  derive_clock (far enough apart, a clock, bound at most 1%). */
  struct Offer {
    Rate from = Rate::kUnknown;
    double ticks_per_second = 0;
    std::optional<double> error;   /**< relative bound; nullopt: none */
    /** The offers whose ranges, rate x (1 +- error), do not meet this
     *  one's: they disagree beyond their bounds.  An offer without a
     *  bound disagrees with none. */
    std::vector<Rate> disagrees_with;
  };
  /** Every rate the ring offers, header first, then the anchor pairs
   *  (crash, helper, snapshot).  When they disagree: a header that
   *  disagrees with anchors that agree among themselves is not used (the
   *  anchors' rate is, and note says so); anchors that disagree among
   *  themselves give no rate (ticks_per_second 0, note says which). */
  std::vector<Offer> offers;
  struct Anchor {
    std::uint64_t ticks = 0;
    std::int64_t realtime_ns = 0;
  };
  std::vector<Anchor> anchors;   /**< init, then the helper's, then the
                                      crash's: for wall-clock times */
};
std::string_view rate_source_name(SlotClock::Rate r) noexcept;

struct DecodedRing {
  RingHeaderInfo header;
  std::vector<LaneSummary> lanes;
  std::vector<RingEvent> events;        /**< by lane, then seq; empty when a
                                           RingEventSink took them (analyze()
                                           does: they are in Analysis::events) */
  std::vector<RejectedSlot> rejected;   /**< torn and invalid slots */
  std::uint64_t bytes_present = 0;      /**< bytes of the region available */
  bool truncated = false;               /**< bytes_present < region_size */
  bool counter_inconsistent = false;    /**< any lane's */
  std::uint64_t overwritten = 0;        /**< sum over lanes */
  std::uint64_t torn = 0;
  std::uint64_t invalid = 0;
  std::uint64_t missing = 0;
  std::uint64_t in_flight = 0;          /**< sum over lanes */
  bool live = false;                    /**< decoded as a live snapshot's */
  /** Slot-clock ticks per second, from the header or derived from the two
   *  clock anchors; 0 if unknown (clock.note says why). */
  double ticks_per_second = 0;
  SlotClock clock;
  /** Committed name entries, newest last (version 2). */
  std::vector<RingName> names;
  std::uint64_t names_rejected = 0;  /**< entries not committed or not valid */
  std::vector<std::string> warnings;
};

/** Slack allowed between write_index and the highest committed sequence for
 *  sequences reserved but not yet begun: a private lane's owner plus a
 *  signal handler that interrupted it; the shared lane's concurrent users. */
inline constexpr std::uint64_t kPrivateLaneSlack = 2;
inline constexpr std::uint64_t kSharedLaneSlack = 64;

/** True if `bytes` starts with "CTLN". */
bool has_ring_magic(std::span<const std::uint8_t> bytes) noexcept;

/**
 * Validates the header of the ring whose region starts at bytes[0].
 * @bytes: the bytes of the region that are available (may be fewer than
 *         region_size: a truncated core).
 * @mapping_size: the bytes of address space the mapping holding the ring
 *         spans (region_size may not exceed it).
 * Errors: kNotFound (no magic), kTruncated (header or lane table not all
 * present), kUnsupported (version, incompat flags), kBadData (anything else),
 * each naming the field and its offset in the region.
 */
Result<RingHeaderInfo> validate_ring_header(std::span<const std::uint8_t> bytes,
                                            std::uint64_t mapping_size);

/** validate_ring_header, then decode every lane as described above. */
Result<DecodedRing> decode_ring(std::span<const std::uint8_t> bytes, std::uint64_t mapping_size);

/** Takes the events decode_ring() accepts instead of DecodedRing::events,
 *  so a caller that keeps events of its own (analyze()) does not hold a
 *  big ring's events twice. */
class RingEventSink {
 public:
  /** Once, after every lane was scanned and before the first event():
   *  how many events follow, and how many inline bytes they carry in all
   *  (sum of inline_len). */
  virtual void reserve(std::uint64_t events, std::uint64_t inline_bytes) = 0;
  /** Each accepted event, by lane, then seq (the order of
   *  DecodedRing::events). */
  virtual void event(const RingEvent &e) = 0;

 protected:
  ~RingEventSink() = default;
};

/** As decode_ring() above, but each accepted event goes to `sink`, and
 *  the DecodedRing's `events` stays empty.  Nothing reaches `sink` when
 *  the header does not validate (the only error). */
Result<DecodedRing> decode_ring(std::span<const std::uint8_t> bytes, std::uint64_t mapping_size,
                                RingEventSink &sink);

/** How decode_ring() reads a ring. */
struct DecodeOptions {
  /** The ring is a live snapshot's (live.h; docs/ring-format.md, "Reading
   *  a live ring"): a slot with the WRITING bit or begin_seq != end_seq
   *  whose sequence is one of the lane's last reserved ones (within
   *  kPrivateLaneSlack, or kSharedLaneSlack for the shared lane, of
   *  write_index) was being written when it was copied: it is counted in
   *  the lane's in_flight, not torn, and is not listed in `rejected`.
   *  Any other such slot is torn, as in a core. */
  bool live = false;
  /** A live snapshot's reading of the slot clock with CLOCK_MONOTONIC and
   *  CLOCK_REALTIME (live.h LiveSnapshotNote), taken as a third anchor:
   *  the rate comes from it and the init anchor when it is later than the
   *  helper thread's (the longer baseline). */
  struct Anchor {
    std::uint64_t ticks = 0;         /**< midpoint of two reads */
    std::uint64_t monotonic_ns = 0;
    std::uint64_t realtime_ns = 0;
    std::uint32_t spread_ticks = 0;  /**< between the two reads */
  };
  std::optional<Anchor> snapshot_anchor;
};

/** decode_ring() with options. */
Result<DecodedRing> decode_ring(std::span<const std::uint8_t> bytes, std::uint64_t mapping_size,
                                RingEventSink &sink, const DecodeOptions &options);

/** Slot-clock ticks as CLOCK_REALTIME nanoseconds, from the ring's anchor
 *  nearest in ticks; nullopt if the clock rate is unknown or ticks is 0. */
std::optional<std::int64_t> ticks_to_realtime_ns(const DecodedRing &ring, std::uint64_t ticks);

/** `ticks` minus `reference` in nanoseconds of the slot clock; nullopt if
 *  the rate is unknown or either is 0. */
std::optional<std::int64_t> ticks_delta_ns(const DecodedRing &ring, std::uint64_t ticks, std::uint64_t reference);

/** The name the reader gives a built-in kind ("MALLOC"), or nullptr. */
const char *kind_name(std::uint16_t kind) noexcept;

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_RING_H
