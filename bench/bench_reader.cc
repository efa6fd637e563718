// SPDX-License-Identifier: MIT
//
// bench_reader - reading a timeline out of real kernel cores of about
// 10 MiB, 100 MiB and 1 GiB, next to the tools a user would reach for on
// the same cores: `eu-stack --core` and `gdb -batch -ex bt`.
//
//   BM_FindRing/MiB      CoreFile::open + locate_rings(), in process: the
//                        ring found and its header validated, nothing
//                        decoded (the "time to find the ring").
//   BM_Decode/MiB        CoreFile::open + analyze() without symbols, in
//                        process: found, validated, every lane decoded and
//                        merged.
//   BM_DecodeSymbolize/MiB  the same with libdwfl's symbols, in process
//                        (the CLI runs libdwfl in a child of its own).
//   BM_GroupSignature/MiB  group_signature() of the core's Analysis (made
//                        once with symbols, untimed, as the daemon reads a
//                        core), in process: what grouping adds per crash;
//                        /0 is the big ring's core (below).  The summary
//                        sets it beside that one analyze_file() with
//                        symbols, timed, and beside BM_DecodeSymbolize.
//   BM_Read/MiB          core-timeline-read CORE (find, decode, symbolize,
//                        print), as a user runs it.
//   BM_ReadJson/MiB      core-timeline-read --json CORE.
//   BM_EuStack/MiB       eu-stack --core=CORE --executable=EXE
//   BM_GdbBt/MiB         gdb -nx -batch -ex bt EXE CORE
//   BM_BigRing/read, BM_BigRing/read_json
//                        core-timeline-read [--json] on the core of a full
//                        ring of about a million events (big_ring_crasher
//                        16 65536 70000, tests/crashers/big_ring_crasher.c),
//                        for the memory the reader needs beside the ring's
//                        bytes
//   BM_BigRing/read_chrome_trace
//                        core-timeline-read --format=chrome-trace on that
//                        core (target: <= 1 s, and peak RSS beyond the
//                        baseline <= 3 x the ring's bytes)
//   BM_BigRing/export_chrome_trace
//                        the export alone, in process: export_events() of
//                        the big ring's Analysis (made once, untimed) to
//                        an Output that drops the bytes
//   BM_TinyRing/read, BM_TinyRing/read_json, BM_TinyRing/read_chrome_trace
//                        the same program's core with a ring of 16 x 8
//                        slots: the reader's baseline, to which the big
//                        ring's peak RSS is compared
//
// The programs are run as child processes and timed by wall clock (manual
// time).  Each also reports `peak_rss_MiB` from one more run under GNU
// time (`/usr/bin/time -f %M`, the child's ru_maxrss, which covers its
// waited-for children, e.g. the reader's isolated symbolizer).  Not from the
// timed runs: a child posix_spawn()ed from this process starts in its
// address space, and exec(2) records that as the child's high-water mark
// (fs/exec.c, setmax_mm_hiwater_rss), so every tool would show at least
// this benchmark's own RSS.  GNU time's own floor (`time /bin/true`) is in
// the context as rss_floor_KiB.  The cores are in the page cache (warm):
// what is measured is the tools' work, not the disk.
//
// The cores are real: big_crasher MIB (tests/crashers/big_crasher.c, a
// libtimeline process with MIB MiB of touched anonymous memory) crashes
// through the real systemd-coredump pipeline (tests/support/pipeline start),
// and the harness decompresses its stored core.  They are kept in
// --cores=DIR (default: bench-cores/ in the build directory, 1.2 GB) and
// reused while their executable's build-id is that of the big_crasher next
// to this program; otherwise they are made anew.
//
// The big ring's core is made the same way (big_ring_crasher, kept in
// --cores=DIR while its build-id is the one next to this program); its
// ring's region_size and slot bytes come from locate_rings().  The summary
// gives the reader's peak RSS on it less the baseline's, over the ring's
// region_size: the issue's bound is 3.  --big-ring=THREADS,SLOTS,EVENTS
// sizes it (bench_smoke runs a small one); --big-ring=0 leaves it out.
//
// At the end a summary prints each tool's median time and peak memory per
// core and the ratios of the targets, all from this one run.
//
// Run: build/bin/bench_reader [--cores=DIR] [--sizes=10,100,1024]
//                             [--big-ring=16,65536,70000] [benchmark flags]
//      (root, pipeline running; bench/run.sh does both)

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/export.h"
#include "core_timeline/reader/group.h"
#include "core_timeline/reader/symbolize.h"
#include "bench_stats.h"
#include "crash_harness.h"

