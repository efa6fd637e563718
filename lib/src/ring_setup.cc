/* SPDX-License-Identifier: MIT */
/*
 * ring_setup.cc - creating the ring: tl_init, the memfd mapping, the header, the
 * no-ring page that says why there is no ring, fork and thread-exit
 * handling, the sidecar file.
 *
 * tl_init runs in normal context.  The fork child handler (on_fork_child)
 * runs in a child of a possibly multithreaded parent, where only
 * async-signal-safe calls are allowed; it uses the same ring_create and
 * no_ring_make paths, which are built from system calls only (memfd_create,
 * ftruncate, mmap, open, read, fstat, getrandom, clock_gettime), the Text
 * builder (text_builder.h), strerrordesc_np/strerrorname_np (static tables) and the
 * name-table copy (name_table.cc), plus pthread_create for the helper thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "unwind.h"
#include "text_builder.h"

namespace core_timeline::lib {

Ring g_ring = {nullptr, 0, nullptr, nullptr, nullptr, nullptr, 0, -1, -1, -1, 0, 0, false, false, nullptr, 0, 0};
uint32_t g_enabled = 0;
pthread_key_t g_lane_key;
bool g_lane_key_ok = false;

namespace {

constexpr uint32_t kDefaultSlots = 32;
constexpr uint32_t kDefaultLanes = 64;
constexpr uint64_t kDefaultBudget = 16ull << 20; /* docs/performance.md, "Sizing the ring" */
/* Per-thread lanes of each source, so that 3 x (lanes + 1) <= kMaxLanes. */
constexpr uint32_t kMaxLanesPerSource = fmt::kMaxLanes / fmt::kSourceCount - 1;
static_assert(kMaxLanesPerSource == 1364, "timeline.h and libtimeline(3) say lanes is at most 1364");
/* An options struct from before io_bytes is 72 bytes, its last 4 tail
 * padding: io_bytes must start past them, so such a size never reaches it. */
static_assert(offsetof(struct tl_options, io_bytes) >= 72 && offsetof(struct tl_options, stack_depth) == 64,
              "tl_options.io_bytes lies beyond the size older programs pass");
constexpr uint32_t kDefaultIntervalMs = 100;
constexpr uint32_t kWriterVersion = 0x000100; /* 0.1.0 */
constexpr char kDefaultSidecarDir[] = "/run/core-timeline";

/* Read a whole small file from /proc with open/read only. */
ssize_t read_small_file(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  size_t used = 0;
  while (used + 1 < cap) {
    ssize_t n = read(fd, buf + used, cap - 1 - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return -e;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  buf[used] = '\0';
  return static_cast<ssize_t>(used);
}

/* Field 22 of /proc/self/stat, "starttime" in clock ticks after boot
 * (proc(5)).  Fields are counted after the last ')' so a comm holding
 * spaces or parentheses cannot shift them.  Returns 0 if unreadable. */
uint64_t process_start_ticks() {
  char buf[1024];
  if (read_small_file("/proc/self/stat", buf, sizeof buf) <= 0) return 0;
  const char *p = strrchr(buf, ')');
  if (p == nullptr) return 0;
  ++p;
  /* After ')' comes field 3 (state); starttime is field 22. */
  int field = 2;
  while (*p != '\0' && field < 22) {
    while (*p == ' ') ++p;
    ++field;
    if (field == 22) break;
    while (*p != '\0' && *p != ' ') ++p;
  }
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  return v;
}

/* NT_GNU_BUILD_ID of the main program, from its program headers
 * (dl_iterate_phdr(3): the first object reported is the main program). */
struct BuildIdSearch {
  uint8_t *out;
  uint32_t len;
};
int find_main_build_id(struct dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const uint8_t *p = reinterpret_cast<const uint8_t *>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto *nh = reinterpret_cast<const ElfW(Nhdr) *>(p);
      size_t name_sz = (nh->n_namesz + 3u) & ~3u;
      size_t desc_sz = (nh->n_descsz + 3u) & ~3u;
      const uint8_t *name = p + sizeof(ElfW(Nhdr));
      const uint8_t *desc = name + name_sz;
      if (desc + desc_sz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        uint32_t n = nh->n_descsz < fmt::kMaxBuildId ? nh->n_descsz : fmt::kMaxBuildId;
        memcpy(search->out, desc, n);
        search->len = n;
        return 1;
      }
      p = desc + desc_sz;
    }
  }
  return 1; /* only the first object (the main program) */
}

int count_loads(struct dl_phdr_info *info, size_t size, void *data) {
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *static_cast<uint64_t *>(data) = info->dlpi_adds + info->dlpi_subs;
  return 1; /* the counters are global: the first object is enough */
}

/* A low, randomised address for the ring: [1 TiB, 2 TiB).  Below a PIE
 * executable (0x55...), the heap and the libraries, so the ring's PT_LOAD
 * comes early in the core and survives a core truncated at its size limit
 * (systemd-coredump's ProcessSizeMax keeps the low addresses). */
void *ring_address_hint(uint64_t size) {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = 0;
  uint64_t span = (1ull << 40) - size;
  uint64_t addr = (1ull << 40) + ((r % span) & ~uint64_t(0xFFFF));
  return reinterpret_cast<void *>(addr);
}

int64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/* Open the sidecar: a new file in `dir`, never following a symlink and never
 * opening a file that already exists (O_CREAT | O_EXCL | O_NOFOLLOW), so in
 * a world-writable sticky directory it cannot be steered to another
 * process's file.  Returns the fd or -errno. */
/* The sidecar's file name, "core-timeline.<pid>.<starttime>.ring": pid plus
 * start time is unique for the boot.  Writes at most 64 bytes. */
