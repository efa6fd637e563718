/* SPDX-License-Identifier: MIT */
/*
 * edge_crasher MODE [N] - a real crash at one of the timeline's edges, for
 * edge_gates_test (static libtimeline, tl_init with the defaults, no
 * sidecar; dies of SIGSEGV at a NULL write in crash_here()).
 *
 *   args     marks whose argument names are the exports' own keys: CLASH
 *            (id 0x7001, "CLASH id kind", args 11 12), the span SPANX
 *            (0x7002, "SPANX state ends", arg 13, open at the crash), and
 *            0x7003 (unnamed in the ring, args 15 16: the test names it
 *            with a --tlmap), then crashes
 *   comm     names the process (PR_SET_NAME) "ev" ESC "[2Jil" and crashes
 *   tokens   ends a real span REQ (0x7010, "REQ request_id", arg 5), then
 *            three tokens that name no begin: the slot just before REQ's
 *            begin (the mark MARK, 0x7011), a sequence 2^40 beyond it in
 *            the same lane, and lane 8000 (no ring has so many); prints
 *            the tokens, one "token 0x..." line each, REQ's first; crashes
 *   nested N opens N nested spans DEPTH (0x7020, "DEPTH level", arg the
 *            depth from 0) and crashes inside the innermost
 *   lend     a small ring instead of the default one (8-slot lanes, 2 per
 *            source, a 64 KiB budget shared 50/25/25: pools of 256, 128
 *            and 128 slots), then 600 MALLOC and 600 READ events
 *            (tl_record, alternating; arg0 the event's number) and no
 *            user mark: the user source lends its pool, half to each:
 *            the allocation lane and the I/O lane, each with its own
 *            pool spent, take a second segment of 128 slots from it and
 *            keep the last 256 MALLOCs and READs; crashes
 *
 * Exits 70 if tl_init fails, 2 on a bad command line.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <core_timeline/timeline.h>

/* A span token: lane + 1 in the top 13 bits, the begin's sequence in the
 * low 51 (lib/include/core_timeline/ring_format.h, span_token()). */
#define TOKEN_SEQ_BITS 51
#define TOKEN_SEQ_MASK ((UINT64_C(1) << TOKEN_SEQ_BITS) - 1)

TL_NAME(0x7001, "CLASH id kind");
TL_NAME(0x7002, "SPANX state ends");
TL_NAME(0x7010, "REQ request_id");
TL_NAME(0x7011, "MARK");
TL_NAME(0x7020, "DEPTH level");

/* A write through a pointer the compiler cannot see is NULL: a real
 * SIGSEGV (SEGV_MAPERR) at this instruction, never optimised away. */
static int *volatile null_pointer;
__attribute__((noinline, noipa)) static void crash_here(void) { *null_pointer = 1; }

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  struct tl_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.sidecar_dir = "";
  const int lend = strcmp(argv[1], "lend") == 0;
  if (lend) {
    o.slots_per_lane = 8;
    o.lanes = 2;
    o.budget = 64 * 1024;
    o.share_percent[0] = 50;
    o.share_percent[1] = 25;
    o.share_percent[2] = 25;
  }
  int rc = tl_init(&o);
  if (rc != 0) {
    fprintf(stderr, "edge_crasher: tl_init: %s\n", strerror(-rc));
    return 70;
  }
  if (strcmp(argv[1], "args") == 0) {
    tl_mark2(0x7001, 11, 12);
    (void)tl_span_begin(0x7002, 13);
    tl_mark2(0x7003, 15, 16);
  } else if (strcmp(argv[1], "comm") == 0) {
    prctl(PR_SET_NAME, "ev\x1b[2Jil", 0, 0, 0);
    tl_mark2(0x7001, 1, 2);
  } else if (strcmp(argv[1], "tokens") == 0) {
    tl_mark(0x7011, 0);
    const uint64_t req = tl_span_begin(0x7010, 5);
    tl_span_end(req);
    const uint64_t lane_bits = req & ~TOKEN_SEQ_MASK;
    const uint64_t seq = req & TOKEN_SEQ_MASK;
    const uint64_t forged[3] = {lane_bits | (seq - 1), lane_bits | (seq + (1ull << 40)),
                                (uint64_t)(8000 + 1) << TOKEN_SEQ_BITS | 1};
    printf("token 0x%llx\n", (unsigned long long)req);
    for (int i = 0; i < 3; ++i) {
      printf("token 0x%llx\n", (unsigned long long)forged[i]);
      tl_span_end(forged[i]);
    }
    fflush(stdout);
  } else if (strcmp(argv[1], "nested") == 0 && argc == 3) {
    const long n = strtol(argv[2], NULL, 10);
    for (long i = 0; i < n; ++i) (void)tl_span_begin(0x7020, (uintptr_t)i);
  } else if (lend) {
    for (uintptr_t i = 0; i < 600; ++i) {
      tl_record(TL_KIND_MALLOC, 0, i, 16);
      tl_record(TL_KIND_READ, 3, i, 16);
    }
  } else {
    return 2;
  }
  crash_here();
  return 71; /* not reached */
}
