// SPDX-License-Identifier: MIT
//
// rate_limit_test.cc (daemon_unit_test): the token bucket (rate_limit.h).

#include "daemon_unit_support.h"

// Guards against: a flood of unverified entries (any user can send them)
// flooding the journal through the daemon, or the count of what was left
// out being lost.
TEST(TokenBucket, ABurstThenSoManyPerPeriodAndTheRestCounted) {
  constexpr std::uint64_t kMin = 60ull * 1000 * 1000;
  ctd::TokenBucket b(10, 10, kMin);
  std::uint64_t t = 5 * kMin;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(b.take(t)) << i;
  for (int i = 0; i < 30; ++i) EXPECT_FALSE(b.take(t)) << i;
  EXPECT_EQ(b.suppressed(), 30u);
  EXPECT_FALSE(b.available(t + kMin / 10 - 1));
  EXPECT_TRUE(b.available(t + kMin / 10)) << "one token every 6 s";
  EXPECT_TRUE(b.take(t + kMin / 10));
  EXPECT_FALSE(b.take(t + kMin / 10));
  EXPECT_EQ(b.take_suppressed(), 31u);
  EXPECT_EQ(b.suppressed(), 0u);
  // An hour later: a full burst, never more.
  t += 60 * kMin;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(b.take(t)) << i;
  EXPECT_FALSE(b.take(t));
  // A clock that goes back gives nothing.
  EXPECT_FALSE(b.take(t - kMin));
}