void sidecar_name(char *out, uint32_t pid, uint64_t start_ticks) {
  char *p = out;
  auto put = [&p](const char *text) {
    while (*text != '\0') *p++ = *text++;
  };
  auto put_u64 = [&p](uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = char('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) *p++ = tmp[--n];
  };
  put("core-timeline.");
  put_u64(pid);
  put(".");
  put_u64(start_ticks);
  put(".ring");
  *p = '\0';
}

/* Open the sidecar: a new file in `dir`, never following a symlink and never
 * opening a file that already exists (O_CREAT | O_EXCL | O_NOFOLLOW), so in
 * a world-writable sticky directory it cannot be steered to another
 * process's file; a stale file from an earlier boot makes it fail.  Returns
 * the fd or -errno. */
int sidecar_open(const char *dir, uint32_t pid, uint64_t start_ticks) {
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0) return -errno;
  char name[64];
  sidecar_name(name, pid, start_ticks);
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int e = errno;
  close(dirfd);
  return fd < 0 ? -e : fd;
}

/* Map `size` bytes of `memfd` MAP_SHARED at the low address of
 * ring_address_hint(), or anywhere if that is taken.  MAP_FAILED (errno
 * set) on failure.  The ring and the no-ring page are placed alike. */
void *map_low(uint64_t size, int memfd) {
  void *hint = ring_address_hint(size);
  void *base = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, memfd, 0);
  if (base == MAP_FAILED || base != hint) {
    if (base != MAP_FAILED) munmap(base, size);
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  }
  if (base != MAP_FAILED) {
    /* Undo any MADV_DONTDUMP a caller's policy might apply to new
     * mappings; the filter bits still decide (docs/platform.md §1). */
    madvise(base, size, MADV_DODUMP);
  }
  return base;
}

/* The fields a ring and a no-ring page share: magic, version, sizes, clock
 * bits, the process's identity.  `build_id` may be NULL: then it and
 * *mmap_generation are read from the loader (NOT async-signal-safe; a fork
 * child passes the parent's). */
void fill_identity(fmt::RingHeader *h, const uint8_t *build_id, uint32_t build_id_len,
                   uint64_t *mmap_generation) {
  memcpy(h->magic, fmt::kMagic, 4);
  h->version = fmt::kVersion;
  h->header_size = fmt::kHeaderSizeV3;
  h->endian_marker = fmt::kEndianMarker;
#if defined(__x86_64__) || defined(__i386__)
  h->compat_flags = fmt::kCompatClockTsc;
#elif defined(__aarch64__)
  h->compat_flags = fmt::kCompatClockCntvct;
#else
  h->compat_flags = 0;
#endif
  h->slot_size = fmt::kSlotSize;
  h->lane_table_offset = fmt::kHeaderSizeV3;
  h->source_count = fmt::kSourceCount;
  h->pid = static_cast<uint32_t>(raw_getpid());
  h->writer_version = kWriterVersion;
  h->process_start_ticks = process_start_ticks();
  struct stat ns;
  if (stat("/proc/self/ns/pid", &ns) == 0) {
    h->pid_ns_inode = ns.st_ino;
    h->pid_ns_dev = ns.st_dev;
  }
  if (build_id != nullptr) {
    h->build_id_len = build_id_len;
    memcpy(h->build_id, build_id, build_id_len);
  } else {
    BuildIdSearch search = {h->build_id, 0};
    dl_iterate_phdr(find_main_build_id, &search);
    h->build_id_len = search.len;
    *mmap_generation = loader_generation();
  }
}

/* The init clock anchor: CLOCK_REALTIME and CLOCK_MONOTONIC between two
 * reads of the slot clock, whose midpoint is anchor_ticks and whose
 * distance (saturated to 32 bits) is anchor_spread_ticks. */
void take_init_anchor(fmt::RingHeader *h) {
  /* The process's first clock_gettime may fault in the vDSO's pages (7 us
   * measured): once before the anchor, so its spread is the calls' own. */
  (void)now_ns(CLOCK_REALTIME);
  (void)now_ns(CLOCK_MONOTONIC);
  const uint64_t t0 = read_ticks();
  h->anchor_realtime_ns = static_cast<uint64_t>(now_ns(CLOCK_REALTIME));
  h->anchor_monotonic_ns = static_cast<uint64_t>(now_ns(CLOCK_MONOTONIC));
  const uint64_t t1 = read_ticks();
  const uint64_t spread = t1 - t0;
  h->anchor_ticks = t0 + spread / 2;
  h->anchor_spread_ticks = spread > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(spread);
}

/* How each number of the geometry was given, for the messages: the name
 * of the variable or option ("TL_SLOTS", "slots_per_lane"), or nullptr for
 * a default.  String literals only (a fork child reads them). */
struct Asked {
  const char *slots;
  const char *lanes;
  const char *names;
  const char *budget;
  const char *shares;
};

/* "TL_SLOTS=1048576", or "256 slots" for a default. */
void put_value(Text &t, const char *label, uint32_t value, const char *unit) {
  if (label != nullptr)
    t.put(label).put("=").put_u64(value);
  else
    t.put_u64(value).put(" ").put(unit);
}

/* "TL_SLOTS=1048576 with 64 lanes", "slots_per_lane=65536 lanes=255
 * names=4096": the geometry as it was asked for. */
void put_geometry(Text &t, uint32_t slots, uint32_t lanes, uint32_t names, const Asked &asked) {
  put_value(t, asked.slots, slots, "slots");
  t.put(asked.lanes != nullptr ? " " : " with ");
  put_value(t, asked.lanes, lanes, "lanes");
  if (asked.names != nullptr) t.put(" ").put(asked.names).put("=").put_u64(names);
}

