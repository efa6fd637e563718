/* SPDX-License-Identifier: MIT */
/*
 * alloc.cc - libtimeline-alloc.so: records the program's heap calls in the
 * timeline.  Preload it (LD_PRELOAD=libtimeline-alloc.so); README.md beside
 * this file documents what it records and where it stops.
 *
 *   malloc, aligned_alloc, memalign, valloc  MALLOC  arg0 = pointer, arg1 = size
 *   posix_memalign                           MALLOC  arg0 = pointer (0 on error), arg1 = size
 *   calloc                                   CALLOC  arg0 = pointer, arg1 = n * size
 *   realloc                                  REALLOC arg0 = new pointer, arg1 = size
 *   free (not of NULL)                       FREE    arg0 = pointer
 *
 * A failed allocation is recorded with pointer 0.  Every call is forwarded
 * to the next definition of the same name (dlsym(RTLD_NEXT)): libc's, or
 * that of an allocator preloaded after this library, so every block is
 * freed by the allocator that made it.
 *
 * EARLY-BOOTSTRAP AND SIGNAL CONTEXT (whole file).  These functions run
 * before any constructor, inside the dynamic loader (dlsym allocates), inside
 * the next allocator's own initialisation, and from signal handlers that
 * call malloc.  They never lock; they touch only initial-exec TLS; they
 * never call an allocation function except the next allocator's; the only
 * other calls are dlsym (first use, preload_common.h), tl_record, memcpy
 * and getpagesize.  Compiled with -fno-builtin so the compiler cannot turn
 * code here into a call to the functions this file defines.
 *
 * Bootstrap: until the next allocator's functions are known (this thread is
 * inside dlsym looking them up), allocations are served from a small static
 * bump arena.  Its blocks are never reused and never handed to the next
 * allocator: free() ignores them and realloc() moves them out.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "preload_common.h"

namespace core_timeline::preload {
namespace {

/* ---------------------------------------------------- the next allocator */

using FreeFn = void (*)(void *);
using ReallocFn = void *(*)(void *, size_t);
using MallocFn = void *(*)(size_t);
using CallocFn = void *(*)(size_t, size_t);
using PosixMemalignFn = int (*)(void **, size_t, size_t);
using AlignedAllocFn = void *(*)(size_t, size_t);
using MemalignFn = void *(*)(size_t, size_t);
using VallocFn = void *(*)(size_t);

/* free and realloc first: once the next allocator's malloc is known, every
 * block it hands out (even to dlsym while the rest is looked up) can be
 * freed or resized by it. */
enum : std::size_t {
  kFree,
  kRealloc,
  kMalloc,
  kCalloc,
  kPosixMemalign,
  kAlignedAlloc,
  kMemalign,
  kValloc,
  kSymbolCount
};
constinit NextSymbol g_next[kSymbolCount] = {
    {"free"},   {"realloc"},        {"malloc"},        {"calloc"},
    {"posix_memalign"}, {"aligned_alloc"}, {"memalign"}, {"valloc"},
};

/* --------------------------------------------------- the bootstrap arena */

/* glibc 2.36's dlsym allocates nothing on success and a few hundred bytes
 * for a failed lookup's message; 64 KiB leaves room for a next allocator or
 * loader that asks for more. */
constexpr size_t kArenaBytes = 64 * 1024;
constexpr size_t kArenaAlign = 16; /* alignof(max_align_t) on x86-64 and AArch64 */

struct ArenaBlock {
  size_t size;     /* bytes asked for, for realloc's copy */
  size_t reserved; /* keeps the data 16-byte aligned */
};
static_assert(sizeof(ArenaBlock) == kArenaAlign);

alignas(kArenaAlign) unsigned char g_arena[kArenaBytes]; /* zero, never reused */
constinit std::atomic<size_t> g_arena_used{0};

inline bool in_arena(const void *p) {
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_arena) < kArenaBytes;
}

/* A block of `size` bytes aligned to `align` (a power of two), zero-filled
 * because arena bytes are never reused.  Lock-free.  nullptr when the arena
 * is exhausted; errno is left alone. */
void *arena_alloc(size_t size, size_t align) {
  if (align < kArenaAlign) align = kArenaAlign;
  if (align > kArenaBytes / 2 || size > kArenaBytes) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(g_arena);
  size_t used = g_arena_used.load(std::memory_order_relaxed);
  for (;;) {
    uintptr_t data = (base + used + sizeof(ArenaBlock) + align - 1) & ~uintptr_t(align - 1);
    size_t end = data - base + size;
    if (end > kArenaBytes) return nullptr;
    if (g_arena_used.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      reinterpret_cast<ArenaBlock *>(data - sizeof(ArenaBlock))->size = size;
      return reinterpret_cast<void *>(data);
    }
  }
}

size_t arena_block_size(const void *p) {
  return reinterpret_cast<const ArenaBlock *>(static_cast<const unsigned char *>(p) -
                                              sizeof(ArenaBlock))
      ->size;
}

/* ------------------------------------ forwarding, with the arena fallback */

void *arena_alloc_or_enomem(size_t size, size_t align) {
  void *p = arena_alloc(size, align);
  if (p == nullptr) errno = ENOMEM;
  return p;
}

/* `p` is neither NULL nor an arena block (free() checked). */
void next_free(void *p) {
  if (FreeFn f = next<FreeFn>(g_next, kFree)) f(p);
  /* else this thread is inside dlsym looking up free itself: a block the
   * next allocator made cannot be returned to it now, and is leaked. */
}

void *next_malloc(size_t size) {
  if (MallocFn f = next<MallocFn>(g_next, kMalloc)) return f(size);
  return arena_alloc_or_enomem(size, kArenaAlign);
}

