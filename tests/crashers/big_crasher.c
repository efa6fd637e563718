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
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include <core_timeline/timeline.h>

__attribute__((noinline, noipa)) static void die(void) { *(volatile int *)0 = 1; }

/* Whether libtimeline's helper thread ("tl-helper") is blocked in poll(2),
 * by the system call /proc/self/task/TID/syscall shows for it. */
static int helper_in_poll(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[320], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
    fclose(f);
    if (strcmp(comm, "tl-helper\n") != 0) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/syscall", e->d_name);
    long nr = -1;
    if ((f = fopen(path, "r")) != NULL) {
      if (fscanf(f, "%ld", &nr) != 1) nr = -1; /* "running" */
      fclose(f);
    }
#ifdef SYS_poll
    found = nr == SYS_poll;
#endif
    found = found || nr == SYS_ppoll;
  }
  closedir(d);
  return found;
}

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
  /* Until libtimeline's helper thread has settled in poll(2): a small core
   * taken while it is still in clone3 makes eu-stack 20x slower on it, and
   * bench_reader compares cores of different sizes.  A minute bounds a hang
   * (it then dies all the same). */
  const struct timespec poll_period = {0, 1000 * 1000};
  for (int i = 0; i < 60 * 1000 && !helper_in_poll(); ++i) nanosleep(&poll_period, NULL);
  die();
  return 0;
}