/* Settings kept so a forked child can build a ring of the same shape. */
struct Settings {
  uint32_t lanes;          /* per-thread lanes of each source, without the
                              overflow lane */
  uint32_t slots_per_lane;
  uint32_t names;          /* name table entries */
  uint64_t budget;         /* bytes for the pools */
  uint32_t share[fmt::kSourceCount];      /* percent */
  uint32_t pool_slots[fmt::kSourceCount]; /* from budget and share */
  uint32_t present;        /* bit per source whose recorder was loaded */
  uint32_t enabled;
  uint32_t sync_every;
  uint32_t sync_interval_ms;
  bool handlers;
  bool helper_thread;
  bool sidecar;
  Asked asked;
  char sidecar_dir[256];
};
Settings g_settings;
int g_init_state = 0; /* 0 none, 1 in progress, 2 done (atomic) */

/* Build a ring of the configured shape in a new memfd and make it current.
 * `build_id` may be NULL: then it and the mmap generation are read from the
 * loader (a fork child passes the parent's instead of taking the loader's
 * lock).  Returns 0 or -errno; on error nothing is mapped, and `why` says
 * which call failed, for what size, and its error.  Async-signal-safe but
 * for the loader's lock (build_id NULL). */
int ring_create(const uint8_t *build_id, uint32_t build_id_len, uint64_t mmap_generation, Text &why) {
  const Settings &st = g_settings;
  const fmt::GeometryV3 g = fmt::geometry_v3(st.lanes + 1, st.slots_per_lane, st.pool_slots, st.names);
  const uint32_t lane_count = g.lane_count;
  const uint64_t size = g.region_size;
  auto failed = [&](const char *call, int e) {
    why.put(call).put(" of the ").put_size(size).put(" ring (");
    put_geometry(why, st.slots_per_lane, st.lanes, st.names, st.asked);
    why.put(") failed: ");
    const char *desc = strerrordesc_np(e), *name = strerrorname_np(e);
    if (desc != nullptr && name != nullptr)
      why.put(desc).put(" (").put(name).put(")");
    else
      why.put("errno ").put_u64(static_cast<uint32_t>(e));
    return -e;
  };
  int memfd = static_cast<int>(syscall(SYS_memfd_create, fmt::kMemfdName, MFD_CLOEXEC));
  if (memfd < 0) return failed("memfd_create", errno);
  if (ftruncate(memfd, static_cast<off_t>(size)) != 0) {
    int e = errno;
    close(memfd);
    return failed("ftruncate", e);
  }
  void *base = map_low(size, memfd);
  if (base == MAP_FAILED) {
    int e = errno;
    close(memfd);
    return failed("mmap", e);
  }

  auto *h = static_cast<fmt::RingHeader *>(base);
  fill_identity(h, build_id, build_id_len, &mmap_generation);
  h->incompat_flags = 0;
  if (st.handlers) h->compat_flags |= fmt::kCompatHandlers;
  h->slots_per_lane = st.slots_per_lane;
  h->lane_count = lane_count;
  h->lanes_offset = g.lanes_offset;
  h->region_size = size;
  h->names_offset = g.names_offset;
  h->budget_bytes = st.budget;
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c) {
    fmt::SourceArea &a = h->sources[c];
    a.first_lane = c * (st.lanes + 1);
    a.lane_count = st.lanes + 1;
    a.pool_first_slot = g.pool_first_slot[c];
    a.pool_slots = st.pool_slots[c];
    a.share_percent = st.share[c];
    a.flags = (st.present >> c & 1) ? fmt::kSourcePresent : 0;
  }
  h->names_capacity = st.names;
  h->name_entry_size = fmt::kNameEntrySize;
  /* Slots written before the helper's first refresh carry this one. */
  h->mmap_generation = mmap_generation;

  int sidecar = -1;
  if (st.sidecar) {
    sidecar = sidecar_open(st.sidecar_dir, h->pid, h->process_start_ticks);
    struct stat sb;
    /* Full size up front, so the file always holds a whole region. */
    if (sidecar >= 0 && ftruncate(sidecar, static_cast<off_t>(size)) != 0) {
      close(sidecar);
      sidecar = -1;
    }
    if (sidecar >= 0 && fstat(sidecar, &sb) == 0) {
      h->sidecar_dev = sb.st_dev;
      h->sidecar_ino = sb.st_ino;
      h->compat_flags |= fmt::kCompatSidecar;
    }
  }

  take_init_anchor(h);
  h->ticks_per_second = 0;
  h->header_crc = fmt::header_crc(static_cast<const uint8_t *>(base));
  h->latest_ticks = h->anchor_ticks;
  h->latest_realtime_ns = h->anchor_realtime_ns;
  h->latest_monotonic_ns = h->anchor_monotonic_ns;
  h->enabled_sources = st.enabled;

  auto *lanes = reinterpret_cast<fmt::LaneDesc *>(static_cast<uint8_t *>(base) + h->lane_table_offset);
  uint32_t log2 = 0;
  while ((1u << log2) < st.slots_per_lane) ++log2;
  for (uint32_t i = 0; i < lane_count; ++i) {
    lanes[i].extent = fmt::make_extent(i * st.slots_per_lane, log2);
    lanes[i].source = i / (st.lanes + 1);
  }
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c)
    lanes[h->sources[c].first_lane + h->sources[c].lane_count - 1].flags = fmt::kLaneShared;

  Ring r;
  r.base = static_cast<uint8_t *>(base);
  r.size = size;
  r.header = h;
  r.lanes = lanes;
  r.slots = reinterpret_cast<fmt::Slot *>(static_cast<uint8_t *>(base) + h->lanes_offset);
  r.sources = h->sources;
  r.lane_count = lane_count;
  r.memfd = memfd;
  r.sidecar_fd = sidecar;
  r.wake_fd = -1;
  r.sync_every = st.helper_thread ? 0 : st.sync_every;
  r.sync_interval_ms = st.sync_interval_ms;
  r.helper_thread = st.helper_thread;
  r.handlers = st.handlers;
  r.names = reinterpret_cast<fmt::NameEntry *>(static_cast<uint8_t *>(base) + h->names_offset);
  r.names_capacity = st.names;
  r.names_synced = 0;
  sidecar_forget();
  g_ring = r;
  if (sidecar >= 0) sidecar_sync();
  return 0;
}

