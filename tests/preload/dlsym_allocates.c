/* SPDX-License-Identifier: MIT */
/*
 * libct_dlsym_allocates.so - test stand-in for a C library whose dlsym
 * allocates (glibc before 2.34 calloc'ed per-thread error state on a
 * thread's first dl call; glibc 2.36's dlsym allocates only on failure).
 *
 * Preload it right AFTER libtimeline-alloc.so:
 *   LD_PRELOAD="libtimeline-alloc.so libct_dlsym_allocates.so"
 * The wrapper's own dlsym(RTLD_NEXT, ...) calls then land here, on the first
 * heap call of the process, and the calloc, malloc and free below re-enter
 * the wrapper while it looks up the next allocator: the bootstrap path.  The
 * lookup is forwarded to the real dlsym; RTLD_NEXT then counts from this
 * library, which sits just after the wrapper and defines no heap function,
 * so the answer is the same.
 *
 * preload_victim --arena-check reads what happened through the two
 * functions exported below.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "preload_victim.h"

static void *g_block;       /* calloc'ed by the first call, kept */
static void *g_freed_block; /* calloc'ed by the first call, freed by the second */
static void *g_last_block;  /* calloc'ed by a later call, freed by the next */
static int g_calls;

void *ct_dlsym_shim_block(void) { return g_block; }
void *ct_dlsym_shim_freed_block(void) { return g_freed_block; }

typedef void *(*dlsym_fn)(void *, const char *);

/* The wrapper looks up free first, then realloc, malloc...: blocks made
 * while it looks up free come from its arena, and are freed (through the
 * wrapper, which must not pass them on) once it knows the next free. */
void *dlsym(void *handle, const char *name) {
  static dlsym_fn real;
  /* The wrapper's lookups come first, while the process is single-threaded. */
  if (g_calls < 8) {
    ++g_calls;
    if (g_block == NULL) {
      g_freed_block = calloc(1, 48);
      char *b = calloc(1, 64);
      if (b != NULL) {
        for (int i = 0; i < 64; ++i)
          if (b[i] != 0) abort(); /* calloc must hand out zeroed memory */
        strcpy(b, kShimPattern);
      }
      g_block = b;
    } else {
      if (g_calls == 2) free(g_freed_block); /* its address stays, for the check */
      void *b = malloc(32);
      free(g_last_block);
      g_last_block = b;
    }
  }
  if (real == NULL) {
    real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (real == NULL) real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (real == NULL) abort();
  }
  return real(handle, name);
}
