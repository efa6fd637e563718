/* SPDX-License-Identifier: MIT */
/*
 * timeline.h - libtimeline, the core-timeline writer library (C ABI).
 *
 * A process that links or preloads libtimeline keeps its last events in a
 * ring inside a memfd mapping named "core-timeline".  The kernel includes
 * that mapping in the process's core dump under the default
 * coredump_filter (0x33, core(5)), so `core-timeline-read CORE` can print
 * how the process reached its crash from the core alone.
 *
 * Every function here is safe to call from any thread.  The recording
 * functions (tl_mark, tl_mark2, tl_mark_stack, tl_mark_ptr, tl_record, tl_thread_name,
 * tl_span_begin, tl_span_end, tl_name, tl_set_enabled, tl_enabled) are also
 * async-signal-safe: they never
 * allocate, lock, format or block, and they preserve errno.  Recording
 * before tl_init (or after it failed) does nothing.
 *
 * Errors are returned as negative errno values, in the manner of systemd's
 * sd-* libraries.
 */
#ifndef CORE_TIMELINE_TIMELINE_H
#define CORE_TIMELINE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Sources of events, for tl_set_enabled().  A disabled source costs one
 *  predictable branch per call. */
#define TL_SOURCE_USER  0x1u /**< tl_mark, tl_mark2, tl_mark_ptr, tl_thread_name,
                                  tl_span_begin, tl_span_end */
#define TL_SOURCE_ALLOC 0x2u /**< malloc/free wrappers (libtimeline-alloc.so) */
#define TL_SOURCE_IO    0x4u /**< file and socket call wrappers (open,
                                  read, accept, recv, pread...:
                                  libtimeline-io.so) */
#define TL_SOURCE_CRASH 0x8u /**< the CRASH event written by the signal handlers */
#define TL_SOURCE_ALL   0xFu

/** Built-in event kinds accepted by tl_record().  The reader names them
 *  (MALLOC, FREE, ...); docs/ring-format.md gives each one's arguments. */
#define TL_KIND_MALLOC  16u
#define TL_KIND_FREE    17u
#define TL_KIND_CALLOC  18u
#define TL_KIND_REALLOC 19u
#define TL_KIND_OPEN    32u
#define TL_KIND_READ    33u
#define TL_KIND_WRITE   34u
#define TL_KIND_CONNECT 35u
#define TL_KIND_CLOSE   36u
#define TL_KIND_ACCEPT  37u
#define TL_KIND_RECV    38u
#define TL_KIND_SEND    39u
#define TL_KIND_PREAD   40u
#define TL_KIND_PWRITE  41u
#define TL_KIND_SENDFILE 42u
#define TL_KIND_SOCKET  43u
#define TL_KIND_FSYNC   44u
#define TL_KIND_DUP     45u

/** tl_options.budget: no pools; each lane keeps slots_per_lane events. */
#define TL_BUDGET_NONE UINT64_MAX

/**
 * Options for tl_init().  Zero-initialise the struct and set `size` to
 * sizeof(struct tl_options); fields left 0 take their defaults.  New fields
 * are only ever appended, so a program built against an older header keeps
 * working.
 */
struct tl_options {
  uint32_t size;            /**< sizeof(struct tl_options), required */
  uint32_t slots_per_lane;  /**< slots each lane starts with; power of two
                                 in [8, 1048576]; default 32.  Giving it
                                 without `budget` makes no pools: each lane
                                 keeps exactly this many events */
  uint32_t lanes;           /**< per-thread lanes of each source (user,
                                 alloc, io), plus one shared overflow lane
                                 each; [1, 1364]; default 64 */
  uint32_t no_handlers;     /**< non-zero: do not install the crash handlers
                                 (no CRASH event; the ring is still dumped) */
  uint32_t no_helper_thread;/**< non-zero: start no helper thread; the sidecar
                                 is then synced every `sync_every` events */
  uint32_t sync_every;      /**< with no_helper_thread: sync the sidecar every
                                 N events of a lane (0: never) */
  uint32_t sync_interval_ms;/**< helper thread period; default 100 */
  uint32_t enabled_sources; /**< initial TL_SOURCE_* mask; 0 means
                                 TL_SOURCE_ALL */
  const char *sidecar_dir;  /**< directory for the degraded-mode sidecar;
                                 NULL: $TL_SIDECAR_DIR, else /run/core-timeline
                                 if it exists; "" disables the sidecar */
  uint32_t names;           /**< entries of the ring's name table (tl_name),
                                 128 bytes each; [1, 4096]; default 256 */
  uint32_t share_percent[3];/**< each source's share of `budget`, percent,
                                 indexed user, alloc, io; sum <= 100.  All
                                 0: the default (user 50 and the rest split
                                 between the wrappers loaded at tl_init;
                                 user 100 when none is) */
  uint64_t budget;          /**< bytes of the sources' pools, which lanes
                                 grow into, at most 4 GiB; 0: the default,
                                 16 MiB (none when slots_per_lane is
                                 given); TL_BUDGET_NONE: none.  Each
                                 source's pool is its share in 128-byte
                                 slots (none if fewer than 2 x
                                 slots_per_lane); a source none of whose
                                 lanes has grown lends its pool to the
                                 others' lanes when theirs is spent */
  uint32_t stack_depth;     /**< frames of stack (0..8; more is 8) given to
                                 every span begin and allocation wrapper
                                 event, as tl_mark_stack records them; 0
                                 (default): none.  The shared library's
                                 constructor takes it from TL_STACK_DEPTH */
  uint32_t reserved_pad;    /**< ignored: the tail padding of the struct
                                 before io_bytes, which a program built
                                 against that header and passing its
                                 sizeof may not have zeroed */
  uint32_t io_bytes;        /**< payload bytes (0..64; more is 64) kept
                                 inline in each READ, WRITE, RECV and SEND
                                 event: the first bytes the call received
                                 or sent, at most its result; 0 (default):
                                 none.  Also cuts the inline bytes
                                 tl_record_bytes is given for those kinds.
                                 The shared library's constructor takes it
                                 from TL_IO_BYTES.  Privacy: libtimeline(3),
                                 NOTES, "Payload bytes" */
};