/* The no-ring page: when tl_init makes no ring, a one-page memfd mapping
 * of the same name holding only a header (kIncompatNoRing) that says why,
 * so the core of a process that loaded libtimeline but has no ring shows
 * the reason instead of nothing. */
struct NoRing {
  uint8_t *base;
  int memfd;
};
NoRing g_no_ring = {nullptr, -1};
constexpr uint64_t kNoRingSize = 4096;

void no_ring_drop() {
  if (g_no_ring.base == nullptr) return;
  munmap(g_no_ring.base, kNoRingSize);
  close(g_no_ring.memfd);
  g_no_ring.base = nullptr;
  g_no_ring.memfd = -1;
}

/* Replace the no-ring page (if any) with one saying `error` (a positive
 * errno) and `text`.  `build_id` as for fill_identity (NULL: from the
 * loader, NOT async-signal-safe).  If even this page cannot be made there
 * is nothing: the core then looks like a process without libtimeline. */
void no_ring_make(int error, const char *text, const uint8_t *build_id, uint32_t build_id_len,
                  uint64_t mmap_generation) {
  no_ring_drop();
  int memfd = static_cast<int>(syscall(SYS_memfd_create, fmt::kMemfdName, MFD_CLOEXEC));
  if (memfd < 0) return;
  void *base = MAP_FAILED;
  if (ftruncate(memfd, static_cast<off_t>(kNoRingSize)) == 0) base = map_low(kNoRingSize, memfd);
  if (base == MAP_FAILED) {
    close(memfd);
    return;
  }
  auto *h = static_cast<fmt::RingHeader *>(base);
  fill_identity(h, build_id, build_id_len, &mmap_generation);
  h->incompat_flags = fmt::kIncompatNoRing;
  h->slots_per_lane = 0;
  h->lane_count = 0;
  h->lanes_offset = 0;
  h->region_size = kNoRingSize;
  h->names_offset = 0;
  h->names_capacity = 0;
  h->name_entry_size = 0;
  h->init_error = error;
  Text(h->init_error_text, sizeof h->init_error_text).put(text);
  h->mmap_generation = mmap_generation;
  take_init_anchor(h);
  h->header_crc = fmt::header_crc(static_cast<const uint8_t *>(base));
  g_no_ring.base = static_cast<uint8_t *>(base);
  g_no_ring.memfd = memfd;
}

/* Thread exit (pthread key destructor): release the lane and the alternate
 * stack.  The TLS view is cleared first so a signal arriving now does not
 * write into a lane another thread may already own. */
void on_thread_exit(void *) {
  fmt::LaneDesc *release[fmt::kSourceCount];
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c) {
    ThreadLane *tl = &t_lanes[c];
    release[c] = tl->shared ? nullptr : tl->lane;
    tl->lane = nullptr;
    tl->slots = nullptr;
    tl->grow_at = 0;
  }
  ThreadStack *ts = &t_stack;
  if (ts->altstack != nullptr) {
    stack_t off;
    memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(&off, nullptr) == 0) munmap(ts->altstack, ts->altstack_size);
    ts->altstack = nullptr;
  }
  /* A lane keeps its extent (and its events) for the next thread. */
  for (fmt::LaneDesc *lane : release)
    if (lane != nullptr) __atomic_store_n(&lane->owner_tid, 0, __ATOMIC_RELEASE);
}

/* In a child of fork(2): the parent's ring is MAP_SHARED, so writing to it
 * would put the child's events in the parent's ring.  Build a ring of the
 * child's own, with the parent's names, then unmap the parent's.  A
 * parent without a ring but with a no-ring page gives the child a no-ring
 * page of its own, with the same reason.  Only the forking thread exists
 * in the child: async-signal-safe calls only (and pthread_create). */
