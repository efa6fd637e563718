/* SPDX-License-Identifier: MIT */
/*
 * retention_crasher MODE N - the acceptance fixture of "keep the last
 * minute" (lanes by source, pools): records, then dies of SIGSEGV with
 * the crash handler's CRASH event.  Linked to the shared libtimeline, so
 * the wrappers (LD_PRELOAD=libtimeline-alloc.so) record beside it.
 *
 *   marks N          N marks (RETENTION_MARK, arg = 0..N-1) on one thread
 *   mark-then-allocs N  one RETENTION_ONCE mark, then N malloc/free pairs
 *   threads N        N threads each make one RETENTION_THREAD mark and
 *                    wait; the main thread dies while all are alive
 */
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core_timeline/timeline.h"
#include "retention_ids.h"

static pthread_barrier_t g_all_marked;

static void *one_mark(void *arg) {
  tl_mark(RETENTION_THREAD, (uintptr_t)arg);
  pthread_barrier_wait(&g_all_marked);
  for (;;) pause(); /* alive at the crash */
  return NULL;
}

/* A real SIGSEGV at a store to address 0, which the compiler cannot
 * prove is null. */
static volatile uintptr_t g_null = 0;
static void die(void) { *(volatile int *)g_null = 1; }

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: retention_crasher marks|mark-then-allocs|threads N\n");
    return 2;
  }
  const long n = strtol(argv[2], NULL, 10);
  if (strcmp(argv[1], "marks") == 0) {
    for (long i = 0; i < n; ++i) tl_mark(RETENTION_MARK, (uintptr_t)i);
  } else if (strcmp(argv[1], "mark-then-allocs") == 0) {
    tl_mark(RETENTION_ONCE, 42);
    for (long i = 0; i < n; ++i) {
      void *volatile p = malloc(16 + (size_t)(i % 64));
      free(p);
    }
  } else if (strcmp(argv[1], "threads") == 0) {
    pthread_barrier_init(&g_all_marked, NULL, (unsigned)n + 1);
    for (long i = 0; i < n; ++i) {
      pthread_t t;
      if (pthread_create(&t, NULL, one_mark, (void *)(uintptr_t)i) != 0) return 3;
    }
    pthread_barrier_wait(&g_all_marked);
  } else {
    return 2;
  }
  die();
  return 0;
}