/**
 * tl_init - create the ring and install the crash handlers.
 *
 * @opts: NULL for defaults, or options as above.
 *
 * Maps a memfd named "core-timeline" (MAP_SHARED, placed at a low,
 * randomised address so a core truncated at its size limit keeps it),
 * installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT on an
 * alternate stack (chaining any handler installed before), starts the helper
 * thread, and registers fork handlers so a child gets its own ring.
 *
 * Every other thread gets its own alternate signal stack, and its lane, on
 * its first event.  A thread that has recorded nothing has no alternate
 * stack: if it overflows its stack it still dies with a core, but without a
 * CRASH event.  Call tl_thread_name() first thing in a thread to cover it.
 * (libtimeline does not interpose pthread_create: it exports tl_* only.)
 *
 * The shared library calls tl_init(NULL) from a constructor, unless the
 * environment has TL_DISABLE=1; calling it again returns -EALREADY.  The
 * static library does nothing until tl_init is called.
 *
 * Names registered with tl_name() before tl_init are copied into the new
 * ring's name table.
 *
 * When it makes no ring (bad options, or ftruncate or mmap of the ring
 * failed), tl_init still maps a one-page memfd of the same name holding
 * only a header that says why: the errno and a one-line reason naming the
 * option, its value and the limit (docs/ring-format.md, "The no-ring
 * header"), so the core of a crash shows why it has no timeline.  A later
 * tl_init that makes its ring unmaps that page first.  If even the page
 * cannot be made, there is nothing.
 *
 * Each source (user marks and spans; the allocation wrappers; the I/O
 * wrappers) has lanes of its own, so the wrappers' events never evict the
 * program's marks, and a pool: a lane that fills its slots for the first
 * time doubles from its source's pool while the pool has room, so one
 * busy thread can keep most of its source's memory and 64 threads still
 * get a lane each (docs/ring-format.md, "Sources and pools").
 *
 * Returns 0, -EALREADY if a ring exists, -EINVAL for bad options (outside
 * the ranges above, shares over 100 in all, or a ring above 4 GiB: its
 * header, 3 x (lanes + 1) x slots_per_lane x 128 bytes, the pools and
 * names x 128 bytes; 1048576 slots allow at most 9 lanes), or the -errno
 * of the failed system call (memfd_create, ftruncate, mmap).
 * Thread-safe; NOT async-signal-safe.
 */
int tl_init(const struct tl_options *opts);

/**
 * tl_mark - record event `id` with one argument.
 *
 * Records the caller's return address, the thread id and a timestamp.
 * Cost when enabled: one slot reservation and 128 bytes of stores.
 * Thread-safe, async-signal-safe, never blocks.
 */
void tl_mark(uint32_t id, uintptr_t arg);