extern char **environ;

namespace {

namespace fs = std::filesystem;
namespace ctr = core_timeline::reader;

std::vector<int> g_sizes = {10, 100, 1024};  // --sizes=MIB,MIB,...

std::string g_bin_dir;    // where core-timeline-read and big_crasher are
std::string g_core_dir;  // --cores=DIR; default <build>/bench-cores
std::map<int, std::string> g_cores;  // MiB -> core path
std::string g_exe;                   // big_crasher (the cores' executable)

// --big-ring=THREADS,SLOTS,EVENTS: big_ring_crasher's arguments; empty: none.
std::vector<unsigned long> g_big_ring = {16, 65536, 70000};
std::string g_ring_exe;              // big_ring_crasher
std::string g_big_core, g_tiny_core; // its cores: the big ring, 16 x 8 slots

// What locate_rings() tells of a core's ring.
struct RingSize {
  std::uint64_t region_size = 0, slot_bytes = 0;
  std::uint32_t lanes = 0, slots_per_lane = 0;
  std::size_t events = 0;  // analyze() without symbols
};
RingSize g_big_ring_size, g_tiny_ring_size;

// Per benchmark name: every iteration's seconds and the largest peak RSS.
struct Samples {
  std::vector<double> seconds;
  long peak_rss_kib = 0;
};
std::map<std::string, Samples> g_samples;

struct ChildRun {
  double seconds = 0;
  int status = 0;
};

// Runs argv with stdout and stderr on /dev/null; wall time and wait status.
ChildRun run_child(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int e = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) throw std::runtime_error(argv[0] + ": posix_spawn: " + std::strerror(e));
  ChildRun r;
  while (waitpid(pid, &r.status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(argv[0] + ": waitpid: " + std::strerror(errno));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Peak RSS of argv in KiB, by GNU time (see the top of the file); 0 if it
// could not be measured.
long peak_rss_kib(const std::vector<std::string> &argv) {
  char tmpl[] = "/tmp/bench_reader.rss.XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return 0;
  close(fd);
  std::vector<std::string> timed = {"/usr/bin/time", "-f", "%M", "-o", tmpl};
  timed.insert(timed.end(), argv.begin(), argv.end());
  run_child(timed);
  long kib = 0;
  if (FILE *f = std::fopen(tmpl, "r")) {
    /* The last line: GNU time writes "Command exited with non-zero status N"
     * first when the command fails. */
    char line[256];
    while (std::fgets(line, sizeof line, f)) kib = std::strtol(line, nullptr, 10);
    std::fclose(f);
  }
  unlink(tmpl);
  return kib;
}

// A time (seconds >= 0) and/or a peak RSS of one benchmark.
void record(const std::string &key, double seconds, long rss_kib) {
  auto &s = g_samples[key];
  if (seconds >= 0) s.seconds.push_back(seconds);
  s.peak_rss_kib = std::max(s.peak_rss_kib, rss_kib);
}

std::string key_of(const std::string &tool, int mib) { return tool + "/" + std::to_string(mib); }

// A child benchmark: argv run once per iteration.  `ok` tells a run that did
// its work from one that failed (the benchmark then reports an error rather
// than a time).
template <class Ok>
void child_benchmark(benchmark::State &state, const std::string &tool, const std::vector<std::string> &argv,
                     Ok ok) {
  const int mib = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ChildRun r = run_child(argv);
    if (!ok(r.status)) {
      state.SkipWithError((tool + " failed on " + g_cores[mib] + " (wait status " + std::to_string(r.status) +
                           ")").c_str());
      return;
    }
    state.SetIterationTime(r.seconds);
    record(key_of(tool, mib), r.seconds, 0);
  }
  const long peak = peak_rss_kib(argv);
  record(key_of(tool, mib), -1, peak);
  state.counters["peak_rss_MiB"] = double(peak) / 1024.0;
  state.counters["core_MiB"] = double(fs::file_size(g_cores[mib])) / (1 << 20);
}

bool exited_0(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

void BM_FindRing(benchmark::State &state) {
  const int mib = static_cast<int>(state.range(0));
  std::size_t rings = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto core = ctr::CoreFile::open(g_cores[mib]);
    if (!core) {
      state.SkipWithError(core.error().message.c_str());
      return;
    }
    auto found = ctr::locate_rings(*core);
    rings = 0;
    for (const auto &r : found) rings += r.state == ctr::RingReport::State::kValid;
    benchmark::DoNotOptimize(found.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    record(key_of("find", mib), s, 0);
  }
  if (rings != 1) state.SkipWithError(("expected one valid ring, found " + std::to_string(rings)).c_str());
  state.counters["core_MiB"] = double(fs::file_size(g_cores[mib])) / (1 << 20);
}

// analyze() in process, timed from CoreFile::open to the Analysis.
void in_process_benchmark(benchmark::State &state, const std::string &tool, const ctr::ReadOptions &options) {
  const int mib = static_cast<int>(state.range(0));
  std::size_t events = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    ctr::Analysis a = ctr::analyze_file(g_cores[mib], options);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (a.status != ctr::Status::kOk) {
      state.SkipWithError((tool + ": " + std::string(ctr::status_name(a.status)) + ": " + a.reason).c_str());
      return;
    }
    events = a.events.size();
    state.SetIterationTime(s);
    record(key_of(tool, mib), s, 0);
  }
  state.counters["events"] = double(events);
  state.counters["core_MiB"] = double(fs::file_size(g_cores[mib])) / (1 << 20);
}

void BM_Decode(benchmark::State &state) {
  ctr::ReadOptions o;
  o.symbolize = false;
  in_process_benchmark(state, "decode", o);
}

void BM_DecodeSymbolize(benchmark::State &state) {
  ctr::ReadOptions o;
  o.isolate_symbolizer = false;
  in_process_benchmark(state, "decode_symbolize", o);
}

// group_signature() alone (see the top of the file).  Arg: a core's MiB, or
// 0 for the big ring's core.
void BM_GroupSignature(benchmark::State &state) {
  const int mib = static_cast<int>(state.range(0));
  const std::string &core = mib == 0 ? g_big_core : g_cores[mib];
  const std::string key = mib == 0 ? std::string("group/big") : key_of("group", mib);
  ctr::ReadOptions o;
  o.isolate_symbolizer = false;
  const auto t0 = std::chrono::steady_clock::now();
  const ctr::Analysis a = ctr::analyze_file(core, o);
  const double analyze_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.status != ctr::Status::kOk) {
    state.SkipWithError(("cannot read " + core + ": " + a.reason).c_str());
    return;
  }
  g_samples[key + "/analyze"].seconds = {analyze_s};
  std::string words;
  for (auto _ : state) {
    const auto t = std::chrono::steady_clock::now();
    const auto g = ctr::group_signature(a);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    if (!g) {
      state.SkipWithError(("no group signature for " + core).c_str());
      return;
    }
    words = g->words;
    benchmark::DoNotOptimize(words.data());
    state.SetIterationTime(s);
    record(key, s, 0);
  }
  state.SetLabel(words);
  state.counters["events"] = double(a.events.size());
  state.counters["analyze_ms"] = analyze_s * 1e3;
}

void BM_Read(benchmark::State &state) {
  child_benchmark(state, "read", {g_bin_dir + "/core-timeline-read", g_cores[int(state.range(0))]}, exited_0);
}

void BM_ReadJson(benchmark::State &state) {
  child_benchmark(state, "read_json", {g_bin_dir + "/core-timeline-read", "--json", g_cores[int(state.range(0))]},
                  exited_0);
}

void BM_EuStack(benchmark::State &state) {
  // eu-stack exits 1 when some frame could not be unwound (a normal outcome
  // for a crashed thread); a signal is a failure.
  child_benchmark(state, "eu-stack",
                  {"/usr/bin/eu-stack", "--core=" + g_cores[int(state.range(0))], "--executable=" + g_exe},
                  [](int st) { return WIFEXITED(st) && WEXITSTATUS(st) <= 1; });
}

void BM_GdbBt(benchmark::State &state) {
  child_benchmark(state, "gdb",
                  {"/usr/bin/gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off", "-ex", "bt", g_exe,
                   g_cores[int(state.range(0))]},
                  exited_0);
}

// core-timeline-read [FORMAT] on the big ring's core (Arg 1) or the tiny
// one's (Arg 0); the output goes to /dev/null, as everywhere here.
void ring_benchmark(benchmark::State &state, const std::string &tool, const char *format) {
  const bool big = state.range(0) != 0;
  const std::string &core = big ? g_big_core : g_tiny_core;
  std::vector<std::string> argv = {g_bin_dir + "/core-timeline-read"};
  if (format) argv.push_back(format);
  argv.push_back(core);
  const std::string key = tool + (big ? "/big" : "/tiny");
  for (auto _ : state) {
    ChildRun r = run_child(argv);
    if (!exited_0(r.status)) {
      state.SkipWithError((tool + " failed on " + core + " (wait status " + std::to_string(r.status) + ")").c_str());
      return;
    }
    state.SetIterationTime(r.seconds);
    record(key, r.seconds, 0);
  }
  const long peak = peak_rss_kib(argv);
  record(key, -1, peak);
  const RingSize &rs = big ? g_big_ring_size : g_tiny_ring_size;
  state.counters["peak_rss_MiB"] = double(peak) / 1024.0;
  state.counters["events"] = double(rs.events);
  state.counters["region_MiB"] = double(rs.region_size) / (1 << 20);
}

void BM_RingRead(benchmark::State &state) { ring_benchmark(state, "ring_read", nullptr); }
void BM_RingReadJson(benchmark::State &state) { ring_benchmark(state, "ring_read_json", "--json"); }
void BM_RingReadChrome(benchmark::State &state) {
  ring_benchmark(state, "ring_read_chrome", "--format=chrome-trace");
}

// The chrome-trace export of the big ring's Analysis alone: the Analysis
// is made once (no symbols, as the export needs none), each iteration
// writes the whole document to an Output that counts and drops the bytes.
void BM_RingExportChrome(benchmark::State &state) {
  ctr::ReadOptions o;
  o.symbolize = false;
  const ctr::Analysis a = ctr::analyze_file(g_big_core, o);
  if (a.status != ctr::Status::kOk) {
    state.SkipWithError(("cannot read " + g_big_core + ": " + a.reason).c_str());
    return;
  }
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto w = ctr::chrome_trace_writer(ctr::export_timeline_of(a), [&](std::string_view s) {
      bytes += s.size();
      return true;
    });
    if (!ctr::export_events(a, *w).ok()) {
      state.SkipWithError("the export failed");
      return;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(seconds);
    record("export_chrome/big", seconds, 0);
  }
  state.counters["events"] = double(a.events.size());
  state.counters["output_MiB"] = double(bytes) / (1 << 20);
}

void sizes(benchmark::internal::Benchmark *b) {
  for (int mib : g_sizes) b->Arg(mib);
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

// Registered from main(), once --sizes is known.
void register_benchmarks() {
  benchmark::RegisterBenchmark("BM_FindRing", BM_FindRing)->Apply(sizes)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Decode", BM_Decode)->Apply(sizes)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_DecodeSymbolize", BM_DecodeSymbolize)->Apply(sizes)->Unit(benchmark::kMicrosecond);
  auto *group = benchmark::RegisterBenchmark("BM_GroupSignature", BM_GroupSignature)->Apply(sizes);
  if (!g_big_ring.empty()) group->Arg(0);
  group->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Read", BM_Read)->Apply(sizes)->Iterations(5);
  benchmark::RegisterBenchmark("BM_ReadJson", BM_ReadJson)->Apply(sizes)->Iterations(5);
  benchmark::RegisterBenchmark("BM_EuStack", BM_EuStack)->Apply(sizes)->Iterations(5);
  benchmark::RegisterBenchmark("BM_GdbBt", BM_GdbBt)->Apply(sizes)->Iterations(3);
  if (!g_big_ring.empty()) {
    using Fn = void (*)(benchmark::State &);
    const std::pair<const char *, Fn> tiny[] = {{"BM_TinyRing/read", BM_RingRead},
                                                {"BM_TinyRing/read_json", BM_RingReadJson},
                                                {"BM_TinyRing/read_chrome_trace", BM_RingReadChrome}};
    const std::pair<const char *, Fn> big[] = {{"BM_BigRing/read", BM_RingRead},
                                               {"BM_BigRing/read_json", BM_RingReadJson},
                                               {"BM_BigRing/read_chrome_trace", BM_RingReadChrome}};
    for (auto [name, fn] : tiny)
      benchmark::RegisterBenchmark(name, fn)->Arg(0)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);
    for (auto [name, fn] : big)
      benchmark::RegisterBenchmark(name, fn)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);
    benchmark::RegisterBenchmark("BM_BigRing/export_chrome_trace", BM_RingExportChrome)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
}

