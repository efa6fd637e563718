/* SPDX-License-Identifier: MIT */
/*
 * peak_rss CMD [ARG...] - runs CMD with stdout on /dev/null and prints
 * "<wait status> <peak RSS in KiB>" on stdout: the child's ru_maxrss from
 * wait4(2), which covers the children it waited for (getrusage(2)).
 *
 * Why a program of its own: a child forked from a big process (a test that
 * just built a core) and exec'd starts with its parent's high-water mark
 * (exec(2) keeps the old mm's: fs/exec.c, setmax_mm_hiwater_rss), so the
 * test cannot measure the reader from its own fork.  This program is
 * small when it forks the one it measures.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: peak_rss CMD [ARG...]\n");
    return 64;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    perror("peak_rss: fork");
    return 71;
  }
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 1) < 0) _exit(126);
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) {
    perror("peak_rss: wait4");
    return 71;
  }
  printf("%d %ld\n", status, ru.ru_maxrss);
  return 0;
}
