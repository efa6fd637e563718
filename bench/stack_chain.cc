// SPDX-License-Identifier: MIT
//
// stack_chain.cc - the call chain bench_overhead's stack benchmarks walk.
//
// Compiled twice (bench/CMakeLists.txt): with .sframe (-Wa,--gsframe
// -fomit-frame-pointer) as namespace stack_chain_sframe, and with frame
// pointers as stack_chain_fp.  chain_run() descends kLevels noipa frames,
// then runs the benchmark loop in the innermost one, so every walk of
// `depth` frames (depth <= kLevels) climbs only this file's frames, built
// the one way, and the descent is not timed.
#include <benchmark/benchmark.h>
#include <execinfo.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <core_timeline/timeline.h>

#include "stack_chain.h"

namespace CT_CHAIN_NS {

namespace {

constexpr int kLevels = 12;
volatile int g_sink;

__attribute__((noipa)) void leaf(benchmark::State &state, ChainOp op, unsigned depth) {
  void *buf[16];
  switch (op) {
    case ChainOp::kTlMarkStack:
      for (auto _ : state) tl_mark_stack(0x7001, 0, depth);
      break;
    case ChainOp::kBacktrace:
      for (auto _ : state) benchmark::DoNotOptimize(backtrace(buf, static_cast<int>(depth)));
      break;
    case ChainOp::kUnwBacktrace:
      for (auto _ : state) benchmark::DoNotOptimize(unw_backtrace(buf, static_cast<int>(depth)));
      break;
  }
}

__attribute__((noipa)) int level(int n, benchmark::State &state, ChainOp op, unsigned depth) {
  if (n == 0) {
    leaf(state, op, depth);
    return g_sink;
  }
  const int r = level(n - 1, state, op, depth);
  g_sink = g_sink + 1; /* work after the call: no tail call */
  return r + 1;
}

}  // namespace

void chain_run(benchmark::State &state, ChainOp op, unsigned depth) { level(kLevels, state, op, depth); }

}  // namespace CT_CHAIN_NS
