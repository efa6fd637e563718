/* SPDX-License-Identifier: MIT */
/*
 * preload_common.h - what the wrapper libraries (libtimeline-alloc.so,
 * libtimeline-io.so, libtimeline-signal.so) share:
 * finding the next definition of a libc function and recording an event
 * without recursing.
 *
 * EARLY-BOOTSTRAP AND SIGNAL CONTEXT.  Everything here may run before any
 * constructor (libc's, libtimeline's, ours), from inside the dynamic loader
 * (dlsym allocates through the malloc wrapper), and in a signal handler that
 * interrupted a wrapper.  Allowed: plain loads and stores, lock-free atomics,
 * initial-exec TLS, dlsym (only from resolve_next, under the
 * per-thread resolving flag), tl_record_bytes (async-signal-safe by contract).
 * Forbidden: malloc and friends, stdio, locks, global- or local-dynamic TLS
 * (its first touch in a thread may allocate), C++ statics with guards,
 * exceptions, and leaving errno changed.
 *
 * Each wrapper library includes this header from exactly one translation
 * unit, so each library has its own guard and resolving flag.
 */
#ifndef CORE_TIMELINE_PRELOAD_COMMON_H
#define CORE_TIMELINE_PRELOAD_COMMON_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <cstddef>

#include "core_timeline/timeline.h"

/* The wrappers' definitions are the library's only exports; the version
 * script (alloc.map, io.map) lists them.  The script is anonymous on
 * purpose: a versioned definition (malloc@@SOMETHING) would not interpose
 * the program's reference to malloc@GLIBC_2.2.5. */
#define CT_PRELOAD_EXPORT extern "C" __attribute__((visibility("default")))
#define CT_PRELOAD_TLS __attribute__((tls_model("initial-exec")))

namespace core_timeline::preload {
namespace {

/* Set while this thread is inside one of this library's wrappers with the
 * event not yet written.  A wrapper entered while it is set (an allocation
 * made by the loader during dlsym, by the next allocator while it
 * initialises, by tl_record or by a signal handler that interrupted a
 * wrapper) forwards the call and records nothing.  Initial-exec: touching it
 * never allocates. */
__thread int t_in_wrapper CT_PRELOAD_TLS;

/* Set while this thread runs dlsym() in resolve_next(); a wrapper entered
 * from inside that dlsym must not call dlsym again and uses its bootstrap
 * fallback instead (the malloc arena, a raw system call). */
__thread int t_resolving CT_PRELOAD_TLS;

/** One libc function as defined by the object after this library in the
 *  lookup order: the next preloaded library's (jemalloc's, say) or libc's.
 *  Constant-initialised, so it is valid before any constructor runs. */
struct NextSymbol {
  const char *name;
  std::atomic<void *> address{nullptr};
};

/**
 * Look up every still-unresolved entry of `table`, in order, with
 * dlsym(RTLD_NEXT, name), storing each address as soon as it is found (an
 * allocation dlsym makes while a later entry is looked up can already use an
 * earlier one).  Returns at once if this thread is already inside it: the
 * wrapper that dlsym re-entered then uses its bootstrap fallback.  Two
 * threads may both look up; they store the same addresses.  A name no later
 * object defines stays nullptr and is looked up again on the next call.
 */
template <std::size_t N>
__attribute__((noinline, cold)) void resolve_next(NextSymbol (&table)[N]) {
  if (t_resolving) return;
  t_resolving = 1;
  int saved_errno = errno; /* dlsym may change it */
  for (NextSymbol &sym : table) {
    if (sym.address.load(std::memory_order_relaxed) != nullptr) continue;
    void *address = dlsym(RTLD_NEXT, sym.name);
    if (address != nullptr) sym.address.store(address, std::memory_order_release);
  }
  errno = saved_errno;
  t_resolving = 0;
}

/** The next definition of table[i] as a `Fn`, or nullptr while it cannot be
 *  had (see resolve_next).  Lock-free: one acquire load once resolved. */
template <typename Fn, std::size_t N>
inline Fn next(NextSymbol (&table)[N], std::size_t i) {
  void *address = table[i].address.load(std::memory_order_acquire);
  if (__builtin_expect(address == nullptr, 0)) {
    resolve_next(table);
    address = table[i].address.load(std::memory_order_acquire);
  }
  return reinterpret_cast<Fn>(address);
}

/* The code address an event is attributed to: the program's call site,
 * i.e. the return address of the exported wrapper.  Use it in the exported
 * function itself and pass it down. */
#define CT_PRELOAD_CALLER reinterpret_cast<uintptr_t>(__builtin_return_address(0))

/* Write one event attributed to `where`, with up to 64 inline bytes (which
 * must be readable).  Keeps errno as the wrapped call left it, for the
 * program, without relying on tl_record_bytes's own promise to. */
inline void emit(uint32_t kind, uint32_t id, uintptr_t arg0, uintptr_t arg1, uintptr_t where,
                 const void *bytes = nullptr, uint32_t len = 0) {
  int saved_errno = errno;
  tl_record_bytes(kind, id, arg0, arg1, bytes, len, where);
  errno = saved_errno;
}

/* Write one event unless this thread is already inside a wrapper of this
 * library (tl_record_bytes does not call back into the wrappers today; the
 * guard keeps it so if it ever does, e.g. through a sidecar write). */
inline void emit_guarded(uint32_t kind, uint32_t id, uintptr_t arg0, uintptr_t arg1,
                         uintptr_t where, const void *bytes = nullptr, uint32_t len = 0) {
  if (t_in_wrapper) return;
  t_in_wrapper = 1;
  emit(kind, id, arg0, arg1, where, bytes, len);
  t_in_wrapper = 0;
}

}  // namespace
}  // namespace core_timeline::preload

#endif  // CORE_TIMELINE_PRELOAD_COMMON_H
