// SPDX-License-Identifier: MIT
// bench_overhead - the cost of recording one event (an id and two integers),
// side by side with its peers, in one run:
//
//   BM_EmptyLoop          the loop alone
//   BM_TlMarkDisabled     tl_mark2 with recording switched off
//   BM_ReadTicks          rdtsc alone (the slot timestamp)
//   BM_BareStores         the floor: the same slot stores and the same
//                         timestamp read, without reservation or commit
//   BM_TlMarkEnabled      tl_mark2, one thread
//   BM_SpanBeginEnd       one tl_span_begin and one tl_span_end per
//                         iteration (two events, and the end's read of the
//                         begin's slot), one thread
//   BM_SpdlogBacktrace    spdlog logger->debug() into its enable_backtrace ring
//   BM_LttngUst           an LTTng-UST tracepoint recorded by a snapshot
//                         (flight-recorder) session that this program starts
//   BM_TlMarkContended    tl_mark2 from 1, 2, 4, 8 threads: per-thread CPU
//                         time per call, and p50/p95/p99 per call measured
//                         over batches of 16 calls between fenced rdtsc reads
//                         (the cost of an empty batch subtracted and reported)
//
// These machines are shared and noisy: compare within one run and quote
// ratios (docs/performance.md).  Run: build/bin/bench_overhead
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "stack_chain.h"
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core_timeline/ring_format.h"
#include "core_timeline/timeline.h"
#include "lttng_tp.h"

