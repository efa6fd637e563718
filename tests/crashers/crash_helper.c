/* SPDX-License-Identifier: MIT */
/*
 * crash_helper - a tiny program that dies on request, for the crash harness
 * test (and any test that needs a crash without libtimeline).
 *
 *   crash_helper abort      abort()                         -> SIGABRT
 *   crash_helper segv       store through a NULL pointer    -> SIGSEGV
 *   crash_helper shared     fill a MAP_SHARED|MAP_ANONYMOUS page with
 *                           marker_byte(i), then abort()    -> SIGABRT
 *   crash_helper exit N     exit(N), no crash
 *   crash_helper hang       sleep until killed
 *
 * The marker is computed here, never stored as a constant, so the only copy
 * in the process is the shared page: its presence in the core shows the
 * page was dumped (coredump_filter bit 1, core(5)).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crash_helper_marker.h"

/* volatile: the compiler cannot prove the store faults and turn it into a
 * trap instruction (SIGILL) instead. */
static int *volatile null_pointer;

__attribute__((noinline)) static void die_segv(void) { *null_pointer = 1; }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s abort|segv|shared|exit N|hang\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  if (strcmp(mode, "abort") == 0) {
    abort();
  } else if (strcmp(mode, "segv") == 0) {
    die_segv();
  } else if (strcmp(mode, "shared") == 0) {
    unsigned char *page = mmap(NULL, CT_MARKER_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
      perror("mmap");
      return 3;
    }
    for (unsigned i = 0; i < CT_MARKER_LEN; i++) page[i] = ct_marker_byte(i);
    abort();
  } else if (strcmp(mode, "exit") == 0 && argc > 2) {
    return atoi(argv[2]);
  } else if (strcmp(mode, "hang") == 0) {
    for (;;) pause();
  }
  fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
  return 2;
}