/**
 * tl_mark_stack - as tl_mark, with the stack of callers above the caller.
 *
 * Records event `id` with `arg`, the caller's return address as tl_mark
 * does, and up to `depth` (at most 8; more is 8; 0 is tl_mark) further
 * return addresses in the event's 64 inline bytes: the caller's caller
 * first, then outwards.  The walk ends with a reason the reader shows:
 * complete (the last frame's .eh_frame marks it outermost: _start, a
 * thread's start; only a walk that reads .eh_frame for it can tell),
 * depth limit (more frames may exist), no unwind information (the next
 * frame's object has no .sframe section and its frame pointer register
 * holds no frame pointer, or a frame with a return address of 0: the
 * frames before it are kept), or bad frame (unwind information or a
 * frame pointer pointed outside the thread's stack, onto memory that
 * cannot be read, not upwards, or into no loaded object's code; or the
 * stack's bounds are unknown).
 *
 * How: each frame's object is found in a table built at tl_init and by the
 * helper thread after every dlopen/dlclose (dl_iterate_phdr(3), outside
 * any signal handler; an object loaded since the helper's last round,
 * 100 ms by default, or without a helper thread, is walked by frame
 * pointer until then).  An object with a .sframe section (gcc
 * -Wa,--gsframe, binutils 2.40) is unwound by it; any other by the frame
 * pointer (gcc -fno-omit-frame-pointer); but an interrupted frame (after
 * a signal frame, or the crash handler's first), whose function may not
 * have set up its frame (a leaf: gcc omits its frame pointer even with
 * -fno-omit-frame-pointer), by the object's .eh_frame where it has no
 * .sframe entry.  (The crash handler's walk, made once, takes every
 * frame's rule from .eh_frame where no .sframe entry covers it, as gdb's
 * `bt` does: the CRASH stack of code built with neither is whole.)
 * Reads stay inside the calling
 * thread's stack, between the caller's frame and the stack's top (the
 * main thread's from /proc/self/maps at tl_init, another thread's its
 * thread pointer), probed readable page by page with process_vm_readv(2)
 * once for each new depth; .eh_frame is read with process_vm_readv(2) and
 * no code is read, so the walk never faults (an object unloaded since the
 * table was built, a PROT_NONE page on the chain).
 *
 * Cost: one tl_mark, about 14 ns to set the walk up, and 4.5 ns a frame on
 * the frame-pointer path or 7.5 ns on the SFrame path, on a 2-core KVM
 * guest (docs/performance.md, "Stacks"); the first walk of a thread below its deepest walked page,
 * one process_vm_readv(2) for each 64 new pages.  Thread-safe, async-signal-safe (also from a handler on
 * an alternate signal stack: its frames, the signal frame, then the
 * interrupted code's), lock-free, allocates nothing, preserves errno.
 */
void tl_mark_stack(uint32_t id, uintptr_t arg, uint32_t depth);

/** tl_mark2 - as tl_mark, with two arguments.  Thread- and async-signal-safe. */
void tl_mark2(uint32_t id, uintptr_t arg0, uintptr_t arg1);

/**
 * tl_mark_ptr - record event `id` with a snapshot of up to 64 bytes at `ptr`.
 *
 * Copies min(len_cap, 64) bytes with process_vm_readv(2), so an invalid
 * pointer records the event with no bytes instead of faulting.  The reader
 * prints the bytes as bytes plus the mapping `ptr` points into, never as a
 * trusted string.  Thread-safe and async-signal-safe (one system call).
 */
void tl_mark_ptr(uint32_t id, const void *ptr, uint32_t len_cap);

/**
 * tl_thread_name - name the calling thread in the timeline.
 *
 * Records a THREAD_NAME event holding the first 15 bytes of `name` and sets
 * the name of the calling thread's lane.  NULL is ignored.
 * Thread-safe, async-signal-safe.
 */
void tl_thread_name(const char *name);

/**
 * tl_record - record a built-in event kind (TL_KIND_*) with two arguments.
 *
 * For the preload wrappers, and for programs with their own allocator or I/O
 * layer that want the reader to show MALLOC, FREE, READ... events.  Events of
 * a kind whose source is disabled are not recorded.  Unknown kinds are
 * ignored.  Thread-safe, async-signal-safe.
 */
void tl_record(uint32_t kind, uint32_t id, uintptr_t arg0, uintptr_t arg1);

/**
 * tl_record_bytes - tl_record with inline bytes and an explicit location.
 *
 * @bytes, @len: up to 64 bytes copied into the event with memcpy (the
 *   caller guarantees they are readable): the old pointer of a REALLOC, the
 *   path prefix of an OPEN, the sockaddr prefix of a CONNECT
 *   (docs/ring-format.md gives each kind's layout).  NULL or 0: none.
 *   For READ, WRITE, RECV and SEND (the payload's first bytes) at most
 *   tl_options.io_bytes of them are kept (TL_IO_BYTES; 0, none, by
 *   default).
 * @return_address: the code address the event is attributed to, for a
 *   wrapper that records on behalf of its caller
 *   (__builtin_return_address(0) in the wrapper); 0 means the caller of
 *   tl_record_bytes.
 *
 * Thread-safe, async-signal-safe.
 */
