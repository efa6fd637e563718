/* SPDX-License-Identifier: MIT */
/*
 * ring_format.h - the one source of truth for the core-timeline ring layout.
 *
 * The writer (lib/), the reader (reader/), the fuzzers and docs/ring-format.md
 * all follow this file.  Every offset and size below is pinned by a
 * static_assert; changing one is an incompatible format change.
 *
 * This header describes version 6 (kVersion), which the writer writes; a
 * reader of it reads versions 1 to 6 (kMinVersion..kVersion).  What each
 * version added is below, newest first.
 *
 * Region layout (one memfd named "core-timeline", mapped MAP_SHARED):
 *
 *   offset 0                      struct RingHeader (header_size bytes:
 *                                 512 in versions 1 and 2, 1024 from 3 on)
 *   header.lane_table_offset      struct LaneDesc[lane_count]
 *   header.lanes_offset           the slot area: lane 0's first slots,
 *                                 lane 1's, ... (slots_per_lane each), then
 *                                 (version 3) each source's pool
 *   header.names_offset           struct NameEntry[names_capacity] (v2)
 *   header.region_size            end of the region
 *
 * Version 6 adds, to version 5: split lanes.  A lane that cannot double
 * in place nor be copied into its own pool grows by a second segment of
 * its size, from its own pool or lent by an idle source's
 * (LaneDesc.extent bits 40-62, "split lanes" below): a lent pool is
 * shared by every source whose lane needs it, and lending copies
 * nothing and leaves nothing behind.  A version-5 reader refuses a
 * version-6 ring (by its version: it would read a split lane's second
 * half from the slots after its first); a version-6 reader reads
 * versions 1 to 5, whose extents are one segment.
 *
 * Version 5 adds, to version 4: the stack chain and lending.
 *  - The stack chain: a walk of more than 8 frames (the crash handler's,
 *    for the CRASH event: up to kMaxChainedStackDepth) is kept in several
 *    kKindStack slots after its event, each holding 8 of its frames and
 *    saying with kStackNext that the next one goes on ("the stack chain",
 *    below).
 *  - Lending: a source whose lanes have never grown lends its pool to
 *    sources whose own pool is spent: a lane may grow into another
 *    source's pool (SourceArea.lent counts the slots lent), so a program
 *    that records no user marks gives their pool to its allocations and
 *    I/O.  A version-5 lane's extent lies in its first slots or anywhere
 *    in the pools (never across two lanes' slots), and a pool is any
 *    number of slots from 2 x slots_per_lane (its exact share of the
 *    budget), no longer a power of two.
 * A version-4 reader refuses a version-5 ring (by its version: it would
 * call a chain's first STACK slot malformed and the CRASH event's stack
 * lost, and refuse lent extents); a version-5 reader reads versions 1 to
 * 4, in which a chain is malformed.
 *
 * Version 4 adds, to version 3: stacks (tl_mark_stack, TL_STACK_DEPTH, the
 * CRASH event's stack).  Slot byte 23, the high byte of version 3's 16-bit
 * inline_len (always 0 there, since inline_len <= 64), is Slot.stack: the
 * depth and end reason of a walk whose return addresses are the slot's
 * inline bytes, or (kStackNext) the inline bytes of the kKindStack slot
 * that follows it in its lane.  The layout is otherwise version 3's; a
 * version-3 reader refuses a version-4 ring (its inline_len would read
 * above 64), and a version-4 reader reads versions 1 to 3 (their byte 23
 * is 0: no stack).
 *
 * Version 3 adds, to version 2: source classes and pools.  The lanes are
 * split by source (user marks and spans, allocation wrappers, I/O
 * wrappers): a thread has one lane per source it records, so cheap events
 * never evict precious ones.  Each source has a pool of slots
 * (SourceArea), and a lane that fills its slots for the first time takes
 * twice as many from its source's pool (LaneDesc.extent), so the memory
 * follows the threads that write.  A version-3 lane's slots are
 * LaneDesc.extent's; a version-1 or -2 lane's are slots_per_lane slots at
 * lanes_offset + lane * slots_per_lane * slot_size.
 *
 * Version 2 adds, to version 1: the name table, the crash
 * clock anchor, the anchors' spreads, span events (kKindSpanBegin/End) and
 * the ring-less header (kIncompatNoRing) that says why tl_init made no ring.
 * A reader of version 2 reads version-1 rings: every version-2 field is in
 * space version 1 wrote as zero, and zero means "absent".
 *
 * All fields are little-endian, fixed width; no pointers, no `long`.
 * The last lane (index lane_count - 1) is the shared overflow lane.
 *
 * Compatibility rules (in the manner of systemd's journal-def.h):
 *  - `version` changes only for a layout change an old reader cannot skip.
 *  - New header fields are appended; `header_size` says how many bytes the
 *    writer wrote.  A reader reads min(header_size, sizeof) and zero-fills
 *    the rest, so it accepts a larger header it does not fully know.
 *  - `incompat_flags` bits a reader does not know make it refuse the ring;
 *    unknown `compat_flags` bits are ignored.
 *
 * This header is internal to the project: it is not installed and not part
 * of libtimeline's ABI.  Third-party readers should follow
 * docs/ring-format.md.
 */
#ifndef CORE_TIMELINE_RING_FORMAT_H
#define CORE_TIMELINE_RING_FORMAT_H

#include <cstddef>
#include <cstdint>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "core-timeline writes its ring in host order and supports little-endian hosts only"
#endif