void on_fork_child() {
  names_detach();
  if (g_ring.base == nullptr) {
    if (g_no_ring.base == nullptr) return;
    const auto *old = reinterpret_cast<const fmt::RingHeader *>(g_no_ring.base);
    uint8_t build_id[fmt::kMaxBuildId];
    char text[fmt::kInitErrorText];
    const uint32_t build_id_len = old->build_id_len <= fmt::kMaxBuildId ? old->build_id_len : 0;
    memcpy(build_id, old->build_id, build_id_len);
    memcpy(text, old->init_error_text, sizeof text);
    text[sizeof text - 1] = '\0';
    no_ring_make(old->init_error, text, build_id, build_id_len, old->mmap_generation);
    return;
  }
  __atomic_store_n(&g_enabled, 0, __ATOMIC_RELAXED);
  Ring old = g_ring;
  uint8_t build_id[fmt::kMaxBuildId];
  uint32_t build_id_len = old.header->build_id_len;
  memcpy(build_id, old.header->build_id, build_id_len);
  uint32_t enabled = __atomic_load_n(&old.header->enabled_sources, __ATOMIC_RELAXED);
  uint64_t generation = __atomic_load_n(&old.header->mmap_generation, __ATOMIC_RELAXED);
  g_ring.base = nullptr;
  g_ring.header = nullptr;
  for (ThreadLane &tl : t_lanes) {
    tl.lane = nullptr;
    tl.slots = nullptr;
    tl.grow_at = 0;
    tl.shared = false;
    tl.claiming = false;
  }
  g_settings.enabled = enabled;
  char why_text[fmt::kInitErrorText];
  Text why(why_text, sizeof why_text);
  const int rc = ring_create(build_id, build_id_len, generation, why);
  if (rc == 0) names_attach(g_ring.header, old.header); /* the parent's ring is still mapped */
  munmap(old.base, old.size);
  close(old.memfd);
  if (old.sidecar_fd >= 0) close(old.sidecar_fd);
  if (old.wake_fd >= 0) close(old.wake_fd);
  if (rc != 0) { /* the child records nothing; its core says why */
    no_ring_make(-rc, why.c_str(), build_id, build_id_len, generation);
    return;
  }
  if (g_ring.helper_thread) helper_start();
  __atomic_store_n(&g_enabled, enabled, __ATOMIC_RELEASE);
}

/* At normal exit the sidecar has no use: a sidecar is only for a crash whose
 * core lost the ring.  Remove it. */
void on_exit_remove_sidecar() {
  if (g_ring.sidecar_fd < 0 || g_ring.header == nullptr) return;
  int dirfd = open(g_settings.sidecar_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0) return;
  char name[64];
  sidecar_name(name, g_ring.header->pid, g_ring.header->process_start_ticks);
  struct stat sb;
  /* Only unlink the file if it is still ours (same inode). */
  if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
      sb.st_ino == g_ring.header->sidecar_ino && sb.st_dev == g_ring.header->sidecar_dev &&
      static_cast<uint32_t>(raw_getpid()) == g_ring.header->pid)
    unlinkat(dirfd, name, 0);
  close(dirfd);
}

bool is_power_of_two(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* Each source's pool: its share of `budget` in 128-byte slots, whole (a
 * lane's extent is a power of two, but several lanes, and lanes of other
 * sources that borrow, share a pool); 0 when that is fewer than a lane's
 * first growth (2 x slots_per_lane). */
void size_pools(uint64_t budget, const uint32_t (&share)[fmt::kSourceCount], uint32_t slots_per_lane,
                uint32_t (&pool)[fmt::kSourceCount]) {
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c) {
    const uint64_t slots = budget * share[c] / 100 / fmt::kSlotSize; /* budget <= 4 GiB: no overflow */
    pool[c] = slots < 2ull * slots_per_lane ? 0 : static_cast<uint32_t>(slots);
  }
}

constexpr uint64_t region_for(uint32_t slots, uint32_t lanes, uint32_t names,
                              const uint32_t (&pool)[fmt::kSourceCount]) {
  return fmt::geometry_v3(lanes + 1, slots, pool, names).region_size;
}

/* The most per-thread lanes (of each source) a ring of `slots` slots per
 * lane, `names` name entries and these pools may have under the 4 GiB
 * rule (0 if none). */
constexpr uint32_t max_lanes_for(uint32_t slots, uint32_t names, const uint32_t (&pool)[fmt::kSourceCount]) {
  uint32_t most = 0;
  for (uint32_t lanes = 1; lanes <= kMaxLanesPerSource; ++lanes) {
    if (region_for(slots, lanes, names, pool) > fmt::kMaxRegionSize) break;
    most = lanes;
  }
  return most;
}

/* tl_init's EINVAL rules (timeline.h) in one place, with the one wording
 * tl_init's no-ring page and the constructor's stderr line share: false
 * if the settings make a ring (and then st.pool_slots is set); otherwise
 * true, with why in `why` (the variable or option, its value, and the
 * limit).  The limits printed are the constants themselves; the ones
 * timeline.h, the README and libtimeline(3) spell out are pinned here. */
static_assert(fmt::kMinSlotsPerLane == 8 && fmt::kMaxSlotsPerLane == 1048576 && fmt::kMaxLanes == 4096 &&
                  fmt::kMaxRegionSize == (1ull << 32) && fmt::kSlotSize == 128 && fmt::kMaxNames == 4096 &&
                  fmt::kDefaultNames == 256,
              "timeline.h, the README and libtimeline(3) name these limits");
constexpr uint32_t kNoPools[fmt::kSourceCount] = {0, 0, 0};
static_assert(max_lanes_for(fmt::kMaxSlotsPerLane, fmt::kDefaultNames, kNoPools) == 9 &&
                  max_lanes_for(fmt::kMaxSlotsPerLane, fmt::kMaxNames, kNoPools) == 9,
              "timeline.h and libtimeline(3) say 1048576 slots allow at most 9 lanes, whatever the names");
/* The limits of slots_per_lane and lanes, after "NAME=VALUE". */
void put_slots_limit(Text &why) {
  why.put(" is not a power of two from ").put_u64(fmt::kMinSlotsPerLane).put(" to ").put_u64(fmt::kMaxSlotsPerLane);
}
void put_lanes_limit(Text &why) { why.put(" is not from 1 to ").put_u64(kMaxLanesPerSource); }

