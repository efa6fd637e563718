/* SPDX-License-Identifier: MIT */
/*
 * rate_limit.h - a token bucket for log lines that untrusted input can
 * cause at will (an unverified journal entry: daemon.h), so that a user
 * cannot flood the journal through core-timelined.
 *
 * It holds at most `burst` tokens and gains one every `period_usec /
 * per_period` microseconds of the clock the caller passes (monotonic µs);
 * take() spends one if there is one.  What was refused is counted, so the
 * caller can say once how many lines it left out (take_suppressed()).
 *
 * Thread-safety: none (one thread: the daemon's).  No system calls; the
 * caller passes the time, so tests drive it with their own clock.
 */
#ifndef CORE_TIMELINE_DAEMON_RATE_LIMIT_H
#define CORE_TIMELINE_DAEMON_RATE_LIMIT_H

#include <algorithm>
#include <cstdint>
#include <utility>

namespace core_timeline::daemon {

class TokenBucket {
 public:
  /** `burst` tokens at most (and at first); `per_period` more every
   *  `period_usec`.  Both counts must be at least 1. */
  TokenBucket(std::uint64_t burst, std::uint64_t per_period, std::uint64_t period_usec) noexcept
      : burst_(std::max<std::uint64_t>(burst, 1)),
        step_usec_(std::max<std::uint64_t>(period_usec / std::max<std::uint64_t>(per_period, 1), 1)),
        tokens_(burst_) {}

  /** Spends a token at time `now_usec` if there is one (true), else counts
   *  the refusal (false).  Times that go backwards add nothing. */
  bool take(std::uint64_t now_usec) noexcept {
    refill(now_usec);
    if (tokens_ == 0) {
      ++suppressed_;
      return false;
    }
    --tokens_;
    return true;
  }
  /** Whether a take() at `now_usec` would succeed; spends nothing. */
  bool available(std::uint64_t now_usec) noexcept {
    refill(now_usec);
    return tokens_ > 0;
  }
  /** The refusals since the last call, and resets the count. */
  std::uint64_t take_suppressed() noexcept { return std::exchange(suppressed_, 0); }
  std::uint64_t suppressed() const noexcept { return suppressed_; }

 private:
  void refill(std::uint64_t now_usec) noexcept {
    if (!started_) {
      started_ = true;
      last_usec_ = now_usec;
      return;
    }
    if (now_usec <= last_usec_) return;
    const std::uint64_t gained = (now_usec - last_usec_) / step_usec_;
    if (gained == 0) return;
    tokens_ = std::min(burst_, tokens_ + std::min(gained, burst_));
    last_usec_ += gained * step_usec_;
    if (tokens_ == burst_) last_usec_ = now_usec;
  }

  std::uint64_t burst_, step_usec_, tokens_;
  std::uint64_t last_usec_ = 0;
  bool started_ = false;
  std::uint64_t suppressed_ = 0;
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_RATE_LIMIT_H
