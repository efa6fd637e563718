/* SPDX-License-Identifier: MIT */
/* bench_instr enabled|disabled|span N - calls tl_mark2 N times (span: N
 * pairs of tl_span_begin and tl_span_end), for counting their instructions
 * under callgrind (bench/instructions.sh): instruction counts do not depend
 * on how busy the machine is. */
#include <core_timeline/timeline.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "enabled") != 0 && strcmp(argv[1], "disabled") != 0 &&
                    strcmp(argv[1], "span") != 0)) {
    fprintf(stderr, "usage: bench_instr enabled|disabled|span N\n");
    return 64;
  }
  unsigned long n = strtoul(argv[2], NULL, 10);
  tl_init(NULL); /* -EALREADY when the shared library's constructor ran */
  tl_mark2(1, 0, 0); /* claim this thread's lane before counting */
  if (strcmp(argv[1], "disabled") == 0) tl_set_enabled(0);
  if (strcmp(argv[1], "span") == 0) {
    for (unsigned long i = 0; i < n; ++i) tl_span_end(tl_span_begin(0x77, i));
    return 0;
  }
  for (unsigned long i = 0; i < n; ++i) tl_mark2(0x77, i, i);
  return 0;
}
