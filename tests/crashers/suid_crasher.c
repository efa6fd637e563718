/* SPDX-License-Identifier: MIT */
/*
 * suid_crasher [UID] - installed setuid root by ctl_query_reasons_test:
 * run by a user, it sets all its uids to UID (default: its real uid) and
 * its gids to its real gid, as a setuid program that drops its privileges
 * does, records one mark, and dies of SIGSEGV.  Having changed its
 * credentials, it is not dumpable for its user (commit_creds(): dumpable
 * becomes fs.suid_dumpable, 2 here), so the kernel dumps it for root only.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <core_timeline/timeline.h>

enum { SUID_MARK = 0x1201 };
TL_NAME(SUID_MARK, "SUID_MARK uid");

int main(int argc, char **argv) {
  const uid_t to = argc > 1 ? (uid_t)strtoul(argv[1], NULL, 10) : getuid();
  if (setgid(getgid()) != 0 || setuid(to) != 0) {
    perror("suid_crasher: setuid");
    return 2;
  }
  struct tl_options o = {.size = sizeof o};
  tl_init(&o);
  tl_mark(SUID_MARK, (uint64_t)getuid());
  signal(SIGSEGV, SIG_DFL);
  volatile int *volatile p = NULL;
  *p = 1; /* a real fault */
  return 3;
}