// Whether the core at `path` was made by the big_crasher this run uses
// (same build-id): a core of another build would be read against the
// wrong executable by eu-stack and gdb.
bool made_by_our_exe(const std::string &path) {
  auto core = ctr::CoreFile::open(path);
  if (!core) return false;
  const ctr::Module *exe = core->executable();
  auto ours = ctr::file_build_id(g_exe);
  return exe != nullptr && ours && !exe->build_id.empty() && exe->build_id == *ours;
}

// The core of big_crasher MIB, made through the real pipeline unless one of
// the same executable is already in g_core_dir.
std::string core_of(int mib) {
  const std::string path = g_core_dir + "/big_crasher." + std::to_string(mib) + ".core";
  if (fs::exists(path) && made_by_our_exe(path)) return path;
  std::fprintf(stderr, "bench_reader: making a %d MiB core (big_crasher %d through systemd-coredump)...\n", mib,
               mib);
  ct::test::CrashOptions opts;
  opts.output_dir = g_core_dir;
  opts.timeout = std::chrono::seconds(120);
  auto run = ct::test::run_and_collect_core({g_exe, std::to_string(mib)}, opts);
  if (run.journal_fields.count("COREDUMP_TRUNCATED"))
    throw std::runtime_error("the core of big_crasher " + std::to_string(mib) +
                             " was truncated by systemd-coredump (ProcessSizeMax/ExternalSizeMax)");
  fs::rename(run.core_path, path);
  return path;
}

