/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - libtimeline's stack walker (private).
 *
 * Two halves:
 *  - unwind_table.cc (NOT async-signal-safe): finds every loaded object's
 *    executable range and its .sframe section (PT_GNU_SFRAME) with
 *    dl_iterate_phdr(3), checks and copies each .sframe section into memory
 *    of its own (so a dlclose never leaves the walker a dangling pointer),
 *    and publishes the table with one release store.  Run by tl_init and by
 *    the helper thread whenever the loader generation (dlpi_adds +
 *    dlpi_subs) changes, so an object dlopen'ed after tl_init is walked
 *    with its .sframe from the helper's next round on (sync_interval_ms,
 *    100 ms by default); before that, and without a helper thread, its
 *    frames are walked by frame pointer.
 *  - unwind.cc (ASYNC-SIGNAL-SAFE): the walk.  It reads only the published
 *    table (one acquire load), the copies, the calling thread's stack
 *    between the walk's start and the stack's top, and, for the frame a
 *    signal interrupted (whose function may not have set up its frame
 *    yet, or ever: a leaf), and in the crash handler's walk for every
 *    frame, that object's .eh_frame_hdr and .eh_frame where it has no
 *    .sframe entry for the pc.  It never reads code: signal trampolines
 *    are known by address (found when the table is built).  A read that
 *    is not known to be safe goes through process_vm_readv(2), which
 *    fails instead of faulting: every .eh_frame read (the object may have
 *    been unloaded since the table was built), every read in the crash
 *    handler's walk, and stack reads outside the part of the thread's
 *    stack already probed.  Plain loads read only the walker's own
 *    memory and the calling thread's stack between the walk's start and
 *    its top, probed readable page by page with process_vm_readv(2) the
 *    first time the thread's walks reach that deep.  It allocates
 *    nothing and takes no lock.
 *
 * The SFrame format is binutils' (include/sframe.h of binutils 2.40 for
 * version 1, which its `as --gsframe` emits, and of 2.41 for version 2):
 * parsed here, libsframe is not linked (libtimeline needs only libc).
 */
#ifndef CORE_TIMELINE_LIB_UNWIND_H
#define CORE_TIMELINE_LIB_UNWIND_H

#include <stdint.h>

#include "internal.h"

