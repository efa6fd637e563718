/* SPDX-License-Identifier: MIT */
/*
 * clock_check [--fast] - marks whose CLOCK_MONOTONIC times are known, then
 * a crash, for the acceptance tests of the ring's clock anchors
 * (lib_crash_test, and the reader's).
 *
 * Each mark is a CLOCK_MONOTONIC reading, tl_mark(CLOCK_MARK, index), and
 * another reading, printed (and flushed) as one line on stdout:
 *
 *   mark ID ARG AFTER_NS BEFORE_NS   (ID in hex as 0x6001, the rest decimal)
 *
 * so the mark's time lies between BEFORE_NS and AFTER_NS, however long the
 * process was preempted around it.  Before tl_init, one line
 *
 *   init BEFORE_NS
 *
 * with a reading taken before it (its anchor and first event come after).
 *
 * Default: marks at 0, +20 ms, +50 ms and +120 ms after the first mark's
 * reading (clock_nanosleep to each), so
 * the helper thread (every 100 ms) has most likely refreshed the latest
 * anchor before the crash; then SIGSEGV.
 *
 * --fast: tl_init with sync_interval_ms of an hour, so the helper's first
 * refresh cannot have happened; two marks with no sleep, then SIGSEGV,
 * well within 1 ms of tl_init: the init and crash anchors are all the core
 * has to date the events with.
 *
 * Static libtimeline, no sidecar.  Exits 64 on a bad argument, 70 if
 * tl_init fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <core_timeline/timeline.h>

#include "spans_ids.h"

TL_NAME(CLOCK_MARK, "CLOCK_MARK index");

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Records the mark between two CLOCK_MONOTONIC readings, prints both and
 * returns the one just after. */
static uint64_t mark(uintptr_t index) {
  const uint64_t before = monotonic_ns();
  tl_mark(CLOCK_MARK, index);
  const uint64_t after = monotonic_ns();
  printf("mark 0x%x %lu %llu %llu\n", CLOCK_MARK, (unsigned long)index, (unsigned long long)after,
         (unsigned long long)before);
  fflush(stdout);
  return after;
}

static void sleep_until(uint64_t mono_ns) {
  struct timespec ts = {(time_t)(mono_ns / 1000000000u), (long)(mono_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

/* A write through a pointer the compiler cannot see is NULL: a real
 * SIGSEGV (SEGV_MAPERR) at this instruction, never optimised away. */
static int *volatile null_pointer;
__attribute__((noinline, noipa)) static void crash(void) { *null_pointer = 1; }

int main(int argc, char **argv) {
  int fast = 0;
  if (argc == 2 && strcmp(argv[1], "--fast") == 0)
    fast = 1;
  else if (argc != 1) {
    fprintf(stderr, "usage: clock_check [--fast]\n");
    return 64;
  }
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.sidecar_dir = "";
  if (fast) o.sync_interval_ms = 3600u * 1000u; /* no helper refresh before the crash */
  printf("init %llu\n", (unsigned long long)monotonic_ns());
  fflush(stdout);
  int rc = tl_init(&o);
  if (rc != 0) {
    fprintf(stderr, "clock_check: tl_init: %s\n", strerror(-rc));
    return 70;
  }
  if (fast) {
    mark(0);
    mark(1);
    crash();
  }
  static const uint64_t at_ms[] = {20, 50, 120};
  const uint64_t start = mark(0);
  for (uintptr_t i = 0; i < sizeof at_ms / sizeof at_ms[0]; ++i) {
    sleep_until(start + at_ms[i] * 1000000u);
    mark(i + 1);
  }
  crash();
  return 71; /* not reached */
}
