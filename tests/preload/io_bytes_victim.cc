// SPDX-License-Identifier: MIT
// io_bytes_victim - run under LD_PRELOAD=libtimeline-io.so with TL_IO_BYTES
// set (or not): sends and receives over a socket pair and a pipe with each
// kind of wrapped call, then reads its own ring (tests/lib/ring_view.h) and
// checks that each READ, WRITE, RECV and SEND event of those fds keeps
// exactly the first EXPECTED bytes of its payload inline (0: none), and a
// recv with MSG_TRUNC no more than its buffer held.
//
//   io_bytes_victim EXPECTED
//
// Prints "ok" and exits 0, or one "FAIL ..." line a problem and exits 1.
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ring_view.h"

namespace fmt = core_timeline::format;

namespace {

constexpr char kPayload[] = "*2\r\n$5\r\nDEBUG\r\n$8\r\nSEGFAULT\r\n";  // 29 bytes, one RESP command
constexpr size_t kPayloadLen = sizeof kPayload - 1;

struct Call {
  uint16_t kind;
  int fd;
  const char *what;
  bool seen = false;
};

}  // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc != 2) {
    fprintf(stderr, "usage: %s EXPECTED\n", argv[0]);
    return 64;
  }
  const size_t expected = strtoul(argv[1], nullptr, 10);
  int sp[2], pp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0 || pipe(pp) != 0) {
    perror("socketpair/pipe");
    return 2;
  }
  char buf[256];
  bool ok = true;
  const auto got = [&](ssize_t n, const char *what) {
    if (n != static_cast<ssize_t>(kPayloadLen)) {
      printf("FAIL %s returned %zd, not %zu\n", what, n, kPayloadLen);
      ok = false;
    }
  };
  got(send(sp[0], kPayload, kPayloadLen, 0), "send");
  got(recv(sp[1], buf, sizeof buf, 0), "recv");
  got(sendto(sp[1], kPayload, kPayloadLen, 0, nullptr, 0), "sendto");
  got(recvfrom(sp[0], buf, sizeof buf, 0, nullptr, nullptr), "recvfrom");
  // The iovec calls: the payload split 3 + 26, received into 5 + 251.
  struct iovec out[2] = {{const_cast<char *>(kPayload), 3}, {const_cast<char *>(kPayload + 3), kPayloadLen - 3}};
  struct msghdr msg{};
  msg.msg_iov = out;
  msg.msg_iovlen = 2;
  got(sendmsg(sp[0], &msg, 0), "sendmsg");
  struct iovec in[2] = {{buf, 5}, {buf + 5, sizeof buf - 5}};
  msg.msg_iov = in;
  got(recvmsg(sp[1], &msg, 0), "recvmsg");
  got(write(pp[1], kPayload, kPayloadLen), "write");
  got(read(pp[0], buf, sizeof buf), "read");
  got(writev(pp[1], out, 2), "writev");
  got(readv(pp[0], in, 2), "readv");
  // A datagram received with MSG_TRUNC into 4 bytes returns its whole
  // length (recv(2)): only the 4 bytes of the buffer are payload.
  int dp[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, dp) != 0) {
    perror("socketpair");
    return 2;
  }
  char small[4];
  got(send(dp[0], kPayload, kPayloadLen, 0), "send (datagram)");
  got(recv(dp[1], small, sizeof small, MSG_TRUNC), "recv(MSG_TRUNC) into 4 bytes");
  const size_t small_expected = expected < sizeof small ? expected : sizeof small;
  bool truncated_seen = false;

  Call calls[] = {{fmt::kKindSend, sp[0], "send/sendmsg"}, {fmt::kKindRecv, sp[1], "recv/recvmsg"},
                  {fmt::kKindSend, sp[1], "sendto"},       {fmt::kKindRecv, sp[0], "recvfrom"},
                  {fmt::kKindWrite, pp[1], "write/writev"}, {fmt::kKindRead, pp[0], "read/readv"}};
  auto ring = ct_test::own_ring();
  if (!ring) {
    printf("FAIL no valid /memfd:core-timeline mapping\n");
    return 1;
  }
  const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  int events = 0;
  for (const auto &e : ring->events()) {
    const fmt::Slot &s = e.slot;
    if (s.tid != tid) continue;
    if (s.kind == fmt::kKindRecv && s.id == static_cast<uint32_t>(dp[1])) {
      truncated_seen = true;
      if (s.inline_len != small_expected || memcmp(s.inline_data, kPayload, small_expected) != 0) {
        printf("FAIL recv(MSG_TRUNC) into 4 bytes kept %u inline bytes, not %zu\n", s.inline_len, small_expected);
        ok = false;
      }
    }
    for (Call &c : calls) {
      if (s.kind != c.kind || s.id != static_cast<uint32_t>(c.fd)) continue;
      ++events;
      c.seen = true;
      if (s.inline_len != expected || memcmp(s.inline_data, kPayload, expected) != 0) {
        printf("FAIL %s (fd %d) kept %u inline bytes \"%s\", not the payload's first %zu\n", c.what, c.fd,
               s.inline_len, std::string(reinterpret_cast<const char *>(s.inline_data), s.inline_len).c_str(),
               expected);
        ok = false;
      }
    }
  }
  for (const Call &c : calls)
    if (!c.seen) {
      printf("FAIL no %s event on fd %d\n", c.what, c.fd);
      ok = false;
    }
  if (!truncated_seen) {
    printf("FAIL no RECV event of the datagram on fd %d\n", dp[1]);
    ok = false;
  }
  if (ok) printf("ok %d events keep %zu payload bytes each\n", events, expected);
  return ok ? 0 : 1;
}
