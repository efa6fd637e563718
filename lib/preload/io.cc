/* SPDX-License-Identifier: MIT */
/*
 * io.cc - libtimeline-io.so: records the program's file and socket calls in
 * the timeline.  Preload it (LD_PRELOAD=libtimeline-io.so); README.md beside
 * this file documents what it records and where it stops.
 *
 *   open, open64, openat, openat64 and      OPEN    arg0 = fd or -errno, id =
 *     their _FORTIFY_SOURCE forms __open_2,         flags, arg1 = mode |
 *     __open64_2, __openat_2, __openat64_2          kOpenFlagsRecorded
 *   read, __read_chk, readv                 READ    id = fd, arg0 = bytes or -errno,
 *                                                   arg1 = count, inline =
 *                                                   the payload's first
 *                                                   TL_IO_BYTES bytes (none
 *                                                   by default)
 *   write, writev                           WRITE   as READ
 *   connect                                 CONNECT id = fd, arg0 = 0 or -errno,
 *                                                   inline = the address's first
 *                                                   64 bytes
 *   close                                   CLOSE   id = fd, arg0 = 0 or -errno
 *   accept, accept4                         ACCEPT  id = listening fd, arg0 = new
 *                                                   fd or -errno, arg1 = flags,
 *                                                   inline = the peer's address
 *   recv, __recv_chk, recvfrom,             RECV    as READ
 *     __recvfrom_chk, recvmsg
 *   send, sendto, sendmsg                   SEND    as READ
 *   pread, pread64, __pread_chk,            PREAD   id = fd, arg0 = bytes or -errno,
 *     __pread64_chk, preadv, preadv64,              arg1 = count, inline =
 *     preadv2, preadv64v2                           the offset (IoOffset)
 *   pwrite, pwrite64, pwritev, pwritev64,   PWRITE  as PREAD
 *     pwritev2, pwritev64v2
 *   sendfile, sendfile64                    SENDFILE id = out fd, arg0, arg1 =
 *                                                   count, inline = in fd and
 *                                                   offset (IoOffset)
 *   socket                                  SOCKET  id = domain, arg0 = fd or
 *                                                   -errno, arg1 = type |
 *                                                   protocol << 32
 *   fsync, fdatasync                        FSYNC   id = fd, arg0 = 0 or -errno,
 *                                                   arg1 = 1 for fdatasync
 *   dup, dup2, dup3                         DUP     id = old fd, arg0 = new fd or
 *                                                   -errno, arg1 = dup3's flags
 *
 * OPEN keeps the path's first 64 bytes inline.  READ, WRITE, RECV and SEND
 * pass the payload's first min(result, 64) bytes (of an iovec call, from
 * its first iovecs, gathered into a 64-byte stack buffer) after the call
 * returned with them, so the kernel has already read or written them;
 * libtimeline keeps TL_IO_BYTES of them (tl_options.io_bytes; 0, none, by
 * default).  Every event is attributed
 * to the program's call site (the wrapper's return address).  Each call is
 * forwarded to the next definition of the same name (dlsym(RTLD_NEXT)), and
 * recorded once it returns.  Memory the program passed (an iovec array, a
 * msghdr, sendfile's offset) is read only after the kernel has read it
 * without EFAULT.
 *
 * EARLY-BOOTSTRAP AND SIGNAL CONTEXT (whole file).  These functions may run
 * before any constructor (libtimeline's own tl_init opens files), inside the
 * next allocator's initialisation and in signal handlers (read, write,
 * close, accept, recv, send and the others are async-signal-safe, so their
 * wrappers must be).  They never lock or allocate; they touch only
 * initial-exec TLS; they call tl_record_bytes, dlsym on the first call of the
 * process (normally libtimeline's own open in tl_init, before main), the
 * raw getpeername system call after an accept, and, while the next
 * definition cannot be looked up (this thread is inside dlsym), the raw
 * system call instead of the wrapped function.
 */
/* The wrappers define read and open themselves: the fortified inline
 * versions and the 64-bit-offset renames of <fcntl.h> must stay out. */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core_timeline/ring_format.h"

#include "preload_common.h"

