// SPDX-License-Identifier: MIT
//
// misbehaving_decoder_server - stands in for `core-timelined
// --decoder-server` (daemon/src/decode.h) in daemon_unit_test, and breaks
// the protocol the way a stuck or broken server would.  It reads one
// request (four descriptors: core, stdout, stderr, go), then, by
// $CT_MISBEHAVE:
//
//   lost-answer  clones a decoder as the real server does (CLONE_PARENT),
//                which, unlike the real one, does not wait for its go byte
//                and writes garbage to the request's stdout at once; and
//                never answers;
//   wrong-pid    answers pid 1, a process that is not the daemon's child;
//   zero         answers 0.
//
// The daemon must fall back to fork and exec with pipes of its own, reap
// whatever this server made, and write a correct result.
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  const char *mode = getenv("CT_MISBEHAVE");
  if (!mode) return 2;
  char buf[16384];
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(4 * sizeof(int))];
  } ctl;
  struct iovec iov = {buf, sizeof buf};
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl.b;
  m.msg_controllen = sizeof ctl.b;
  if (recvmsg(3, &m, 0) <= 0) return 1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_len != CMSG_LEN(4 * sizeof(int))) return 1;
  int fds[4];
  memcpy(fds, CMSG_DATA(c), sizeof fds);
  int32_t answer;
  if (strcmp(mode, "lost-answer") == 0) {
    long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
    if (pid == 0) {
      static const char garbage[] = "CTD1 999999 0 0 0 0 0 0\nnot json";
      for (int i = 0; i < 1000; ++i)
        if (write(fds[1], garbage, sizeof garbage - 1) < 0) break;
      _exit(0);
    }
    for (;;) pause();
  } else if (strcmp(mode, "wrong-pid") == 0) {
    answer = 1;
  } else {
    answer = 0;
  }
  if (send(3, &answer, sizeof answer, 0) != sizeof answer) return 1;
  for (;;) pause();
}
