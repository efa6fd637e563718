/* SPDX-License-Identifier: MIT */
/*
 * result.h - errors as values for the core-timeline reader (ct::reader).
 *
 * No function of ct::reader throws across its public API: each returns a
 * Result<T> holding either a T or an Error.  An Error carries a code (what
 * kind of failure, for programs) and a one-line message (what and where, for
 * people): the message names the file offset or field that was wrong, in the
 * manner of drgn's binary_buffer errors.
 *
 * Thread-safety: plain values; a Result may be moved between threads.
 */
#ifndef CORE_TIMELINE_READER_RESULT_H
#define CORE_TIMELINE_READER_RESULT_H

#include <cassert>
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
};

/** Stable lower-case name of an Errc ("bad_data", ...), for JSON and logs. */
std::string_view errc_name(Errc code) noexcept;

/** An error: a code and a one-line message naming what and where. */
struct Error {
  Errc code = Errc::kInternal;
  std::string message;
};

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

#endif  // CORE_TIMELINE_READER_RESULT_H