namespace core_timeline::preload {
namespace {

namespace fmt = core_timeline::format;

using OpenFn = int (*)(const char *, int, ...);
using OpenatFn = int (*)(int, const char *, int, ...);
using Open2Fn = int (*)(const char *, int);
using Openat2Fn = int (*)(int, const char *, int);
using ReadFn = ssize_t (*)(int, void *, size_t);
using ReadChkFn = ssize_t (*)(int, void *, size_t, size_t);
using WriteFn = ssize_t (*)(int, const void *, size_t);
using ConnectFn = int (*)(int, const struct sockaddr *, socklen_t);
using CloseFn = int (*)(int);
using AcceptFn = int (*)(int, struct sockaddr *, socklen_t *);
using Accept4Fn = int (*)(int, struct sockaddr *, socklen_t *, int);
using RecvFn = ssize_t (*)(int, void *, size_t, int);
using RecvChkFn = ssize_t (*)(int, void *, size_t, size_t, int);
using RecvfromFn = ssize_t (*)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
using RecvfromChkFn = ssize_t (*)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
using RecvmsgFn = ssize_t (*)(int, struct msghdr *, int);
using SendFn = ssize_t (*)(int, const void *, size_t, int);
using SendtoFn = ssize_t (*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
using SendmsgFn = ssize_t (*)(int, const struct msghdr *, int);
using ReadvFn = ssize_t (*)(int, const struct iovec *, int);
using PreadFn = ssize_t (*)(int, void *, size_t, off_t);
using PreadChkFn = ssize_t (*)(int, void *, size_t, off_t, size_t);
using PwriteFn = ssize_t (*)(int, const void *, size_t, off_t);
using PreadvFn = ssize_t (*)(int, const struct iovec *, int, off_t);
using Preadv2Fn = ssize_t (*)(int, const struct iovec *, int, off_t, int);
using SendfileFn = ssize_t (*)(int, int, off_t *, size_t);
using SocketFn = int (*)(int, int, int);
using FsyncFn = int (*)(int);
using DupFn = int (*)(int);
using Dup2Fn = int (*)(int, int);
using Dup3Fn = int (*)(int, int, int);

enum : std::size_t {
  kOpen,
  kOpen64,
  kOpenat,
  kOpenat64,
  kOpen2,
  kOpen64_2,
  kOpenat2,
  kOpenat64_2,
  kRead,
  kReadChk,
  kWrite,
  kConnect,
  kClose,
  kAccept,
  kAccept4,
  kRecv,
  kRecvChk,
  kRecvfrom,
  kRecvfromChk,
  kRecvmsg,
  kSend,
  kSendto,
  kSendmsg,
  kReadv,
  kWritev,
  kPread,
  kPread64,
  kPreadChk,
  kPread64Chk,
  kPreadv,
  kPreadv64,
  kPreadv2,
  kPreadv64v2,
  kPwrite,
  kPwrite64,
  kPwritev,
  kPwritev64,
  kPwritev2,
  kPwritev64v2,
  kSendfile,
  kSendfile64,
  kSocket,
  kFsync,
  kFdatasync,
  kDup,
  kDup2,
  kDup3,
  kSymbolCount
};
constinit NextSymbol g_next[kSymbolCount] = {
    {"open"},        {"open64"},        {"openat"},        {"openat64"},    {"__open_2"},
    {"__open64_2"},  {"__openat_2"},    {"__openat64_2"},  {"read"},        {"__read_chk"},
    {"write"},       {"connect"},       {"close"},         {"accept"},      {"accept4"},
    {"recv"},        {"__recv_chk"},    {"recvfrom"},      {"__recvfrom_chk"}, {"recvmsg"},
    {"send"},        {"sendto"},        {"sendmsg"},       {"readv"},       {"writev"},
    {"pread"},       {"pread64"},       {"__pread_chk"},   {"__pread64_chk"}, {"preadv"},
    {"preadv64"},    {"preadv2"},       {"preadv64v2"},    {"pwrite"},      {"pwrite64"},
    {"pwritev"},     {"pwritev64"},     {"pwritev2"},      {"pwritev64v2"}, {"sendfile"},
    {"sendfile64"},  {"socket"},        {"fsync"},         {"fdatasync"},   {"dup"},
    {"dup2"},        {"dup3"},
};

/* open(2): the mode argument is there only with O_CREAT or O_TMPFILE. */
inline bool needs_mode(int flags) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

/* The result as the format stores it: the value, or -errno on failure.
 * Call right after the wrapped function, before errno can change. */
inline uintptr_t result_arg(long rc) {
  return static_cast<uintptr_t>(static_cast<intptr_t>(rc < 0 ? -errno : rc));
}

/* The raw system calls used while the next definition cannot be looked up.
 * They are not cancellation points; nothing else differs. */
int raw_openat(int dirfd, const char *path, int flags, mode_t mode) {
  return static_cast<int>(syscall(SYS_openat, dirfd, path, flags, mode));
}

/* OPEN: the result, the flags and mode, and the path's first bytes as
 * inline bytes.  The path is read only when the kernel could read it (the
 * call did not fail with EFAULT), and at most 64 bytes of it (strnlen). */
void record_open(int fd, const char *path, int flags, mode_t mode, uintptr_t where) {
  uint32_t len = 0;
  if (path != nullptr && !(fd == -1 && errno == EFAULT))
    len = static_cast<uint32_t>(strnlen(path, 64));
  emit_guarded(TL_KIND_OPEN, static_cast<uint32_t>(flags), result_arg(fd),
               static_cast<uintptr_t>(mode) | fmt::kOpenFlagsRecorded, where, len ? path : nullptr, len);
}

int open_and_record(std::size_t which, const char *path, int flags, mode_t mode, uintptr_t where) {
  OpenFn f = next<OpenFn>(g_next, which);
  int fd = f != nullptr ? f(path, flags, mode) : raw_openat(AT_FDCWD, path, flags, mode);
  record_open(fd, path, flags, needs_mode(flags) ? mode : 0, where);
  return fd;
}

int openat_and_record(std::size_t which, int dirfd, const char *path, int flags, mode_t mode, uintptr_t where) {
  OpenatFn f = next<OpenatFn>(g_next, which);
  int fd = f != nullptr ? f(dirfd, path, flags, mode) : raw_openat(dirfd, path, flags, mode);
  record_open(fd, path, flags, needs_mode(flags) ? mode : 0, where);
  return fd;
}

/* __open_2 and friends exist to abort on O_CREAT or O_TMPFILE without a
 * mode; the fallback keeps that check. */
int open2_and_record(std::size_t which, const char *path, int flags, uintptr_t where) {
  Open2Fn f = next<Open2Fn>(g_next, which);
  if (f == nullptr && needs_mode(flags)) abort();
  int fd = f != nullptr ? f(path, flags) : raw_openat(AT_FDCWD, path, flags, 0);
  record_open(fd, path, flags, 0, where);
  return fd;
}

int openat2_and_record(std::size_t which, int dirfd, const char *path, int flags, uintptr_t where) {
  Openat2Fn f = next<Openat2Fn>(g_next, which);
  if (f == nullptr && needs_mode(flags)) abort();
  int fd = f != nullptr ? f(dirfd, path, flags) : raw_openat(dirfd, path, flags, 0);
  record_open(fd, path, flags, 0, where);
  return fd;
}

/* Whether the kernel has read the program's iovec array or msghdr: the
 * call succeeded, or failed after the copy (EAGAIN of a non-blocking
 * socket, EINTR).  Other failures (EBADF, EFAULT, EINVAL...) may come
 * before it, so the memory is not read then.  Call right after the
 * wrapped function, before errno can change. */
inline bool kernel_read_vector(long rc) {
  return rc >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* The iovecs' total length, saturated at SIZE_MAX; 0 when they may not be
 * readable (kernel_read_vector false). */
size_t iov_total(const struct iovec *iov, long count, bool readable) {
  if (!readable || iov == nullptr || count <= 0 || count > 1024 /* IOV_MAX, uio.h */) return 0;
  size_t total = 0;
  for (long i = 0; i < count; ++i)
    total = __builtin_add_overflow(total, iov[i].iov_len, &total) ? SIZE_MAX : total;
  return total;
}

/* The payload's first bytes for READ, WRITE, RECV and SEND: at most
 * min(rc, size, 64) of them, which the kernel has just received into or
 * sent from the `size` bytes of the program's buffer, so they are
 * readable (`size` bounds a recv with MSG_TRUNC, whose result is the
 * datagram's whole length: recv(2)).  libtimeline keeps only TL_IO_BYTES
 * of them (none by default); without a payload (rc <= 0) none. */
inline uint32_t payload_len(long rc, size_t size = 64) {
  const size_t limit = size < 64 ? size : 64;
  return rc > 0 ? static_cast<uint32_t>(static_cast<size_t>(rc) < limit ? static_cast<size_t>(rc) : limit) : 0;
}

/* The same for an iovec call: the first min(rc, 64) bytes of the first
 * iovecs, gathered into `out` (64 bytes) with bounded memcpy.  Only for a
 * call that succeeded, so the kernel has read the array. */
uint32_t gather_payload(const struct iovec *iov, long count, long rc, uint8_t *out) {
  uint32_t want = payload_len(rc);
  if (iov == nullptr || count <= 0) return 0;
  uint32_t got = 0;
  for (long i = 0; i < count && i < 1024 /* IOV_MAX, uio.h */ && got < want; ++i) {
    const size_t n = iov[i].iov_len < want - got ? iov[i].iov_len : want - got;
    if (n != 0 && iov[i].iov_base != nullptr) memcpy(out + got, iov[i].iov_base, n);
    got += static_cast<uint32_t>(n);
  }
  return got;
}

/* READ, WRITE, RECV or SEND of an iovec call: the result, the total asked
 * for, and the payload's first bytes. */
void record_vector(uint32_t kind, int fd, long rc, const struct iovec *iov, long count, uintptr_t where) {
  const bool readable = kernel_read_vector(rc);
  const uintptr_t result = result_arg(rc);
  uint8_t head[64];
  const uint32_t len = gather_payload(iov, count, rc, head);
  emit_guarded(kind, static_cast<uint32_t>(fd), result, iov_total(iov, count, readable), where, len ? head : nullptr,
               len);
}

/* record_vector for recvmsg and sendmsg: the msghdr is read only when the
 * kernel has read it (kernel_read_vector). */
void record_msg(uint32_t kind, int fd, long rc, const struct msghdr *msg, uintptr_t where) {
  const bool readable = msg != nullptr && kernel_read_vector(rc);
  record_vector(kind, fd, rc, readable ? msg->msg_iov : nullptr, readable ? static_cast<long>(msg->msg_iovlen) : 0,
                where);
}

/* PREAD and PWRITE: the offset as 8 inline bytes (IoOffset.offset). */
void record_at(uint32_t kind, int fd, long rc, size_t count, off_t offset, uintptr_t where) {
  const uintptr_t result = result_arg(rc);
  const int64_t at = offset;
  emit_guarded(kind, static_cast<uint32_t>(fd), result, count, where, &at, fmt::kIoOffsetBytes);
}

/* ACCEPT: the peer's address, asked of the kernel for the new socket
 * (getpeername(2)): the program's own buffer may be NULL or too small, and
 * its size before the call is not known here. */
void record_accept(int listen_fd, int fd, int flags, uintptr_t where) {
  const uintptr_t result = result_arg(fd);
  struct sockaddr_storage peer;
  socklen_t len = sizeof peer;
  uint32_t n = 0;
  if (fd >= 0) {
    int saved_errno = errno;
    if (syscall(SYS_getpeername, fd, &peer, &len) == 0) n = len < 64 ? len : 64;
    errno = saved_errno;
  }
  emit_guarded(TL_KIND_ACCEPT, static_cast<uint32_t>(listen_fd), result, static_cast<unsigned>(flags), where,
               n ? &peer : nullptr, n);
}

int accept_and_record(std::size_t which, int listen_fd, struct sockaddr *addr, socklen_t *len, int flags,
                      uintptr_t where) {
  int fd;
  if (which == kAccept) {
    AcceptFn f = next<AcceptFn>(g_next, kAccept);
    fd = f != nullptr ? f(listen_fd, addr, len) : static_cast<int>(syscall(SYS_accept4, listen_fd, addr, len, 0));
  } else {
    Accept4Fn f = next<Accept4Fn>(g_next, kAccept4);
    fd = f != nullptr ? f(listen_fd, addr, len, flags)
                      : static_cast<int>(syscall(SYS_accept4, listen_fd, addr, len, flags));
  }
  record_accept(listen_fd, fd, flags, where);
  return fd;
}

ssize_t preadv2_and_record(std::size_t which, int fd, const struct iovec *iov, int count, off_t offset, int flags,
                           uintptr_t where) {
  Preadv2Fn f = next<Preadv2Fn>(g_next, which);
  ssize_t n = f != nullptr ? f(fd, iov, count, offset, flags)
                           : syscall(SYS_preadv2, fd, iov, count, offset, 0L, flags);
  const bool readable = kernel_read_vector(n);
  record_at(TL_KIND_PREAD, fd, n, iov_total(iov, count, readable), offset, where);
  return n;
}

ssize_t pwritev2_and_record(std::size_t which, int fd, const struct iovec *iov, int count, off_t offset, int flags,
                            uintptr_t where) {
  Preadv2Fn f = next<Preadv2Fn>(g_next, which);
  ssize_t n = f != nullptr ? f(fd, iov, count, offset, flags)
                           : syscall(SYS_pwritev2, fd, iov, count, offset, 0L, flags);
  const bool readable = kernel_read_vector(n);
  record_at(TL_KIND_PWRITE, fd, n, iov_total(iov, count, readable), offset, where);
  return n;
}

/* SENDFILE: the in fd and the offset it started at (the kernel moves
 * *offset past what it sent), or -1 for the in file's own position.  With
 * EFAULT *offset may be unreadable: no inline bytes then. */
ssize_t sendfile_and_record(std::size_t which, int out_fd, int in_fd, off_t *offset, size_t count,
                            uintptr_t where) {
  SendfileFn f = next<SendfileFn>(g_next, which);
  ssize_t n = f != nullptr ? f(out_fd, in_fd, offset, count) : syscall(SYS_sendfile, out_fd, in_fd, offset, count);
  const uintptr_t result = result_arg(n);
  const bool known = offset == nullptr || !(n == -1 && errno == EFAULT);
  fmt::IoOffset at{};
  at.in_fd = in_fd;
  at.offset = offset == nullptr ? -1 : known ? *offset - (n > 0 ? n : 0) : 0;
  emit_guarded(TL_KIND_SENDFILE, static_cast<uint32_t>(out_fd), result, count, where, known ? &at : nullptr,
               known ? fmt::kSendfileBytes : 0);
  return n;
}

mode_t mode_arg(int flags, va_list ap) {
  return needs_mode(flags) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

}  // namespace
}  // namespace core_timeline::preload

using namespace core_timeline::preload;

CT_PRELOAD_EXPORT int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_and_record(kOpen, path, flags, mode, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_and_record(kOpen64, path, flags, mode, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return openat_and_record(kOpenat, dirfd, path, flags, mode, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return openat_and_record(kOpenat64, dirfd, path, flags, mode, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int __open_2(const char *path, int flags) {
  return open2_and_record(kOpen2, path, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int __open64_2(const char *path, int flags) {
  return open2_and_record(kOpen64_2, path, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
  return openat2_and_record(kOpenat2, dirfd, path, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
  return openat2_and_record(kOpenat64_2, dirfd, path, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t read(int fd, void *buf, size_t count) {
  ReadFn f = next<ReadFn>(g_next, kRead);
  ssize_t n = f != nullptr ? f(fd, buf, count) : syscall(SYS_read, fd, buf, count);
  emit_guarded(TL_KIND_READ, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen) {
  ReadChkFn f = next<ReadChkFn>(g_next, kReadChk);
  if (f == nullptr && count > buflen) abort(); /* what glibc's __chk_fail ends in */
  ssize_t n = f != nullptr ? f(fd, buf, count, buflen) : syscall(SYS_read, fd, buf, count);
  emit_guarded(TL_KIND_READ, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t write(int fd, const void *buf, size_t count) {
  WriteFn f = next<WriteFn>(g_next, kWrite);
  ssize_t n = f != nullptr ? f(fd, buf, count) : syscall(SYS_write, fd, buf, count);
  emit_guarded(TL_KIND_WRITE, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  ConnectFn f = next<ConnectFn>(g_next, kConnect);
  int rc = f != nullptr ? f(fd, addr, len) : static_cast<int>(syscall(SYS_connect, fd, addr, len));
  /* The address's first bytes (at most 64), unless the kernel could not
   * read it (EFAULT). */
  uint32_t n = rc == -1 && errno == EFAULT ? 0 : (len < 64 ? len : 64);
  emit_guarded(TL_KIND_CONNECT, static_cast<uint32_t>(fd), result_arg(rc), 0, CT_PRELOAD_CALLER,
               addr, addr != nullptr ? n : 0);
  return rc;
}

CT_PRELOAD_EXPORT int close(int fd) {
  CloseFn f = next<CloseFn>(g_next, kClose);
  int rc = f != nullptr ? f(fd) : static_cast<int>(syscall(SYS_close, fd));
  emit_guarded(TL_KIND_CLOSE, static_cast<uint32_t>(fd), result_arg(rc), 0, CT_PRELOAD_CALLER);
  return rc;
}

CT_PRELOAD_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
  return accept_and_record(kAccept, fd, addr, len, 0, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  return accept_and_record(kAccept4, fd, addr, len, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t recv(int fd, void *buf, size_t count, int flags) {
  RecvFn f = next<RecvFn>(g_next, kRecv);
  ssize_t n = f != nullptr ? f(fd, buf, count, flags) : syscall(SYS_recvfrom, fd, buf, count, flags, nullptr, nullptr);
  emit_guarded(TL_KIND_RECV, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t count, size_t buflen, int flags) {
  RecvChkFn f = next<RecvChkFn>(g_next, kRecvChk);
  if (f == nullptr && count > buflen) abort(); /* what glibc's __chk_fail ends in */
  ssize_t n = f != nullptr ? f(fd, buf, count, buflen, flags)
                           : syscall(SYS_recvfrom, fd, buf, count, flags, nullptr, nullptr);
  emit_guarded(TL_KIND_RECV, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t recvfrom(int fd, void *buf, size_t count, int flags, struct sockaddr *addr,
                                   socklen_t *len) {
  RecvfromFn f = next<RecvfromFn>(g_next, kRecvfrom);
  ssize_t n = f != nullptr ? f(fd, buf, count, flags, addr, len) : syscall(SYS_recvfrom, fd, buf, count, flags, addr, len);
  emit_guarded(TL_KIND_RECV, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t count, size_t buflen, int flags,
                                         struct sockaddr *addr, socklen_t *len) {
  RecvfromChkFn f = next<RecvfromChkFn>(g_next, kRecvfromChk);
  if (f == nullptr && count > buflen) abort();
  ssize_t n = f != nullptr ? f(fd, buf, count, buflen, flags, addr, len)
                           : syscall(SYS_recvfrom, fd, buf, count, flags, addr, len);
  emit_guarded(TL_KIND_RECV, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  RecvmsgFn f = next<RecvmsgFn>(g_next, kRecvmsg);
  ssize_t n = f != nullptr ? f(fd, msg, flags) : syscall(SYS_recvmsg, fd, msg, flags);
  record_msg(TL_KIND_RECV, fd, n, msg, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t send(int fd, const void *buf, size_t count, int flags) {
  SendFn f = next<SendFn>(g_next, kSend);
  ssize_t n = f != nullptr ? f(fd, buf, count, flags) : syscall(SYS_sendto, fd, buf, count, flags, nullptr, 0);
  emit_guarded(TL_KIND_SEND, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t sendto(int fd, const void *buf, size_t count, int flags, const struct sockaddr *addr,
                                 socklen_t len) {
  SendtoFn f = next<SendtoFn>(g_next, kSendto);
  ssize_t n = f != nullptr ? f(fd, buf, count, flags, addr, len) : syscall(SYS_sendto, fd, buf, count, flags, addr, len);
  emit_guarded(TL_KIND_SEND, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER, buf, payload_len(n, count));
  return n;
}

CT_PRELOAD_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  SendmsgFn f = next<SendmsgFn>(g_next, kSendmsg);
  ssize_t n = f != nullptr ? f(fd, msg, flags) : syscall(SYS_sendmsg, fd, msg, flags);
  record_msg(TL_KIND_SEND, fd, n, msg, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t readv(int fd, const struct iovec *iov, int count) {
  ReadvFn f = next<ReadvFn>(g_next, kReadv);
  ssize_t n = f != nullptr ? f(fd, iov, count) : syscall(SYS_readv, fd, iov, count);
  record_vector(TL_KIND_READ, fd, n, iov, count, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t writev(int fd, const struct iovec *iov, int count) {
  ReadvFn f = next<ReadvFn>(g_next, kWritev);
  ssize_t n = f != nullptr ? f(fd, iov, count) : syscall(SYS_writev, fd, iov, count);
  record_vector(TL_KIND_WRITE, fd, n, iov, count, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
  PreadFn f = next<PreadFn>(g_next, kPread);
  ssize_t n = f != nullptr ? f(fd, buf, count, offset) : syscall(SYS_pread64, fd, buf, count, offset);
  record_at(TL_KIND_PREAD, fd, n, count, offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off64_t offset) {
  PreadFn f = next<PreadFn>(g_next, kPread64);
  ssize_t n = f != nullptr ? f(fd, buf, count, offset) : syscall(SYS_pread64, fd, buf, count, offset);
  record_at(TL_KIND_PREAD, fd, n, count, offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t count, off_t offset, size_t buflen) {
  PreadChkFn f = next<PreadChkFn>(g_next, kPreadChk);
  if (f == nullptr && count > buflen) abort();
  ssize_t n = f != nullptr ? f(fd, buf, count, offset, buflen) : syscall(SYS_pread64, fd, buf, count, offset);
  record_at(TL_KIND_PREAD, fd, n, count, offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t offset, size_t buflen) {
  PreadChkFn f = next<PreadChkFn>(g_next, kPread64Chk);
  if (f == nullptr && count > buflen) abort();
  ssize_t n = f != nullptr ? f(fd, buf, count, offset, buflen) : syscall(SYS_pread64, fd, buf, count, offset);
  record_at(TL_KIND_PREAD, fd, n, count, offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int count, off_t offset) {
  PreadvFn f = next<PreadvFn>(g_next, kPreadv);
  ssize_t n = f != nullptr ? f(fd, iov, count, offset) : syscall(SYS_preadv, fd, iov, count, offset, 0L);
  const bool readable = kernel_read_vector(n);
  record_at(TL_KIND_PREAD, fd, n, iov_total(iov, count, readable), offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int count, off64_t offset) {
  PreadvFn f = next<PreadvFn>(g_next, kPreadv64);
  ssize_t n = f != nullptr ? f(fd, iov, count, offset) : syscall(SYS_preadv, fd, iov, count, offset, 0L);
  const bool readable = kernel_read_vector(n);
  record_at(TL_KIND_PREAD, fd, n, iov_total(iov, count, readable), offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int count, off_t offset, int flags) {
  return preadv2_and_record(kPreadv2, fd, iov, count, offset, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int count, off64_t offset, int flags) {
  return preadv2_and_record(kPreadv64v2, fd, iov, count, offset, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  PwriteFn f = next<PwriteFn>(g_next, kPwrite);
  ssize_t n = f != nullptr ? f(fd, buf, count, offset) : syscall(SYS_pwrite64, fd, buf, count, offset);
  record_at(TL_KIND_PWRITE, fd, n, count, offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset) {
  PwriteFn f = next<PwriteFn>(g_next, kPwrite64);
  ssize_t n = f != nullptr ? f(fd, buf, count, offset) : syscall(SYS_pwrite64, fd, buf, count, offset);
  record_at(TL_KIND_PWRITE, fd, n, count, offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int count, off_t offset) {
  PreadvFn f = next<PreadvFn>(g_next, kPwritev);
  ssize_t n = f != nullptr ? f(fd, iov, count, offset) : syscall(SYS_pwritev, fd, iov, count, offset, 0L);
  const bool readable = kernel_read_vector(n);
  record_at(TL_KIND_PWRITE, fd, n, iov_total(iov, count, readable), offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int count, off64_t offset) {
  PreadvFn f = next<PreadvFn>(g_next, kPwritev64);
  ssize_t n = f != nullptr ? f(fd, iov, count, offset) : syscall(SYS_pwritev, fd, iov, count, offset, 0L);
  const bool readable = kernel_read_vector(n);
  record_at(TL_KIND_PWRITE, fd, n, iov_total(iov, count, readable), offset, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int count, off_t offset, int flags) {
  return pwritev2_and_record(kPwritev2, fd, iov, count, offset, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int count, off64_t offset, int flags) {
  return pwritev2_and_record(kPwritev64v2, fd, iov, count, offset, flags, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  return sendfile_and_record(kSendfile, out_fd, in_fd, offset, count, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count) {
  return sendfile_and_record(kSendfile64, out_fd, in_fd, offset, count, CT_PRELOAD_CALLER);
}

CT_PRELOAD_EXPORT int socket(int domain, int type, int protocol) {
  SocketFn f = next<SocketFn>(g_next, kSocket);
  int fd = f != nullptr ? f(domain, type, protocol) : static_cast<int>(syscall(SYS_socket, domain, type, protocol));
  emit_guarded(TL_KIND_SOCKET, static_cast<uint32_t>(domain), result_arg(fd),
               static_cast<unsigned>(type) | static_cast<uintptr_t>(static_cast<unsigned>(protocol)) << 32,
               CT_PRELOAD_CALLER);
  return fd;
}

CT_PRELOAD_EXPORT int fsync(int fd) {
  FsyncFn f = next<FsyncFn>(g_next, kFsync);
  int rc = f != nullptr ? f(fd) : static_cast<int>(syscall(SYS_fsync, fd));
  emit_guarded(TL_KIND_FSYNC, static_cast<uint32_t>(fd), result_arg(rc), 0, CT_PRELOAD_CALLER);
  return rc;
}

CT_PRELOAD_EXPORT int fdatasync(int fd) {
  FsyncFn f = next<FsyncFn>(g_next, kFdatasync);
  int rc = f != nullptr ? f(fd) : static_cast<int>(syscall(SYS_fdatasync, fd));
  emit_guarded(TL_KIND_FSYNC, static_cast<uint32_t>(fd), result_arg(rc), 1, CT_PRELOAD_CALLER);
  return rc;
}

CT_PRELOAD_EXPORT int dup(int fd) {
  DupFn f = next<DupFn>(g_next, kDup);
  int rc = f != nullptr ? f(fd) : static_cast<int>(syscall(SYS_dup, fd));
  emit_guarded(TL_KIND_DUP, static_cast<uint32_t>(fd), result_arg(rc), 0, CT_PRELOAD_CALLER);
  return rc;
}

/* The raw dup2 of the fallback: AArch64 has no dup2 system call; dup3
 * does the same but for old == new, where dup2 checks old and returns it. */
static int raw_dup2(int fd, int new_fd) {
#ifdef SYS_dup2
  return static_cast<int>(syscall(SYS_dup2, fd, new_fd));
#else
  if (fd == new_fd) return static_cast<int>(syscall(SYS_fcntl, fd, F_GETFD)) == -1 ? -1 : fd;
  return static_cast<int>(syscall(SYS_dup3, fd, new_fd, 0));
#endif
}

CT_PRELOAD_EXPORT int dup2(int fd, int new_fd) {
  Dup2Fn f = next<Dup2Fn>(g_next, kDup2);
  int rc = f != nullptr ? f(fd, new_fd) : raw_dup2(fd, new_fd);
  emit_guarded(TL_KIND_DUP, static_cast<uint32_t>(fd), result_arg(rc), 0, CT_PRELOAD_CALLER);
  return rc;
}

CT_PRELOAD_EXPORT int dup3(int fd, int new_fd, int flags) {
  Dup3Fn f = next<Dup3Fn>(g_next, kDup3);
  int rc = f != nullptr ? f(fd, new_fd, flags) : static_cast<int>(syscall(SYS_dup3, fd, new_fd, flags));
  emit_guarded(TL_KIND_DUP, static_cast<uint32_t>(fd), result_arg(rc), static_cast<unsigned>(flags), CT_PRELOAD_CALLER);
  return rc;
}