namespace core_timeline::format {

/* ---------------------------------------------------------------- constants */

/** The four magic bytes at offset 0 of a ring: "CTLN". */
inline constexpr char kMagic[4] = {'C', 'T', 'L', 'N'};
/** Layout version this header describes (the writer writes it). */
inline constexpr std::uint16_t kVersion = 6;
/** Oldest layout version a reader of this header reads. */
inline constexpr std::uint16_t kMinVersion = 1;
/** Written by the writer as 0x01020304 in host order; a reader that sees
 *  anything else refuses the ring (byte-swapped or not a ring). */
inline constexpr std::uint32_t kEndianMarker = 0x01020304u;

/** Size in bytes of the version-1 and -2 header; header_size >= this. */
inline constexpr std::uint32_t kHeaderSize = 512;
/** Size in bytes of the header from version 3 on (the source table appended). */
inline constexpr std::uint32_t kHeaderSizeV3 = 1024;
/** Size in bytes of one lane descriptor. */
inline constexpr std::uint32_t kLaneDescSize = 64;
/** Size in bytes of one slot (versions 1 and 2 fix it; a reader checks it). */
inline constexpr std::uint32_t kSlotSize = 128;
/** Bytes of inline payload in a slot (pointer snapshots, thread names,
 *  crash details). */
inline constexpr std::uint32_t kInlineBytes = 64;
/** Maximum build-id bytes stored in the header. */
inline constexpr std::uint32_t kMaxBuildId = 64;
/** Name the writer gives its memfd; the core's NT_FILE note lists it as
 *  "/memfd:core-timeline (deleted)" (memfd_create(2), docs/platform.md §1). */
inline constexpr char kMemfdName[] = "core-timeline";
/** Bytes of RingHeader.init_error_text: room for the longest reason the
 *  writer gives (127 bytes and a NUL, e.g. "slots_per_lane=1048576
 *  lanes=4095 names=4096 needs 512.01 GiB; the ring is at most 4 GiB
 *  (1048576 slots allow at most 30 lanes)"). */
inline constexpr std::uint32_t kInitErrorText = 128;

/** Sanity bounds a reader enforces before trusting any offset. */
inline constexpr std::uint32_t kMaxLanes = 4096;
inline constexpr std::uint32_t kMinSlotsPerLane = 8;
inline constexpr std::uint32_t kMaxSlotsPerLane = 1u << 20;
inline constexpr std::uint64_t kMaxRegionSize = 1ull << 32; /* 4 GiB */

/** Bit 63 of slot.begin_seq: the slot is being written (docs/design.md, "The slot write
 *  protocol").  A slot whose begin_seq has it set is torn. */
inline constexpr std::uint64_t kSeqWriting = 1ull << 63;

/* incompat_flags */
/** The region is a header only: libtimeline was loaded but tl_init could
 *  make no ring.  `init_error` holds the errno and `init_error_text` the
 *  reason; lane_count, slots_per_lane, lanes_offset and the name table are
 *  0 and region_size is one page.  (Version 2.) */
inline constexpr std::uint32_t kIncompatNoRing = 1u << 0;
inline constexpr std::uint32_t kIncompatKnown = kIncompatNoRing;

/* compat_flags */
/** Slot timestamps are x86 TSC (rdtsc) ticks. */
inline constexpr std::uint32_t kCompatClockTsc = 1u << 0;
/** Slot timestamps are AArch64 CNTVCT_EL0 ticks. */
inline constexpr std::uint32_t kCompatClockCntvct = 1u << 1;
/** The crash handlers were installed (tl_options.install_handlers). */
inline constexpr std::uint32_t kCompatHandlers = 1u << 2;
/** A sidecar file mirrors this ring (degraded mode only). */
inline constexpr std::uint32_t kCompatSidecar = 1u << 3;

/** Event kinds (slot.kind).  Kinds < 0x100 are built in; the reader names
 *  them itself.  User ids live in slot.id and are named by a .tlmap. */
enum Kind : std::uint16_t {
  kKindUser = 1,        /**< tl_mark / tl_mark2: id, arg0, arg1 */
  kKindUserPtr = 2,     /**< tl_mark_ptr: id, arg0 = pointer, arg1 = bytes
                             asked for, inline = bytes copied (inline_len) */
  kKindThreadName = 3,  /**< tl_thread_name: inline = name (inline_len) */
  kKindCrash = 4,       /**< crash handler: id = signo, arg0 = fault address
                             (si_addr), arg1 = sp, return_address = pc,
                             inline = struct CrashInfo */
  kKindLaneClaim = 5,   /**< first event of a thread in a lane: arg0 = lane
                             index, arg1 = previous owner tid (0 if none) */
  kKindSpanBegin = 6,   /**< tl_span_begin (v2): id, arg0 = arg; the span's
                             token is span_token(lane, seq) of this slot */
  kKindStack = 8,       /**< (v4) the stack of an earlier slot of its lane
                             (its host), whose inline bytes hold something
                             else: inline = the return addresses, stack =
                             this part's depth and end ("the stack
                             chain"), id =
                             the host's kind, arg0 = its seq, arg1 = (v5)
                             the walk's index of this slot's first frame,
                             0 in version 4 */
  kKindSpanEnd = 7,     /**< tl_span_end (v2): arg0 = token; id and arg1 =
                             the begin's id and timestamp as the ender read
                             them from the begin's slot, or 0 when that
                             slot no longer held the begin */
  kKindMalloc = 16,     /**< arg0 = pointer returned, arg1 = size */
  kKindFree = 17,       /**< arg0 = pointer freed */
  kKindCalloc = 18,     /**< arg0 = pointer returned, arg1 = total size */
  kKindRealloc = 19,    /**< arg0 = new pointer, arg1 = size, inline[0..8) =
                             old pointer */
  kKindOpen = 32,       /**< arg0 = result (fd or -errno), inline = path
                             prefix (untrusted bytes); when arg1 has
                             kOpenFlagsRecorded: id = the open flags
                             (O_*), arg1's low 32 bits = the mode (0
                             without O_CREAT or O_TMPFILE); rings written
                             before flags were recorded have id = 0 and
                             arg1 = 0 */
  kKindRead = 33,       /**< id = fd, arg0 = result, arg1 = count (readv:
                             the iovecs' total length) */
  kKindWrite = 34,      /**< id = fd, arg0 = result, arg1 = count (writev:
                             the iovecs' total length) */
  kKindConnect = 35,    /**< id = fd, arg0 = result, inline = sockaddr prefix */
  kKindClose = 36,      /**< id = fd, arg0 = result */
  kKindAccept = 37,     /**< accept, accept4: id = the listening fd, arg0 =
                             the new fd or -errno, arg1 = accept4's flags
                             (SOCK_NONBLOCK, SOCK_CLOEXEC; 0 for accept),
                             inline = the peer's sockaddr prefix (none when
                             the call failed) */
  kKindRecv = 38,       /**< recv, recvfrom, recvmsg: id = fd, arg0 =
                             result, arg1 = count (recvmsg: the iovecs'
                             total length) */
  kKindSend = 39,       /**< send, sendto, sendmsg: as kKindRecv */
  kKindPread = 40,      /**< pread and its 64 and v forms: id = fd, arg0 =
                             result, arg1 = count (the iovecs' total
                             length), inline = struct IoOffset */
  kKindPwrite = 41,     /**< pwrite and its 64 and v forms: as kKindPread */
  kKindSendfile = 42,   /**< sendfile: id = out fd, arg0 = result, arg1 =
                             count, inline = struct IoOffset (the in fd and
                             the offset it started at) */
  kKindSocket = 43,     /**< socket: id = domain (AF_*), arg0 = fd or
                             -errno, arg1 = type (SOCK_*, with its flags) |
                             protocol << 32 */
  kKindFsync = 44,      /**< fsync, fdatasync: id = fd, arg0 = result,
                             arg1 = 0 (fsync) or 1 (fdatasync) */
  kKindDup = 45,        /**< dup, dup2, dup3: id = the old fd, arg0 = the
                             new fd or -errno, arg1 = dup3's flags
                             (O_CLOEXEC; 0 for dup and dup2) */
};

/** The I/O wrappers' kinds are [kKindIoFirst, kKindIoLast]. */
inline constexpr std::uint16_t kKindIoFirst = kKindOpen;
inline constexpr std::uint16_t kKindIoLast = kKindDup;

/** kKindOpen's arg1: the flags and mode were recorded (id, arg1's low 32
 *  bits). */
inline constexpr std::uint64_t kOpenFlagsRecorded = 1ull << 32;

/** Inline payload of kKindPread, kKindPwrite and kKindSendfile: where the
 *  transfer started.  A pread/pwrite's inline_len is 8 (the offset only),
 *  a sendfile's 16. */
struct IoOffset {
  std::int64_t offset;  /**< the file offset the call was given; -1: the
                             file's own position (preadv2/pwritev2 with
                             offset -1, sendfile with a NULL offset) */
  std::int32_t in_fd;   /**< sendfile: the fd read from; pread/pwrite: not
                             stored */
  std::uint32_t reserved;
};
static_assert(sizeof(IoOffset) == 16);
static_assert(offsetof(IoOffset, offset) == 0);
static_assert(offsetof(IoOffset, in_fd) == 8);
/** Bytes of IoOffset a PREAD or PWRITE stores, and a SENDFILE. */
inline constexpr std::uint32_t kIoOffsetBytes = 8;
inline constexpr std::uint32_t kSendfileBytes = sizeof(IoOffset);

/* ----------------------------------------------------------- sources (v3) */

/** Source classes (version 3): each has its own lanes and its own pool.
 *  kSourceUser holds every event libtimeline writes itself (tl_mark*,
 *  spans, thread names, lane claims, CRASH); kSourceAlloc the allocation
 *  kinds (16-19) and kSourceIo the I/O kinds (32-45) of tl_record. */
enum Source : std::uint32_t {
  kSourceUser = 0,
  kSourceAlloc = 1,
  kSourceIo = 2,
};
inline constexpr std::uint32_t kSourceCount = 3;
/** Entries of RingHeader.sources (room for one more source). */
inline constexpr std::uint32_t kSourceTableSize = 4;

/** The source of an event kind (which lanes hold it). */
constexpr std::uint32_t source_of_kind(std::uint16_t kind) {
  return kind >= kKindMalloc && kind <= kKindRealloc ? kSourceAlloc
         : kind >= kKindIoFirst && kind <= kKindIoLast ? kSourceIo
                                                     : kSourceUser;
}

/** A source's name in documents: "user", "alloc", "io". */
constexpr const char *source_name(std::uint32_t source) {
  return source == kSourceUser ? "user" : source == kSourceAlloc ? "alloc" : source == kSourceIo ? "io" : "?";
}

/* SourceArea.flags */
/** The source's recorder was loaded when the ring was made (for the
 *  wrappers: libtimeline-alloc.so or libtimeline-io.so was mapped), so it
 *  was given its share of the budget.  Informational. */
inline constexpr std::uint32_t kSourcePresent = 1u << 0;

/**
 * One source's lanes and pool (version 3), in RingHeader.sources.  The
 * first six fields are set at tl_init and never change; the reader checks
 * them against the geometry instead of trusting them (the header CRC does
 * not cover them).
 *
 * A pool is its share of the budget in slots (versions 3 and 4: rounded
 * down to a power of two), or none.  Lanes take extents from it in order,
 * by compare-and-swap on pool_used: a lane that grows from C to 2C slots
 * takes 2C fresh slots, or, when its extent ends exactly at pool_used,
 * only the C after it (it grows in place).  (v5) When its own pool has no
 * room, a lane takes them from the pool of a source none of whose lanes
 * has ever grown (the lender's `lent` counts them).  (v6) Instead, a
 * lane of C slots whose own pool has no room for 2C takes a second
 * segment of C slots, from its own pool or lent (a split lane), so that
 * a lent pool goes to every source that needs it, not to the first one
 * to ask.  Nothing is ever given
 * back to a pool; a lane keeps its extent when its thread exits and the
 * next thread to claim it inherits it.
 */
struct SourceArea {
  std::uint32_t first_lane;      /**< its lanes are [first_lane,
                                      first_lane + lane_count); the last is
                                      its shared overflow lane */
  std::uint32_t lane_count;      /**< >= 2 */
  std::uint32_t pool_first_slot; /**< first slot of the pool, counted in
                                      slots from lanes_offset */
  std::uint32_t pool_slots;      /**< slots in the pool: 0 (lanes keep
                                      slots_per_lane slots unless they
                                      borrow), else at least 2 x
                                      slots_per_lane; a power of two in
                                      versions 3 and 4 */
  std::uint32_t share_percent;   /**< its share of the budget, 0..100 */
  std::uint32_t flags;           /**< kSourcePresent */
  /* mutable */
  std::uint64_t lent;            /**< (v5) slots of this pool taken by lanes
                                      of other sources (in pool_used too);
                                      0 before version 5 */
  std::uint64_t pool_used;       /**< pool slots handed out, <= pool_slots */
  std::uint64_t dropped;         /**< events of this source not recorded
                                      (no lane could be had); also counted
                                      in RingHeader.dropped */
  std::uint64_t grown;           /**< times one of its lanes grew */
  std::uint64_t moved;           /**< of those, times the lane's slots were
                                      copied to a new extent */
};
static_assert(sizeof(SourceArea) == 64);
static_assert(offsetof(SourceArea, first_lane) == 0);
static_assert(offsetof(SourceArea, lane_count) == 4);
static_assert(offsetof(SourceArea, pool_first_slot) == 8);
static_assert(offsetof(SourceArea, pool_slots) == 12);
static_assert(offsetof(SourceArea, share_percent) == 16);
static_assert(offsetof(SourceArea, flags) == 20);
static_assert(offsetof(SourceArea, lent) == 24);
static_assert(offsetof(SourceArea, pool_used) == 32);
static_assert(offsetof(SourceArea, dropped) == 40);
static_assert(offsetof(SourceArea, grown) == 48);
static_assert(offsetof(SourceArea, moved) == 56);

/* lane_desc.flags */
/** This is the shared overflow lane: several threads reserve slots in it
 *  with an atomic fetch-add. */
inline constexpr std::uint32_t kLaneShared = 1u << 0;

/* ------------------------------------------------------------------ header */

/**
 * The ring header, at offset 0 of the region.
 *
 * Bytes [0, kCrcEnd) are immutable after tl_init and covered by `header_crc`
 * (CRC-32C, Castagnoli, over those bytes with `header_crc` itself read as
 * zero).  Bytes from kMutableStart on are updated while the process runs and
 * are NOT covered by the CRC: a reader cross-checks them instead.
 */
struct RingHeader {
  /* --- immutable part (CRC-covered) --- */
  char magic[4];                   /**< "CTLN" */
  std::uint16_t version;           /**< kVersion */
  std::uint16_t header_size;       /**< bytes of header written (>= 512) */
  std::uint32_t endian_marker;     /**< kEndianMarker */
  std::uint32_t incompat_flags;    /**< unknown bits: refuse */
  std::uint32_t compat_flags;      /**< unknown bits: ignore */
  std::uint32_t slot_size;         /**< kSlotSize */
  std::uint32_t slots_per_lane;    /**< power of two, [8, 2^20] */
  std::uint32_t lane_count;        /**< including the overflow lane, [2, 4096] */
  std::uint32_t lane_table_offset; /**< from region start */
  std::uint32_t header_crc;        /**< CRC-32C of [0, kCrcEnd), this field as 0 */
  std::uint64_t lanes_offset;      /**< first slot of lane 0, from region start */
  std::uint64_t region_size;       /**< bytes of the whole mapping */
  std::uint64_t process_start_ticks; /**< /proc/self/stat field 22 (starttime,
                                        clock ticks after boot; proc(5)) */
  std::uint32_t pid;               /**< getpid() at tl_init, in the process's
                                        own pid namespace */
  std::uint32_t writer_version;    /**< libtimeline version, 0xMMmmpp */
  std::uint64_t pid_ns_inode;      /**< st_ino of /proc/self/ns/pid, 0 if unknown */
  std::uint64_t pid_ns_dev;        /**< st_dev of /proc/self/ns/pid */
  std::uint32_t build_id_len;      /**< bytes valid in build_id, <= 64 */
  std::uint32_t reserved0;
  std::uint8_t build_id[kMaxBuildId]; /**< NT_GNU_BUILD_ID of the executable */
  std::uint64_t sidecar_dev;       /**< st_dev of the sidecar file, 0 if none */
  std::uint64_t sidecar_ino;       /**< st_ino of the sidecar file, 0 if none */
  /* Clock anchor taken at tl_init: the same instant read on three clocks, so
   * slot timestamps (ticks) can be placed on CLOCK_REALTIME (the journal's
   * __REALTIME_TIMESTAMP) and CLOCK_MONOTONIC. */
  std::uint64_t anchor_ticks;      /**< slot clock (TSC) at tl_init */
  std::uint64_t anchor_realtime_ns;  /**< CLOCK_REALTIME at tl_init, ns */
  std::uint64_t anchor_monotonic_ns; /**< CLOCK_MONOTONIC at tl_init, ns */
  std::uint64_t ticks_per_second;  /**< slot clock rate if the writer knew it
                                        at init (0: derive from the anchors) */
  /* --- version 2 (zero in version 1) --- */
  std::uint64_t names_offset;      /**< the name table, from region start; 0:
                                        none */
  std::uint32_t names_capacity;    /**< NameEntry slots in the table */
  std::uint32_t name_entry_size;   /**< kNameEntrySize */
  std::uint32_t anchor_spread_ticks; /**< slot-clock ticks between the reads
                                        before and after the init anchor's
                                        clock_gettime calls; anchor_ticks is
                                        their midpoint.  0: unknown */
  std::int32_t init_error;         /**< with kIncompatNoRing: the errno of
                                        the failed tl_init (EINVAL...) */
  char init_error_text[kInitErrorText]; /**< with kIncompatNoRing: why, in
                                        printable ASCII, NUL-terminated and
                                        NUL-padded, e.g. "TL_SLOTS=1048576
                                        with 64 lanes needs 8.13 GiB; ..." */
  std::uint8_t reserved1[24];      /**< zero; room for immutable fields */