bool geometry_problem(Settings &st, Text &why) {
  const Asked &asked = st.asked;
  const uint32_t slots = st.slots_per_lane, lanes = st.lanes, names = st.names;
  if (!is_power_of_two(slots) || slots < fmt::kMinSlotsPerLane || slots > fmt::kMaxSlotsPerLane) {
    why.put(asked.slots != nullptr ? asked.slots : "slots_per_lane").put("=").put_u64(slots);
    put_slots_limit(why);
    return true;
  }
  if (lanes < 1 || lanes > kMaxLanesPerSource) {
    why.put(asked.lanes != nullptr ? asked.lanes : "lanes").put("=").put_u64(lanes);
    put_lanes_limit(why);
    return true;
  }
  if (names < 1 || names > fmt::kMaxNames) {
    why.put(asked.names != nullptr ? asked.names : "names").put("=").put_u64(names);
    why.put(" is not from 1 to ").put_u64(fmt::kMaxNames);
    return true;
  }
  uint32_t total = 0;
  for (uint32_t c = 0; c < fmt::kSourceCount; ++c) total += st.share[c] <= 100 ? st.share[c] : 101;
  if (total > 100) {
    why.put(asked.shares != nullptr ? asked.shares : "share_percent").put(": the shares add up to ");
    why.put_u64(total).put("; they are percent of the budget, at most 100 in all");
    return true;
  }
  if (st.budget > fmt::kMaxRegionSize) {
    why.put(asked.budget != nullptr ? asked.budget : "budget").put("=").put_u64(st.budget);
    why.put(" is more than the ring's ").put_u64(fmt::kMaxRegionSize >> 30).put(" GiB");
    return true;
  }
  size_pools(st.budget, st.share, slots, st.pool_slots);
  const uint64_t size = region_for(slots, lanes, names, st.pool_slots);
  if (size > fmt::kMaxRegionSize) {
    put_geometry(why, slots, lanes, names, asked);
    why.put(" needs ").put_gib(size);
    /* With pools, the budget is named instead of the lane count that
     * would fit: the lanes may not be what is too big, and the reason
     * must fit init_error_text. */
    if (st.budget != 0) why.put(" with a ").put_size(st.budget).put(" budget");
    why.put("; the ring is at most ").put_u64(fmt::kMaxRegionSize >> 30).put(" GiB");
    if (st.budget == 0)
      why.put(" (").put_u64(slots).put(" slots allow at most ").put_u64(max_lanes_for(slots, names, st.pool_slots)).put(" lanes)");
    return true;
  }
  return false;
}

/* Which wrapper libraries are loaded (dl_iterate_phdr(3)), by the file
 * names they are installed under: a bit per source. */
int find_wrappers(struct dl_phdr_info *info, size_t, void *data) {
  const char *name = info->dlpi_name;
  if (name == nullptr) return 0;
  const char *slash = strrchr(name, '/');
  const char *file = slash != nullptr ? slash + 1 : name;
  if (strncmp(file, "libtimeline-alloc.so", 20) == 0) *static_cast<uint32_t *>(data) |= 1u << fmt::kSourceAlloc;
  if (strncmp(file, "libtimeline-io.so", 17) == 0) *static_cast<uint32_t *>(data) |= 1u << fmt::kSourceIo;
  return 0;
}

/* The default shares: user marks and spans half the budget, the other half
 * split between the wrappers that are loaded; all of it when none is. */
void default_shares(uint32_t present, uint32_t (&share)[fmt::kSourceCount]) {
  const uint32_t wrappers = ((present >> fmt::kSourceAlloc) & 1) + ((present >> fmt::kSourceIo) & 1);
  share[fmt::kSourceUser] = wrappers == 0 ? 100 : 50;
  for (uint32_t c = 1; c < fmt::kSourceCount; ++c) share[c] = (present >> c & 1) ? 50 / wrappers : 0;
}

/* pthread_atfork(on_fork_child), once per process: a ring, or a no-ring
 * page, is replaced by the child's own. */
bool g_fork_handler = false;
void register_fork_handler() {
  if (!g_fork_handler && pthread_atfork(nullptr, nullptr, on_fork_child) == 0) g_fork_handler = true;
}

/* tl_init failed with `rc` (a -errno): leave the no-ring page that says
 * why (when why is known), and let a later tl_init try again. */
int init_failed(int rc, const Text &why) {
  if (why.size() != 0) {
    no_ring_make(-rc, why.c_str(), nullptr, 0, 0);
    register_fork_handler();
  }
  __atomic_store_n(&g_init_state, 0, __ATOMIC_RELEASE);
  return rc;
}

/* tl_init, with `asked` naming where the geometry came from.  On failure
 * `why` says why (empty for -EALREADY). */
