/* SPDX-License-Identifier: MIT */
/*
 * helper.cc - the helper thread and the degraded-mode sidecar.
 *
 * The ring is in the process's memory, so the core never needs any of this.
 * The sidecar is a file copy of the ring, for the case where the core lost
 * the ring's mapping (coredump_filter, truncation): the helper thread writes
 * it every sync_interval_ms (default 100 ms), or tl_mark writes a lane every
 * `sync_every` events when the program refuses a thread.  The helper also
 * refreshes the header's clock anchor and mmap generation.
 *
 * sidecar_sync() is ASYNC-SIGNAL-SAFE (pwrite(2), plain loads and lock-free
 * __atomic builtins only): the crash handler and tl_mark call it.
 */
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "unwind.h"

namespace core_timeline::lib {

namespace {

/* pwrite all of [buf, buf + len) at `offset`; errors are ignored (the
 * sidecar is best-effort).  Preserves errno. */
void pwrite_all(int fd, const void *buf, uint64_t len, uint64_t offset) {
  int saved_errno = errno;
  const uint8_t *p = static_cast<const uint8_t *>(buf);
  while (len > 0) {
    ssize_t n = pwrite(fd, p, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    len -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  errno = saved_errno;
}

int64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/* Refresh the latest clock anchor (seqlock: odd while writing). */
void refresh_anchor(fmt::RingHeader *h) {
  uint64_t seq = __atomic_load_n(&h->latest_anchor_seq, __ATOMIC_RELAXED);
  __atomic_store_n(&h->latest_anchor_seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  h->latest_realtime_ns = static_cast<uint64_t>(now_ns(CLOCK_REALTIME));
  h->latest_ticks = read_ticks();
  h->latest_monotonic_ns = static_cast<uint64_t>(now_ns(CLOCK_MONOTONIC));
  __atomic_store_n(&h->latest_anchor_seq, seq + 2, __ATOMIC_RELEASE);
}

void *helper_main(void *) {
  /* Crash signals and everything else go to the program's own threads. */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  prctl(PR_SET_NAME, "tl-helper", 0, 0, 0);
  for (;;) {
    Ring &r = g_ring;
    if (r.base == nullptr) return nullptr;
    struct pollfd pfd = {r.wake_fd, POLLIN, 0};
    int n = poll(&pfd, r.wake_fd >= 0 ? 1 : 0, static_cast<int>(r.sync_interval_ms));
    if (n > 0) {
      uint64_t v;
      /* Raw read(2): libtimeline-io.so must not record our own I/O. */
      long got = syscall(SYS_read, r.wake_fd, &v, sizeof v);
      (void)got;
    }
    const uint64_t generation = loader_generation();
    __atomic_store_n(&r.header->mmap_generation, generation, __ATOMIC_RELAXED);
    /* An object dlopen'ed (or dlclose'd) since: the walker's table again. */
    unwind_refresh(generation);
    refresh_anchor(r.header);
    if (r.sidecar_fd >= 0) sidecar_sync();
  }
}

}  // namespace

/* LaneDesc.grown at each lane's last sync: a lane that grew since is
 * written whole (a moved lane's older events are at new offsets); one
 * that did not, only the slots of the sequences written since.  Static,
 * so the crash handler can use it; cleared for each new ring. */
static uint32_t g_synced_grown[fmt::kMaxLanes];

void sidecar_forget() { memset(g_synced_grown, 0, sizeof g_synced_grown); }

/* Copy the lane's slots of index [from, from + count) (within its
 * extent, count <= its slots - from) to the sidecar at their offsets: one
 * pwrite per segment they cross. */
static void sync_lane_range(const Ring &r, uint64_t extent, uint64_t from, uint64_t count) {
  const uint64_t segment = fmt::extent_split(extent) ? fmt::extent_segment_slots(extent) : fmt::extent_slots(extent);
  while (count != 0) {
    const uint64_t n = from < segment && from + count > segment ? segment - from : count;
    const uint64_t at = r.header->lanes_offset + fmt::extent_slot(extent, from) * fmt::kSlotSize;
    pwrite_all(r.sidecar_fd, r.base + at, n * fmt::kSlotSize, at);
    from += n;
    count -= n;
  }
}

void sidecar_sync() {
  Ring &r = g_ring;
  if (r.sidecar_fd < 0 || r.base == nullptr) return;
  for (uint32_t i = 0; i < r.lane_count && i < fmt::kMaxLanes; ++i) {
    fmt::LaneDesc *lane = &r.lanes[i];
    uint64_t written = __atomic_load_n(&lane->write_index, __ATOMIC_ACQUIRE);
    uint64_t synced = __atomic_load_n(&lane->synced_index, __ATOMIC_RELAXED);
    const uint32_t grown = __atomic_load_n(&lane->grown, __ATOMIC_ACQUIRE);
    if (written == synced && grown == g_synced_grown[i]) continue;
    const uint64_t extent = __atomic_load_n(&lane->extent, __ATOMIC_ACQUIRE);
    const uint64_t slots = fmt::extent_slots(extent);
    if (grown != g_synced_grown[i] || written < synced || written - synced >= slots) {
      sync_lane_range(r, extent, 0, slots);
    } else {
      /* The slots of sequences synced + 1 .. written, which may wrap. */
      const uint64_t from = synced % slots, count = written - synced;
      const uint64_t head = from + count <= slots ? count : slots - from;
      sync_lane_range(r, extent, from, head);
      if (head < count) sync_lane_range(r, extent, 0, count - head);
    }
    /* A growth while we wrote: written whole next time. */
    if (__atomic_load_n(&lane->grown, __ATOMIC_ACQUIRE) == grown) g_synced_grown[i] = grown;
    __atomic_store_n(&lane->synced_index, written, __ATOMIC_RELEASE);
  }
  /* The name table, when names were claimed since the last copy; again
   * next time if an entry was still being written (claimed, not yet
   * committed), so the file never keeps a half-written entry for good. */
  const uint64_t claimed = __atomic_load_n(&r.header->names_claimed, __ATOMIC_ACQUIRE);
  if (r.names != nullptr && claimed != __atomic_load_n(&r.names_synced, __ATOMIC_RELAXED)) {
    const uint64_t used = claimed < r.names_capacity ? claimed : r.names_capacity;
    bool complete = true;
    for (uint64_t i = 0; i < used; ++i)
      complete &= __atomic_load_n(&r.names[i].state, __ATOMIC_ACQUIRE) == fmt::kNameCommitted;
    pwrite_all(r.sidecar_fd, r.names, used * fmt::kNameEntrySize, r.header->names_offset);
    if (complete) __atomic_store_n(&r.names_synced, claimed, __ATOMIC_RELAXED);
  }
  __atomic_add_fetch(&r.header->sync_count, 1, __ATOMIC_RELAXED);
  /* Header and lane table last, so their indexes never run ahead of the
   * slots and names already in the file. */
  pwrite_all(r.sidecar_fd, r.base, r.header->lanes_offset, 0);
}

int helper_start() {
  Ring &r = g_ring;
  r.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  /* The helper must not inherit a blocked-everything mask from nowhere, nor
   * run crash handlers: it blocks all signals itself. */
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, helper_main, nullptr);
  pthread_attr_destroy(&attr);
  return -rc;
}

}  // namespace core_timeline::lib

extern "C" TL_EXPORT int tl_flush_async(void) {
  using core_timeline::lib::g_ring;
  if (g_ring.base == nullptr || g_ring.sidecar_fd < 0) return -ENOENT;
  if (g_ring.wake_fd >= 0) {
    int saved_errno = errno;
    uint64_t one = 1;
    /* Raw write(2): libtimeline-io.so must not record our own I/O. */
    long n = syscall(SYS_write, g_ring.wake_fd, &one, sizeof one);
    int rc = n == static_cast<long>(sizeof one) || errno == EAGAIN ? 0 : -errno;
    errno = saved_errno;
    return rc;
  }
  core_timeline::lib::sidecar_sync();
  return 0;
}