// The core of big_ring_crasher THREADS SLOTS EVENTS, made through the real
// pipeline unless one of the same executable is in g_core_dir.
std::string ring_core_of(const std::vector<unsigned long> &args) {
  std::string name = g_core_dir + "/big_ring_crasher";
  std::vector<std::string> argv = {g_ring_exe};
  for (unsigned long a : args) {
    name += "." + std::to_string(a);
    argv.push_back(std::to_string(a));
  }
  const std::string path = name + ".core";
  auto made_by_ring_exe = [&] {
    auto core = ctr::CoreFile::open(path);
    if (!core) return false;
    const ctr::Module *exe = core->executable();
    auto ours = ctr::file_build_id(g_ring_exe);
    return exe != nullptr && ours && !exe->build_id.empty() && exe->build_id == *ours;
  };
  if (fs::exists(path) && made_by_ring_exe()) return path;
  std::fprintf(stderr, "bench_reader: making the core of big_ring_crasher %lu %lu %lu through systemd-coredump...\n",
               args[0], args[1], args[2]);
  ct::test::CrashOptions opts;
  opts.output_dir = g_core_dir;
  opts.timeout = std::chrono::seconds(120);
  auto run = ct::test::run_and_collect_core(argv, opts);
  if (run.journal_fields.count("COREDUMP_TRUNCATED"))
    throw std::runtime_error("the core of big_ring_crasher was truncated by systemd-coredump");
  fs::rename(run.core_path, path);
  return path;
}

