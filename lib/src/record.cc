/* SPDX-License-Identifier: MIT */
/*
 * record.cc - the hot path: reserving a slot and writing an event.
 *
 * ASYNC-SIGNAL-SAFE FILE.  Everything here may run inside a signal handler,
 * including the crash handler on an alternate stack with a corrupt heap.
 * Allowed: plain loads and stores, __atomic builtins that are lock-free,
 * raw system calls (gettid, tgkill, prctl, mmap, sigaltstack,
 * process_vm_readv, pwrite).  Forbidden: malloc, locks, stdio, anything
 * from libstdc++ that is not inline, and changing errno without restoring
 * it.  No clock_gettime either: it is async-signal-safe (signal-safety(7);
 * the crash handler uses it once), but events are stamped with the slot
 * clock alone (read_ticks), which costs a fraction of it.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "unwind.h"

namespace core_timeline::lib {

__thread ThreadLane t_lanes[fmt::kSourceCount] TL_TLS;
__thread ThreadStack t_stack TL_TLS;

pid_t raw_gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }
pid_t raw_getpid() { return static_cast<pid_t>(syscall(SYS_getpid)); }

ssize_t read_own_memory(void *dst, const void *src, size_t n) {
  const int saved_errno = errno;
  struct iovec local = {dst, n};
  struct iovec remote = {const_cast<void *>(src), n};
  const ssize_t got = process_vm_readv(raw_getpid(), &local, 1, &remote, 1, 0);
  errno = saved_errno;
  return got;
}

/* The key whose destructor releases a thread's lane at thread exit; set up
 * by tl_init (ring_setup.cc). */
extern pthread_key_t g_lane_key TL_HIDDEN;
extern bool g_lane_key_ok TL_HIDDEN;

namespace {

/* True if thread `tid` of this process no longer exists (tgkill(2) with
 * signal 0 fails with ESRCH). */
bool thread_is_dead(pid_t pid, uint32_t tid) {
  long rc = syscall(SYS_tgkill, pid, static_cast<pid_t>(tid), 0);
  return rc == -1 && errno == ESRCH;
}

/* Reserve the next sequence of the calling thread's lane.  An owned lane has
 * one writer thread, but a signal handler on that thread may interrupt a
 * reservation: a single read-modify-write instruction is atomic with respect
 * to signals on the same CPU, so no LOCK prefix (and no cache-line transfer)
 * is needed.  The shared overflow lane uses a locked fetch-add. */
inline uint64_t reserve(ThreadLane *tl) {
  if (__builtin_expect(tl->shared, 0))
    return __atomic_add_fetch(&tl->lane->write_index, 1, __ATOMIC_RELAXED);
#if defined(__x86_64__)
  uint64_t v = 1;
  __asm__ __volatile__("xaddq %0, %1" : "+r"(v), "+m"(tl->lane->write_index) : : "memory");
  return v + 1;
#else
  return __atomic_add_fetch(&tl->lane->write_index, 1, __ATOMIC_RELAXED);
#endif
}

}  // namespace

void ensure_altstack() {
  ThreadStack *tl = &t_stack;
  if (tl->altstack != nullptr) return;
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE))
    return; /* the program installed its own: leave it */
  long page = 4096;
#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51 /* include/uapi/linux/auxvec.h */
#endif
  /* The kernel's minimum signal frame for this CPU (AVX-512 and AMX make it
   * large), getauxval(3); 0 on kernels before 4.18.  Not MINSIGSTKSZ, which
   * glibc 2.34+ may define as a sysconf() call. */
  unsigned long min = getauxval(AT_MINSIGSTKSZ);
  if (min < 8192) min = 8192;
  /* Room for our handler and for the handler we chain to. */
  size_t usable = (min + 64 * 1024 + page - 1) & ~static_cast<size_t>(page - 1);
  size_t total = usable + page; /* guard page below the stack */
  void *map = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                   -1, 0);
  if (map == MAP_FAILED) return;
  if (mprotect(map, page, PROT_NONE) != 0) {
    munmap(map, total);
    return;
  }
  stack_t ss;
  ss.ss_sp = static_cast<char *>(map) + page;
  ss.ss_size = usable;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(map, total);
    return;
  }
  tl->altstack = map;
  tl->altstack_size = total;
}

