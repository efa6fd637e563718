/* SPDX-License-Identifier: MIT */
/*
 * nobuildid_victim - linked with -Wl,--build-id=none, so its core attests
 * no build-id for the executable: the reader must show raw addresses and a
 * loud note, and symbolize only with --unverified-symbols (tagged so).
 */
#include <stdint.h>
#include <string.h>

#include <core_timeline/timeline.h>

__attribute__((noinline, noipa)) void victim_mark(void) { tl_mark(0x1001, 41); }
__attribute__((noinline, noipa)) void victim_die(void) { *(volatile int *)0 = 1; }

int main(void) {
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  if (tl_init(&o) != 0) return 70;
  victim_mark();
  victim_die();
  return 0;
}
