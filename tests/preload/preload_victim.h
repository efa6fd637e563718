// SPDX-License-Identifier: MIT
// Shared by preload_victim, its fortified half and the dlsym shim (C and C++).
#ifndef CT_TESTS_PRELOAD_VICTIM_H
#define CT_TESTS_PRELOAD_VICTIM_H

#include <sys/types.h>

/* Bytes in the data file the tests hand to preload_victim. */
#define kDataBytes 4321
/* Bytes read_fortified() asks for (its buffer's size). */
#define kFortifiedReadBytes 64
/* What libct_dlsym_allocates.so writes into its bootstrap block. */
#define kShimPattern "allocated inside dlsym"

#ifdef __cplusplus
extern "C" {
#endif
/* In fortified.cc, built with -D_FORTIFY_SOURCE=2: read(2) into a 64-byte
 * buffer (compiled to __read_chk) and open(2) with flags known only at run
 * time (compiled to __open_2); recv, recvfrom, pread and pread64 of
 * kFortifiedReadBytes into such a buffer (__recv_chk, __recvfrom_chk,
 * __pread_chk, __pread64_chk). */
ssize_t read_fortified(int fd);
int open_fortified(const char *path);
ssize_t recv_fortified(int fd);
ssize_t recvfrom_fortified(int fd);
ssize_t pread_fortified(int fd, long offset);
ssize_t pread64_fortified(int fd, long offset);
#ifdef __cplusplus
}
#endif

#endif