/* The thread's view of an extent: where each index of the lane is. */
static void set_view(ThreadLane *tl, uint64_t extent) {
  Ring &r = g_ring;
  const uint64_t slots = fmt::extent_slots(extent);
  tl->slots = r.slots + fmt::extent_first_slot(extent);
  tl->mask = slots - 1;
  if (fmt::extent_split(extent)) {
    tl->split = fmt::extent_segment_slots(extent);
    tl->high = r.slots + fmt::extent_second_slot(extent) - tl->split;
  } else {
    tl->split = slots;
    tl->high = tl->slots;
  }
}

/* Point the thread's view at lane `index` (the lane's extent as it is now)
 * and say when it grows: at the end of its first pass over its extent, if
 * it has not wrapped yet and the ring has pools (its source's, or one it
 * may borrow from). */
static void view_lane(ThreadLane *tl, uint32_t index) {
  Ring &r = g_ring;
  fmt::LaneDesc *lane = &r.lanes[index];
  const uint64_t extent = __atomic_load_n(&lane->extent, __ATOMIC_ACQUIRE);
  const uint64_t slots = fmt::extent_slots(extent);
  tl->index = index;
  set_view(tl, extent);
  const uint64_t written = __atomic_load_n(&lane->write_index, __ATOMIC_RELAXED);
  bool pools = false;
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c) pools |= r.sources[c].pool_slots != 0;
  tl->grow_at = !tl->shared && pools && written < slots ? slots : 0;
  tl->lane = lane;
}