// The one valid ring of `core`: its sizes and its events (analyze(), no
// symbols).
RingSize ring_size_of(const std::string &core) {
  RingSize rs;
  ctr::ReadOptions o;
  o.symbolize = false;
  const ctr::Analysis a = ctr::analyze_file(core, o);
  if (a.status != ctr::Status::kOk) throw std::runtime_error(core + ": " + a.reason);
  for (const auto &r : a.rings) {
    if (r.state != ctr::RingReport::State::kValid || !r.ring) continue;
    rs.lanes = r.ring->header.lane_count;
    rs.slots_per_lane = r.ring->header.slots_per_lane;
    rs.region_size = r.ring->header.region_size;
    // Every lane's first slots, and (ring format 3) the sources' pools.
    std::uint64_t slots = std::uint64_t{rs.lanes} * rs.slots_per_lane;
    for (const auto &src : r.ring->header.sources) slots += src.pool_slots;
    rs.slot_bytes = slots * r.ring->header.slot_size;
  }
  rs.events = a.events.size();
  return rs;
}

using ct::bench::median;

// "-" for a tool this run did not measure (--benchmark_filter).
std::string cell(double v, int decimals) { return v > 0 ? ct::bench::fixed(decimals, v) : "-"; }

double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : 0; }

void print_summary() {
  auto ms = [](const char *tool, int mib) { return median(g_samples[key_of(tool, mib)].seconds) * 1e3; };
  auto rss = [](const char *tool, int mib) { return double(g_samples[key_of(tool, mib)].peak_rss_kib) / 1024.0; };
  std::printf("\nIn process, median ms: find the ring | + decode | + symbolize (libdwfl in process)\n");
  for (int mib : g_sizes)
    std::printf("%5d MiB %9s %9s %9s\n", mib, cell(ms("find", mib), 3).c_str(), cell(ms("decode", mib), 3).c_str(),
                cell(ms("decode_symbolize", mib), 3).c_str());
  std::printf("\nSummary of this run: median wall ms per run, and the child's peak RSS in MiB\n");
  std::printf("%-9s %9s %9s %11s %9s %9s | %8s %8s %8s %8s\n", "core", "find", "read", "read --json",
              "eu-stack", "gdb bt", "read", "--json", "eu-stack", "gdb");
  for (int mib : g_sizes)
    std::printf("%5d MiB %9s %9s %11s %9s %9s | %8s %8s %8s %8s\n", mib, cell(ms("find", mib), 3).c_str(),
                cell(ms("read", mib), 1).c_str(), cell(ms("read_json", mib), 1).c_str(),
                cell(ms("eu-stack", mib), 1).c_str(), cell(ms("gdb", mib), 1).c_str(),
                cell(rss("read", mib), 1).c_str(), cell(rss("read_json", mib), 1).c_str(),
                cell(rss("eu-stack", mib), 1).c_str(), cell(rss("gdb", mib), 1).c_str());
  std::printf("\nRatios (target: read <= 2 x eu-stack; find < 1 ms on the 1 GiB core; read memory flat):\n");
  for (int mib : g_sizes)
    std::printf("%5d MiB  read / eu-stack %s   read --json / eu-stack %s   read / gdb bt %s\n", mib,
                cell(ratio(ms("read", mib), ms("eu-stack", mib)), 2).c_str(),
                cell(ratio(ms("read_json", mib), ms("eu-stack", mib)), 2).c_str(),
                cell(ratio(ms("read", mib), ms("gdb", mib)), 2).c_str());
  std::printf("\nThe group signature per crash, in process: group_signature() median us | analyze_file() with "
              "symbols ms (once) | share | BM_DecodeSymbolize median ms | share\n");
  auto group_row = [&](const std::string &label, const std::string &key, double decode_ms) {
    const double us = median(g_samples[key].seconds) * 1e6, analyze_ms = median(g_samples[key + "/analyze"].seconds) * 1e3;
    std::printf("%-9s %9s %9s %8s%% %9s %8s%%\n", label.c_str(), cell(us, 2).c_str(), cell(analyze_ms, 1).c_str(),
                cell(ratio(us / 1e3, analyze_ms) * 100, 4).c_str(), cell(decode_ms, 1).c_str(),
                cell(ratio(us / 1e3, decode_ms) * 100, 4).c_str());
  };
  for (int mib : g_sizes) group_row(std::to_string(mib) + " MiB", key_of("group", mib), ms("decode_symbolize", mib));
  if (!g_big_ring.empty()) group_row("big ring", "group/big", 0);
  const int lo = g_sizes.front(), hi = g_sizes.back();
  std::printf("read peak RSS, %d MiB core / %d MiB core: %s\n", hi, lo,
              cell(ratio(rss("read", hi), rss("read", lo)), 2).c_str());
  std::printf("find the ring in the %d MiB core: %s ms\n", hi, cell(ms("find", hi), 3).c_str());
  if (g_big_ring.empty()) return;
  const RingSize &b = g_big_ring_size, &t = g_tiny_ring_size;
  auto mib = [](double bytes) { return bytes / (1 << 20); };
  auto ring_ms = [](const char *tool, const char *which) {
    return median(g_samples[std::string(tool) + "/" + which].seconds) * 1e3;
  };
  auto ring_rss = [](const char *tool, const char *which) {
    return double(g_samples[std::string(tool) + "/" + which].peak_rss_kib) / 1024.0;
  };
  std::printf("\nBig ring (big_ring_crasher %lu %lu %lu): %zu events, %u lanes x %u slots; region_size %s MiB, "
              "slots %s MiB\n", g_big_ring[0], g_big_ring[1], g_big_ring[2], b.events, b.lanes, b.slots_per_lane,
              ct::bench::fixed(1, mib(double(b.region_size))).c_str(), ct::bench::fixed(1, mib(double(b.slot_bytes))).c_str());
  std::printf("Tiny ring (the baseline): %zu events, %u lanes x %u slots; region_size %s MiB\n", t.events, t.lanes,
              t.slots_per_lane, ct::bench::fixed(2, mib(double(t.region_size))).c_str());
  std::printf("%-14s %12s %12s %14s %14s %22s\n", "", "median ms", "tiny ms", "peak RSS MiB", "baseline MiB",
              "(peak - base) / region");
  for (auto [tool, label] : {std::pair{"ring_read", "read"}, {"ring_read_json", "read --json"},
                             {"ring_read_chrome", "chrome-trace"}}) {
    const double peak = ring_rss(tool, "big"), base = ring_rss(tool, "tiny");
    std::printf("%-14s %12s %12s %14s %14s %22s\n", label, cell(ring_ms(tool, "big"), 1).c_str(),
                cell(ring_ms(tool, "tiny"), 1).c_str(), cell(peak, 1).c_str(), cell(base, 1).c_str(),
                cell(ratio(peak - base, mib(double(b.region_size))), 2).c_str());
  }
  std::printf("big ring: (peak RSS - baseline) / region_size, target <= 3: read %s, read --json %s, "
              "--format=chrome-trace %s\n",
              cell(ratio(ring_rss("ring_read", "big") - ring_rss("ring_read", "tiny"), mib(double(b.region_size))), 2).c_str(),
              cell(ratio(ring_rss("ring_read_json", "big") - ring_rss("ring_read_json", "tiny"),
                         mib(double(b.region_size))), 2).c_str(),
              cell(ratio(ring_rss("ring_read_chrome", "big") - ring_rss("ring_read_chrome", "tiny"),
                         mib(double(b.region_size))), 2).c_str());
  std::printf("big ring: chrome-trace export of %zu events, target <= 1000 ms: whole run (read + export) %s ms, "
              "the export alone (in process) %s ms\n",
              b.events, cell(ring_ms("ring_read_chrome", "big"), 1).c_str(),
              cell(median(g_samples["export_chrome/big"].seconds) * 1e3, 1).c_str());
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--cores=", 8) == 0) {
      g_core_dir = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--sizes=", 8) == 0) {
      g_sizes.clear();
      for (const char *p = argv[i] + 8; *p != '\0';) {
        char *end = nullptr;
        const long mib = std::strtol(p, &end, 10);
        if (end == p || mib <= 0 || mib > 16384 || (*end != ',' && *end != '\0')) {
          std::fprintf(stderr, "bench_reader: --sizes wants MiB,MiB,... (1 to 16384), not '%s'\n", argv[i] + 8);
          return 64;
        }
        g_sizes.push_back(static_cast<int>(mib));
        p = *end == ',' ? end + 1 : end;
      }
      if (g_sizes.empty()) {
        std::fprintf(stderr, "bench_reader: --sizes is empty\n");
        return 64;
      }
    } else if (std::strncmp(argv[i], "--big-ring=", 11) == 0) {
      g_big_ring.clear();
      if (std::strcmp(argv[i] + 11, "0") != 0) {
        for (const char *p = argv[i] + 11; *p != '\0';) {
          char *end = nullptr;
          const unsigned long v = std::strtoul(p, &end, 10);
          if (end == p || v == 0 || (*end != ',' && *end != '\0')) break;
          g_big_ring.push_back(v);
          p = *end == ',' ? end + 1 : end;
        }
        if (g_big_ring.size() != 3) {
          std::fprintf(stderr, "bench_reader: --big-ring wants THREADS,SLOTS,EVENTS or 0, not '%s'\n", argv[i] + 11);
          return 64;
        }
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  register_benchmarks();
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 64;
  g_bin_dir = fs::canonical("/proc/self/exe").parent_path();
  g_exe = g_bin_dir + "/big_crasher";
  g_ring_exe = g_bin_dir + "/big_ring_crasher";
  if (g_core_dir.empty()) g_core_dir = fs::path(g_bin_dir).parent_path() / "bench-cores";
  try {
    fs::create_directories(g_core_dir);
    for (int mib : g_sizes) g_cores[mib] = core_of(mib);
    if (!g_big_ring.empty()) {
      g_big_core = ring_core_of(g_big_ring);
      g_tiny_core = ring_core_of({g_big_ring[0], 8, 8});
      g_big_ring_size = ring_size_of(g_big_core);
      g_tiny_ring_size = ring_size_of(g_tiny_core);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_reader: cannot make the cores: %s\n(needs root and the pipeline: "
                         "tests/support/pipeline start)\n", e.what());
    return 1;
  }
  benchmark::AddCustomContext("rss_floor_KiB", std::to_string(peak_rss_kib({"/bin/true"})));
  for (int mib : g_sizes)
    benchmark::AddCustomContext("core_" + std::to_string(mib) + "MiB",
                                g_cores[mib] + " (" + std::to_string(fs::file_size(g_cores[mib]) >> 20) + " MiB)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_summary();
  return 0;
}
