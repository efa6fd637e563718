/* SPDX-License-Identifier: MIT */
/*
 * result.h - errors as values, for the whole project: the reader library
 * (ct::reader), the document module, core-timelined and ctl-query.
 *
 * No function of these throws across its API: each returns a Result<T>
 * holding either a T or an Error.  An Error carries a code (what kind of
 * failure, for programs), a one-line message (what and where, for people:
 * the file offset or field that was wrong, in the manner of drgn's
 * binary_buffer errors, or the file and the system call) and, when a
 * system call failed, its errno value.  CT_TRY and CT_TRY_VOID return an
 * Error early from a function that returns a Result.
 *
 * Thread-safety: plain values; a Result may be moved between threads.
 */
#ifndef CORE_TIMELINE_READER_RESULT_H
#define CORE_TIMELINE_READER_RESULT_H

#include <cassert>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace core_timeline::reader {

/** What kind of failure an Error is. */
enum class Errc : int {
  kIo = 1,          /**< open/stat/read/mmap failed; the message has strerror */
  kNotElf,          /**< zero-length file, or no ELF magic */
  kUnsupported,     /**< an ELF file, but not a 64-bit little-endian core, or
                         a ring version/flag this reader does not know */
  kBadData,         /**< a structure is malformed (offset and field named) */
  kTruncated,       /**< bytes that must be there lie past the end of the file
                         or of their segment */
  kNotFound,        /**< the thing looked for is not there (e.g. no magic) */
  kMismatch,        /**< an identity check failed (pid, build-id, ...) */
  kNoMemory,        /**< allocation failed */
  kInvalidArgument, /**< the caller passed something unusable */
  kInternal,        /**< a bug in the reader */
  kCancelled,       /**< the caller asked it to stop (the daemon's watchdog
                         or SIGTERM while a core decodes) */
  kPermissionDenied, /**< open(2) said EACCES or EPERM (ctl-query: a file
                          this user may not read) */
  kNotRegularFile,  /**< a symbolic link, directory, FIFO... where a regular
                         file must be */
  kTooLarge,        /**< larger than the caller's bound */
};

/** An error: a code, a one-line message naming what and where, and the
 *  errno value of the system call that failed (0: none did). */
struct Error {
  Errc code = Errc::kInternal;
  std::string message;
  int sys_errno = 0;
};

/** The Error of a system call that failed with errno value `err` (> 0):
 *  code kIo, message "<what>: <strerror(err)>" (strerrordesc_np(3),
 *  thread-safe), sys_errno `err`. */
inline Error system_error(int err, std::string_view what) {
  const char *desc = ::strerrordesc_np(err);
  std::string m(what);
  m += ": ";
  m += desc ? desc : "unknown error " + std::to_string(err);
  return Error{Errc::kIo, std::move(m), err};
}

/** A T or an E (by default the reader's Error).  Moving out of value() after
 *  checking ok() is the usual pattern; value() on an error, or error() on a
 *  value, is a programming error (asserts).  The daemon and ctl-query use it
 *  with error types of their own (errno-carrying, message-only). */
template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}   // NOLINT
  Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}   // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T &value() & { assert(ok()); return *std::get_if<0>(&v_); }
  const T &value() const & { assert(ok()); return *std::get_if<0>(&v_); }
  T &&value() && { assert(ok()); return std::move(*std::get_if<0>(&v_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const E &error() const & { assert(!ok()); return *std::get_if<1>(&v_); }
  E &&error() && { assert(!ok()); return std::move(*std::get_if<1>(&v_)); }

 private:
  std::variant<T, E> v_;
};

/** Result of an operation that yields nothing but success or an E. */
template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : err_(std::move(error)), failed_(true) {}  // NOLINT
  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  const E &error() const & { assert(failed_); return err_; }
  E &&error() && { assert(failed_); return std::move(err_); }

 private:
  E err_{};
  bool failed_ = false;
};

}  // namespace core_timeline::reader

#define CT_CONCAT_INNER(a, b) a##b
#define CT_CONCAT(a, b) CT_CONCAT_INNER(a, b)

/* CT_TRY(name, expr): evaluates `expr`, a Result<T, E>; on an error returns
 * that E from the enclosing function (which returns a Result with the same
 * E), else declares `name` holding the T. */
#define CT_TRY(name, expr)                                          \
  auto CT_CONCAT(ct_try_, __LINE__) = (expr);                       \
  if (!CT_CONCAT(ct_try_, __LINE__))                                \
    return std::move(CT_CONCAT(ct_try_, __LINE__)).error();         \
  auto name = std::move(*CT_CONCAT(ct_try_, __LINE__))

/* CT_TRY_VOID(expr): the same for a Result<void, E>. */
#define CT_TRY_VOID(expr)                                           \
  do {                                                              \
    auto ct_try_v = (expr);                                         \
    if (!ct_try_v) return std::move(ct_try_v).error();              \
  } while (0)

#endif  // CORE_TIMELINE_READER_RESULT_H
