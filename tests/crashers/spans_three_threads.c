/* SPDX-License-Identifier: MIT */
/*
 * spans_three_threads - a crash with spans open in three threads, for the
 * acceptance tests of spans (lib_crash_test, and the reader's).
 *
 *   main      begins HANDOFF (job_id 99), starts the three threads, waits
 *   waiter    begins WAIT (lock_id 7) and blocks, never ending it
 *   closer    runs STEP 0, 1, 2, each begun, 5 ms of sleep, ended; ends
 *             main's HANDOFF (a span begun in one thread, ended in
 *             another); then blocks
 *   crasher   once waiter and closer are in those states, begins OUTER
 *             (request_id 42), then INNER (step 1) inside it, and dies of
 *             SIGSEGV inside INNER
 *
 * So at the crash OUTER, INNER (crasher), WAIT (waiter) are open; STEP x3
 * and HANDOFF are closed.  Every id is named in the ring with TL_NAME.
 * Static libtimeline, tl_init with the defaults and no sidecar.  Prints
 * nothing; exits 70 if tl_init fails.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <core_timeline/timeline.h>

#include "spans_ids.h"

TL_NAME(SPANS_OUTER, "OUTER request_id");
TL_NAME(SPANS_INNER, "INNER step");
TL_NAME(SPANS_WAIT, "WAIT lock_id");
TL_NAME(SPANS_STEP, "STEP index");
TL_NAME(SPANS_HANDOFF, "HANDOFF job_id");

static sem_t waiter_ready, closer_ready;
static uint64_t handoff;

static void name_thread(const char *name) {
  pthread_setname_np(pthread_self(), name);
  tl_thread_name(name);
}

static void block_forever(void) {
  for (;;) pause();
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void *waiter(void *arg) {
  (void)arg;
  name_thread("waiter");
  (void)tl_span_begin(SPANS_WAIT, 7);
  sem_post(&waiter_ready);
  block_forever();
  return NULL;
}

static void *closer(void *arg) {
  (void)arg;
  name_thread("closer");
  for (uintptr_t i = 0; i < 3; ++i) {
    const uint64_t step = tl_span_begin(SPANS_STEP, i);
    sleep_ms(SPANS_STEP_MS);
    tl_span_end(step);
  }
  tl_span_end(handoff);
  sem_post(&closer_ready);
  block_forever();
  return NULL;
}

/* A write through a pointer the compiler cannot see is NULL: a real
 * SIGSEGV (SEGV_MAPERR) at this instruction, never optimised away. */
static int *volatile null_pointer;
__attribute__((noinline, noipa)) static void crash_inside(void) { *null_pointer = 1; }

static void *crasher(void *arg) {
  (void)arg;
  name_thread("crasher");
  while (sem_wait(&waiter_ready) != 0) {
  }
  while (sem_wait(&closer_ready) != 0) {
  }
  (void)tl_span_begin(SPANS_OUTER, 42);
  (void)tl_span_begin(SPANS_INNER, 1);
  crash_inside();
  return NULL;
}

int main(void) {
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.sidecar_dir = "";
  int rc = tl_init(&o);
  if (rc != 0) {
    fprintf(stderr, "spans_three_threads: tl_init: %s\n", strerror(-rc));
    return 70;
  }
  tl_thread_name("main");
  handoff = tl_span_begin(SPANS_HANDOFF, 99);
  sem_init(&waiter_ready, 0, 0);
  sem_init(&closer_ready, 0, 0);
  pthread_t w, c, x;
  pthread_create(&w, NULL, waiter, NULL);
  pthread_create(&c, NULL, closer, NULL);
  pthread_create(&x, NULL, crasher, NULL);
  pthread_join(x, NULL);
  return 71; /* not reached */
}