void *next_calloc(size_t n, size_t size) {
  if (CallocFn f = next<CallocFn>(g_next, kCalloc)) return f(n, size);
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return arena_alloc_or_enomem(total, kArenaAlign);
}

void *next_realloc(void *old, size_t size) {
  if (in_arena(old)) {
    /* Move the block out of the arena (to the next allocator once it is
     * known); the arena block itself is never reused. */
    void *p = next_malloc(size);
    if (p != nullptr) {
      size_t old_size = arena_block_size(old);
      memcpy(p, old, old_size < size ? old_size : size);
    }
    return p;
  }
  if (ReallocFn f = next<ReallocFn>(g_next, kRealloc)) return f(old, size);
  if (old == nullptr) return arena_alloc_or_enomem(size, kArenaAlign);
  errno = ENOMEM; /* a block of the next allocator, which cannot be reached now */
  return nullptr;
}

bool valid_alignment(size_t align) { return align != 0 && (align & (align - 1)) == 0; }

int next_posix_memalign(void **out, size_t align, size_t size) {
  if (PosixMemalignFn f = next<PosixMemalignFn>(g_next, kPosixMemalign))
    return f(out, align, size);
  if (!valid_alignment(align) || align % sizeof(void *) != 0) return EINVAL;
  void *p = arena_alloc(size, align);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void *next_aligned_alloc(size_t align, size_t size) {
  if (AlignedAllocFn f = next<AlignedAllocFn>(g_next, kAlignedAlloc)) return f(align, size);
  if (!valid_alignment(align)) {
    errno = EINVAL;
    return nullptr;
  }
  return arena_alloc_or_enomem(size, align);
}

void *next_memalign(size_t align, size_t size) {
  if (MemalignFn f = next<MemalignFn>(g_next, kMemalign)) return f(align, size);
  if (!valid_alignment(align)) {
    errno = EINVAL;
    return nullptr;
  }
  return arena_alloc_or_enomem(size, align);
}

void *next_valloc(size_t size) {
  if (VallocFn f = next<VallocFn>(g_next, kValloc)) return f(size);
  return arena_alloc_or_enomem(size, static_cast<size_t>(getpagesize()));
}

/* ------------------------------------------------------------- recording */

/* Run `call` (which allocates through the next allocator) and record its
 * result as `kind` with `size`.  A call made while this thread is already in
 * a wrapper (by dlsym, by the next allocator, by a signal handler that
 * interrupted a wrapper) is forwarded and not recorded: the guard is held
 * across the next allocator's call for that reason. */
template <typename Call>
inline void *allocate_and_record(uint32_t kind, size_t size, uintptr_t where, Call call,
                                 const void *bytes = nullptr, uint32_t len = 0) {
  if (t_in_wrapper) return call();
  t_in_wrapper = 1;
  void *p = call();
  emit(kind, 0, reinterpret_cast<uintptr_t>(p), size, where, bytes, len);
  t_in_wrapper = 0;
  return p;
}

}  // namespace
}  // namespace core_timeline::preload

using namespace core_timeline::preload;

CT_PRELOAD_EXPORT void *malloc(size_t size) noexcept {
  return allocate_and_record(TL_KIND_MALLOC, size, CT_PRELOAD_CALLER, [=] { return next_malloc(size); });
}

CT_PRELOAD_EXPORT void free(void *p) noexcept {
  if (p == nullptr || in_arena(p)) return;
  if (t_in_wrapper) {
    next_free(p);
    return;
  }
  t_in_wrapper = 1;
  /* Recorded before the block is released: once it is, another thread may
   * be handed the same address, and its MALLOC must come after this FREE. */
  emit(TL_KIND_FREE, 0, reinterpret_cast<uintptr_t>(p), 0, CT_PRELOAD_CALLER);
  next_free(p);
  t_in_wrapper = 0;
}

CT_PRELOAD_EXPORT void *calloc(size_t n, size_t size) noexcept {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) total = SIZE_MAX; /* the call fails */
  return allocate_and_record(TL_KIND_CALLOC, total, CT_PRELOAD_CALLER, [=] { return next_calloc(n, size); });
}

/* The old pointer goes in the slot's first 8 inline bytes
 * (docs/ring-format.md). */
CT_PRELOAD_EXPORT void *realloc(void *old, size_t size) noexcept {
  uint64_t old_value = reinterpret_cast<uintptr_t>(old);
  return allocate_and_record(
      TL_KIND_REALLOC, size, CT_PRELOAD_CALLER, [=] { return next_realloc(old, size); },
      &old_value, sizeof old_value);
}

CT_PRELOAD_EXPORT int posix_memalign(void **out, size_t align, size_t size) noexcept {
  if (t_in_wrapper) return next_posix_memalign(out, align, size);
  t_in_wrapper = 1;
  int rc = next_posix_memalign(out, align, size);
  emit(TL_KIND_MALLOC, 0, rc == 0 ? reinterpret_cast<uintptr_t>(*out) : 0, size,
       CT_PRELOAD_CALLER);
  t_in_wrapper = 0;
  return rc;
}

CT_PRELOAD_EXPORT void *aligned_alloc(size_t align, size_t size) noexcept {
  return allocate_and_record(TL_KIND_MALLOC, size, CT_PRELOAD_CALLER,
                             [=] { return next_aligned_alloc(align, size); });
}

CT_PRELOAD_EXPORT void *memalign(size_t align, size_t size) noexcept {
  return allocate_and_record(TL_KIND_MALLOC, size, CT_PRELOAD_CALLER, [=] { return next_memalign(align, size); });
}

CT_PRELOAD_EXPORT void *valloc(size_t size) noexcept {
  return allocate_and_record(TL_KIND_MALLOC, size, CT_PRELOAD_CALLER, [=] { return next_valloc(size); });
}
