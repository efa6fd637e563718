/* SPDX-License-Identifier: MIT */
/*
 * probe.c - the program the install test builds inside the container
 * against libtimeline-dev (pkg-config or find_package), runs, and crashes.
 *
 *   tl-probe TOKEN GOFILE
 *
 * Initialises the ring (a no-op -EALREADY for the shared library, whose
 * constructor made it), records PROBE_START with TOKEN, names its thread,
 * records PROBE_WAIT, then waits up to 60 s for GOFILE to exist (the test
 * finds the probe's pid meanwhile) and dereferences NULL.  With GOFILE "-"
 * it exits 0 after recording instead.  Exit status 3: tl_init failed;
 * 4: GOFILE never came.
 */
#include <core_timeline/timeline.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define PROBE_START 0x7001u
#define PROBE_WAIT 0x7002u
#define PROBE_DIE 0x7003u

__attribute__((noinline)) static void die(volatile int *p) { *p = 42; }

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: tl-probe TOKEN GOFILE\n");
    return 2;
  }
  unsigned long token = strtoul(argv[1], NULL, 0);
  struct tl_options o = {.size = sizeof o};
  int r = tl_init(&o);
  if (r < 0 && r != -EALREADY) {
    fprintf(stderr, "tl-probe: tl_init: %d\n", r);
    return 3;
  }
  tl_thread_name("probe-main");
  tl_mark(PROBE_START, (uintptr_t)token);
  tl_mark2(PROBE_WAIT, (uintptr_t)getpid(), (uintptr_t)r);
  printf("tl-probe: tl_init=%d, waiting for %s\n", r, argv[2]);
  fflush(stdout);
  if (argv[2][0] == '-' && argv[2][1] == '\0') return 0;
  for (int i = 0; i < 6000 && access(argv[2], F_OK) != 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (access(argv[2], F_OK) != 0) return 4;
  tl_mark(PROBE_DIE, (uintptr_t)token);
  die((volatile int *)(uintptr_t)(argc - 3)); /* NULL, opaque to the compiler */
  return 0;
}
