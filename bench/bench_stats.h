// SPDX-License-Identifier: MIT
//
// bench_stats.h - the small statistics and formatting the benchmark
// programs that time external processes (bench_reader, bench_daemon) share.
// Not thread-safe to share a vector across threads; no state of its own.
#ifndef CORE_TIMELINE_BENCH_BENCH_STATS_H
#define CORE_TIMELINE_BENCH_BENCH_STATS_H

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace ct::bench {

// The median of `v` (the mean of the two middle values for an even count);
// 0 for an empty vector.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// `v` with `decimals` digits after the point ("%.*f").
inline std::string fixed(int decimals, double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

}  // namespace ct::bench

#endif  // CORE_TIMELINE_BENCH_BENCH_STATS_H
