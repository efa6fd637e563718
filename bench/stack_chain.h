// SPDX-License-Identifier: MIT
// stack_chain.h - bench_overhead's walked call chains (stack_chain.cc).
#ifndef CORE_TIMELINE_BENCH_STACK_CHAIN_H
#define CORE_TIMELINE_BENCH_STACK_CHAIN_H

#include <benchmark/benchmark.h>

enum class ChainOp { kTlMarkStack, kBacktrace, kUnwBacktrace };

namespace stack_chain_sframe {
void chain_run(benchmark::State &state, ChainOp op, unsigned depth);
}
namespace stack_chain_fp {
void chain_run(benchmark::State &state, ChainOp op, unsigned depth);
}

#endif
