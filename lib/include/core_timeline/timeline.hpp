/* SPDX-License-Identifier: MIT */
/*
 * timeline.hpp - C++ guards over libtimeline's C ABI (core_timeline/timeline.h).
 *
 * Header-only: everything here is inline over the tl_* functions, so a C++
 * program links libtimeline exactly as a C one does (the library itself
 * needs no libstdc++).  C++17 or later.  libtimeline-cxx(3) documents it.
 *
 *   core_timeline::Span span(REQUEST, request_id);   // SPAN_BEGIN
 *   ...                                                // SPAN_END when
 *                                                      // span goes out of scope
 *   core_timeline::ScopedThreadName name("worker");
 *
 * Nothing here allocates, throws or locks.
 */
#ifndef CORE_TIMELINE_TIMELINE_HPP
#define CORE_TIMELINE_TIMELINE_HPP

#ifndef __cplusplus
#error "core_timeline/timeline.hpp is C++; C programs use core_timeline/timeline.h"
#endif

#include <sys/prctl.h>

#include <cstdint>

#include "core_timeline/timeline.h"

namespace core_timeline {

/**
 * Span - a span (tl_span_begin) that ends (tl_span_end) when the guard is
 * destroyed, or earlier with end().
 *
 * Name the guard: `Span(ID, arg);` without a name is a temporary that ends
 * at once.  Move-only: moving hands the open span to the new guard (the
 * moved-from guard holds no span and ends nothing).  release() gives the
 * token up without ending the span, for a span another thread ends with
 * tl_span_end().  Ending is async-signal-safe and may happen on any
 * thread; one guard is not meant to be used by two threads at once.
 */
class Span {
 public:
  /** Begins span `id` with argument `arg` (tl_span_begin).  When nothing
   *  was recorded (no ring, user events off) the guard holds token 0 and
   *  ends nothing. */
  explicit Span(std::uint32_t id, std::uintptr_t arg = 0) noexcept : token_(tl_span_begin(id, arg)) {}
  ~Span() { end(); }

  Span(Span &&other) noexcept : token_(other.release()) {}
  Span &operator=(Span &&other) noexcept {
    if (this != &other) {
      end();
      token_ = other.release();
    }
    return *this;
  }
  Span(const Span &) = delete;
  Span &operator=(const Span &) = delete;

  /** Ends the span now (tl_span_end); later calls, and the destructor, do
   *  nothing. */
  void end() noexcept {
    const std::uint64_t token = token_;
    token_ = 0;
    tl_span_end(token); /* tl_span_end(0) does nothing */
  }

  /** The span's token (tl_span_begin's result), 0 once ended or released,
   *  or when nothing was recorded. */
  std::uint64_t token() const noexcept { return token_; }

  /** Gives up the token without ending the span: whoever holds it ends it
   *  with tl_span_end(), or nobody does and the span stays open. */
  [[nodiscard]] std::uint64_t release() noexcept {
    const std::uint64_t token = token_;
    token_ = 0;
    return token;
  }

 private:
  std::uint64_t token_;
};

/**
 * ScopedThreadName - names the calling thread for the scope: the kernel's
 * name of the thread (its comm, prctl(PR_SET_NAME), at most 15 bytes: what
 * ps, top, gdb and the core show) and its lane in the timeline
 * (tl_thread_name, which records a THREAD_NAME event).  The destructor
 * puts back the name the kernel had (read with prctl(PR_GET_NAME)) in
 * both.
 *
 * A thread's name is the thread's: create and destroy the guard on the
 * same thread; it can be neither copied nor moved.  NULL changes nothing.
 * Only system calls and tl_thread_name: async-signal-safe.
 */
class ScopedThreadName {
 public:
  explicit ScopedThreadName(const char *name) noexcept {
    previous_[0] = '\0';
    if (name == nullptr) return;
    /* PR_GET_NAME writes at most 16 bytes, NUL included (prctl(2)). */
    restore_ = prctl(PR_GET_NAME, previous_, 0, 0, 0) == 0;
    prctl(PR_SET_NAME, name, 0, 0, 0);
    tl_thread_name(name);
  }
  ~ScopedThreadName() {
    if (!restore_) return;
    prctl(PR_SET_NAME, previous_, 0, 0, 0);
    tl_thread_name(previous_);
  }
  ScopedThreadName(const ScopedThreadName &) = delete;
  ScopedThreadName &operator=(const ScopedThreadName &) = delete;

  /** The name the thread had before, "" if it could not be read. */
  const char *previous() const noexcept { return previous_; }

 private:
  char previous_[16];
  bool restore_ = false;
};

}  // namespace core_timeline

#endif  // CORE_TIMELINE_TIMELINE_HPP