namespace core_timeline::lib {

/** One loaded object as the walker sees it.  Immutable once published and
 *  never freed (its memory is reused only for the same object), so a
 *  walker holding an old table reads valid memory. */
struct CodeObject {
  uint64_t text_lo, text_hi;   /* its executable PT_LOADs, [lo, hi) */
  uint64_t bias;               /* dlpi_addr */
  const uint8_t *sframe;       /* our copy of its .sframe, NULL: none */
  uint64_t sframe_addr;        /* the section's run-time address */
  uint32_t sframe_size;        /* bytes of the copy */
  uint32_t fde_off;            /* first FDE, from the copy's start */
  uint32_t fde_count;
  uint32_t fde_size;           /* 17 (version 1) or 20 (version 2) */
  uint32_t fre_off;            /* the FRE sub-section, from the copy's start */
  uint32_t fre_len;
  uint8_t version;
  uint8_t flags;               /* sfh_preamble.sfp_flags */
  int8_t ra_offset;            /* sfh_cfa_fixed_ra_offset, 0: in each FRE */
  int8_t fp_offset;            /* sfh_cfa_fixed_fp_offset, 0: in each FRE */
  uint64_t eh_hdr;             /* .eh_frame_hdr's run-time address
                                  (PT_GNU_EH_FRAME), 0: none */
  uint64_t eh_lo, eh_hi;       /* the PT_LOAD that holds it, [lo, hi): every
                                  read of .eh_frame_hdr and .eh_frame stays
                                  inside (the object's own mapping) */
};

/** Signal trampolines a table knows: return addresses that are a signal
 *  frame's (the handler returns to the trampoline, which calls
 *  rt_sigreturn(2) on the kernel's struct rt_sigframe at the stack
 *  pointer). */
inline constexpr uint32_t kMaxTrampolines = 16;

/** Objects, sorted by text_lo; the walker reads it through g_objects. */
inline constexpr uint32_t kMaxObjects = 512;
struct ObjectEntry {
  uint64_t text_lo, text_hi;   /* the object's, copied here so a lookup
                                  touches one array */
  const CodeObject *object;
};
struct ObjectTable {
  uint32_t count;
  /* glibc's __restore_rt (found beside __sigaction), then the
   * sa_restorer of every handler installed when the table was built
   * (rt_sigaction(2) with no new action), each once. */
  uint32_t trampoline_count;
  uint64_t trampolines[kMaxTrampolines];
  ObjectEntry entries[kMaxObjects];
};
/** The published table (release store by unwind_refresh, acquire load by
 *  the walker); NULL before tl_init. */
extern const ObjectTable *g_objects TL_HIDDEN;
/** Bumped (release) before each new table is published: the walker's
 *  per-thread rule cache keeps only rules of the current generation. */
extern uint32_t g_objects_generation TL_HIDDEN;

/** A frame's registers: the code address, the stack pointer and the frame
 *  pointer (rbp on x86-64) as they are in that frame. */
struct FrameRegs {
  uint64_t pc;
  uint64_t sp;
  uint64_t fp;
};

/** What a walk found: `depth` return addresses stored, and how it ended
 *  (fmt::StackEnd).  Not the Slot.stack byte, whose 4 depth bits hold at
 *  most 15 frames: the crash handler's walk goes deeper. */
struct WalkResult {
  uint32_t depth;
  uint8_t end;
};

/**
 * Walk the calling thread's stack from `start` and store up to `max`
 * return addresses of the callers of the frame `start` describes in `out`
 * (which holds `max`).  `exact`: start.pc is the address of
 * the instruction being executed (a signal's pc) rather than a return
 * address.  `safe_reads`: read every stack word with process_vm_readv(2)
 * (the crash handler: the stack may be corrupt, and its one walk may
 * cost microseconds); without it, the part of the thread's stack probed
 * readable is read with plain loads and the rest as with it.
 * `cfi_every_frame`: every frame without an SFrame entry takes its rule
 * from its object's .eh_frame where it has one, as gdb's `bt` does, not
 * only the interrupted one (the crash handler: most code has neither
 * .sframe nor frame pointers).  The walk ends complete only at a frame
 * whose .eh_frame rule leaves the return address undefined (the psABI's
 * outermost frame: _start, a thread's start); a return address of 0 read
 * from the stack is no end mark (the stack's bytes can fake it).  Never
 * faults, whatever the start registers and the stack hold (a read that
 * is not known safe fails instead).  Returns the frames stored in `out` and how the walk ended.
 * Async-signal-safe; preserves errno.
 */
WalkResult walk_stack(FrameRegs start, bool exact, uint64_t *out, uint32_t max, bool safe_reads,
                      bool cfi_every_frame = false) TL_HIDDEN;

/** Note the calling thread's stack bounds (its top), when its lane is set
 *  up; async-signal-safe (two system calls, once per thread). */
void stack_bounds_note() TL_HIDDEN;

/** Build and publish the object table (at tl_init; the helper thread calls
 *  unwind_refresh(loader_generation()) each round and it rebuilds only
 *  when that changed, or when an installed signal handler's sa_restorer
 *  is not among the table's trampolines).  NOT async-signal-safe:
 *  dl_iterate_phdr takes the loader's lock, mmap for the copies. */
void unwind_refresh(uint64_t generation) TL_HIDDEN;

/** The main thread's stack top (the end of /proc/self/maps' [stack]),
 *  read at tl_init.  0: unknown (main-thread stacks then end bad_frame). */
extern uint64_t g_main_stack_top TL_HIDDEN;

/** TL_STACK_DEPTH / tl_options.stack_depth: frames given to the wrappers'
 *  events and to span begins, 0..8; 0 (default): none. */
extern uint32_t g_stack_depth TL_HIDDEN;

/** TL_IO_BYTES / tl_options.io_bytes, at most 64: the inline bytes kept of
 *  a READ, WRITE, RECV or SEND event's payload (tl_record_bytes cuts to
 *  it); 0, the default: none.  Set by tl_init, read relaxed. */
extern uint32_t g_io_bytes TL_HIDDEN;

}  // namespace core_timeline::lib

#endif  // CORE_TIMELINE_LIB_UNWIND_H
