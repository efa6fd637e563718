/* SPDX-License-Identifier: MIT */
/*
 * rebuilt_victim - built twice, with VICTIM_BUILD 1 and 2: the same program
 * before and after a rebuild, with different code and so different
 * build-ids.  The test runs build 1 from a path of its own, then puts
 * build 2 at that path: the reader must say the file there is not the one
 * that ran, naming both build-ids.
 */
#include <string.h>

#include <core_timeline/timeline.h>

__attribute__((noinline, noipa)) void victim_mark(void) { tl_mark(0x1001, VICTIM_BUILD); }
__attribute__((noinline, noipa)) void victim_die(void) { *(volatile int *)0 = VICTIM_BUILD; }

int main(void) {
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  if (tl_init(&o) != 0) return 70;
  victim_mark();
  victim_die();
  return 0;
}