int init(const struct tl_options *opts, const Asked &asked_in, Text &why) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&g_init_state, &expected, 1, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return -EALREADY;

  struct tl_options o;
  memset(&o, 0, sizeof o);
  if (opts != nullptr) {
    /* Read min(size, sizeof) and leave the rest zero (Crashpad's rule), so
     * callers built against an older or newer header both work. */
    if (opts->size < sizeof(uint32_t)) {
      why.put("tl_options.size=").put_u64(opts->size).put(" is less than 4: set it to sizeof(struct tl_options)");
      return init_failed(-EINVAL, why);
    }
    memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
  }

  Settings &st = g_settings;
  st.slots_per_lane = o.slots_per_lane ? o.slots_per_lane : kDefaultSlots;
  st.budget = o.budget == TL_BUDGET_NONE ? 0 : o.budget ? o.budget : o.slots_per_lane ? 0 : kDefaultBudget;
  st.present = 1u << fmt::kSourceUser;
  dl_iterate_phdr(find_wrappers, &st.present);
  if (o.share_percent[0] == 0 && o.share_percent[1] == 0 && o.share_percent[2] == 0)
    default_shares(st.present, st.share);
  else
    memcpy(st.share, o.share_percent, sizeof st.share);
  st.lanes = o.lanes ? o.lanes : kDefaultLanes;
  st.names = o.names ? o.names : fmt::kDefaultNames;
  st.handlers = o.no_handlers == 0;
  st.helper_thread = o.no_helper_thread == 0;
  st.sync_every = o.sync_every;
  st.sync_interval_ms = o.sync_interval_ms ? o.sync_interval_ms : kDefaultIntervalMs;
  st.enabled = (o.enabled_sources ? o.enabled_sources : TL_SOURCE_ALL) & TL_SOURCE_ALL;
  /* A default is named as a default, whoever asked. */
  st.asked.slots = o.slots_per_lane ? asked_in.slots : nullptr;
  st.asked.lanes = o.lanes ? asked_in.lanes : nullptr;
  st.asked.names = o.names ? asked_in.names : nullptr;
  st.asked.budget = o.budget ? asked_in.budget : nullptr;
  st.asked.shares = o.share_percent[0] || o.share_percent[1] || o.share_percent[2] ? asked_in.shares : nullptr;
  if (geometry_problem(st, why)) return init_failed(-EINVAL, why);
  const char *dir = o.sidecar_dir;
  if (dir == nullptr) {
    const char *env = secure_getenv("TL_SIDECAR_DIR");
    if (env != nullptr) {
      dir = env;
    } else {
      struct stat sb;
      dir = (stat(kDefaultSidecarDir, &sb) == 0 && S_ISDIR(sb.st_mode)) ? kDefaultSidecarDir : "";
    }
  }
  size_t dir_len = strlen(dir);
  st.sidecar = dir_len != 0 && dir_len < sizeof st.sidecar_dir;
  if (st.sidecar) memcpy(st.sidecar_dir, dir, dir_len + 1);

  if (!g_lane_key_ok && pthread_key_create(&g_lane_key, on_thread_exit) == 0) g_lane_key_ok = true;

  int rc = ring_create(nullptr, 0, 0, why);
  if (rc != 0) return init_failed(rc, why);
  /* The walker's objects and the main thread's stack top, before any
   * event can ask for a stack. */
  unwind_refresh(loader_generation());
  __atomic_store_n(&g_stack_depth, o.stack_depth < fmt::kMaxStackDepth ? o.stack_depth : fmt::kMaxStackDepth,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&g_io_bytes, o.io_bytes < fmt::kInlineBytes ? o.io_bytes : fmt::kInlineBytes, __ATOMIC_RELAXED);
  no_ring_drop(); /* a ring now: the page that said there was none goes */
  names_attach(g_ring.header, nullptr);
  if (st.handlers) {
    rc = install_crash_handlers();
    if (rc != 0) st.handlers = false; /* the ring still works without them */
    ensure_altstack();
  }
  register_fork_handler();
  if (st.sidecar) atexit(on_exit_remove_sidecar);
  if (st.helper_thread) helper_start();
  __atomic_store_n(&g_enabled, st.enabled, __ATOMIC_RELEASE);
  __atomic_store_n(&g_init_state, 2, __ATOMIC_RELEASE);
  return 0;
}

#ifdef TL_SHARED_CONSTRUCTOR
bool env_flag(const char *name) {
  const char *v = secure_getenv(name);
  return v != nullptr && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* TL_STACK_DEPTH, TL_IO_BYTES, TL_SLOTS, TL_LANES: unset or empty (0: the default), or
 * a number, decimal or 0x-hexadecimal.  kTooBig: a number above
 * UINT32_MAX (*out untouched), which is no ring's either, but still a
 * number. */
enum class EnvNumber { kUnset, kNumber, kTooBig, kMalformed };
EnvNumber env_u32(const char *name, uint32_t *out) {
  const char *v = secure_getenv(name);
  if (v == nullptr || *v == '\0') return EnvNumber::kUnset;
  const bool hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');  /* else decimal, not octal */
  const char *digits = hex ? v + 2 : v;
  /* A digit first: strtoull would also take leading blanks and a sign. */
  const char c = *digits;
  if (!((c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))))
    return EnvNumber::kMalformed;
  char *end = nullptr;
  errno = 0;
  const unsigned long long n = strtoull(digits, &end, hex ? 16 : 10);
  if (*end != '\0') return EnvNumber::kMalformed;
  if (errno == ERANGE || n > UINT32_MAX) return EnvNumber::kTooBig;
  *out = static_cast<uint32_t>(n);
  return EnvNumber::kNumber;
}

/* TL_BUDGET: unset or empty (the default), 0 (no pools), or bytes as a
 * decimal number with an optional binary suffix K, M or G (KiB, MiB, GiB
 * also accepted).  Returns true, with why, for anything else. */
bool env_budget(uint64_t *out, Text &why) {
  const char *v = secure_getenv("TL_BUDGET");
  if (v == nullptr || *v == '\0') return false;
  uint64_t n = 0;
  const char *p = v;
  bool overflow = false;
  while (*p >= '0' && *p <= '9') {
    if (n > (UINT64_MAX - 9) / 10) overflow = true;
    n = n * 10 + static_cast<uint64_t>(*p++ - '0');
  }
  unsigned shift = 0;
  if (*p == 'K' || *p == 'k') shift = 10, ++p;
  else if (*p == 'M' || *p == 'm') shift = 20, ++p;
  else if (*p == 'G' || *p == 'g') shift = 30, ++p;
  if (shift != 0 && p[0] == 'i' && p[1] == 'B') p += 2;
  if (p == v || *p != '\0' || overflow || (shift != 0 && n > (UINT64_MAX >> shift))) {
    why.put("TL_BUDGET=").put(v, 40).put(" is not a size (bytes, or a number with K, M or G)");
    return true;
  }
  n <<= shift;
  *out = n == 0 ? TL_BUDGET_NONE : n;
  return false;
}

