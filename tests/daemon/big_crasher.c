/* SPDX-License-Identifier: MIT */
/*
 * big_crasher MIB - a libtimeline process with MIB mebibytes of touched
 * anonymous memory that then dies of SIGSEGV: a big core whose ring is a
 * small part of it, for core-timelined's sparse extraction.
 *
 * Events: BIG_START (0x2001, arg MIB), BIG_TOUCHED (0x2002, arg pages
 * touched), then the CRASH event of the handler.  Every page gets a
 * different byte pattern so the core is not all zero pages (zstd still
 * compresses it well).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <core_timeline/timeline.h>

__attribute__((noinline, noipa)) static void die(void) { *(volatile int *)0 = 1; }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: big_crasher MIB\n");
    return 64;
  }
  const size_t mib = strtoul(argv[1], NULL, 10);
  struct tl_options opts;
  memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  opts.sidecar_dir = "";
  if (tl_init(&opts) != 0) return 70;
  tl_mark(0x2001, mib);
  const size_t len = mib << 20;
  unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 71;
  size_t pages = 0;
  for (size_t off = 0; off < len; off += 4096, ++pages) memset(p + off, (int)(pages * 131 + 7), 4096);
  tl_mark(0x2002, pages);
  /* Let libtimeline's helper thread settle in poll(2): a small core taken
   * while it is still in clone3 makes eu-stack 20x slower on it, and
   * bench_reader compares cores of different sizes. */
  struct timespec settle = {0, 20 * 1000 * 1000};
  nanosleep(&settle, NULL);
  die();
  return 0;
}
