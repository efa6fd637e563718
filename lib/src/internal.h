/* SPDX-License-Identifier: MIT */
/*
 * internal.h - libtimeline's private state, shared by its translation units.
 *
 * Nothing here is exported (the version script exports tl_* only).  The
 * library is C++ compiled without exceptions or RTTI and linked as C: it
 * must not use anything from libstdc++ that is not header-only and inline
 * (no operator new, no function-local statics with guards, no iostreams).
 */
#ifndef CORE_TIMELINE_LIB_INTERNAL_H
#define CORE_TIMELINE_LIB_INTERNAL_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "core_timeline/ring_format.h"
#include "core_timeline/timeline.h"

#define TL_HIDDEN __attribute__((visibility("hidden")))
/* On the definitions of the tl_* functions: the only exported symbols. */
#define TL_EXPORT __attribute__((visibility("default")))
#define TL_TLS __attribute__((tls_model("initial-exec")))

namespace core_timeline::lib {

namespace fmt = core_timeline::format;

/** The process's one ring.  Written once by ring_create() (and again in a
 *  forked child), read by everyone. */
struct Ring {
  uint8_t *base;            /* start of the MAP_SHARED memfd mapping */
  uint64_t size;            /* bytes mapped */
  fmt::RingHeader *header;
  fmt::LaneDesc *lanes;     /* lane table */
  fmt::Slot *slots;         /* the slot area's first slot (lane 0's) */
  fmt::SourceArea *sources; /* header.sources */
  uint32_t lane_count;      /* all sources' lanes, overflow lanes included */
  int memfd;
  int sidecar_fd;           /* -1 without a sidecar */
  int wake_fd;              /* eventfd that wakes the helper, -1 if none */
  uint32_t sync_every;      /* pwrite a lane every N events (no helper) */
  uint32_t sync_interval_ms;
  bool helper_thread;
  bool handlers;
  fmt::NameEntry *names;    /* the name table (header.names_offset) */
  uint32_t names_capacity;
  uint64_t names_synced;    /* header.names_claimed at the last sidecar sync
                               that found every claimed entry committed */
};

/** Per-thread view of the lane the thread writes for one source
 *  (initial-exec TLS, so touching it never allocates and is
 *  async-signal-safe). */
struct ThreadLane {
  fmt::LaneDesc *lane;   /* NULL until the thread's first event of the
                            source, and while the lane grows */
  fmt::Slot *slots;      /* the lane's extent (its first segment) */
  fmt::Slot *high;       /* a split lane's second segment minus `split`
                            slots: the slot of index i >= split is
                            high + i; else `slots` */
  uint64_t split;        /* a split lane's segment size; else mask + 1 */
  uint64_t mask;         /* slots in the extent - 1 */
  uint64_t grow_at;      /* the sequence after whose commit the lane grows
                            (its extent's size, while it has never wrapped
                            and its pool may have room); 0: never */
  uint32_t tid;
  uint32_t index;        /* lane index */
  uint32_t source;       /* enum Source */
  bool shared;           /* the overflow lane: reserve with a locked add */
  bool claiming;         /* re-entry guard for claim_lane() and grow_lane() */
};

/** The calling thread's alternate signal stack (initial-exec TLS). */
struct ThreadStack {
  void *altstack;        /* this thread's alternate signal stack mapping */
  size_t altstack_size;  /* bytes mapped at altstack, guard page included */
};

extern Ring g_ring TL_HIDDEN;
/** TL_SOURCE_* mask; 0 until the ring is ready, so recording before tl_init
 *  does nothing. */
extern uint32_t g_enabled TL_HIDDEN;
/** The calling thread's lanes, by source. */
extern __thread ThreadLane t_lanes[fmt::kSourceCount] TL_HIDDEN TL_TLS;
extern __thread ThreadStack t_stack TL_HIDDEN TL_TLS;

/** Read the slot clock: TSC on x86-64, CNTVCT_EL0 on AArch64, else 0.
 *  Async-signal-safe (one instruction). */
static inline uint64_t read_ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

/** Where record() wrote its event: the lane and the sequence (seq 0:
 *  nothing was written).  Two words, returned in registers. */
struct Recorded {
  uint64_t seq;
  uint32_t lane;
};

/**
 * Write one event of source `source` (enum Source; the kind's, see
 * fmt::source_of_kind) into the calling thread's lane of that source.
 * Claims a lane on the thread's first event of the source.  Async-signal-safe; never blocks.  `inline_bytes`
 * may be NULL; at most kInlineBytes are copied.  When `copy_from_ptr` is
 * set, the inline bytes are read from (untrusted) `inline_bytes` with
 * process_vm_readv(2) so a bad pointer records no bytes instead of faulting.
 * Returns the lane and sequence written, or seq 0 if no slot could be had
 * (counted in header.dropped).
 */
Recorded record(uint32_t source, uint16_t kind, uint32_t id, uint64_t arg0, uint64_t arg1,
                uint64_t return_address, const void *inline_bytes,
                uint32_t inline_len, bool copy_from_ptr, uint8_t stack = 0) TL_HIDDEN;

/** record() with a stack: `frames` holds fmt::stack_depth(stack) return
 *  addresses and `stack` is the walk's Slot.stack byte (0: no stack, as
 *  record()).  The frames go into the event's inline bytes when its kind
 *  leaves them free (fmt::stack_inline_ok), else into a kKindStack slot
 *  right after it in the same lane (record_chained).  Async-signal-safe. */
Recorded record_stacked(uint32_t source, uint16_t kind, uint32_t id, uint64_t arg0, uint64_t arg1,
                        uint64_t return_address, const void *inline_bytes, uint32_t inline_len,
                        bool copy_from_ptr, const uint64_t *frames, uint8_t stack) TL_HIDDEN;

/** record() with a walk of `depth` frames (at most
 *  fmt::kMaxChainedStackDepth, more are not recorded) that ended `end`
 *  (fmt::StackEnd), in the chain of kKindStack slots after the event
 *  (ring_format.h, "the stack chain"): stack_parts(depth) slots, each
 *  reserved after the one before, so each lands after its event in the
 *  lane whatever a signal handler writes between them.  The caller bounds
 *  `depth` by the lane's room (fmt::crash_stack_room), so the chain never
 *  overwrites its own event in an owned lane.  A part that finds no slot
 *  ends the chain there (the reader sees it cut).  Async-signal-safe. */
Recorded record_chained(uint32_t source, uint16_t kind, uint32_t id, uint64_t arg0, uint64_t arg1,
                        uint64_t return_address, const void *inline_bytes, uint32_t inline_len,
                        bool copy_from_ptr, const uint64_t *frames, uint32_t depth, uint8_t end) TL_HIDDEN;

/** Claim a lane of `source` for the calling thread (slow path of
 *  record()): a free lane of the source, else one whose owner died, else
 *  the source's shared overflow lane.  From a signal handler pass
 *  in_signal = true: no alternate stack is mapped and no thread-exit
 *  destructor is registered.  Returns NULL while the thread is already
 *  claiming or growing that lane (a signal handler interrupted it).
 *  Async-signal-safe. */
ThreadLane *claim_lane(uint32_t source, bool in_signal) TL_HIDDEN;

/** Map and install an alternate signal stack for the calling thread if it
 *  has none.  Sized from getauxval(AT_MINSIGSTKSZ) (getauxval(3)) plus room
 *  for chained handlers, with a guard page.  Async-signal-safe (mmap and
 *  sigaltstack are system calls). */
void ensure_altstack() TL_HIDDEN;

/** Install the crash handlers (crash_handler.cc).  Not async-signal-safe.
 *  Returns 0 or -errno. */
int install_crash_handlers() TL_HIDDEN;

/* tl_internal_sigaction (crash_handler.cc): not part of the public API,
 * exported in the version node LIBTIMELINE_INTERNAL_1 for
 * libtimeline-signal.so alone, which calls it from its sigaction, signal,
 * bsd_signal, sysv_signal and __sysv_signal.
 *
 * If libtimeline's crash handler is the kernel's disposition of `signo`
 * (one of SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, installed by tl_init and
 * not replaced since), stores `*oldact` (if not NULL) from and `*act` (if
 * not NULL) into the program's disposition of `signo`, which the crash
 * handler calls, and returns 1 without changing the kernel's disposition.
 * Otherwise changes nothing and returns 0: the caller hands the call to
 * libc.  Thread-safe; async-signal-safe (a program's handler may call it);
 * keeps errno. */
extern "C" int tl_internal_sigaction(int signo, const struct sigaction *act,
                                     struct sigaction *oldact);

/** pwrite(2) the header, the lane table and, of every lane that changed
 *  since the last sync, the slots written since (all its slots if it
 *  grew).  Async-signal-safe (used by tl_mark with sync_every). */
void sidecar_sync() TL_HIDDEN;

/** Forget what was synced (a new ring: ring_create).  Async-signal-safe. */
void sidecar_forget() TL_HIDDEN;

/** dlpi_adds + dlpi_subs (dl_iterate_phdr(3)): objects loaded and unloaded
 *  since the process started, so it changes whenever the mapped objects do.
 *  Takes the loader's lock: NOT async-signal-safe. */
uint64_t loader_generation() TL_HIDDEN;

/** Start the helper thread (helper.cc).  Returns 0 or -errno. */
int helper_start() TL_HIDDEN;

/** The ring header whose name table tl_name writes to, or NULL while there
 *  is none (names then wait in the pending table, name_table.cc).  Accessed
 *  with __atomic builtins only. */
extern fmt::RingHeader *g_names_header TL_HIDDEN;

/** Make `h`'s name table the one tl_name writes to.  With `parent` (a fork
 *  child: the parent's ring, still mapped), first copy the parent's
 *  committed names; without, afterwards copy the names registered before
 *  there was a ring.  Async-signal-safe. */
void names_attach(fmt::RingHeader *h, const fmt::RingHeader *parent) TL_HIDDEN;

/** Stop writing names into the current ring (a fork child, before it
 *  unmaps the parent's).  Async-signal-safe. */
void names_detach() TL_HIDDEN;

/** Raw gettid(2), getpid(2), tgkill(2): no libc caching, async-signal-safe. */
pid_t raw_gettid() TL_HIDDEN;
pid_t raw_getpid() TL_HIDDEN;

/** Copy up to `n` bytes at `src` of this process into `dst` with
 *  process_vm_readv(2), which fails where a read would fault (unmapped,
 *  truncated, PROT_NONE) instead of faulting.  Returns the bytes copied
 *  (fewer where the range ends in such memory), or -1.  Async-signal-safe;
 *  preserves errno. */
ssize_t read_own_memory(void *dst, const void *src, size_t n) TL_HIDDEN;

}  // namespace core_timeline::lib

#endif  // CORE_TIMELINE_LIB_INTERNAL_H
