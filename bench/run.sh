#!/bin/bash
# bench/run.sh [BUILD_DIR] - regenerate every number in docs/performance.md.
#
# Installs what it needs (packaging/install-build-deps), builds the
# benchmarks in BUILD_DIR (default: build), starts the real crash pipeline
# (tests/support/pipeline; stopped again at the end if this run started it)
# and runs, one after the other so they do not disturb each other:
#
#   bench_overhead   recording one event, beside spdlog and LTTng-UST
#   instructions.sh  instructions per tl_mark2 call under callgrind
#   bench_reader     core-timeline-read on 10 MiB, 100 MiB, 1 GiB cores,
#                    beside eu-stack and gdb; group_signature() beside the
#                    analysis of the same core
#   bench_daemon     a crash to its timeline.json, beside zstd -d and
#                    coredumpctl dump; a storm of 32
#   bench_document_path  the daemon's document path (parse, build,
#                    serialize, journal entry) step by step, big rings: the
#                    compact document it stores, beside the full one
#   event_rates.sh   events per second of python3, a multi-threaded C++
#                    program and a shell pipeline under the preload
#                    wrappers (cores by gdb's gcore, not the pipeline)
#   redis_overhead.py  redis-benchmark against Debian's redis-server: no
#                    preload, libtimeline.so.1, all wrappers (and, with
#                    BENCH_IO_BYTES=N, the wrappers with TL_IO_BYTES=N;
#                    with BENCH_MAIN_BUILD=DIR, another build's wrappers
#                    beside, for the ring's windows), interleaved, with and
#                    without -P 16: requests/s ratios, RSS, windows
#   redis_document.sh  redis under all wrappers crashed through the
#                    pipeline: the stored document's bytes an event, the
#                    daemon's time, beside core-timeline-read on the core,
#                    and ctl-query show of it
#   bench_query.py   ctl-query list / group / events --name / show over 100,000
#                    timeline entries in a journal, beside coredumpctl list
#                    and info over 100,000 coredump entries and beside the
#                    scan of 100,000 timeline files
#
# Everything printed is also kept in BUILD_DIR/bench-results/<time>/.
# Needs root (cores, the pipeline, kernel.core_pipe_limit).  Takes about two
# minutes and a half on a 2-vCPU VM once built; the first run also makes
# bench_reader's cores (1.2 GB in BUILD_DIR/bench-cores/, kept for the next
# runs of the same build), some 10 s more, and bench_query's corpus (in
# BUILD_DIR/bench-query-100000-split/, about 1 GB, kept too) some minutes more:
# bench_query prints how long it took.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
[[ $(id -u) == 0 ]] || { echo "bench/run.sh: needs root (cores, the crash pipeline)" >&2; exit 1; }

"$src/packaging/install-build-deps"
cmake -S "$src" -B "$build" -G Ninja >/dev/null
cmake --build "$build" --target bench_overhead bench_instr bench_reader bench_daemon \
  rates_workload timeline timeline_alloc timeline_io core-timeline-read ctl-query bench_document_path

export CT_PIPELINE_HOLDER=$$
"$src/tests/support/pipeline" start
trap '"$src/tests/support/pipeline" stop || true' EXIT

out=$build/bench-results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "kernel: $(uname -r); $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

run() {  # run NAME COMMAND...: prints and keeps the output
  local name=$1
  shift
  echo
  echo "== $name: $*"
  "$@" 2>&1 | tee "$out/$name.txt"
}
run bench_overhead "$build/bin/bench_overhead" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
run instructions "$src/bench/instructions.sh" "$build"
run bench_reader "$build/bin/bench_reader"
run bench_daemon "$build/bin/bench_daemon"
run bench_document_path "$build/bin/bench_document_path" 3 65536 131071
run event_rates "$src/bench/event_rates.sh" "$build"
redis_args=()
[[ -n ${BENCH_IO_BYTES:-} ]] && redis_args+=(--io-bytes "$BENCH_IO_BYTES")
[[ -n ${BENCH_MAIN_BUILD:-} ]] && redis_args+=(--main-build "$BENCH_MAIN_BUILD")
run redis_overhead /usr/bin/python3 "$src/bench/redis_overhead.py" "$build" --out "$out/redis_overhead.json" \
  "${redis_args[@]}"
run redis_document "$src/bench/redis_document.sh" "$build"
run bench_query /usr/bin/python3 "$src/bench/bench_query.py" "$build"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
echo
echo "bench/run.sh: results kept in $out"
