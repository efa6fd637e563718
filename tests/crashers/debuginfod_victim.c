/* SPDX-License-Identifier: MIT */
/*
 * debuginfod_victim - a libtimeline process that crashes, built with -g and
 * then stripped (tests/crashers/CMakeLists.txt): the executable keeps its
 * build-id but no symbols, and its debug info is only in the directory the
 * tests' local debuginfod serves.  So a function name or a source line in
 * its timeline can only have come from that server.
 */
#include <string.h>

#include <core_timeline/timeline.h>

__attribute__((noinline, noipa)) void victim_mark(void) { tl_mark(0x1001, 41); }
__attribute__((noinline, noipa)) void victim_die(void) {
  *(volatile int *)0 = 1; /* CRASH LINE (debuginfod_test reads this line's number) */
}

int main(void) {
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  if (tl_init(&o) != 0) return 70;
  victim_mark();
  victim_die();
  return 0;
}