  /* --- mutable part (not CRC-covered), each group on its own cache line --- */
  /* Latest clock anchor, refreshed by the helper thread every interval.
   * Seqlock: `latest_anchor_seq` is odd while being updated. */
  std::uint64_t latest_anchor_seq;
  std::uint64_t latest_ticks;
  std::uint64_t latest_realtime_ns;
  std::uint64_t latest_monotonic_ns;
  /* Crash clock anchor (v2), written once by the first crash handler to
   * run, beside its CRASH slot: the anchor the reader pairs with the init
   * anchor to know the slot clock's rate from the core alone.
   * `crash_anchor_state` is kAnchorNone, kAnchorWriting (claimed by a CAS)
   * or kAnchorComplete (stored with release after the three values). */
  std::uint64_t crash_anchor_state;
  std::uint64_t crash_ticks;       /**< slot clock, midpoint of two reads */
  std::uint64_t crash_realtime_ns; /**< CLOCK_REALTIME at the crash */
  std::uint64_t crash_monotonic_ns;/**< CLOCK_MONOTONIC at the crash */

  std::uint64_t dropped;           /**< events not recorded while enabled
                                        (no lane could be had) */
  std::uint64_t mmap_generation;   /**< dl_iterate_phdr adds + subs, set at
                                        tl_init and refreshed by the helper
                                        thread; copied into slots */
  std::uint64_t sync_count;        /**< sidecar syncs completed */
  std::uint32_t enabled_sources;   /**< last tl_set_enabled() mask, for the
                                        reader's summary */
  std::uint32_t crash_spread_ticks;/**< (v2) ticks between the two slot-clock
                                        reads around the crash anchor */
  std::uint64_t names_claimed;     /**< (v2) NameEntry slots reserved so far
                                        (fetch-add); may exceed capacity:
                                        those registrations were refused */
  std::uint64_t reserved4[3];