void tl_record_bytes(uint32_t kind, uint32_t id, uintptr_t arg0, uintptr_t arg1,
                     const void *bytes, uint32_t len, uintptr_t return_address);

/**
 * tl_span_begin - begin a span: an interval that tl_span_end() closes.
 *
 * Records a SPAN_BEGIN event (`id`, `arg`) and returns its token, which
 * names that event's slot.  Pass the token to tl_span_end(), from this
 * thread or any other.  Spans begun in one thread nest in the order they
 * were begun; the reader shows the spans still open at a crash, and how
 * long each had been open, as the timeline's headline.
 *
 * Returns 0 when nothing was recorded (before tl_init, user events
 * disabled, or no slot could be had); tl_span_end(0) does nothing.
 * Cost: one tl_mark.  Thread-safe, async-signal-safe, never blocks.
 */
uint64_t tl_span_begin(uint32_t id, uintptr_t arg);

/**
 * tl_span_end - end the span `token` (from tl_span_begin()).
 *
 * Records a SPAN_END event carrying the token, and the span's id and begin
 * timestamp read back from its begin slot while that slot still holds it,
 * so a span whose begin was later overwritten is still shown as "ended;
 * begin lost", with its name when it could be read.  Ending a span twice
 * records two ends; the reader reports the second.  A token that names no
 * slot of this ring records an end with id and begin timestamp 0.
 * Recorded only while TL_SOURCE_USER is enabled.  Cost: one tl_mark, plus
 * reading the begin's slot.  Thread-safe, async-signal-safe, never blocks.
 */
void tl_span_end(uint64_t token);

/**
 * tl_name - name user event `id` in the ring, so readers name it from the
 * core alone (no tlmap needed).
 *
 * @spec: "NAME [ARG0 [ARG1]]": the event's name and the names of its two
 *   arguments, separated by single spaces, e.g. "REQ_PARSE request_id
 *   bytes".  NAME is at most 47 bytes, each ARG at most 31, all printable
 *   ASCII other than space.
 *
 * Before tl_init the name is kept in the library and written into the ring
 * when it is made.  Naming an id again replaces its name (the newest entry
 * wins).  Returns 0, -EINVAL for a malformed spec (NULL, an empty field:
 * a double, leading or trailing space; a byte that is not printable
 * ASCII; a field too long; more than two ARGs), -ENOSPC when the name
 * table (tl_options.names entries; before tl_init, 256 waiting names) is
 * full.  Never blocks, preserves errno.  Thread-safe, async-signal-safe.
 */
int tl_name(uint32_t id, const char *spec);

/** TL_NAME(ID, SPEC) - name an event once, at file scope, next to its id:
 *
 *      enum { REQ_PARSE = 0x1001 };
 *      TL_NAME(REQ_PARSE, "REQ_PARSE request_id bytes");
 *
 *  expands to a constructor that calls tl_name(ID, SPEC) when the program
 *  (or the shared object holding it) is loaded, and a declaration that
 *  takes the semicolon (so it is valid ISO C).  Its result is not checked:
 *  test a spec with tl_name itself.  In a program linked with the static
 *  library the constructor runs before main(), so before tl_init: the name
 *  waits in the library until tl_init makes the ring. */
#define TL_NAME_CAT2_(a, b) a##b
#define TL_NAME_CAT_(a, b) TL_NAME_CAT2_(a, b)
#define TL_NAME_AT_(ID, SPEC, FN)                                               \
  __attribute__((constructor)) static void FN(void) { (void)tl_name((ID), (SPEC)); } \
  struct tl_name_at_file_scope_
#define TL_NAME(ID, SPEC) TL_NAME_AT_(ID, SPEC, TL_NAME_CAT_(tl_name_ctor_, __COUNTER__))

/**
 * tl_set_enabled - set the mask of recorded sources (TL_SOURCE_*).
 * Returns the previous mask.  Thread-safe, async-signal-safe.
 */
uint32_t tl_set_enabled(uint32_t sources);

/** tl_enabled - the current TL_SOURCE_* mask.  Thread- and
 *  async-signal-safe. */
uint32_t tl_enabled(void);

/**
 * tl_flush_async - ask for the sidecar to be brought up to date.
 *
 * Wakes the helper thread (or, without one, writes the lanes now with
 * pwrite(2)).  The core never needs this: the ring is already in the
 * process's memory.  Returns 0, -ENOENT if there is no sidecar, or -errno.
 * Thread-safe and async-signal-safe.
 */
int tl_flush_async(void);

#ifdef __cplusplus
}
#endif

#endif /* CORE_TIMELINE_TIMELINE_H */
