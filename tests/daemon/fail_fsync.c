/* SPDX-License-Identifier: MIT */
/*
 * fail_fsync.c - LD_PRELOAD: fsync(2) fails with EIO on each descriptor
 * whose path (/proc/self/fd/N) ends with $CT_FAIL_FSYNC_SUFFIX, as on a
 * disk that lost the write.  Nothing else changes.  For the pipeline test
 * TimelineDirectoryThatCannotBeFsyncedStopsTheDaemonAndSavesNoCursor.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails(int fd) {
  const char *suffix = getenv("CT_FAIL_FSYNC_SUFFIX");
  if (!suffix || !*suffix) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  const size_t ls = strlen(suffix);
  return (size_t)n >= ls && strcmp(path + n - ls, suffix) == 0;
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  if (fails(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}
