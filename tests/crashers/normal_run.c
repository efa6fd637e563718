/* SPDX-License-Identifier: MIT */
/*
 * normal_run - what "normal" looks like for crash_demo's path a
 * (fixtures/crash_demo.c), for ctl_query_diff_pipeline_test: the same ids
 * and names, but each request completes.  Then it stays alive, so that
 * its ring can be saved as a live snapshot (core-timeline-read --pid PID
 * --save FILE) and diffed against a crash.
 *
 *   normal_run [REQUESTS]
 *
 * REQUESTS times (default 3, at most 1000): tl_span_begin(REQUEST, 41+i),
 * REQ_PARSE(41+i), malloc(64) recorded as MALLOC, its FREE, tl_span_end.
 * Then "ready\n" on stdout (flushed), and pause() until killed.  No
 * BEFORE_DIE, no crash.  Static libtimeline, tl_init without a sidecar.
 * Exits 64 on bad arguments, 70 if tl_init fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <core_timeline/timeline.h>

enum {
  REQ_PARSE = 0x1001,
  CONFIG_RELOAD = 0x1002,
  BEFORE_DIE = 0x1003,
  REQUEST = 0x1004,
  RELOAD = 0x1005,
};
TL_NAME(REQ_PARSE, "REQ_PARSE request_id");
TL_NAME(CONFIG_RELOAD, "CONFIG_RELOAD generation");
TL_NAME(BEFORE_DIE, "BEFORE_DIE code");
TL_NAME(REQUEST, "REQUEST request_id");
TL_NAME(RELOAD, "RELOAD generation");

int main(int argc, char **argv) {
  const long requests = argc > 1 ? strtol(argv[1], NULL, 10) : 3;
  if (argc > 2 || requests < 1 || requests > 1000) {
    fprintf(stderr, "usage: normal_run [REQUESTS (1-1000)]\n");
    return 64;
  }
  struct tl_options opts;
  memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  opts.sidecar_dir = "";
  const int rc = tl_init(&opts);
  if (rc != 0) {
    fprintf(stderr, "normal_run: tl_init failed: %s\n", strerror(-rc));
    return 70;
  }
  for (long i = 0; i < requests; ++i) {
    const uint64_t span = tl_span_begin(REQUEST, (uintptr_t)(41 + i));
    tl_mark(REQ_PARSE, (uintptr_t)(41 + i));
    void *p = malloc(64);
    tl_record(TL_KIND_MALLOC, 0, (uintptr_t)p, 64);
    memset(p, 0x5a, 64);
    tl_record(TL_KIND_FREE, 0, (uintptr_t)p, 0);
    free(p);
    tl_span_end(span);
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
