// SPDX-License-Identifier: MIT
// preload_victim - a program run under LD_PRELOAD of the wrappers.  It does
// not link libtimeline: the preloaded wrapper brings it in (DT_NEEDED).
//
//   preload_victim DATA_FILE [--expect-alloc] [--expect-io] [--crash]
//                  [--expect-out FILE]
//   preload_victim --arena-check
//
// The first form makes a fixed sequence of heap and I/O calls (DATA_FILE
// holds kDataBytes bytes), then reads its own ring (tests/lib/ring_view.h)
// and checks, on its own thread's events:
//   --expect-alloc  every heap call is there once, in order, with exact
//                   pointers and sizes, and no other heap event among them;
//                   without it, there is no heap event at all;
//   --expect-io     the same for every I/O call, with exact fds and results;
//                   without it, no I/O event at all.
// It prints each problem (or "ok"), and with --expect-out writes the events
// it expects and its tid to FILE (preload_expect.h), so a test can look for
// the same events in its core.  Exit 0 if every check held, 1 if not, 2 if
// it has no ring.  With --crash it then dies of SIGSEGV instead.
//
// --arena-check runs under LD_PRELOAD="libtimeline-alloc.so
// libct_dlsym_allocates.so" (see dlsym_allocates.c): it checks that the
// blocks dlsym allocated while the wrapper was looking up the next
// allocator came from the wrapper's bootstrap arena, that freeing one was
// harmless, and that realloc moves one out with its bytes.
//
// Compiled with -fno-builtin so every call below is made as written.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "preload_expect.h"
#include "preload_victim.h"
#include "ring_view.h"

