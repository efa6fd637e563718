/* SPDX-License-Identifier: MIT */
/*
 * payload_crasher - a libtimeline process whose ring holds I/O events with
 * inline bytes, then a SIGSEGV: an OPEN of "/etc/hostname" (its path), a
 * RECV of "AUTH hunter2-payload\n" and a SEND of "OK\n" (their payload, as
 * the I/O wrapper records it with TL_IO_BYTES), recorded with
 * tl_record_bytes() on fd 3, with io_bytes 64 (else those kinds keep none).  For the daemon's tests of what its journal
 * entry leaves out.
 */
#include <string.h>

#include <core_timeline/timeline.h>

__attribute__((noinline, noipa)) static void die(void) { *(volatile int *)0 = 1; }

int main(void) {
  struct tl_options opts;
  memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  opts.sidecar_dir = "";
  opts.io_bytes = 64;
  if (tl_init(&opts) != 0) return 70;
  static const char path[] = "/etc/hostname", request[] = "AUTH hunter2-payload\n", reply[] = "OK\n";
  tl_record_bytes(TL_KIND_OPEN, 0, 3, 0, path, sizeof path - 1, 0);
  tl_record_bytes(TL_KIND_RECV, 3, sizeof request - 1, 4096, request, sizeof request - 1, 0);
  tl_record_bytes(TL_KIND_SEND, 3, sizeof reply - 1, sizeof reply - 1, reply, sizeof reply - 1, 0);
  die();
  return 0;
}