  /* --- version 3 (absent in versions 1 and 2: header_size 512) --- */
  SourceArea sources[kSourceTableSize]; /**< indexed by Source; entries
                                        from kSourceCount on are zero */
  std::uint64_t budget_bytes;      /**< the budget the pools were sized
                                        from (TL_BUDGET), bytes; 0: none */
  std::uint32_t source_count;      /**< kSourceCount */
  std::uint32_t reserved5;
  std::uint8_t reserved6[240];
};

inline constexpr std::size_t kCrcEnd = 384;      /**< end of the CRC-covered part */
inline constexpr std::size_t kMutableStart = 384;

static_assert(sizeof(RingHeader) == kHeaderSizeV3);
static_assert(offsetof(RingHeader, magic) == 0);
static_assert(offsetof(RingHeader, version) == 4);
static_assert(offsetof(RingHeader, header_size) == 6);
static_assert(offsetof(RingHeader, endian_marker) == 8);
static_assert(offsetof(RingHeader, incompat_flags) == 12);
static_assert(offsetof(RingHeader, compat_flags) == 16);
static_assert(offsetof(RingHeader, slot_size) == 20);
static_assert(offsetof(RingHeader, slots_per_lane) == 24);
static_assert(offsetof(RingHeader, lane_count) == 28);
static_assert(offsetof(RingHeader, lane_table_offset) == 32);
static_assert(offsetof(RingHeader, header_crc) == 36);
static_assert(offsetof(RingHeader, lanes_offset) == 40);
static_assert(offsetof(RingHeader, region_size) == 48);
static_assert(offsetof(RingHeader, process_start_ticks) == 56);
static_assert(offsetof(RingHeader, pid) == 64);
static_assert(offsetof(RingHeader, writer_version) == 68);
static_assert(offsetof(RingHeader, pid_ns_inode) == 72);
static_assert(offsetof(RingHeader, pid_ns_dev) == 80);
static_assert(offsetof(RingHeader, build_id_len) == 88);
static_assert(offsetof(RingHeader, build_id) == 96);
static_assert(offsetof(RingHeader, sidecar_dev) == 160);
static_assert(offsetof(RingHeader, sidecar_ino) == 168);
static_assert(offsetof(RingHeader, anchor_ticks) == 176);
static_assert(offsetof(RingHeader, anchor_realtime_ns) == 184);
static_assert(offsetof(RingHeader, anchor_monotonic_ns) == 192);
static_assert(offsetof(RingHeader, ticks_per_second) == 200);
static_assert(offsetof(RingHeader, names_offset) == 208);
static_assert(offsetof(RingHeader, names_capacity) == 216);
static_assert(offsetof(RingHeader, name_entry_size) == 220);
static_assert(offsetof(RingHeader, anchor_spread_ticks) == 224);
static_assert(offsetof(RingHeader, init_error) == 228);
static_assert(offsetof(RingHeader, init_error_text) == 232);
static_assert(offsetof(RingHeader, reserved1) == 360);
static_assert(offsetof(RingHeader, latest_anchor_seq) == kMutableStart);
static_assert(offsetof(RingHeader, latest_ticks) == 392);
static_assert(offsetof(RingHeader, latest_realtime_ns) == 400);
static_assert(offsetof(RingHeader, latest_monotonic_ns) == 408);
static_assert(offsetof(RingHeader, crash_anchor_state) == 416);
static_assert(offsetof(RingHeader, crash_ticks) == 424);
static_assert(offsetof(RingHeader, crash_realtime_ns) == 432);
static_assert(offsetof(RingHeader, crash_monotonic_ns) == 440);
static_assert(offsetof(RingHeader, dropped) == 448);
static_assert(offsetof(RingHeader, mmap_generation) == 456);
static_assert(offsetof(RingHeader, sync_count) == 464);
static_assert(offsetof(RingHeader, enabled_sources) == 472);
static_assert(offsetof(RingHeader, crash_spread_ticks) == 476);
static_assert(offsetof(RingHeader, names_claimed) == 480);
static_assert(offsetof(RingHeader, sources) == kHeaderSize);
static_assert(offsetof(RingHeader, budget_bytes) == 768);
static_assert(offsetof(RingHeader, source_count) == 776);

/* crash_anchor_state */
inline constexpr std::uint64_t kAnchorNone = 0;
inline constexpr std::uint64_t kAnchorWriting = 1;
inline constexpr std::uint64_t kAnchorComplete = 2;

/* -------------------------------------------------------------- lane table */

/**
 * One lane descriptor (64 bytes, one cache line).  A lane is a ring of
 * slots_per_lane slots written by one thread at a time (or by many, for the
 * overflow lane).  Sequence numbers are per lane, start at 1 and never reset
 * when a lane changes owner; 0 means "never written".
 */
struct LaneDesc {
  std::uint32_t owner_tid;     /**< current owner's tid; 0 = free */
  std::uint32_t flags;         /**< kLaneShared */
  std::uint64_t write_index;   /**< sequences reserved so far: the last
                                    reserved sequence is write_index */
  std::uint64_t synced_index;  /**< write_index at the last sidecar sync */
  std::uint64_t claims;        /**< times the lane has been claimed */
  char owner_name[16];         /**< current owner's name (tl_thread_name or
                                    /proc comm at claim), NUL-padded, untrusted */
  std::uint64_t extent;        /**< (v3) the lane's slots: extent_first_slot
                                    (low 32 bits, counted from lanes_offset)
                                    and log2 of their count (bits 32-39);
                                    (v6) a second segment (bits 40-62,
                                    "split lanes"); stored with release,
                                    in one store, after the slots it names
                                    hold their events */
  std::uint32_t source;        /**< (v3) enum Source */
  std::uint32_t grown;         /**< (v3) times this lane grew */
};
static_assert(sizeof(LaneDesc) == kLaneDescSize);
static_assert(offsetof(LaneDesc, owner_tid) == 0);
static_assert(offsetof(LaneDesc, flags) == 4);
static_assert(offsetof(LaneDesc, write_index) == 8);
static_assert(offsetof(LaneDesc, synced_index) == 16);
static_assert(offsetof(LaneDesc, claims) == 24);
static_assert(offsetof(LaneDesc, owner_name) == 32);
static_assert(offsetof(LaneDesc, extent) == 48);
static_assert(offsetof(LaneDesc, source) == 56);
static_assert(offsetof(LaneDesc, grown) == 60);

/** LaneDesc.extent's parts: its first segment's first slot (bits 0-31)
 *  and log2 of that segment's slots (bits 32-39); (v6) bits 40-62, when
 *  not 0, say the lane has a second segment of the same size ("split
 *  lanes", below), whose first slot is (bits 40-62 - 1) x kSegmentAlign.
 *  Bit 63 is 0. */
constexpr std::uint64_t make_extent(std::uint32_t first_slot, std::uint32_t log2_slots) {
  return std::uint64_t(log2_slots) << 32 | first_slot;
}
constexpr std::uint32_t extent_first_slot(std::uint64_t extent) { return static_cast<std::uint32_t>(extent); }
constexpr std::uint32_t extent_log2(std::uint64_t extent) { return static_cast<std::uint32_t>(extent >> 32) & 0xFF; }

/* Split lanes (version 6).  A lane whose extent ends where no pool can
 * double it in place, and whose own pool has no room for a copy of twice
 * its size, grows by a second segment of its size taken from any pool
 * with room (its own, or one lent): no slot is copied and none is left
 * behind.  Sequence s of a lane of 2C slots in segments A and B (C each)
 * is in slot (s - 1) mod 2C of the lane, that is A + i for i < C and
 * B + (i - C) for i >= C.  A split lane grows no more (its own pool, which
 * had no room for 2C when it split, has none for 4C). */
/** The first version whose extents may have a second segment. */
inline constexpr std::uint16_t kSplitLaneVersion = 6;
/** A second segment starts at a multiple of this many slots. */
inline constexpr std::uint32_t kSegmentAlign = 8;
inline constexpr unsigned kExtentSecondShift = 40;
inline constexpr std::uint64_t kExtentSecondMask = (1ull << 23) - 1; /* bits 40-62 */
static_assert(kMaxRegionSize / kSlotSize / kSegmentAlign < kExtentSecondMask); /* every slot fits */
/** An extent of two segments of 2^log2_slots slots each, at first_slot and
 *  second_slot (a multiple of kSegmentAlign). */
constexpr std::uint64_t make_split_extent(std::uint32_t first_slot, std::uint32_t log2_slots,
                                          std::uint32_t second_slot) {
  return (std::uint64_t(second_slot / kSegmentAlign) + 1) << kExtentSecondShift | make_extent(first_slot, log2_slots);
}
/** Whether the extent has a second segment (v6; a reader of an older
 *  ring calls an extent with any of bits 40-63 set malformed). */
constexpr bool extent_split(std::uint64_t extent) { return (extent >> kExtentSecondShift & kExtentSecondMask) != 0; }
/** The second segment's first slot (meaningful when extent_split). */
constexpr std::uint64_t extent_second_slot(std::uint64_t extent) {
  return ((extent >> kExtentSecondShift & kExtentSecondMask) - 1) * kSegmentAlign;
}
/** Slots of one segment (2^log2), and of the whole lane. */
constexpr std::uint64_t extent_segment_slots(std::uint64_t extent) { return std::uint64_t(1) << extent_log2(extent); }
constexpr std::uint64_t extent_slots(std::uint64_t extent) {
  return extent_segment_slots(extent) << (extent_split(extent) ? 1 : 0);
}
/** The slot (counted from lanes_offset) that holds the lane's `index`th
 *  slot, 0 <= index < extent_slots(extent). */
constexpr std::uint64_t extent_slot(std::uint64_t extent, std::uint64_t index) {
  const std::uint64_t c = extent_segment_slots(extent);
  return index < c ? extent_first_slot(extent) + index : extent_second_slot(extent) + (index - c);
}
static_assert(extent_slots(make_extent(64, 5)) == 32);
static_assert(extent_slots(make_split_extent(64, 5, 4096)) == 64);
static_assert(extent_first_slot(make_split_extent(64, 5, 4096)) == 64);
static_assert(extent_log2(make_split_extent(64, 5, 4096)) == 5);
static_assert(extent_slot(make_split_extent(64, 5, 4096), 31) == 95);
static_assert(extent_slot(make_split_extent(64, 5, 4096), 32) == 4096);
static_assert(extent_slot(make_split_extent(64, 5, 4096), 63) == 4127);
static_assert(!extent_split(make_extent(0xFFFFFFFFu, 20)));
static_assert(extent_second_slot(make_split_extent(0, 20, (1u << 25) - 8)) == (1u << 25) - 8);
static_assert((make_split_extent(0, 20, (1u << 25) - 8) >> 63) == 0);

/* -------------------------------------------------------------------- slot */

/**
 * One event (128 bytes, two cache lines).  Sequence `seq` of a lane lives in
 * slot (seq - 1) % slots_per_lane.
 *
 * Write protocol (docs/design.md, "The slot write protocol"):
 *   begin_seq = seq | kSeqWriting; store the fields; release fence;
 *   end_seq = seq; begin_seq = seq (release).
 * A reader accepts a slot only when begin_seq == end_seq == the sequence the
 * slot's position and the lane's window imply.
 */
struct Slot {
  std::uint64_t begin_seq;       /**< seq, or seq | kSeqWriting mid-write */
  std::uint64_t timestamp;       /**< slot clock ticks (see compat_flags),
                                      0 if the writer had no safe clock */
  std::uint32_t tid;             /**< gettid() of the writer */
  std::uint16_t kind;            /**< enum Kind */
  std::uint8_t inline_len;       /**< bytes valid in inline_data, <= 64 */
  std::uint8_t stack;            /**< (v4) 0: no stack; else the walk's depth
                                      (stack_depth) and end (stack_end), and
                                      kStackNext; versions 1-3: always 0 */
  std::uint32_t id;              /**< user event id (kKindUser*), signo, fd */
  std::uint32_t mmap_generation; /**< header.mmap_generation when written */
  std::uint64_t return_address;  /**< caller of the tl_ function; pc for CRASH */
  std::uint64_t arg0;
  std::uint64_t arg1;
  std::uint8_t inline_data[kInlineBytes];
  std::uint64_t end_seq;         /**< seq once the slot is complete */
};
static_assert(sizeof(Slot) == kSlotSize);
static_assert(offsetof(Slot, begin_seq) == 0);
static_assert(offsetof(Slot, timestamp) == 8);
static_assert(offsetof(Slot, tid) == 16);
static_assert(offsetof(Slot, kind) == 20);
static_assert(offsetof(Slot, inline_len) == 22);
static_assert(offsetof(Slot, stack) == 23);
static_assert(offsetof(Slot, id) == 24);
static_assert(offsetof(Slot, mmap_generation) == 28);
static_assert(offsetof(Slot, return_address) == 32);
static_assert(offsetof(Slot, arg0) == 40);
static_assert(offsetof(Slot, arg1) == 48);
static_assert(offsetof(Slot, inline_data) == 56);
static_assert(offsetof(Slot, end_seq) == 120);

/* ------------------------------------------------------------ stacks (v4) */

/** How a stack walk ended (Slot.stack bits 4-6).  The frames recorded are
 *  the return addresses of the callers *beyond* Slot.return_address (the
 *  caller of the tl_ function, or the pc of a CRASH): frame 0 is the return
 *  address of the function that called the tl_ function's caller (for a
 *  CRASH, of the crashing function), and so on outwards. */
enum StackEnd : std::uint8_t {
  kStackNone = 0,        /**< no walk was made (Slot.stack == 0) */
  kStackComplete = 1,    /**< the chain ended at its true outermost frame:
                              .eh_frame marks the frame's return address
                              undefined (the psABI's outermost frame:
                              _start, a thread's start function).  Nothing
                              the stack's own bytes hold can give it (a
                              return address of 0 is no_unwind or
                              bad_frame) */
  kStackDepthLimit = 2,  /**< the walk stopped at the depth asked for; more
                              frames may exist */
  kStackNoUnwind = 3,    /**< the next frame's code has no .sframe entry (nor,
                              in the crash handler's walk, a usable
                              .eh_frame entry) and
                              its frame pointer register holds no frame (0,
                              outside the stack, not above the last frame),
                              or the frame it holds has a return address of
                              0 (a zeroed frame, as a thread's first):
                              nothing tells where its caller is */
  kStackBadFrame = 4,    /**< unwind information or a frame pointer led
                              somewhere impossible (outside the thread's
                              stack, onto memory that cannot be read, not
                              upwards, misaligned, into code no loaded
                              object has, a return address of 0 where
                              .sframe or .eh_frame put one, a signal frame
                              whose interrupted pc is 0 or whose stack
                              pointer turns back down its stack), or the
                              stack's bounds are
                              unknown: the walk stopped before it */
};
 /* Every frame is stored as a return address is: a reader symbolizes the
  * code at address - 1.  The two frames a signal frame gives, the signal
  * trampoline (glibc's __restore_rt, whose address is the handler's return
  * address) and the interrupted instruction, are exact addresses, so they
  * are stored + 1. */
/** Most frames one slot holds (the 64 inline bytes), and a walk records
 *  but the crash handler's (kMaxChainedStackDepth). */
inline constexpr std::uint32_t kMaxStackDepth = kInlineBytes / 8;
/** Slot.stack: of an event, its frames are in the kKindStack slot that
 *  follows in its lane; (v5) of a kKindStack slot, the walk goes on in the
 *  next kKindStack slot of its chain. */
inline constexpr std::uint8_t kStackNext = 1u << 7;
constexpr std::uint8_t make_stack(std::uint32_t depth, std::uint32_t end) {
  return static_cast<std::uint8_t>((depth & 0xF) | (end & 0x7) << 4);
}
constexpr std::uint32_t stack_depth(std::uint8_t stack) { return stack & 0xF; }
constexpr std::uint32_t stack_end(std::uint8_t stack) { return stack >> 4 & 0x7; }
/** The name of a StackEnd in documents. */
constexpr const char *stack_end_name(std::uint32_t end) {
  return end == kStackComplete     ? "complete"
         : end == kStackDepthLimit ? "depth_limit"
         : end == kStackNoUnwind   ? "no_unwind_info"
         : end == kStackBadFrame   ? "bad_frame"
                                   : "none";
}
/* The stack chain (version 5).  A walk of more than kMaxStackDepth frames
 * is split into parts of kMaxStackDepth frames, each in a kKindStack slot
 * of the host's lane, in walk order and in sequence order (other slots may
 * come between them in the shared overflow lane):
 *   part k: id = the host's kind, arg0 = the host's seq, arg1 = k * 8 (the
 *   walk's index of its first frame), inline = its frames, and Slot.stack
 *   make_stack(8, kStackNone) | kStackNext when part k + 1 follows, else
 *   make_stack(n, end) with the whole walk's end (1 <= n <= 8, or n = 0
 *   for a walk of no frame, which has one part).
 * The host's Slot.stack is part 0's with kStackNext set.  A version-4
 * walk is the chain of one part. */
/** Most frames a chain holds (systemd-coredump's depth, the crash
 *  handler's walk at most): a reader calls a longer chain malformed. */
inline constexpr std::uint32_t kMaxChainedStackDepth = 64;
/** Most kKindStack slots of one chain. */
inline constexpr std::uint32_t kMaxStackParts = kMaxChainedStackDepth / kMaxStackDepth;
static_assert(kMaxChainedStackDepth % kMaxStackDepth == 0);
static_assert(kMaxChainedStackDepth <= 255); /* a chain's depth fits a u8 */
/** Of a lane's slots, the crash handler's chain takes at most one in
 *  kCrashStackLaneShare (and kMaxStackParts), so that a chain never
 *  overwrites its own CRASH slot and most of the lane's events survive
 *  it: 16 frames in a lane of 8 slots, 64 from 32 slots on. */
inline constexpr std::uint32_t kCrashStackLaneShare = 4;
/** The first version whose STACK slots may chain (kStackNext, arg1). */
inline constexpr std::uint16_t kStackChainVersion = 5;
/** The parts a chain of `depth` frames takes (1 for 0 frames). */
constexpr std::uint32_t stack_parts(std::uint32_t depth) {
  return depth == 0 ? 1 : (depth + kMaxStackDepth - 1) / kMaxStackDepth;
}
/** The crash handler's room for a chain in a lane of `lane_slots` slots
 *  (0: unknown): its most frames, a multiple of kMaxStackDepth, at least
 *  one part. */
constexpr std::uint32_t crash_stack_room(std::uint64_t lane_slots) {
  const std::uint64_t parts = lane_slots / kCrashStackLaneShare;
  return (parts < 1 ? 1u : parts > kMaxStackParts ? kMaxStackParts : static_cast<std::uint32_t>(parts)) *
         kMaxStackDepth;
}
static_assert(crash_stack_room(0) == kMaxStackDepth);
static_assert(crash_stack_room(kMinSlotsPerLane) == 2 * kMaxStackDepth);
static_assert(crash_stack_room(32) == kMaxChainedStackDepth);
static_assert(crash_stack_room(kMaxSlotsPerLane) == kMaxChainedStackDepth);
/** Part k's Slot.stack, for a walk of `depth` frames that ended `end`. */
constexpr std::uint8_t stack_part_byte(std::uint32_t depth, std::uint32_t end, std::uint32_t k) {
  const std::uint32_t parts = stack_parts(depth);
  return k + 1 < parts ? static_cast<std::uint8_t>(make_stack(kMaxStackDepth, kStackNone) | kStackNext)
                       : make_stack(depth - k * kMaxStackDepth, end);
}
static_assert(stack_part_byte(20, kStackComplete, 0) == (kMaxStackDepth | kStackNext));
static_assert(stack_part_byte(20, kStackComplete, 2) == make_stack(4, kStackComplete));
static_assert(stack_part_byte(8, kStackDepthLimit, 0) == make_stack(8, kStackDepthLimit));
static_assert(stack_part_byte(0, kStackBadFrame, 0) == make_stack(0, kStackBadFrame));

/** Whether a kind's inline bytes are free for a stack; the others (USER_PTR,
 *  THREAD_NAME, CRASH, REALLOC, and the I/O kinds) put theirs in a following
 *  kKindStack slot. */
constexpr bool stack_inline_ok(std::uint16_t kind) {
  return kind == kKindUser || kind == kKindSpanBegin || kind == kKindMalloc || kind == kKindFree ||
         kind == kKindCalloc;
}

/** Inline payload of a kKindCrash slot (siginfo_t fields, sigaction(2)). */
struct CrashInfo {
  std::int32_t code;          /**< siginfo si_code (SEGV_MAPERR, SI_USER, ...) */
  std::int32_t error;         /**< siginfo si_errno */
  std::int32_t sender_pid;    /**< si_pid, for a signal sent by a process
                                   (si_code <= 0), else 0 */
  std::uint32_t sender_uid;   /**< si_uid, likewise */
  std::uint32_t handler_flags;/**< kCrashChained, kCrashRepeated */
  std::uint32_t reserved;
};
/* (Field names avoid si_pid and friends: <signal.h> defines them as macros.) */
static_assert(sizeof(CrashInfo) == 24);
static_assert(sizeof(CrashInfo) <= kInlineBytes);
static_assert(offsetof(CrashInfo, code) == 0);
static_assert(offsetof(CrashInfo, error) == 4);
static_assert(offsetof(CrashInfo, sender_pid) == 8);
static_assert(offsetof(CrashInfo, sender_uid) == 12);
static_assert(offsetof(CrashInfo, handler_flags) == 16);

/* CrashInfo.handler_flags */
/** A handler installed before libtimeline's was called first and returned. */
inline constexpr std::uint32_t kCrashChained = 1u << 0;
/** The fault repeated at the same pc after the chained handler returned. */
inline constexpr std::uint32_t kCrashRepeated = 1u << 1;
/** Written before the signal was handed to the program's own handler
 *  (kCrashChained is set too): the handler may have recovered, so this
 *  event is the crash only if nothing shows the program went on past it
 *  (docs/ring-format.md, "CRASH"). */
inline constexpr std::uint32_t kCrashHanded = 1u << 2;
static_assert((kCrashChained | kCrashRepeated | kCrashHanded) == 7u);

/* -------------------------------------------------------------- names (v2) */

/** Size in bytes of one name-table entry. */
inline constexpr std::uint32_t kNameEntrySize = 128;
/** Default and largest names_capacity. */
inline constexpr std::uint32_t kDefaultNames = 256;
inline constexpr std::uint32_t kMaxNames = 4096;
inline constexpr std::uint32_t kNameBytes = 48;
inline constexpr std::uint32_t kArgNameBytes = 32;

/**
 * One registered event name (tl_name), in the table at header.names_offset.
 * A writer reserves entry header.names_claimed++ (fetch-add), stores the
 * fields, then sets `state` to kNameCommitted with release.  A reader takes
 * only committed entries; when several name one id, the highest index wins.
 * The strings are NUL-padded, untrusted bytes; the writer stores only
 * printable ASCII without spaces.
 */
struct NameEntry {
  std::uint32_t state;         /**< 0 free, kNameWriting, kNameCommitted */
  std::uint32_t id;            /**< the user event id it names */
  std::uint32_t arg_count;     /**< argument names given, 0..2 */
  std::uint32_t reserved;
  char name[kNameBytes];       /**< "REQ_PARSE" */
  char arg0[kArgNameBytes];    /**< "request_id", or empty */
  char arg1[kArgNameBytes];    /**< "bytes", or empty */
};
static_assert(sizeof(NameEntry) == kNameEntrySize);
static_assert(offsetof(NameEntry, state) == 0);
static_assert(offsetof(NameEntry, id) == 4);
static_assert(offsetof(NameEntry, arg_count) == 8);
static_assert(offsetof(NameEntry, name) == 16);
static_assert(offsetof(NameEntry, arg0) == 64);
static_assert(offsetof(NameEntry, arg1) == 96);

inline constexpr std::uint32_t kNameWriting = 1;
inline constexpr std::uint32_t kNameCommitted = 2;

/* -------------------------------------------------------------- spans (v2) */

/** A span token names the kKindSpanBegin slot: lane + 1 in the top 13 bits,
 *  the begin's sequence in the low 51 (2^51 events of one lane: years at
 *  10 M events/s).  0 is "no span" (recording was off or no slot could be
 *  had); tl_span_end(0) does nothing. */
inline constexpr unsigned kSpanTokenSeqBits = 51;
inline constexpr std::uint64_t kSpanTokenSeqMask = (1ull << kSpanTokenSeqBits) - 1;
static_assert(kMaxLanes < (1u << (64 - kSpanTokenSeqBits)));
constexpr std::uint64_t span_token(std::uint32_t lane, std::uint64_t seq) {
  return (std::uint64_t(lane) + 1) << kSpanTokenSeqBits | (seq & kSpanTokenSeqMask);
}
/** The lane of a token, or kMaxLanes for a token that names none. */
constexpr std::uint32_t span_token_lane(std::uint64_t token) {
  const std::uint64_t l = token >> kSpanTokenSeqBits;
  return l == 0 ? kMaxLanes : static_cast<std::uint32_t>(l - 1);
}
constexpr std::uint64_t span_token_seq(std::uint64_t token) { return token & kSpanTokenSeqMask; }

/* ---------------------------------------------------------------- helpers */

/** Byte offset of lane `lane`'s slot array within a version-1 or -2
 *  region (and of a version-3 lane's first slots). */
constexpr std::uint64_t lane_slots_offset(const RingHeader &h, std::uint32_t lane) {
  return h.lanes_offset + std::uint64_t(lane) * h.slots_per_lane * h.slot_size;
}

/** Offset of the name table for a version-2 geometry: right after the slots
 *  (which end 128-byte aligned). */
constexpr std::uint64_t names_offset_for(std::uint32_t lanes, std::uint32_t slots_per_lane) {
  std::uint64_t lanes_off = (kHeaderSize + std::uint64_t(lanes) * kLaneDescSize + 127) & ~std::uint64_t(127);
  return lanes_off + std::uint64_t(lanes) * slots_per_lane * kSlotSize;
}

/** Region size for a version-2 geometry (header, lane table, slots, `names`
 *  name entries), page aligned.  Used by the writer to size the memfd and
 *  by the reader to check header.region_size.  Version 1 had no names. */
constexpr std::uint64_t region_size_for(std::uint32_t lanes, std::uint32_t slots_per_lane,
                                        std::uint32_t names = 0, std::uint64_t page = 4096) {
  const std::uint64_t end = names_offset_for(lanes, slots_per_lane) + std::uint64_t(names) * kNameEntrySize;
  return (end + page - 1) & ~(page - 1);
}
/** Offset of the first slot of a version-1 or -2 ring with `lanes` lanes
 *  (after the 512-byte header's lane table, 128-byte aligned). */
constexpr std::uint64_t lanes_offset_for(std::uint32_t lanes) {
  return (kHeaderSize + std::uint64_t(lanes) * kLaneDescSize + 127) & ~std::uint64_t(127);
}

/** The layout of a version-3 ring: `lanes_per_source` lanes for each
 *  source (its overflow lane included; source c's are [c * n, (c + 1) * n)),
 *  each starting with `slots_per_lane` slots, then the pools in source
 *  order, then `names` name entries.  The writer lays a ring out with it
 *  and the reader checks a header against it, field by field. */
struct GeometryV3 {
  std::uint32_t lane_count = 0;       /**< all sources' lanes */
  std::uint32_t lane_table_offset = 0;
  std::uint64_t lanes_offset = 0;
  std::uint32_t pool_first_slot[kSourceCount] = {};
  std::uint64_t slot_count = 0;       /**< slots in the slot area */
  std::uint64_t names_offset = 0;
  std::uint64_t region_size = 0;      /**< page aligned */
};
constexpr GeometryV3 geometry_v3(std::uint32_t lanes_per_source, std::uint32_t slots_per_lane,
                                 const std::uint32_t (&pool_slots)[kSourceCount], std::uint32_t names,
                                 std::uint64_t page = 4096) {
  GeometryV3 g;
  g.lane_count = lanes_per_source * kSourceCount;
  g.lane_table_offset = kHeaderSizeV3;
  g.lanes_offset = (kHeaderSizeV3 + std::uint64_t(g.lane_count) * kLaneDescSize + 127) & ~std::uint64_t(127);
  std::uint64_t slot = std::uint64_t(g.lane_count) * slots_per_lane;
  for (std::uint32_t c = 0; c < kSourceCount; ++c) {
    g.pool_first_slot[c] = static_cast<std::uint32_t>(slot);
    slot += pool_slots[c];
  }
  g.slot_count = slot;
  g.names_offset = g.lanes_offset + slot * kSlotSize;
  g.region_size = (g.names_offset + std::uint64_t(names) * kNameEntrySize + page - 1) & ~(page - 1);
  return g;
}

/** CRC-32C (Castagnoli, reflected, init/xorout 0xFFFFFFFF) of `len` bytes.
 *  Bitwise and table-free: async-signal-safe, used once at init by the
 *  writer and once per ring by the reader.  Check value: crc32c("123456789")
 *  == 0xE3069283. */
constexpr std::uint32_t crc32c(const std::uint8_t *p, std::size_t len,
                               std::uint32_t crc = 0) {
  /* `crc` is a previous result, so crc32c(b, m, crc32c(a, n)) is the CRC of
   * a followed by b. */
  crc = ~crc;
  for (std::size_t i = 0; i < len; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/** The header CRC: CRC-32C over [0, kCrcEnd) with the header_crc field
 *  taken as zero.  `bytes` must hold at least kCrcEnd bytes. */
inline std::uint32_t header_crc(const std::uint8_t *bytes) {
  constexpr std::size_t at = offsetof(RingHeader, header_crc);
  const std::uint8_t zero[4] = {0, 0, 0, 0};
  std::uint32_t crc = crc32c(bytes, at);
  crc = crc32c(zero, 4, crc);
  crc = crc32c(bytes + at + 4, kCrcEnd - at - 4, crc);
  return crc;
}

}  // namespace core_timeline::format

#endif  // CORE_TIMELINE_RING_FORMAT_H