ThreadLane *claim_lane(uint32_t source, bool in_signal) {
  ThreadLane *tl = &t_lanes[source];
  Ring &r = g_ring;
  if (r.base == nullptr || tl->claiming) return nullptr;
  tl->claiming = true;
  int saved_errno = errno;

  uint32_t tid = static_cast<uint32_t>(raw_gettid());
  pid_t pid = raw_getpid();
  const fmt::SourceArea &area = r.sources[source];
  const uint32_t first = area.first_lane;
  const uint32_t owned = first + area.lane_count - 1; /* per-thread lanes; the last is shared */
  uint32_t chosen = UINT32_MAX;
  uint32_t previous_owner = 0;
  for (uint32_t i = first; i < owned && chosen == UINT32_MAX; ++i) {
    uint32_t expected = 0;
    if (__atomic_load_n(&r.lanes[i].owner_tid, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(&r.lanes[i].owner_tid, &expected, tid, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      chosen = i;
  }
  /* Table full: take over a lane whose owner died without releasing it
   * (killed thread, or a thread whose exit destructor could not run). */
  for (uint32_t i = first; i < owned && chosen == UINT32_MAX; ++i) {
    uint32_t owner = __atomic_load_n(&r.lanes[i].owner_tid, __ATOMIC_RELAXED);
    if (owner != 0 && owner != tid && thread_is_dead(pid, owner) &&
        __atomic_compare_exchange_n(&r.lanes[i].owner_tid, &owner, tid, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      chosen = i;
      previous_owner = owner;
    }
  }

  tl->tid = tid;
  tl->source = source;
  if (chosen == UINT32_MAX) {
    chosen = owned;
    tl->shared = true;
  } else {
    tl->shared = false;
    fmt::LaneDesc *lane = &r.lanes[chosen];
    __atomic_add_fetch(&lane->claims, 1, __ATOMIC_RELAXED);
    char name[16] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0); /* the kernel's comm; 16 bytes, NUL-terminated */
    memcpy(lane->owner_name, name, sizeof name);
  }
  view_lane(tl, chosen);
  stack_bounds_note();

  if (!in_signal) {
    if (r.handlers) ensure_altstack();
    /* Release the lanes at thread exit.  Keys below PTHREAD_KEY_2NDLEVEL_SIZE
     * (32) live in the thread descriptor, so setting one never allocates;
     * for a later key we skip it and rely on the dead-owner takeover. */
    if (g_lane_key_ok && g_lane_key < 32) pthread_setspecific(g_lane_key, tl);
  }
  tl->claiming = false;
  errno = saved_errno;
  record(source, fmt::kKindLaneClaim, 0, chosen, previous_owner, 0, nullptr, 0, false);
  return tl;
}

/* Take, from pool `a`, what a lane of `size` slots at `first` needs to
 * double: the `size` slots after its extent when the extent ends where
 * the pool's used part does (it grows in place), else 2 x size fresh
 * slots.  Lock-free (compare-and-swap on pool_used).  Returns the first
 * slot of the new extent, or UINT64_MAX when the pool has no room. */
static uint64_t take_from_pool(fmt::SourceArea *a, uint64_t first, uint64_t size) {
  const uint64_t pool_first = a->pool_first_slot, pool_slots = a->pool_slots;
  uint64_t used = __atomic_load_n(&a->pool_used, __ATOMIC_RELAXED);
  for (;;) {
    const bool in_place = first >= pool_first && first + size == pool_first + used;
    const uint64_t need = in_place ? size : 2 * size;
    if (used + need > pool_slots) return UINT64_MAX;
    if (__atomic_compare_exchange_n(&a->pool_used, &used, used + need, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return in_place ? first : pool_first + used;
  }
}

/* Take a second segment of `size` slots from pool `a`, starting at a
 * multiple of kSegmentAlign.  A `lender` (another source's pool) gives
 * only while none of its own lanes has ever grown, and counts what it
 * gave (the segment and the slots skipped to align it) in `lent`.
 * Lock-free.  Returns the segment's first slot, or UINT64_MAX. */
static uint64_t take_segment(fmt::SourceArea *a, uint64_t size, bool lender) {
  const uint64_t pool_first = a->pool_first_slot, pool_slots = a->pool_slots;
  uint64_t used = __atomic_load_n(&a->pool_used, __ATOMIC_RELAXED);
  for (;;) {
    if (lender && __atomic_load_n(&a->grown, __ATOMIC_RELAXED) != 0) return UINT64_MAX;
    const uint64_t at = (pool_first + used + fmt::kSegmentAlign - 1) / fmt::kSegmentAlign * fmt::kSegmentAlign;
    const uint64_t need = at - (pool_first + used) + size;
    if (used + need > pool_slots) return UINT64_MAX;
    if (__atomic_compare_exchange_n(&a->pool_used, &used, used + need, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      if (lender) __atomic_add_fetch(&a->lent, need, __ATOMIC_RELAXED);
      return at;
    }
  }
}

/* The slots left in pool `a` (a hint: others may take them meanwhile). */
static uint64_t pool_free(const fmt::SourceArea *a) {
  const uint64_t used = __atomic_load_n(&a->pool_used, __ATOMIC_RELAXED);
  return used < a->pool_slots ? a->pool_slots - used : 0;
}

/* The extent a lane with extent `extent` (of source `own`, full on its
 * first pass) doubles into, its events already copied where they must be;
 * UINT64_MAX when no pool has room.  In order: its own pool, in place or
 * by a copy into 2C fresh slots; then a second segment of its size C,
 * from its own pool, else from the pool with most room of a source that
 * has never grown a lane (it lends).  A lent pool thus goes, a segment at
 * a time, to every source whose lane fills (a lane borrows at most its
 * own size), not all to the first to ask.  A split lane grows no more:
 * its own pool had no room for 2C, so it has none for 4C.  `moved` says
 * whether slots were copied. */
static uint64_t find_room(uint32_t own, uint64_t extent, bool *moved) {
  Ring &r = g_ring;
  *moved = false;
  if (fmt::extent_split(extent)) return UINT64_MAX;
  const uint64_t first = fmt::extent_first_slot(extent), size = fmt::extent_slots(extent);
  const uint32_t log2 = fmt::extent_log2(extent);
  const uint64_t to = take_from_pool(&r.sources[own], first, size);
  if (to != UINT64_MAX) {
    *moved = to != first;
    if (*moved) memcpy(r.slots + to, r.slots + first, size * sizeof(fmt::Slot));
    return fmt::make_extent(static_cast<uint32_t>(to), log2 + 1);
  }
  uint64_t second = take_segment(&r.sources[own], size, false);
  uint32_t lenders[fmt::kSourceCount - 1];
  uint32_t n = 0;
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c)
    if (c != own) lenders[n++] = c;
  if (pool_free(&r.sources[lenders[1]]) > pool_free(&r.sources[lenders[0]])) {
    const uint32_t t = lenders[0];
    lenders[0] = lenders[1];
    lenders[1] = t;
  }
  for (uint32_t i = 0; i < n && second == UINT64_MAX; ++i) second = take_segment(&r.sources[lenders[i]], size, true);
  if (second == UINT64_MAX) return UINT64_MAX;
  return fmt::make_split_extent(static_cast<uint32_t>(first), log2, static_cast<uint32_t>(second));
}

/* The lane of `tl` has just committed the last slot of its first pass over
 * its extent (seq == grow_at == its size C): give it 2C slots (find_room:
 * in its source's pool, or a second segment, lent by an idle source's
 * pool if need be), so that a thread that writes much keeps much.  The
 * lane has not wrapped, so sequence s is in its slot s - 1 under both
 * sizes: growing in place takes the C slots after it, a second segment
 * holds its slots C to 2C - 1, and a copy puts the C slots at the start
 * of 2C fresh ones.  The pools are taken by compare-and-swap (lock-free; other
 * threads grow too), the new extent is published in one release store
 * after its slots hold the events, and a segment left behind is never
 * written again, so a reader (or tl_span_end) that read either extent
 * finds the same events.
 *
 * While this runs the thread's view is cleared: an event from a signal
 * handler that interrupts it finds no lane and is dropped (counted in
 * dropped), so nothing is written to the lane mid-change.  If such an
 * event came before the view was cleared, the lane wrapped and stays as
 * it is.  Async-signal-safe (atomics and memcpy). */
__attribute__((noinline, cold)) static void grow_lane(ThreadLane *tl) {
  Ring &r = g_ring;
  fmt::LaneDesc *lane = tl->lane;
  fmt::SourceArea *area = &r.sources[tl->source];
  const uint64_t size = tl->mask + 1;
  tl->grow_at = 0;
  tl->claiming = true;
  tl->lane = nullptr;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  const uint64_t extent = __atomic_load_n(&lane->extent, __ATOMIC_RELAXED);
  uint64_t next = UINT64_MAX;
  bool moved = false;
  if (__atomic_load_n(&lane->write_index, __ATOMIC_RELAXED) == size) next = find_room(tl->source, extent, &moved);
  if (next != UINT64_MAX) {
    __atomic_store_n(&lane->extent, next, __ATOMIC_RELEASE);
    __atomic_add_fetch(&lane->grown, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&area->grown, 1, __ATOMIC_RELAXED);
    if (moved) __atomic_add_fetch(&area->moved, 1, __ATOMIC_RELAXED);
    set_view(tl, next);
    tl->grow_at = 2 * size;
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tl->lane = lane;
  tl->claiming = false;
}

/* The slot write protocol (docs/ring-format.md, "Write protocol"), in two
 * halves so that record() and record_plain() share it: open_slot()
 * reserves the next sequence of the thread's lane, marks its slot WRITING
 * and stores the fixed fields; commit_slot() stores inline_len and
 * publishes the slot.  Between them record() copies inline bytes. */
struct OpenSlot {
  uint64_t seq;
  fmt::Slot *slot;
};

__attribute__((always_inline)) inline OpenSlot open_slot(ThreadLane *tl, uint16_t kind, uint32_t id,
                                                         uint64_t arg0, uint64_t arg1, uint64_t return_address) {
  const uint64_t seq = reserve(tl);
  const uint64_t index = (seq - 1) & tl->mask;
  fmt::Slot *s = (index < tl->split ? tl->slots : tl->high) + index;
  __atomic_store_n(&s->begin_seq, seq | fmt::kSeqWriting, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  s->timestamp = read_ticks();
  s->tid = tl->tid;
  s->kind = kind;
  s->id = id;
  s->mmap_generation = static_cast<uint32_t>(
      __atomic_load_n(&g_ring.header->mmap_generation, __ATOMIC_RELAXED));
  s->return_address = return_address;
  s->arg0 = arg0;
  s->arg1 = arg1;
  return {seq, s};
}

__attribute__((always_inline)) inline Recorded commit_slot(ThreadLane *tl, OpenSlot o, uint32_t inline_len,
                                                           uint8_t stack = 0) {
  o.slot->inline_len = static_cast<uint8_t>(inline_len);
  o.slot->stack = stack;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&o.slot->end_seq, o.seq, __ATOMIC_RELAXED);
  __atomic_store_n(&o.slot->begin_seq, o.seq, __ATOMIC_RELEASE);
  const uint32_t lane = tl->index;
  if (__builtin_expect(o.seq == tl->grow_at, 0)) grow_lane(tl);
  if (__builtin_expect(g_ring.sync_every != 0, 0) && o.seq % g_ring.sync_every == 0) sidecar_sync();
  return {o.seq, lane};
}

Recorded record(uint32_t source, uint16_t kind, uint32_t id, uint64_t arg0, uint64_t arg1,
                uint64_t return_address, const void *inline_bytes, uint32_t inline_len,
                bool copy_from_ptr, uint8_t stack) {
  ThreadLane *tl = &t_lanes[source];
  if (__builtin_expect(tl->lane == nullptr, 0)) {
    tl = claim_lane(source, false);
    if (tl == nullptr) {
      if (g_ring.header != nullptr) {
        __atomic_add_fetch(&g_ring.header->dropped, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&g_ring.sources[source].dropped, 1, __ATOMIC_RELAXED);
      }
      return {0, 0};
    }
  }
  const OpenSlot o = open_slot(tl, kind, id, arg0, arg1, return_address);
  fmt::Slot *s = o.slot;
  uint32_t n = inline_len < fmt::kInlineBytes ? inline_len : fmt::kInlineBytes;
  if (n != 0 && inline_bytes != nullptr) {
    if (copy_from_ptr) {
      const ssize_t got = read_own_memory(s->inline_data, inline_bytes, n);
      n = got > 0 ? static_cast<uint32_t>(got) : 0;
    } else {
      memcpy(s->inline_data, inline_bytes, n);
    }
  } else {
    n = 0;
  }
  return commit_slot(tl, o, n, stack);
}

Recorded record_stacked(uint32_t source, uint16_t kind, uint32_t id, uint64_t arg0, uint64_t arg1,
                        uint64_t return_address, const void *inline_bytes, uint32_t inline_len,
                        bool copy_from_ptr, const uint64_t *frames, uint8_t stack) {
  if (stack == 0)
    return record(source, kind, id, arg0, arg1, return_address, inline_bytes, inline_len, copy_from_ptr);
  if (fmt::stack_inline_ok(kind) && (inline_bytes == nullptr || inline_len == 0))
    return record(source, kind, id, arg0, arg1, return_address, frames, fmt::stack_depth(stack) * 8, false, stack);
  return record_chained(source, kind, id, arg0, arg1, return_address, inline_bytes, inline_len, copy_from_ptr,
                        frames, fmt::stack_depth(stack), static_cast<uint8_t>(fmt::stack_end(stack)));
}

Recorded record_chained(uint32_t source, uint16_t kind, uint32_t id, uint64_t arg0, uint64_t arg1,
                        uint64_t return_address, const void *inline_bytes, uint32_t inline_len,
                        bool copy_from_ptr, const uint64_t *frames, uint32_t depth, uint8_t end) {
  if (depth > fmt::kMaxChainedStackDepth) depth = fmt::kMaxChainedStackDepth;
  const uint32_t parts = fmt::stack_parts(depth);
  const Recorded host = record(source, kind, id, arg0, arg1, return_address, inline_bytes, inline_len, copy_from_ptr,
                               static_cast<uint8_t>(fmt::stack_part_byte(depth, end, 0) | fmt::kStackNext));
  for (uint32_t k = 0; k < parts && host.seq != 0; ++k) {
    const uint8_t part = fmt::stack_part_byte(depth, end, k);
    const uint32_t first = k * fmt::kMaxStackDepth;
    if (record(source, fmt::kKindStack, kind, host.seq, first, return_address, frames + first,
               fmt::stack_depth(part) * 8, false, part)
            .seq == 0)
      break;
  }
  return host;
}

/* The registers of the caller of the function whose frame `fa` is
 * (__builtin_frame_address(0) of a function that keeps a frame pointer):
 * the saved rbp at fa[0], the return address at fa[1], the caller's stack
 * pointer after the return at fa + 2. */
__attribute__((always_inline)) inline FrameRegs caller_regs(void *fa) {
  const uint64_t *f = static_cast<const uint64_t *>(fa);
  return {f[1], reinterpret_cast<uint64_t>(f + 2), f[0]};
}

/* Walk `depth` frames beyond the caller whose registers are `regs`, with
 * the first skipped when it is `skip` (a wrapper's own frame, whose caller
 * is the event's return address).  Returns the Slot.stack byte. */
__attribute__((noinline)) uint8_t walk_from(FrameRegs regs, uint32_t depth, uint64_t *frames, uint64_t skip) {
  if (depth > fmt::kMaxStackDepth) depth = fmt::kMaxStackDepth;
  if (depth == 0) return 0;
  if (skip == 0 || skip == regs.pc) {
    const WalkResult w = walk_stack(regs, false, frames, depth, false);
    return fmt::make_stack(w.depth, w.end);
  }
  uint64_t buf[fmt::kMaxStackDepth + 1];
  const WalkResult w = walk_stack(regs, false, buf, depth + 1, false);
  const uint32_t n = w.depth;
  uint32_t end = w.end;
  const uint32_t from = n > 0 && buf[0] == skip ? 1 : 0;
  uint32_t m = n - from;
  if (m > depth) {
    m = depth;
    end = fmt::kStackDepthLimit;
  }
  for (uint32_t i = 0; i < m; ++i) frames[i] = buf[from + i];
  return fmt::make_stack(m, end);
}

/* record() for an event without inline bytes, inlined into the hot entry
 * points (tl_mark, tl_mark2, tl_span_begin, tl_span_end, and tl_record and
 * tl_record_bytes without bytes or stack): the same protocol without the
 * call and the inline-bytes branches.  A thread's first event of a source
 * still goes through record(), which claims the lane. */
__attribute__((always_inline)) inline Recorded record_plain(uint16_t kind, uint32_t id, uint64_t arg0,
                                                            uint64_t arg1, uint64_t return_address,
                                                            uint32_t source = fmt::kSourceUser) {
  ThreadLane *tl = &t_lanes[source];
  if (__builtin_expect(tl->lane == nullptr, 0))
    return record(source, kind, id, arg0, arg1, return_address, nullptr, 0, false);
  return commit_slot(tl, open_slot(tl, kind, id, arg0, arg1, return_address), 0);
}

/* The wrappers' event (tl_record, tl_record_bytes) with a stack walked
 * from `regs` (the caller of the tl_ function), its first frame dropped
 * when it is `skip`.  Apart from them so that their common path keeps no
 * frame array (and no stack protector's canary). */
static __attribute__((noinline)) void record_walked(FrameRegs regs, uint32_t depth, uint16_t kind, uint32_t id,
                                             uint64_t arg0, uint64_t arg1, uint64_t return_address,
                                             const void *bytes, uint32_t len, uint64_t skip) {
  uint64_t frames[fmt::kMaxStackDepth];
  const uint8_t stack = walk_from(regs, depth, frames, skip);
  record_stacked(fmt::source_of_kind(kind), kind, id, arg0, arg1, return_address, bytes, len, false, frames, stack);
}

}  // namespace core_timeline::lib

using core_timeline::lib::g_enabled;
using core_timeline::lib::record;
using core_timeline::lib::record_plain;
namespace fmt = core_timeline::format;

#define TL_ENABLED(source) \
  __builtin_expect((__atomic_load_n(&g_enabled, __ATOMIC_RELAXED) & (source)) != 0, 1)

extern "C" {

TL_EXPORT void tl_mark(uint32_t id, uintptr_t arg) {
  if (!TL_ENABLED(TL_SOURCE_USER)) return;
  record_plain(fmt::kKindUser, id, arg, 0, reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}

TL_EXPORT void tl_mark2(uint32_t id, uintptr_t arg0, uintptr_t arg1) {
  if (!TL_ENABLED(TL_SOURCE_USER)) return;
  record_plain(fmt::kKindUser, id, arg0, arg1, reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}

TL_EXPORT void tl_mark_ptr(uint32_t id, const void *ptr, uint32_t len_cap) {
  if (!TL_ENABLED(TL_SOURCE_USER)) return;
  record(fmt::kSourceUser, fmt::kKindUserPtr, id, reinterpret_cast<uintptr_t>(ptr), len_cap,
         reinterpret_cast<uintptr_t>(__builtin_return_address(0)), ptr, len_cap, true);
}

TL_EXPORT void tl_thread_name(const char *name) {
  if (name == nullptr || !TL_ENABLED(TL_SOURCE_USER)) return;
  char buf[16] = {0};
  uint32_t n = 0;
  while (n < 15 && name[n] != '\0') {
    buf[n] = name[n];
    ++n;
  }
  core_timeline::lib::ThreadLane *tl = &core_timeline::lib::t_lanes[fmt::kSourceUser];
  if (tl->lane == nullptr) tl = core_timeline::lib::claim_lane(fmt::kSourceUser, false);
  if (tl != nullptr && !tl->shared) memcpy(tl->lane->owner_name, buf, sizeof buf);
  record(fmt::kSourceUser, fmt::kKindThreadName, 0, 0, 0, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
         buf, n, false);
}

/* The walk starts from the caller's registers, taken from this
 * function's own frame (__builtin_frame_address(0) makes it keep one:
 * two instructions more). */
TL_EXPORT void tl_mark_stack(uint32_t id, uintptr_t arg, uint32_t depth) {
  if (!TL_ENABLED(TL_SOURCE_USER)) return;
  uint64_t frames[fmt::kMaxStackDepth];
  const core_timeline::lib::FrameRegs regs = core_timeline::lib::caller_regs(__builtin_frame_address(0));
  const uint8_t stack = core_timeline::lib::walk_from(regs, depth, frames, 0);
  core_timeline::lib::record_stacked(fmt::kSourceUser, fmt::kKindUser, id, arg, 0, regs.pc, nullptr, 0, false,
                                     frames, stack);
}

TL_EXPORT uint64_t tl_span_begin(uint32_t id, uintptr_t arg) {
  if (!TL_ENABLED(TL_SOURCE_USER)) return 0;
  core_timeline::lib::Recorded w;
  const uint32_t depth = __atomic_load_n(&core_timeline::lib::g_stack_depth, __ATOMIC_RELAXED);
  if (__builtin_expect(depth != 0, 0)) {
    uint64_t frames[fmt::kMaxStackDepth];
    const core_timeline::lib::FrameRegs regs = core_timeline::lib::caller_regs(__builtin_frame_address(0));
    const uint8_t stack = core_timeline::lib::walk_from(regs, depth, frames, 0);
    w = core_timeline::lib::record_stacked(fmt::kSourceUser, fmt::kKindSpanBegin, id, arg, 0, regs.pc, nullptr, 0,
                                           false, frames, stack);
  } else {
    w = record_plain(fmt::kKindSpanBegin, id, arg, 0, reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
  }
  return w.seq == 0 ? 0 : fmt::span_token(w.lane, w.seq);
}

/* The begin's id and timestamp are read from its slot seqlock-style (the
 * slot may be in another thread's lane, and may be being overwritten right
 * now): begin_seq must show the token's sequence, committed, before and
 * after the fields are read, end_seq too, and the kind must be a begin.
 * Otherwise the slot no longer holds the begin, and the end records 0s. */
TL_EXPORT void tl_span_end(uint64_t token) {
  if (token == 0 || !TL_ENABLED(TL_SOURCE_USER)) return;
  const core_timeline::lib::Ring &r = core_timeline::lib::g_ring;
  const uint32_t lane = fmt::span_token_lane(token);
  const uint64_t seq = fmt::span_token_seq(token);
  uint32_t id = 0;
  uint64_t begun = 0;
  if (lane < r.lane_count && seq != 0) {
    /* The lane's extent now: if the lane grew since the begin, its slot
     * was copied or stayed, at the same position. */
    const uint64_t extent = __atomic_load_n(&r.lanes[lane].extent, __ATOMIC_ACQUIRE);
    const fmt::Slot *s = &r.slots[fmt::extent_slot(extent, (seq - 1) & (fmt::extent_slots(extent) - 1))];
    if (__atomic_load_n(&s->begin_seq, __ATOMIC_ACQUIRE) == seq) {
      const uint32_t read_id = __atomic_load_n(&s->id, __ATOMIC_RELAXED);
      const uint64_t read_ts = __atomic_load_n(&s->timestamp, __ATOMIC_RELAXED);
      const uint16_t read_kind = __atomic_load_n(&s->kind, __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&s->begin_seq, __ATOMIC_RELAXED) == seq &&
          __atomic_load_n(&s->end_seq, __ATOMIC_RELAXED) == seq && read_kind == fmt::kKindSpanBegin) {
        id = read_id;
        begun = read_ts;
      }
    }
  }
  record_plain(fmt::kKindSpanEnd, id, token, begun, reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}

}  // extern "C"

namespace {

/* The TL_SOURCE_* bit that governs a built-in kind accepted by tl_record;
 * 0 for a kind tl_record does not accept.  (Its lanes are
 * fmt::source_of_kind's.) */
uint32_t source_of(uint32_t kind) {
  switch (kind) {
    case fmt::kKindMalloc:
    case fmt::kKindFree:
    case fmt::kKindCalloc:
    case fmt::kKindRealloc:
      return TL_SOURCE_ALLOC;
    default:
      return kind >= fmt::kKindIoFirst && kind <= fmt::kKindIoLast ? TL_SOURCE_IO : 0;
  }
}

/* The kinds whose inline bytes are the call's payload, kept only up to
 * TL_IO_BYTES (g_io_bytes). */
inline bool payload_kind(uint32_t kind) {
  return kind == TL_KIND_READ || kind == TL_KIND_WRITE || kind == TL_KIND_RECV || kind == TL_KIND_SEND;
}

}  // namespace

extern "C" {

/* The allocation kinds' stack (TL_STACK_DEPTH): walked from the caller of
 * tl_record (the wrapper), its first frame dropped when it is the event's
 * return address (the wrapper's caller, already in the slot). */
__attribute__((always_inline)) inline uint32_t alloc_stack_depth(uint32_t source) {
  return source == TL_SOURCE_ALLOC ? __atomic_load_n(&core_timeline::lib::g_stack_depth, __ATOMIC_RELAXED) : 0;
}

TL_EXPORT void tl_record(uint32_t kind, uint32_t id, uintptr_t arg0, uintptr_t arg1) {
  uint32_t source = source_of(kind);
  if (source == 0 || !TL_ENABLED(source)) return;
  if (__builtin_expect(alloc_stack_depth(source) != 0, 0)) {
    const core_timeline::lib::FrameRegs regs = core_timeline::lib::caller_regs(__builtin_frame_address(0));
    core_timeline::lib::record_walked(regs, alloc_stack_depth(source), static_cast<uint16_t>(kind), id, arg0, arg1,
                                      regs.pc, nullptr, 0, 0);
    return;
  }
  record_plain(static_cast<uint16_t>(kind), id, arg0, arg1, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
               fmt::source_of_kind(static_cast<uint16_t>(kind)));
}

TL_EXPORT void tl_record_bytes(uint32_t kind, uint32_t id, uintptr_t arg0, uintptr_t arg1,
                               const void *bytes, uint32_t len, uintptr_t return_address) {
  uint32_t source = source_of(kind);
  if (source == 0 || !TL_ENABLED(source)) return;
  if (payload_kind(kind)) {
    const uint32_t keep = __atomic_load_n(&core_timeline::lib::g_io_bytes, __ATOMIC_RELAXED);
    if (len > keep) len = keep;
  }
  if (return_address == 0)
    return_address = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  if (__builtin_expect(alloc_stack_depth(source) != 0, 0)) {
    const core_timeline::lib::FrameRegs regs = core_timeline::lib::caller_regs(__builtin_frame_address(0));
    core_timeline::lib::record_walked(regs, alloc_stack_depth(source), static_cast<uint16_t>(kind), id, arg0, arg1,
                                      return_address, bytes, len, return_address);
    return;
  }
  if (bytes == nullptr || len == 0) {
    record_plain(static_cast<uint16_t>(kind), id, arg0, arg1, return_address,
                 fmt::source_of_kind(static_cast<uint16_t>(kind)));
    return;
  }
  record(fmt::source_of_kind(static_cast<uint16_t>(kind)), static_cast<uint16_t>(kind), id, arg0, arg1,
         return_address, bytes, len, false);
}

TL_EXPORT uint32_t tl_set_enabled(uint32_t sources) {
  sources &= TL_SOURCE_ALL;
  if (core_timeline::lib::g_ring.header == nullptr) return 0; /* no ring: stays off */
  __atomic_store_n(&core_timeline::lib::g_ring.header->enabled_sources, sources,
                   __ATOMIC_RELAXED);
  return __atomic_exchange_n(&g_enabled, sources, __ATOMIC_RELAXED);
}

TL_EXPORT uint32_t tl_enabled(void) { return __atomic_load_n(&g_enabled, __ATOMIC_RELAXED); }

}  // extern "C"