namespace {

namespace fmt = core_timeline::format;
using ct_test::Expected;

uint64_t neg_errno(int e) { return static_cast<uint64_t>(-static_cast<int64_t>(e)); }
/* OPEN's arg1 without a mode: the flags were recorded (ring_format.h). */
constexpr uint64_t kFlagsOnly = fmt::kOpenFlagsRecorded;
uint64_t ptr(const void *p) { return reinterpret_cast<uintptr_t>(p); }

bool g_ok = true;
void fail(const char *what, long got, long want) {
  printf("FAIL %s: got %ld, want %ld\n", what, got, want);
  g_ok = false;
}

void *g_realloc_old;     // the pointer heap_calls passed to realloc
int g_data_fd = -1;      // the fd io_calls got from open(DATA_FILE)
int g_socket_fd = -1;    // the socket io_calls connected
int g_accepted_fd = -1;  // the connection server_calls accepted (accept4)
uint16_t g_client_port;  // its peer's port (network order), on 127.0.0.1
int g_temp_fd = -1;      // the O_TMPFILE file_calls wrote and read
int g_socket_fd_second_accept = -1;  // the connection server_calls accepted with accept

volatile size_t g_impossible_size = SIZE_MAX / 4; /* volatile: no compile-time warning */

__attribute__((noinline, noipa)) void heap_calls(std::vector<Expected> *want) {
  void *a = malloc(4093);
  want->push_back({{fmt::kKindMalloc, 0, ptr(a), 4093}, "malloc(4093)"});
  void *c = calloc(7, 111);
  want->push_back({{fmt::kKindCalloc, 0, ptr(c), 777}, "calloc(7, 111)"});
  g_realloc_old = a;
  void *r = realloc(a, 8191);
  want->push_back({{fmt::kKindRealloc, 0, ptr(r), 8191}, "realloc(a, 8191)"});
  void *m = nullptr;
  if (posix_memalign(&m, 64, 3001) != 0) fail("posix_memalign", -1, 0);
  want->push_back({{fmt::kKindMalloc, 0, ptr(m), 3001}, "posix_memalign(64, 3001)"});
  void *al = aligned_alloc(256, 2560);
  want->push_back({{fmt::kKindMalloc, 0, ptr(al), 2560}, "aligned_alloc(256, 2560)"});
  void *me = memalign(128, 1664);
  want->push_back({{fmt::kKindMalloc, 0, ptr(me), 1664}, "memalign(128, 1664)"});
  void *v = valloc(5000);
  want->push_back({{fmt::kKindMalloc, 0, ptr(v), 5000}, "valloc(5000)"});
  for (void *p : {c, r, m, al, me, v}) {
    free(p);
    want->push_back({{fmt::kKindFree, 0, ptr(p), 0}, "free"});
  }
  errno = 0;
  void *none = malloc(g_impossible_size);
  if (none != nullptr) fail("malloc(SIZE_MAX / 4) returned a block", 1, 0);
  if (errno != ENOMEM) fail("errno after a failed malloc", errno, ENOMEM);
  want->push_back({{fmt::kKindMalloc, 0, 0, g_impossible_size}, "failed malloc (pointer 0)"});
}

__attribute__((noinline, noipa)) void io_calls(const char *data_file,
                                               std::vector<Expected> *want) {
  char buf[8192];
  int fd = open(data_file, O_RDONLY | O_CLOEXEC);
  g_data_fd = fd;
  want->push_back({{fmt::kKindOpen, O_RDONLY | O_CLOEXEC, static_cast<uint64_t>(fd), kFlagsOnly},
                   "open(DATA_FILE)"});
  ssize_t n = read(fd, buf, sizeof buf);
  if (n != kDataBytes) fail("read(DATA_FILE)", n, kDataBytes);
  want->push_back({fmt::kKindRead, static_cast<uint32_t>(fd), kDataBytes, sizeof buf,
                   "read(fd, buf, 8192)"});
  if (close(fd) != 0) fail("close", -1, 0);
  want->push_back({{fmt::kKindClose, static_cast<uint32_t>(fd), 0, 0}, "close(fd)"});

  errno = 0;
  n = read(fd, buf, 16); /* closed: EBADF, and errno must survive the wrapper */
  if (n != -1 || errno != EBADF) fail("errno after read of a closed fd", errno, EBADF);
  want->push_back({fmt::kKindRead, static_cast<uint32_t>(fd), neg_errno(EBADF), 16,
                   "read(closed fd) = -EBADF"});

  int at = openat(AT_FDCWD, data_file, O_RDONLY | O_CLOEXEC);
  want->push_back({{fmt::kKindOpen, O_RDONLY | O_CLOEXEC, static_cast<uint64_t>(at), kFlagsOnly},
                   "openat(DATA_FILE)"});
  n = read_fortified(at);
  want->push_back({{fmt::kKindRead, static_cast<uint32_t>(at), static_cast<uint64_t>(n),
                   kFortifiedReadBytes}, "read under _FORTIFY_SOURCE (__read_chk)"});
  close(at);
  want->push_back({{fmt::kKindClose, static_cast<uint32_t>(at), 0, 0}, "close(openat fd)"});

  int fo = open_fortified(data_file);
  want->push_back({fmt::kKindOpen, O_RDONLY | O_CLOEXEC, static_cast<uint64_t>(fo), kFlagsOnly,
                   "open with run-time flags under _FORTIFY_SOURCE (__open_2)"});
  close(fo);
  want->push_back({{fmt::kKindClose, static_cast<uint32_t>(fo), 0, 0}, "close(__open_2 fd)"});

  int w = open("/dev/null", O_WRONLY | O_CLOEXEC);
  want->push_back({{fmt::kKindOpen, O_WRONLY | O_CLOEXEC, static_cast<uint64_t>(w), kFlagsOnly},
                   "open(/dev/null)"});
  ssize_t wn = write(w, "core-timeline", 13);
  want->push_back({fmt::kKindWrite, static_cast<uint32_t>(w), static_cast<uint64_t>(wn), 13,
                   "write(/dev/null, 13)"});
  close(w);
  want->push_back({{fmt::kKindClose, static_cast<uint32_t>(w), 0, 0}, "close(/dev/null)"});

  errno = 0;
  int missing = open("/nonexistent/core-timeline-preload", O_RDONLY);
  if (missing != -1 || errno != ENOENT) fail("errno after open of a missing file", errno, ENOENT);
  want->push_back({{fmt::kKindOpen, O_RDONLY, neg_errno(ENOENT), kFlagsOnly}, "open(missing) = -ENOENT"});

  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_socket_fd = s;
  want->push_back({{fmt::kKindSocket, AF_UNIX, static_cast<uint64_t>(s), SOCK_STREAM | SOCK_CLOEXEC},
                   "socket(AF_UNIX)"});
  struct sockaddr_un sun;
  memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  strcpy(sun.sun_path, "/nonexistent/core-timeline-preload.sock");
  errno = 0;
  int rc = connect(s, reinterpret_cast<struct sockaddr *>(&sun), sizeof sun);
  if (rc != -1 || errno != ENOENT) fail("errno after connect to a missing socket", errno, ENOENT);
  want->push_back({fmt::kKindConnect, static_cast<uint32_t>(s), neg_errno(ENOENT), 0,
                   "connect(missing socket) = -ENOENT"});
  close(s);
  want->push_back({{fmt::kKindClose, static_cast<uint32_t>(s), 0, 0}, "close(socket)"});
}

/* A loopback TCP connection made and served on this thread: SOCKET,
 * CONNECT, ACCEPT (accept4 and accept), then RECV and SEND in every form,
 * readv and writev. */
__attribute__((noinline, noipa)) void server_calls(std::vector<Expected> *want) {
  const auto u = [](long v) { return static_cast<uint64_t>(v); };
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  want->push_back({{fmt::kKindSocket, AF_INET, u(l), SOCK_STREAM | SOCK_CLOEXEC}, "socket(AF_INET)"});
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sin;
  if (bind(l, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 || listen(l, 4) != 0 ||
      getsockname(l, reinterpret_cast<sockaddr *>(&sin), &len) != 0)
    fail("bind/listen on 127.0.0.1", errno, 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  want->push_back({{fmt::kKindSocket, AF_INET, u(c), SOCK_STREAM}, "socket(AF_INET) of the client"});
  int rc = connect(c, reinterpret_cast<sockaddr *>(&sin), sizeof sin);
  want->push_back({{fmt::kKindConnect, static_cast<uint32_t>(c), u(rc), 0}, "connect(127.0.0.1)"});
  struct sockaddr_in mine;
  len = sizeof mine;
  getsockname(c, reinterpret_cast<sockaddr *>(&mine), &len);
  g_client_port = mine.sin_port;
  int s = accept4(l, nullptr, nullptr, SOCK_CLOEXEC); /* the peer is recorded all the same */
  g_accepted_fd = s;
  want->push_back({{fmt::kKindAccept, static_cast<uint32_t>(l), u(s), SOCK_CLOEXEC}, "accept4(SOCK_CLOEXEC)"});

  char buf[256];
  ssize_t n = send(c, "GET /one HTTP/1.0\r\n\r\n", 21, 0);
  want->push_back({{fmt::kKindSend, static_cast<uint32_t>(c), u(n), 21}, "send(21)"});
  n = recv(s, buf, sizeof buf, 0);
  want->push_back({{fmt::kKindRecv, static_cast<uint32_t>(s), u(n), sizeof buf}, "recv(256)"});
  n = sendto(s, "HTTP/1.0 200 OK\r\n", 17, 0, nullptr, 0);
  want->push_back({{fmt::kKindSend, static_cast<uint32_t>(s), u(n), 17}, "sendto(17)"});
  n = recvfrom(c, buf, sizeof buf, 0, nullptr, nullptr);
  want->push_back({{fmt::kKindRecv, static_cast<uint32_t>(c), u(n), sizeof buf}, "recvfrom(256)"});
  char head[] = "abc", body[] = "defgh";
  struct iovec out[2] = {{head, 3}, {body, 5}};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = out;
  msg.msg_iovlen = 2;
  n = sendmsg(c, &msg, 0);
  want->push_back({{fmt::kKindSend, static_cast<uint32_t>(c), u(n), 8}, "sendmsg(3 + 5)"});
  char in1[4], in2[100];
  struct iovec in[2] = {{in1, sizeof in1}, {in2, sizeof in2}};
  msg.msg_iov = in;
  n = recvmsg(s, &msg, 0);
  want->push_back({{fmt::kKindRecv, static_cast<uint32_t>(s), u(n), 104}, "recvmsg(4 + 100)"});
  n = writev(s, out, 2);
  want->push_back({{fmt::kKindWrite, static_cast<uint32_t>(s), u(n), 8}, "writev(3 + 5)"});
  n = readv(c, in, 2);
  want->push_back({{fmt::kKindRead, static_cast<uint32_t>(c), u(n), 104}, "readv(4 + 100)"});
  n = send(s, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 64, 0);
  want->push_back({{fmt::kKindSend, static_cast<uint32_t>(s), u(n), 64}, "send(64)"});
  n = recv_fortified(c);
  want->push_back({{fmt::kKindRecv, static_cast<uint32_t>(c), u(n), kFortifiedReadBytes},
                   "recv under _FORTIFY_SOURCE (__recv_chk)"});
  errno = 0;
  n = recv(s, buf, sizeof buf, MSG_DONTWAIT); /* nothing there: EAGAIN */
  if (n != -1 || errno != EAGAIN) fail("errno after an empty non-blocking recv", errno, EAGAIN);
  want->push_back({{fmt::kKindRecv, static_cast<uint32_t>(s), neg_errno(EAGAIN), sizeof buf},
                   "recv(MSG_DONTWAIT) = -EAGAIN"});
  n = send(c, "x", 1, 0);
  want->push_back({{fmt::kKindSend, static_cast<uint32_t>(c), u(n), 1}, "send(1)"});
  n = recvfrom_fortified(s);
  want->push_back({{fmt::kKindRecv, static_cast<uint32_t>(s), u(n), kFortifiedReadBytes},
                   "recvfrom under _FORTIFY_SOURCE (__recvfrom_chk)"});

  int c2 = socket(AF_INET, SOCK_STREAM, 0);
  want->push_back({{fmt::kKindSocket, AF_INET, u(c2), SOCK_STREAM}, "socket(AF_INET) of a second client"});
  rc = connect(c2, reinterpret_cast<sockaddr *>(&sin), sizeof sin);
  want->push_back({{fmt::kKindConnect, static_cast<uint32_t>(c2), u(rc), 0}, "connect(127.0.0.1) again"});
  struct sockaddr_in peer;
  len = sizeof peer;
  int s2 = accept(l, reinterpret_cast<sockaddr *>(&peer), &len);
  want->push_back({{fmt::kKindAccept, static_cast<uint32_t>(l), u(s2), 0}, "accept"});
  g_socket_fd_second_accept = s2;
  for (int fd : {s2, c2, s, c, l}) {
    close(fd);
    want->push_back({{fmt::kKindClose, static_cast<uint32_t>(fd), 0, 0}, "close(socket)"});
  }
}

/* A file read and written at offsets in every form, synced, and sent
 * whole through a pipe-less socket pair with sendfile. */
__attribute__((noinline, noipa)) void file_calls(std::vector<Expected> *want) {
  const auto u = [](long v) { return static_cast<uint64_t>(v); };
  int t = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0640);
  g_temp_fd = t;
  want->push_back({{fmt::kKindOpen, O_TMPFILE | O_RDWR | O_CLOEXEC, u(t), fmt::kOpenFlagsRecorded | 0640},
                   "open(/tmp, O_TMPFILE, 0640)"});
  const uint32_t fd = static_cast<uint32_t>(t);
  char block[100];
  memset(block, 'p', sizeof block);
  ssize_t n = pwrite(t, block, 100, 0);
  want->push_back({{fmt::kKindPwrite, fd, u(n), 100}, "pwrite(100, 0)"});
  n = pwrite64(t, block, 50, 100);
  want->push_back({{fmt::kKindPwrite, fd, u(n), 50}, "pwrite64(50, 100)"});
  struct iovec iov[2] = {{block, 10}, {block + 10, 20}};
  n = pwritev(t, iov, 2, 150);
  want->push_back({{fmt::kKindPwrite, fd, u(n), 30}, "pwritev(10 + 20, 150)"});
  n = pwritev64(t, iov, 1, 180);
  want->push_back({{fmt::kKindPwrite, fd, u(n), 10}, "pwritev64(10, 180)"});
  n = pwritev2(t, iov, 2, 190, 0);
  want->push_back({{fmt::kKindPwrite, fd, u(n), 30}, "pwritev2(10 + 20, 190)"});
  n = pwritev64v2(t, iov, 2, -1, 0); /* at the file position: 0 */
  want->push_back({{fmt::kKindPwrite, fd, u(n), 30}, "pwritev64v2(10 + 20, -1)"});
  int rc = fsync(t);
  want->push_back({{fmt::kKindFsync, fd, u(rc), 0}, "fsync"});
  rc = fdatasync(t);
  want->push_back({{fmt::kKindFsync, fd, u(rc), 1}, "fdatasync"});
  n = pread(t, block, 100, 7);
  want->push_back({{fmt::kKindPread, fd, u(n), 100}, "pread(100, 7)"});
  n = pread64(t, block, 40, 200);
  want->push_back({{fmt::kKindPread, fd, u(n), 40}, "pread64(40, 200)"});
  n = preadv(t, iov, 2, 1);
  want->push_back({{fmt::kKindPread, fd, u(n), 30}, "preadv(10 + 20, 1)"});
  n = preadv64(t, iov, 2, 2);
  want->push_back({{fmt::kKindPread, fd, u(n), 30}, "preadv64(10 + 20, 2)"});
  n = preadv2(t, iov, 2, 3, 0);
  want->push_back({{fmt::kKindPread, fd, u(n), 30}, "preadv2(10 + 20, 3)"});
  n = preadv64v2(t, iov, 1, 4, 0);
  want->push_back({{fmt::kKindPread, fd, u(n), 10}, "preadv64v2(10, 4)"});
  n = pread_fortified(t, 5);
  want->push_back({{fmt::kKindPread, fd, u(n), kFortifiedReadBytes}, "pread under _FORTIFY_SOURCE (__pread_chk)"});
  n = pread64_fortified(t, 6);
  want->push_back({{fmt::kKindPread, fd, u(n), kFortifiedReadBytes},
                   "pread64 under _FORTIFY_SOURCE (__pread64_chk)"});
  errno = 0;
  n = pread(t, block, 10, -5);
  if (n != -1 || errno != EINVAL) fail("errno after pread at offset -5", errno, EINVAL);
  want->push_back({{fmt::kKindPread, fd, neg_errno(EINVAL), 10}, "pread(10, -5) = -EINVAL"});

  int d = dup(t);
  want->push_back({{fmt::kKindDup, fd, u(d), 0}, "dup"});
  int d2 = dup2(d, 100);
  want->push_back({{fmt::kKindDup, static_cast<uint32_t>(d), u(d2), 0}, "dup2(d, 100)"});
  int d3 = dup3(d, 101, O_CLOEXEC);
  want->push_back({{fmt::kKindDup, static_cast<uint32_t>(d), u(d3), O_CLOEXEC}, "dup3(d, 101, O_CLOEXEC)"});
  errno = 0;
  rc = dup2(-1, 102);
  if (rc != -1 || errno != EBADF) fail("errno after dup2 of fd -1", errno, EBADF);
  want->push_back({{fmt::kKindDup, static_cast<uint32_t>(-1), neg_errno(EBADF), 0}, "dup2(-1, 102) = -EBADF"});
  for (int x : {d, d2, d3}) {
    close(x);
    want->push_back({{fmt::kKindClose, static_cast<uint32_t>(x), 0, 0}, "close(dup)"});
  }

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) fail("socketpair", errno, 0);
  off_t from = 20;
  n = sendfile(pair[0], t, &from, 64);
  want->push_back({{fmt::kKindSendfile, static_cast<uint32_t>(pair[0]), u(n), 64}, "sendfile(64 from 20)"});
  off64_t from64 = 3;
  n = sendfile64(pair[0], t, &from64, 5);
  want->push_back({{fmt::kKindSendfile, static_cast<uint32_t>(pair[0]), u(n), 5}, "sendfile64(5 from 3)"});
  n = sendfile(pair[0], t, nullptr, 7);
  want->push_back({{fmt::kKindSendfile, static_cast<uint32_t>(pair[0]), u(n), 7}, "sendfile(7, NULL offset)"});
  for (int p : {pair[0], pair[1], t}) {
    close(p);
    want->push_back({{fmt::kKindClose, static_cast<uint32_t>(p), 0, 0}, "close"});
  }
}

void report(const std::vector<std::string> &problems) {
  for (const auto &p : problems) printf("FAIL %s\n", p.c_str());
  if (!problems.empty()) g_ok = false;
}

/* The object (executable or library) that contains code address `pc`. */
std::string object_of_code(uint64_t pc);

/* ACCEPT's peer address, PREAD's offset and SENDFILE's in fd and offset
 * as inline bytes (ring_format.h). */
void check_server_inline(ct_test::RingView &ring, uint32_t tid, bool expect_io) {
  bool accept_seen = false, pread_seen = false, sendfile_seen = false;
  for (const auto &e : ring.events()) {
    const auto &sl = e.slot;
    if (sl.tid != tid) continue;
    if (sl.kind == fmt::kKindAccept && sl.arg0 == static_cast<uint64_t>(g_accepted_fd)) {
      struct sockaddr_in peer;
      memset(&peer, 0, sizeof peer);
      memcpy(&peer, sl.inline_data, std::min<size_t>(sl.inline_len, sizeof peer));
      accept_seen = sl.inline_len == sizeof peer && peer.sin_family == AF_INET &&
                    peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && peer.sin_port == g_client_port;
    }
    if (sl.kind == fmt::kKindPread && sl.id == static_cast<uint32_t>(g_temp_fd) && sl.arg1 == 100) {
      int64_t at = -1;
      memcpy(&at, sl.inline_data, sizeof at);
      pread_seen = sl.inline_len == fmt::kIoOffsetBytes && at == 7;
    }
    if (sl.kind == fmt::kKindSendfile && sl.arg1 == 64) {
      fmt::IoOffset at{};
      memcpy(&at, sl.inline_data, sizeof at);
      sendfile_seen = sl.inline_len == fmt::kSendfileBytes && at.in_fd == g_temp_fd && at.offset == 20;
    }
  }
  if (expect_io && !accept_seen) {
    printf("FAIL ACCEPT does not carry the peer 127.0.0.1:%u in its inline bytes\n", ntohs(g_client_port));
    g_ok = false;
  }
  if (expect_io && !pread_seen) {
    printf("FAIL PREAD does not carry its offset (7) in its inline bytes\n");
    g_ok = false;
  }
  if (expect_io && !sendfile_seen) {
    printf("FAIL SENDFILE does not carry its in fd and offset (20) in its inline bytes\n");
    g_ok = false;
  }
}

/* What tl_record_bytes adds: REALLOC's old pointer, OPEN's path and
 * CONNECT's address as inline bytes, and every event attributed to this
 * program's call site rather than to the wrapper. */
void check_inline_and_location(ct_test::RingView &ring, uint32_t tid, const char *data_file,
                               bool expect_alloc, bool expect_io,
                               const std::vector<Expected> &ours) {
  std::string self = object_of_code(reinterpret_cast<uintptr_t>(&heap_calls));
  bool realloc_seen = false, open_seen = false, connect_seen = false;
  for (const auto &e : ring.events()) {
    const auto &sl = e.slot;
    if (sl.tid != tid) continue;
    // Only the calls heap_calls and io_calls made themselves: startup code in
    // libc and libstdc++ allocates and reads on this thread too.
    ct_test::Seen seen{sl.kind, sl.id, sl.arg0, sl.arg1};
    bool made_here = false;
    for (const Expected &x : ours) made_here |= ct_test::same(x.event, seen);
    if (!made_here) continue;
    std::string where = object_of_code(sl.return_address);
    if (where != self) {
      printf("FAIL event kind %u attributed to [%s], not to this program [%s]\n", sl.kind,
             where.c_str(), self.c_str());
      g_ok = false;
    }
    if (sl.kind == fmt::kKindRealloc) {
      uint64_t old = 0;
      memcpy(&old, sl.inline_data, sizeof old);
      realloc_seen |= sl.inline_len == 8 && old == reinterpret_cast<uintptr_t>(g_realloc_old);
    }
    if (sl.kind == fmt::kKindOpen && sl.arg0 == static_cast<uint64_t>(g_data_fd)) {
      size_t n = strnlen(data_file, 64);
      open_seen |= sl.inline_len == n && memcmp(sl.inline_data, data_file, n) == 0;
    }
    if (sl.kind == fmt::kKindConnect && sl.id == static_cast<uint32_t>(g_socket_fd)) {
      const char path[] = "/nonexistent/core-timeline-preload.sock";
      connect_seen |= sl.inline_len == 64 &&
                     memcmp(sl.inline_data + offsetof(struct sockaddr_un, sun_path), path,
                            std::min<size_t>(sizeof path, 64 - offsetof(struct sockaddr_un, sun_path))) == 0;
    }
  }
  check_server_inline(ring, tid, expect_io);
  if (expect_alloc && !realloc_seen) {
    printf("FAIL REALLOC does not carry the old pointer in its inline bytes\n");
    g_ok = false;
  }
  if (expect_io && !open_seen) {
    printf("FAIL OPEN of DATA_FILE does not carry the path in its inline bytes\n");
    g_ok = false;
  }
  if (expect_io && !connect_seen) {
    printf("FAIL CONNECT does not carry the socket address in its inline bytes\n");
    g_ok = false;
  }
}

__attribute__((noinline, noipa)) void die() { *static_cast<volatile int *>(nullptr) = 1; }

int run(const char *data_file, bool expect_alloc, bool expect_io, bool crash,
        const char *expect_out) {
  std::vector<Expected> heap, io;
  heap.reserve(64); /* no allocation while the heap calls are recorded */
  io.reserve(160);
  heap_calls(&heap);
  io_calls(data_file, &io);
  server_calls(&io);
  file_calls(&io);

  auto ring = ct_test::own_ring();
  if (!ring) {
    printf("NO RING: no valid /memfd:core-timeline mapping\n");
    return 2;
  }
  uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  std::vector<ct_test::Seen> mine;
  for (const auto &e : ring->events())
    if (e.slot.tid == tid) mine.push_back({e.slot.kind, e.slot.id, e.slot.arg0, e.slot.arg1});

  report(expect_alloc ? check_exactly(heap, ct_test::is_alloc_kind, mine)
                      : check_absent(ct_test::is_alloc_kind, "heap", mine));
  report(expect_io ? check_exactly(io, ct_test::is_io_kind, mine)
                   : check_absent(ct_test::is_io_kind, "I/O", mine));
  std::vector<Expected> ours(heap);
  ours.insert(ours.end(), io.begin(), io.end());
  check_inline_and_location(*ring, tid, data_file, expect_alloc, expect_io, ours);
  if (g_ok) printf("ok %zu heap and %zu I/O events checked\n", expect_alloc ? heap.size() : 0,
                   expect_io ? io.size() : 0);

  if (expect_out != nullptr) {
    std::vector<Expected> all;
    if (expect_alloc) all.insert(all.end(), heap.begin(), heap.end());
    if (expect_io) all.insert(all.end(), io.begin(), io.end());
    if (!ct_test::write_expectations(expect_out, tid, all)) {
      printf("FAIL cannot write %s\n", expect_out);
      return 1;
    }
  }
  fflush(stdout);
  if (crash) die();
  return g_ok ? 0 : 1;
}

std::string object_of_code(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(pc), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

/* The shared object that contains `p`, or "" (dladdr(3) covers .bss). */
std::string object_of(const void *p) {
  Dl_info info;
  if (dladdr(p, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

void expect(bool held, const std::string &what) {
  if (!held) {
    printf("FAIL %s\n", what.c_str());
    g_ok = false;
  }
}

bool ends_with(const std::string &s, const char *suffix) {
  size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

int arena_check() {
  using BlockFn = void *(*)(void);
  auto block_fn = reinterpret_cast<BlockFn>(dlsym(RTLD_DEFAULT, "ct_dlsym_shim_block"));
  auto freed_fn = reinterpret_cast<BlockFn>(dlsym(RTLD_DEFAULT, "ct_dlsym_shim_freed_block"));
  if (block_fn == nullptr || freed_fn == nullptr) {
    printf("FAIL libct_dlsym_allocates.so is not preloaded\n");
    return 2;
  }
  auto *block = static_cast<char *>(block_fn());
  if (block == nullptr) {
    printf("FAIL the dlsym shim was never called, or its calloc failed\n");
    return 1;
  }
  std::string owner = object_of(block);
  expect(ends_with(owner, "/libtimeline-alloc.so"),
         "the block calloc'ed inside dlsym lies in libtimeline-alloc.so's arena, not in [" +
             owner + "]");
  expect(ends_with(object_of(freed_fn()), "/libtimeline-alloc.so"),
         "the block freed inside dlsym lies in the arena");
  expect(strcmp(block, kShimPattern) == 0, "the arena block holds the shim's pattern");

  char *moved = static_cast<char *>(realloc(block, 100000));
  expect(moved != nullptr && moved != block, "realloc moves an arena block");
  if (moved == nullptr || moved == block) return 1;
  expect(!ends_with(object_of(moved), "/libtimeline-alloc.so"),
         "realloc moves an arena block to the next allocator");
  expect(strcmp(moved, kShimPattern) == 0, "realloc keeps the arena block's bytes");
  memset(moved, 0x5a, 100000);
  free(moved);
  printf("%s bootstrap arena\n", g_ok ? "ok" : "FAIL");
  return g_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 2 && strcmp(argv[1], "--arena-check") == 0) return arena_check();
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s DATA_FILE [--expect-alloc] [--expect-io] [--crash] [--expect-out FILE]\n",
            argv[0]);
    return 64;
  }
  bool expect_alloc = false, expect_io = false, crash = false;
  const char *expect_out = nullptr;
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--expect-alloc") == 0)
      expect_alloc = true;
    else if (strcmp(argv[i], "--expect-io") == 0)
      expect_io = true;
    else if (strcmp(argv[i], "--crash") == 0)
      crash = true;
    else if (strcmp(argv[i], "--expect-out") == 0 && i + 1 < argc)
      expect_out = argv[++i];
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 64;
    }
  }
  return run(argv[1], expect_alloc, expect_io, crash, expect_out);
}
