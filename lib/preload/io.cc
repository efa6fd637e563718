/* SPDX-License-Identifier: MIT */
/*
 * io.cc - libtimeline-io.so: records the program's file and socket calls in
 * the timeline.  Preload it (LD_PRELOAD=libtimeline-io.so); README.md beside
 * this file documents what it records and where it stops.
 *
 *   open, open64, openat, openat64 and      OPEN    arg0 = fd or -errno
 *     their _FORTIFY_SOURCE forms __open_2,
 *     __open64_2, __openat_2, __openat64_2
 *   read, __read_chk                        READ    id = fd, arg0 = bytes or -errno,
 *                                                   arg1 = count
 *   write                                   WRITE   id = fd, arg0 = bytes or -errno,
 *                                                   arg1 = count
 *   connect                                 CONNECT id = fd, arg0 = 0 or -errno,
 *                                                   inline = the address's first
 *                                                   64 bytes
 *   close                                   CLOSE   id = fd, arg0 = 0 or -errno
 *
 * OPEN keeps the path's first 64 bytes inline.  Every event is attributed
 * to the program's call site (the wrapper's return address).  Each call is
 * forwarded to the next definition of the same name (dlsym(RTLD_NEXT)), and
 * recorded once it returns.
 *
 * EARLY-BOOTSTRAP AND SIGNAL CONTEXT (whole file).  These functions may run
 * before any constructor (libtimeline's own tl_init opens files), inside the
 * next allocator's initialisation and in signal handlers (read, write and
 * close are async-signal-safe, so their wrappers must be).  They never lock
 * or allocate; they touch only initial-exec TLS; they call tl_record_bytes, dlsym
 * on the first call of the process (normally libtimeline's own open in
 * tl_init, before main), and, while the next definition cannot be looked
 * up (this thread is inside dlsym), the raw system call instead.
 */
/* The wrappers define read and open themselves: the fortified inline
 * versions and the 64-bit-offset renames of <fcntl.h> must stay out. */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "preload_common.h"

namespace core_timeline::preload {
namespace {

using OpenFn = int (*)(const char *, int, ...);
using OpenatFn = int (*)(int, const char *, int, ...);
using Open2Fn = int (*)(const char *, int);
using Openat2Fn = int (*)(int, const char *, int);
using ReadFn = ssize_t (*)(int, void *, size_t);
using ReadChkFn = ssize_t (*)(int, void *, size_t, size_t);
using WriteFn = ssize_t (*)(int, const void *, size_t);
using ConnectFn = int (*)(int, const struct sockaddr *, socklen_t);
using CloseFn = int (*)(int);

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
  kSymbolCount
};
constinit NextSymbol g_next[kSymbolCount] = {
    {"open"},       {"open64"},     {"openat"}, {"openat64"},   {"__open_2"},
    {"__open64_2"}, {"__openat_2"}, {"__openat64_2"}, {"read"}, {"__read_chk"},
    {"write"},      {"connect"},    {"close"},
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

/* OPEN: the result, and the path's first bytes as inline bytes.  The path
 * is read only when the kernel could read it (the call did not fail with
 * EFAULT), and at most 64 bytes of it (strnlen). */
void record_open(int fd, const char *path, uintptr_t where) {
  uint32_t len = 0;
  if (path != nullptr && !(fd == -1 && errno == EFAULT))
    len = static_cast<uint32_t>(strnlen(path, 64));
  emit_guarded(TL_KIND_OPEN, 0, result_arg(fd), 0, where, len ? path : nullptr, len);
}

int open_and_record(std::size_t which, const char *path, int flags, mode_t mode, uintptr_t where) {
  OpenFn f = next<OpenFn>(g_next, which);
  int fd = f != nullptr ? f(path, flags, mode) : raw_openat(AT_FDCWD, path, flags, mode);
  record_open(fd, path, where);
  return fd;
}

int openat_and_record(std::size_t which, int dirfd, const char *path, int flags, mode_t mode, uintptr_t where) {
  OpenatFn f = next<OpenatFn>(g_next, which);
  int fd = f != nullptr ? f(dirfd, path, flags, mode) : raw_openat(dirfd, path, flags, mode);
  record_open(fd, path, where);
  return fd;
}

/* __open_2 and friends exist to abort on O_CREAT or O_TMPFILE without a
 * mode; the fallback keeps that check. */
int open2_and_record(std::size_t which, const char *path, int flags, uintptr_t where) {
  Open2Fn f = next<Open2Fn>(g_next, which);
  if (f == nullptr && needs_mode(flags)) abort();
  int fd = f != nullptr ? f(path, flags) : raw_openat(AT_FDCWD, path, flags, 0);
  record_open(fd, path, where);
  return fd;
}

int openat2_and_record(std::size_t which, int dirfd, const char *path, int flags, uintptr_t where) {
  Openat2Fn f = next<Openat2Fn>(g_next, which);
  if (f == nullptr && needs_mode(flags)) abort();
  int fd = f != nullptr ? f(dirfd, path, flags) : raw_openat(dirfd, path, flags, 0);
  record_open(fd, path, where);
  return fd;
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
  emit_guarded(TL_KIND_READ, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen) {
  ReadChkFn f = next<ReadChkFn>(g_next, kReadChk);
  if (f == nullptr && count > buflen) abort(); /* what glibc's __chk_fail ends in */
  ssize_t n = f != nullptr ? f(fd, buf, count, buflen) : syscall(SYS_read, fd, buf, count);
  emit_guarded(TL_KIND_READ, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER);
  return n;
}

CT_PRELOAD_EXPORT ssize_t write(int fd, const void *buf, size_t count) {
  WriteFn f = next<WriteFn>(g_next, kWrite);
  ssize_t n = f != nullptr ? f(fd, buf, count) : syscall(SYS_write, fd, buf, count);
  emit_guarded(TL_KIND_WRITE, static_cast<uint32_t>(fd), result_arg(n), count, CT_PRELOAD_CALLER);
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