/* TL_SHARES: unset or empty (the default), or "SOURCE=PERCENT[,...]" with
 * SOURCE user, alloc or io; sources not named get 0.  Returns true, with
 * why, for anything else (the sum is checked with the other rules). */
bool env_shares(uint32_t (&share)[3], Text &why) {
  const char *v = secure_getenv("TL_SHARES");
  if (v == nullptr || *v == '\0') return false;
  static const char *const kNames[3] = {"user", "alloc", "io"};
  const char *p = v;
  for (;;) {
    int which = -1;
    for (int c = 0; c < 3 && which < 0; ++c) {
      const size_t n = strlen(kNames[c]);
      if (strncmp(p, kNames[c], n) == 0 && p[n] == '=') which = c, p += n + 1;
    }
    uint32_t percent = 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9' && percent <= 100) percent = percent * 10 + static_cast<uint32_t>(*p++ - '0');
    if (which < 0 || p == digits || percent > 100 || (*p != ',' && *p != '\0')) {
      why.put("TL_SHARES=").put(v, 40).put(" is not user=N,alloc=N,io=N (percent, 0 to 100)");
      return true;
    }
    share[which] = percent;
    if (*p == '\0') break;
    ++p;
  }
  if (share[0] == 0 && share[1] == 0 && share[2] == 0) {
    why.put("TL_SHARES=").put(v, 40).put(" gives every source 0 (use TL_BUDGET=0 for no pools)");
    return true;
  }
  return false;
}

/* One line on stderr from the constructor, which runs before main() in
 * any program the library is preloaded into: besides the no-ring page in
 * the core, the only place it can say that a setting made no ring. */
void constructor_warning(const Text &why) {
  char line[fmt::kInitErrorText + 64];
  Text t(line, sizeof line);
  t.put("libtimeline: ").put(why.c_str()).put(": no ring made");
  /* The newline by hand: Text::put() writes it as '?', as it does every
   * byte outside printable ASCII.  len < sizeof line, so line[len] (the
   * NUL) is in bounds. */
  size_t len = t.size();
  line[len++] = '\n';
  (void)!write(STDERR_FILENO, line, len);
}
#endif

}  // namespace

uint64_t loader_generation() {
  uint64_t generation = 0;
  dl_iterate_phdr(count_loads, &generation);
  return generation;
}

}  // namespace core_timeline::lib

using namespace core_timeline::lib;

extern "C" TL_EXPORT int tl_init(const struct tl_options *opts) {
  char why_text[fmt::kInitErrorText];
  Text why(why_text, sizeof why_text);
  return init(opts, Asked{"slots_per_lane", "lanes", "names", "budget", "share_percent"}, why);
}

#ifdef TL_SHARED_CONSTRUCTOR
/* The shared library sets up a default ring when loaded (also under
 * LD_PRELOAD), unless TL_DISABLE is set.  TL_NO_HANDLERS, TL_STACK_DEPTH,
 * TL_IO_BYTES, TL_SLOTS, TL_LANES, TL_BUDGET, TL_SHARES and TL_SIDECAR_DIR adjust it.
 * All TL_* variables are read with secure_getenv(3): a set-user-ID program
 * ignores them.  The rule of libtimeline(3), ENVIRONMENT: a TL_STACK_DEPTH, TL_IO_BYTES,
 * TL_SLOTS, TL_LANES, TL_BUDGET or TL_SHARES that is not what it takes (a
 * number; a size; the shares) or that breaks its limits (tl_init's EINVAL
 * rules; TL_STACK_DEPTH and TL_IO_BYTES have none: more than 8, or 64,
 * however much, is 8, or 64), and a
 * ring that cannot be mapped, get one line on stderr naming the variable,
 * the value and the limit (or the call that failed), and no ring is made:
 * the no-ring page says the same in the core. */
__attribute__((constructor(101))) static void tl_constructor() {
  if (env_flag("TL_DISABLE")) return;
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.no_handlers = env_flag("TL_NO_HANDLERS") ? 1 : 0;
  char why_text[fmt::kInitErrorText];
  Text why(why_text, sizeof why_text);
  const char *const names[4] = {"TL_SLOTS", "TL_LANES", "TL_STACK_DEPTH", "TL_IO_BYTES"};
  uint32_t *const values[4] = {&o.slots_per_lane, &o.lanes, &o.stack_depth, &o.io_bytes};
  bool bad = false;
  for (int i = 0; i < 4 && !bad; ++i) {
    const EnvNumber got = env_u32(names[i], values[i]);
    if (got == EnvNumber::kTooBig && i >= 2) {
      *values[i] = UINT32_MAX;  /* more than 8 frames is 8, more than 64 bytes 64, as any other */
    } else if (got == EnvNumber::kMalformed || got == EnvNumber::kTooBig) {
      why.put(names[i]).put("=").put(secure_getenv(names[i]), 40);
      if (got == EnvNumber::kMalformed) why.put(" is not a number");
      else if (i == 0) put_slots_limit(why);
      else put_lanes_limit(why);
      bad = true;
    }
  }
  if (!bad) bad = env_budget(&o.budget, why) || env_shares(o.share_percent, why);
  if (bad) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&g_init_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      init_failed(-EINVAL, why);
    constructor_warning(why);
    return;
  }
  const int rc = init(&o, Asked{"TL_SLOTS", "TL_LANES", nullptr, "TL_BUDGET", "TL_SHARES"}, why);
  if (rc != 0 && why.size() != 0) constructor_warning(why);
}
#endif
