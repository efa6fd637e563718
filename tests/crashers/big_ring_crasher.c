/* SPDX-License-Identifier: MIT */
/*
 * big_ring_crasher THREADS SLOTS_PER_LANE EVENTS_PER_THREAD - a libtimeline
 * process with a big ring, full, that then dies of SIGSEGV: the core of
 * a ring of about a million events, for bench_reader, export_gates_test
 * and the reader's memory measurements.
 *
 * tl_init makes THREADS + 1 lanes (one per worker, one for the main thread)
 * of SLOTS_PER_LANE slots, plus the shared overflow lane, for each of the
 * three sources (ring format 3; only the user lanes are written), and no
 * pools (slots_per_lane without a budget): the lanes do not grow.  Each worker
 * names itself and records EVENTS_PER_THREAD events as a real program
 * would, from a handful of call sites: BR_STEP (0x3001, tl_mark, named in
 * the ring), BR_PAIR (0x3002, tl_mark2, unnamed), one BR_REQ span
 * (0x3003) begun and ended every 64 events, and every 16th event a
 * BR_PTR (0x3004, tl_mark_ptr of 16 bytes of its stack: inline bytes and
 * a pointer argument).  With EVENTS_PER_THREAD >= SLOTS_PER_LANE each
 * worker's lane wraps and holds SLOTS_PER_LANE events: 16 65536 70000
 * leaves 16 x 65536 = 1048576 events in the ring.  The main thread then
 * begins a span (BR_MAIN, 0x3005) and dies inside it.
 *
 * tl_span_begin, tl_span_end and tl_name are weak: with a libtimeline
 * that does not have them yet, the spans are plain BR_STEP events and the
 * ids go unnamed (the ring holds as many events either way).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <core_timeline/timeline.h>

#pragma weak tl_span_begin
#pragma weak tl_span_end
#pragma weak tl_name

static unsigned long g_events;
/* Every worker writes after all have started and exits after all have
 * written: a lane is released when its thread exits (and taken by the
 * next thread), so a worker that finished early would let another
 * overwrite its lane. */
static pthread_barrier_t g_started, g_written;

static uint64_t span_begin(uint32_t id, uintptr_t arg) {
  if (tl_span_begin) return tl_span_begin(id, arg);
  tl_mark(0x3001, arg);
  return 0;
}

static void span_end(uint64_t token) {
  if (tl_span_end) tl_span_end(token);
  else tl_mark(0x3001, 0);
}

static void name(uint32_t id, const char *spec) {
  if (tl_name) tl_name(id, spec);
}

__attribute__((noinline, noipa)) static void die(void) { *(volatile int *)0 = 1; }

static void *worker(void *arg) {
  const unsigned n = (unsigned)(uintptr_t)arg;
  char thread[16];
  snprintf(thread, sizeof thread, "worker-%u", n);
  tl_thread_name(thread);
  unsigned char buf[16];
  memset(buf, (int)n, sizeof buf);
  uint64_t span = 0;
  pthread_barrier_wait(&g_started);
  for (unsigned long i = 0; i < g_events; ++i) {
    if (i % 64 == 0) {
      if (i > 0) span_end(span);
      span = span_begin(0x3003, i);
    } else if (i % 16 == 0) {
      buf[0] = (unsigned char)i;
      tl_mark_ptr(0x3004, buf, sizeof buf);
    } else if (i % 2 == 0) {
      tl_mark(0x3001, i);
    } else {
      tl_mark2(0x3002, i, n);
    }
  }
  pthread_barrier_wait(&g_written);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: big_ring_crasher THREADS SLOTS_PER_LANE EVENTS_PER_THREAD\n");
    return 64;
  }
  const unsigned threads = (unsigned)strtoul(argv[1], NULL, 10);
  g_events = strtoul(argv[3], NULL, 10);
  struct tl_options opts;
  memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  opts.slots_per_lane = (uint32_t)strtoul(argv[2], NULL, 10);
  opts.lanes = threads + 1;
  opts.sidecar_dir = "";
  if (threads == 0 || threads > 1024) return 64;
  const int rc = tl_init(&opts);
  if (rc != 0) {
    fprintf(stderr, "big_ring_crasher: tl_init: %d\n", rc);
    return 70;
  }
  name(0x3001, "BR_STEP i");
  name(0x3003, "BR_REQ i");
  name(0x3005, "BR_MAIN threads");
  tl_thread_name("main");
  pthread_t *t = calloc(threads, sizeof *t);
  if (t == NULL || pthread_barrier_init(&g_started, NULL, threads) != 0 ||
      pthread_barrier_init(&g_written, NULL, threads) != 0)
    return 71;
  for (unsigned i = 0; i < threads; ++i)
    if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) != 0) return 72;
  for (unsigned i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  span_begin(0x3005, threads);
  die();
  return 0;
}
