/* SPDX-License-Identifier: MIT */
/*
 * fd.h - an owned file descriptor (header-only).
 *
 * Fd holds one descriptor, or none (-1), and closes it with close(2) when it
 * is destroyed, reset, or assigned another.  It is move-only: a move leaves
 * the source empty, so each descriptor is closed exactly once.  The reader,
 * the daemon, ctl-query and the test harness all use this one type.
 *
 * close(2) errors are not reported.  On Linux the descriptor is released
 * even when close() fails, with EINTR too (close(2), "Dealing with error
 * returns from close()"), so it is never retried: a retry could close a
 * descriptor another thread has just been given the same number for.  Code
 * that must know that written data reached the disk calls fsync(2) before
 * letting the Fd go.
 *
 * Thread-safety: an Fd is a plain value; do not use one Fd from several
 * threads without locking.  The descriptor it holds may be used by any
 * thread through get().
 */
#ifndef CORE_TIMELINE_READER_FD_H
#define CORE_TIMELINE_READER_FD_H

#include <unistd.h>

#include <utility>

namespace core_timeline::reader {

class Fd {
 public:
  /** Holds no descriptor. */
  Fd() noexcept = default;
  /** Takes ownership of `fd`; a negative value (a failed open(2)) means
   *  none, so `Fd f(open(...)); if (!f.valid())` reads errno afterwards. */
  explicit Fd(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}
  Fd(Fd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd &operator=(Fd &&other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }

  /** The descriptor, or -1 if none; still owned by this Fd. */
  int get() const noexcept { return fd_; }
  /** True if a descriptor is held. */
  bool valid() const noexcept { return fd_ >= 0; }
  /** Closes the descriptor held, if any, and takes `fd` (default: none).
   *  Passing the descriptor already held keeps it open. */
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd < 0 ? -1 : fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_FD_H