namespace {

namespace fmt_ = core_timeline::format;

constexpr uint32_t kEventId = 0x77;
double g_ns_per_tick = 0;
double g_tsc_step_ns = 0;  // smallest non-zero step between two rdtsc reads
std::string g_lttng_error;  // why BM_LttngUst cannot run; empty if it can
std::string g_lttng_session;
bool g_started_sessiond = false;

inline uint64_t fenced_ticks() {
  _mm_lfence();
  uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// TSC rate against CLOCK_MONOTONIC over 100 ms.
void calibrate_tsc() {
  int64_t t0 = monotonic_ns();
  uint64_t c0 = fenced_ticks();
  while (monotonic_ns() - t0 < 100000000) {
  }
  int64_t t1 = monotonic_ns();
  uint64_t c1 = fenced_ticks();
  g_ns_per_tick = double(t1 - t0) / double(c1 - c0);
  // A virtualised TSC may advance in steps of many ticks: that step bounds
  // the resolution of the per-batch percentiles (a batch of 16 calls spreads
  // it over 16).
  uint64_t step = ~0ull;
  for (int i = 0; i < 100000; ++i) {
    uint64_t a = fenced_ticks(), b = fenced_ticks();
    if (b > a && b - a < step) step = b - a;
  }
  g_tsc_step_ns = double(step) * g_ns_per_tick;
}

void BM_EmptyLoop(benchmark::State &state) {
  uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(i++);
}
BENCHMARK(BM_EmptyLoop);

void BM_TlMarkDisabled(benchmark::State &state) {
  uint32_t previous = tl_set_enabled(0);
  uintptr_t i = 0;
  for (auto _ : state) {
    tl_mark2(kEventId, i, i);
    ++i;
  }
  tl_set_enabled(previous);
}
BENCHMARK(BM_TlMarkDisabled);

// The timestamp alone: most of the floor on a machine whose rdtsc is slow.
void BM_ReadTicks(benchmark::State &state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_ReadTicks);

// The other clocks a writer could stamp with (docs/platform.md §6): rdtscp
// waits for earlier instructions; clock_gettime goes through the vDSO;
// CLOCK_MONOTONIC_COARSE is cheap but ticks only every few milliseconds.
void BM_ReadTicksP(benchmark::State &state) {
  unsigned aux = 0;
  for (auto _ : state) benchmark::DoNotOptimize(__rdtscp(&aux));
}
BENCHMARK(BM_ReadTicksP);

void BM_ClockGettime(benchmark::State &state, clockid_t clock) {
  struct timespec ts;
  for (auto _ : state) {
    clock_gettime(clock, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK_CAPTURE(BM_ClockGettime, monotonic, CLOCK_MONOTONIC);
BENCHMARK_CAPTURE(BM_ClockGettime, monotonic_coarse, CLOCK_MONOTONIC_COARSE);

alignas(128) fmt_::Slot g_bare_slots[4096];

__attribute__((noinline)) void bare_stores(uint64_t i, uint32_t tid) {
  fmt_::Slot *s = &g_bare_slots[i & 4095];
  s->timestamp = __rdtsc();
  s->tid = tid;
  s->kind = fmt_::kKindUser;
  s->inline_len = 0;
  s->id = kEventId;
  s->mmap_generation = 0;
  s->return_address = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  s->arg0 = i;
  s->arg1 = i;
}

void BM_BareStores(benchmark::State &state) {
  uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  uint64_t i = 0;
  for (auto _ : state) {
    bare_stores(i++, tid);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_BareStores);

void BM_TlMarkEnabled(benchmark::State &state) {
  uintptr_t i = 0;
  for (auto _ : state) {
    tl_mark2(kEventId, i, i);
    ++i;
  }
}
BENCHMARK(BM_TlMarkEnabled);

/* Stacks: the same walk depth on both unwinding paths, beside
 * glibc's backtrace() and libunwind's unw_backtrace, each from the
 * innermost of 12 frames built with .sframe or with frame pointers
 * (stack_chain.cc).  Arg: the depth. */
void BM_TlMarkStack_SFrame(benchmark::State &state) {
  stack_chain_sframe::chain_run(state, ChainOp::kTlMarkStack, static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_TlMarkStack_SFrame)->Arg(4)->Arg(8);
void BM_TlMarkStack_FramePointer(benchmark::State &state) {
  stack_chain_fp::chain_run(state, ChainOp::kTlMarkStack, static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_TlMarkStack_FramePointer)->Arg(4)->Arg(8);
void BM_GlibcBacktrace(benchmark::State &state) {
  stack_chain_sframe::chain_run(state, ChainOp::kBacktrace, static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_GlibcBacktrace)->Arg(4)->Arg(8);
void BM_UnwBacktrace(benchmark::State &state) {
  stack_chain_sframe::chain_run(state, ChainOp::kUnwBacktrace, static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_UnwBacktrace)->Arg(4)->Arg(8);

void BM_SpanBeginEnd(benchmark::State &state) {
  uintptr_t i = 0;
  for (auto _ : state) {
    const uint64_t token = tl_span_begin(kEventId, i);
    tl_span_end(token);
    ++i;
  }
}
BENCHMARK(BM_SpanBeginEnd);

void BM_SpdlogBacktrace(benchmark::State &state) {
  auto logger = std::make_shared<spdlog::logger>("bench",
                                                 std::make_shared<spdlog::sinks::null_sink_mt>());
  logger->set_level(spdlog::level::info);
  logger->enable_backtrace(4096);  // debug messages go to the backtrace ring only
  uint64_t i = 0;
  for (auto _ : state) {
    logger->debug("event {} {} {}", kEventId, i, i);
    ++i;
  }
}
BENCHMARK(BM_SpdlogBacktrace);

void BM_LttngUst(benchmark::State &state) {
  if (!g_lttng_error.empty()) {
    state.SkipWithError(g_lttng_error.c_str());
    return;
  }
  uint64_t i = 0;
  for (auto _ : state) {
    lttng_ust_tracepoint(core_timeline_bench, mark, kEventId, i, i);
    ++i;
  }
}
BENCHMARK(BM_LttngUst);

// Samples of all threads of one BM_TlMarkContended run.
struct Contended {
  std::mutex mu;
  std::vector<double> per_call_ns;
  double empty_batch_ns = 0;
  int finished = 0;
} g_contended;

constexpr int kBatch = 16;

double percentile(std::vector<double> &v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * double(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

void BM_TlMarkContended(benchmark::State &state) {
  // The cost of an empty batch (two fenced rdtsc reads) on this thread.
  std::vector<uint64_t> empty(2048);
  for (auto &e : empty) {
    uint64_t a = fenced_ticks();
    uint64_t b = fenced_ticks();
    e = b - a;
  }
  std::nth_element(empty.begin(), empty.begin() + 1024, empty.end());
  uint64_t empty_ticks = empty[1024];
  std::vector<double> local;
  local.reserve(1 << 17);
  if (state.thread_index() == 0) {
    std::lock_guard<std::mutex> lock(g_contended.mu);
    g_contended.per_call_ns.clear();
    g_contended.finished = 0;
    g_contended.empty_batch_ns = 0;
  }
  uintptr_t i = 0;
  int64_t cpu0 = 0;
  for (auto _ : state) {
    if (i == 0) cpu0 = thread_cpu_ns();
    uint64_t a = fenced_ticks();
    for (int k = 0; k < kBatch; ++k) tl_mark2(kEventId, i, static_cast<uintptr_t>(k));
    uint64_t b = fenced_ticks();
    if (local.size() < local.capacity()) {
      double ticks = double(b - a) - double(empty_ticks);
      local.push_back(std::max(0.0, ticks) * g_ns_per_tick / kBatch);
    }
    ++i;
  }
  int64_t cpu = thread_cpu_ns() - cpu0;
  state.SetItemsProcessed(int64_t(state.iterations()) * kBatch);
  state.counters["cpu_ns_per_call"] = benchmark::Counter(
      double(cpu) / double(std::max<int64_t>(1, int64_t(state.iterations()) * kBatch)),
      benchmark::Counter::kAvgThreads);
  // Merge; the last thread to finish computes the percentiles over all
  // threads' batches (counters of the other threads are 0; they are summed).
  double p50 = 0, p95 = 0, p99 = 0, empty_ns = 0;
  {
    std::lock_guard<std::mutex> lock(g_contended.mu);
    g_contended.per_call_ns.insert(g_contended.per_call_ns.end(), local.begin(), local.end());
    g_contended.empty_batch_ns += double(empty_ticks) * g_ns_per_tick;
    if (++g_contended.finished == state.threads()) {
      auto &v = g_contended.per_call_ns;
      p50 = percentile(v, 0.50);
      p95 = percentile(v, 0.95);
      p99 = percentile(v, 0.99);
      empty_ns = g_contended.empty_batch_ns / state.threads();
    }
  }
  state.counters["p50_ns"] = p50;
  state.counters["p95_ns"] = p95;
  state.counters["p99_ns"] = p99;
  state.counters["empty_batch_ns"] = empty_ns;
}
BENCHMARK(BM_TlMarkContended)->Threads(1)->Threads(2)->Threads(4)->Threads(8)->UseRealTime();

// ---------------------------------------------------------------- LTTng-UST

int run(const std::string &cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// Start lttng-sessiond if none runs, create a snapshot session with our
// tracepoint enabled, and wait until this process sees it enabled.  Sets
// g_lttng_error to exactly why not otherwise.
void setup_lttng() {
  if (run("command -v lttng && command -v lttng-sessiond") != 0) {
    g_lttng_error = "lttng or lttng-sessiond not installed (Debian package lttng-tools)";
    return;
  }
  if (run("lttng list") != 0) {
    if (run("lttng-sessiond --daemonize") != 0) {
      g_lttng_error = "lttng-sessiond --daemonize failed";
      return;
    }
    g_started_sessiond = true;
  }
  g_lttng_session = "ct-bench-" + std::to_string(getpid());
  if (run("lttng create " + g_lttng_session + " --snapshot") != 0 ||
      run("lttng enable-event --userspace core_timeline_bench:mark -s " + g_lttng_session) != 0 ||
      run("lttng start " + g_lttng_session) != 0) {
    g_lttng_error = "lttng create/enable-event/start of a snapshot session failed";
    return;
  }
  for (int i = 0; i < 100; ++i) {
    if (lttng_ust_tracepoint_enabled(core_timeline_bench, mark)) return;
    usleep(50000);
  }
  g_lttng_error =
      "the tracepoint core_timeline_bench:mark was not enabled in this process within 5 s "
      "(did liblttng-ust register with lttng-sessiond?)";
}

void teardown_lttng() {
  if (!g_lttng_session.empty()) run("lttng destroy " + g_lttng_session);
  if (g_started_sessiond) run("pkill -x lttng-sessiond");
}

// The console reporter, keeping each benchmark's CPU time per iteration (in
// ns; the median aggregate when repetitions are asked for, else the run
// itself) and counters, for the summary of ratios at the end.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}
  struct Result {
    double cpu_ns = 0;
    std::map<std::string, double> counters;
  };
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const auto &r : runs) {
      if (r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Aggregate && !median) continue;
      const std::string name = r.run_name.str();
      if (!median && medians_.count(name)) continue;
      if (median) medians_.insert(name);
      Result &out = results_[name];
      out.cpu_ns = r.GetAdjustedCPUTime() * benchmark::GetTimeUnitMultiplier(benchmark::kNanosecond) /
                   benchmark::GetTimeUnitMultiplier(r.time_unit);
      for (const auto &[k, c] : r.counters) out.counters[k] = c.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const Result *find(const std::string &name) const {
    auto it = results_.find(name);
    return it == results_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Result> results_;
  std::set<std::string> medians_;
};

// Prints num/den and whether it meets the target "<= limit" (at_most) or
// ">= limit"; limit 0: no target, the ratio alone.
void print_ratio(const char *what, const double *num, const double *den, bool at_most, double limit) {
  if (num == nullptr || den == nullptr || *den <= 0) {
    std::printf("  %-64s not measured in this run\n", what);
    return;
  }
  const double r = *num / *den;
  if (limit == 0) {
    std::printf("  %-64s %6.3f\n", what, r);
    return;
  }
  const bool met = at_most ? r <= limit : r >= limit;
  std::printf("  %-64s %6.3f   target %s %g: %s", what, r, at_most ? "<=" : ">=", limit, met ? "met" : "MISSED");
  if (!met) std::printf(" (by %.0f %%)", 100.0 * (at_most ? r / limit - 1 : 1 - r / limit));
  std::printf("\n");
}

void print_summary(const SummaryReporter &rep) {
  auto cpu = [&](const char *name) -> const double * {
    const auto *r = rep.find(name);
    return r ? &r->cpu_ns : nullptr;
  };
  auto counter = [&](const char *name, const char *key) -> const double * {
    const auto *r = rep.find(name);
    if (r == nullptr) return nullptr;
    auto it = r->counters.find(key);
    return it == r->counters.end() ? nullptr : &it->second;
  };
  std::printf("\nRatios of this run (CPU time per call; medians when run with --benchmark_repetitions):\n");
  print_ratio("TlMarkEnabled / BareStores", cpu("BM_TlMarkEnabled"), cpu("BM_BareStores"), true, 1.05);
  print_ratio("SpanBeginEnd (a begin and an end) / TlMarkEnabled", cpu("BM_SpanBeginEnd"), cpu("BM_TlMarkEnabled"),
              true, 2.2);
  print_ratio("SpdlogBacktrace / TlMarkEnabled", cpu("BM_SpdlogBacktrace"), cpu("BM_TlMarkEnabled"), false, 10);
  print_ratio("LttngUst / TlMarkEnabled", cpu("BM_LttngUst"), cpu("BM_TlMarkEnabled"), false, 5);
  print_ratio("Contended per call, 2 threads / 1 thread",
              counter("BM_TlMarkContended/real_time/threads:2", "cpu_ns_per_call"),
              counter("BM_TlMarkContended/real_time/threads:1", "cpu_ns_per_call"), true, 1.5);
  print_ratio("Contended p95 at 8 threads / p50 at 1 thread", counter("BM_TlMarkContended/real_time/threads:8", "p95_ns"),
              counter("BM_TlMarkContended/real_time/threads:1", "p50_ns"), true, 1.1);
  print_ratio("ReadTicks (rdtsc alone, the TSC writer's floor) / TlMarkEnabled", cpu("BM_ReadTicks"),
              cpu("BM_TlMarkEnabled"), true, 0);
  /* The stack targets: the peer over us (>= 10: we are 10 x faster). */
  print_ratio("GlibcBacktrace/8 / TlMarkStack_SFrame/8", cpu("BM_GlibcBacktrace/8"), cpu("BM_TlMarkStack_SFrame/8"),
              false, 10);
  print_ratio("UnwBacktrace/8 / TlMarkStack_SFrame/8", cpu("BM_UnwBacktrace/8"), cpu("BM_TlMarkStack_SFrame/8"),
              false, 10);
  print_ratio("TlMarkStack_FramePointer/8 / TlMarkEnabled", cpu("BM_TlMarkStack_FramePointer/8"),
              cpu("BM_TlMarkEnabled"), true, 4);
  print_ratio("TlMarkStack_SFrame/4 / TlMarkEnabled", cpu("BM_TlMarkStack_SFrame/4"), cpu("BM_TlMarkEnabled"), true, 0);
}

}  // namespace

int main(int argc, char **argv) {
  struct tl_options o;
  std::memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.slots_per_lane = 4096;
  o.lanes = 16;
  o.sidecar_dir = "";
  int rc = tl_init(&o);
  if (rc != 0 && rc != -EALREADY) {
    std::fprintf(stderr, "bench_overhead: tl_init: %s\n", std::strerror(-rc));
    return 1;
  }
  calibrate_tsc();
  setup_lttng();
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("tsc_ns_per_tick", std::to_string(g_ns_per_tick));
  benchmark::AddCustomContext("tsc_step_ns", std::to_string(g_tsc_step_ns));
  benchmark::AddCustomContext("lttng", g_lttng_error.empty() ? "snapshot session " + g_lttng_session
                                                             : "unavailable: " + g_lttng_error);
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  teardown_lttng();
  print_summary(reporter);
  return 0;
}
