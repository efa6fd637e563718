/* SPDX-License-Identifier: MIT */
/*
 * expected.h - a value or a one-line error message, for ctl-query's
 * internals (GCC 12 has no std::expected).  The message names the thing that
 * was wrong and is printed to the user as is, after "ctl-query: ".
 *
 * Thread-safety: plain values.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_EXPECTED_H
#define CORE_TIMELINE_CTL_QUERY_EXPECTED_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace core_timeline::ctlq {

/** The error half of an Expected: a message for people. */
struct Failure {
  std::string message;
};

/** A T or an E (by default a Failure).  value() on an error, or error() on
 *  a value, is a programming error (asserts). */
template <class T, class E = Failure>
class [[nodiscard]] Expected {
 public:
  Expected(T v) : v_(std::in_place_index<0>, std::move(v)) {}   // NOLINT
  Expected(E e) : v_(std::in_place_index<1>, std::move(e)) {}   // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T &value() & { assert(ok()); return *std::get_if<0>(&v_); }
  const T &value() const & { assert(ok()); return *std::get_if<0>(&v_); }
  T &&value() && { assert(ok()); return std::move(*std::get_if<0>(&v_)); }
  const T &operator*() const & { return value(); }
  T &operator*() & { return value(); }
  const T *operator->() const { return &value(); }
  const E &error() const { assert(!ok()); return *std::get_if<1>(&v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace core_timeline::ctlq

#endif  // CORE_TIMELINE_CTL_QUERY_EXPECTED_H
