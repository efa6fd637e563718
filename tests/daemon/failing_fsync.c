/* SPDX-License-Identifier: MIT */
/*
 * failing_fsync ERRNO PROGRAM [ARG...] - runs PROGRAM with every fsync(2)
 * failing with ERRNO, as on a file system whose writeback failed (EIO) or
 * that ran out of room for it (ENOSPC on a thin volume).  A seccomp filter
 * (seccomp(2), SECCOMP_RET_ERRNO), inherited by PROGRAM's children; no
 * other call changes.  For the daemon's tests: what it does when a timeline
 * cannot be made durable.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CT_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "failing_fsync: add this architecture's AUDIT_ARCH_*"
#endif

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: failing_fsync ERRNO PROGRAM [ARG...]\n");
    return 2;
  }
  const int err = atoi(argv[1]);
  if (err <= 0 || err > 4095) {
    fprintf(stderr, "failing_fsync: bad errno %s\n", argv[1]);
    return 2;
  }
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CT_AUDIT_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fsync, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
    fprintf(stderr, "failing_fsync: seccomp: %s\n", strerror(errno));
    return 2;
  }
  execv(argv[2], argv + 2);
  fprintf(stderr, "failing_fsync: %s: %s\n", argv[2], strerror(errno));
  return 127;
}
