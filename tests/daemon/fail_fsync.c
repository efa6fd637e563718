/* SPDX-License-Identifier: MIT */
/*
 * fail_fsync.c - LD_PRELOAD: fsync(2) fails with EIO, as on a disk that
 * lost the write, on each descriptor whose path (readlink of
 * /proc/self/fd/N) ends with $CT_FAIL_FSYNC_SUFFIX or contains
 * $CT_FAIL_FSYNC_CONTAINS.  (A file made with O_TMPFILE keeps its first
 * path there, "DIR/#INODE (deleted)", also once linked.)  Nothing else
 * changes.  For the pipeline tests TimelineThatCannotBeSynced... and
 * TimelineDirectoryThatCannotBeFsynced....
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails(int fd) {
  const char *suffix = getenv("CT_FAIL_FSYNC_SUFFIX"), *part = getenv("CT_FAIL_FSYNC_CONTAINS");
  if ((!suffix || !*suffix) && (!part || !*part)) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  if (part && *part && strstr(path, part)) return 1;
  if (!suffix || !*suffix) return 0;
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
