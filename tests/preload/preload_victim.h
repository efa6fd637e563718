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
 * time (compiled to __open_2). */
ssize_t read_fortified(int fd);
int open_fortified(const char *path);
#ifdef __cplusplus
}
#endif

#endif
