/* SPDX-License-Identifier: MIT */
/*
 * util.h - small building blocks of core-timelined: errors as values, an
 * owning file descriptor, and clocks.
 *
 * Errors: daemon internals return Result<T> (a T or an Error).  An Error
 * carries the errno it came from (0 if none) and a one-line message that
 * names the thing (path, pid, field) and, where there is one, what to do.
 * Nothing here throws, except std::bad_alloc from std::string.
 *
 * Thread-safety: plain values; Fd is a move-only owner.
 */
#ifndef CORE_TIMELINE_DAEMON_UTIL_H
#define CORE_TIMELINE_DAEMON_UTIL_H

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ctd {

struct Error {
  int err = 0;          /**< errno value, or 0 */
  std::string message;  /**< what failed, naming the thing */
};

/** An Error from errno value `err` (> 0): "<what>: <strerror(err)>". */
Error errno_error(int err, std::string_view what);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}     // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {} // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T &value() & { assert(ok()); return *std::get_if<0>(&v_); }
  const T &value() const & { assert(ok()); return *std::get_if<0>(&v_); }
  T &&value() && { assert(ok()); return std::move(*std::get_if<0>(&v_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  const Error &error() const & { assert(!ok()); return *std::get_if<1>(&v_); }
  Error &&error() && { assert(!ok()); return std::move(*std::get_if<1>(&v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), failed_(true) {}  // NOLINT
  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  const Error &error() const & { assert(failed_); return err_; }
  Error &&error() && { assert(failed_); return std::move(err_); }

 private:
  Error err_;
  bool failed_ = false;
};

/** An owned file descriptor; closed by the destructor. */
class Fd {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd &operator=(Fd &&o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/** CLOCK_REALTIME in microseconds since the epoch. */
std::uint64_t realtime_usec() noexcept;
/** CLOCK_MONOTONIC in microseconds. */
std::uint64_t monotonic_usec() noexcept;

/** Writes all of `data` to `fd` (retrying EINTR and short writes). */
Result<void> write_all(int fd, std::string_view data, std::string_view what);

/** Parses a non-negative decimal integer that fits in uint64 (no sign, no
 *  spaces, no leading '+', at most 20 digits).  False on anything else. */
bool parse_u64(std::string_view s, std::uint64_t &out) noexcept;

/** A byte count with an optional K, M, G or T suffix (powers of 1024). */
bool parse_size(std::string_view s, std::uint64_t &out) noexcept;

/** `s` with bytes outside printable ASCII shown as \xNN: for log lines
 *  that quote untrusted strings (journal fields, paths). */
std::string printable(std::string_view s, std::size_t max_len = 256);

}  // namespace ctd

#endif  // CORE_TIMELINE_DAEMON_UTIL_H
