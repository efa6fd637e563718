/* SPDX-License-Identifier: MIT */
/*
 * live_writers - threads that record at full speed until killed, for the
 * live snapshot tests (reader_live_test: core-timeline-read --pid).
 *
 *   live_writers THREADS READY_FD [BUDGET [nodump]]
 *
 * Each of THREADS threads (named "w0", "w1", ...) loops: tl_span_begin
 * (LIVE_SPAN, i), tl_mark2(LIVE_MARK, i, thread), tl_span_end, i + 1, as
 * fast as it can, forever.  Once every thread has recorded its first span,
 * "ready\n" is written to READY_FD (a pipe the test reads) and the main
 * thread waits in pause() until the process is killed.  BUDGET (bytes, 0:
 * the default 16 MiB) is tl_options.budget; "nodump" makes the process
 * not dumpable (prctl PR_SET_DUMPABLE 0) before it is ready.  Static
 * libtimeline, tl_init with those options and no sidecar.  Exits 64 on bad
 * arguments, 70 if tl_init fails.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <core_timeline/timeline.h>

enum { LIVE_MARK = 0x2001, LIVE_SPAN = 0x2002 };
TL_NAME(LIVE_MARK, "LIVE_MARK i thread");
TL_NAME(LIVE_SPAN, "LIVE_SPAN i");

static atomic_int started;

static void *writer(void *arg) {
  const uintptr_t n = (uintptr_t)arg;
  char name[16];
  snprintf(name, sizeof name, "w%u", (unsigned)n);
  pthread_setname_np(pthread_self(), name);
  tl_thread_name(name);
  for (uintptr_t i = 0;; ++i) {
    const uint64_t span = tl_span_begin(LIVE_SPAN, i);
    tl_mark2(LIVE_MARK, i, n);
    tl_span_end(span);
    if (i == 0) atomic_fetch_add(&started, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5) {
    fprintf(stderr, "usage: live_writers THREADS READY_FD [BUDGET [nodump]]\n");
    return 64;
  }
  const int threads = atoi(argv[1]), ready_fd = atoi(argv[2]);
  if (threads < 1 || threads > 64) return 64;
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.sidecar_dir = "";
  if (argc > 3) o.budget = strtoull(argv[3], NULL, 0);
  if (argc > 4 && strcmp(argv[4], "nodump") == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 73;
  const int rc = tl_init(&o);
  if (rc != 0) {
    fprintf(stderr, "live_writers: tl_init: %s\n", strerror(-rc));
    return 70;
  }
  tl_thread_name("main");
  for (int t = 0; t < threads; ++t) {
    pthread_t th;
    if (pthread_create(&th, NULL, writer, (void *)(uintptr_t)t) != 0) return 71;
  }
  while (atomic_load(&started) < threads) usleep(1000); /* a wait on the count itself */
  if (write(ready_fd, "ready\n", 6) != 6) return 72;
  close(ready_fd);
  for (;;) pause();
}
