#!/bin/bash
# bench/redis_document.sh [BUILD_DIR] - the stored timeline of a real
# program's crash, beside core-timeline-read on the same core.
#
# Debian's redis-server under every wrapper (libtimeline.so.1,
# libtimeline-alloc.so, libtimeline-io.so; TL_BUDGET=16M) serves
# redis-benchmark -P 16 until its allocation and I/O lanes have wrapped,
# then dies of kill -SEGV (its own crash handler re-raises it).  The real
# pipeline (tests/support/pipeline, running) stores the core; a
# core-timelined of BUILD_DIR (its own state and output directories,
# --first-start new) makes the timeline.  Prints:
#   - the stored document's bytes, events and bytes per event;
#   - the daemon's own "daemon" object: duration_ms (its whole handling of
#     the entry) and latency_ms (the entry's time to the stored file);
#   - core-timeline-read --format=json, --format=compact and the text on
#     the same core (decompressed once, untimed): seconds, peak RSS, bytes;
#   - ctl-query show of the stored timeline: seconds, peak RSS, and whether
#     its text is core-timeline-read's, byte for byte.
# Needs root and the pipeline; stops what it started on every way out.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
port=${REDIS_PORT:-7799}
work=$(mktemp -d /tmp/ct-redis-document.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/state" "$work/out"

"$build/bin/core-timelined" --first-start new --state-dir "$work/state" --output-dir "$work/out" \
  --log-target stderr 2>"$work/daemon.log" &
daemon=$!
pids+=("$daemon")
sleep 1
lib=$build/lib
LD_PRELOAD="$lib/libtimeline.so.1 $lib/libtimeline-alloc.so $lib/libtimeline-io.so" TL_BUDGET=16M \
  redis-server --port "$port" --save '' --appendonly no >"$work/redis.log" 2>&1 &
redis=$!
pids+=("$redis")
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-benchmark -p "$port" -n 100000 -P 16 -q >"$work/benchmark.log" 2>&1
kill -SEGV "$redis"
wait "$redis" 2>/dev/null || true
timeline=
for _ in $(seq 240); do
  timeline=$(ls "$work"/out/*.timeline.json 2>/dev/null | head -1 || true)
  [[ -n $timeline ]] && break
  sleep 0.25
done
[[ -n $timeline ]] || { echo "redis_document: no timeline in 60 s" >&2; cat "$work/daemon.log" >&2; exit 1; }
kill -TERM "$daemon"
wait "$daemon" || true

python3 - "$timeline" <<'EOF'
import json, os, sys
path = sys.argv[1]
d = json.load(open(path))
n = len(d.get("events", []))
size = os.path.getsize(path)
print(f"stored document: {size} bytes, schema_version {d['schema_version']}, status {d['status']}, "
      f"{n} events, {size / max(n, 1):.1f} bytes an event")
dm = d["daemon"]
print(f"core-timelined: duration_ms {dm['duration_ms']:.0f}, latency_ms {dm['latency_ms']:.0f}, "
      f"decoder duration_ms {dm['decoder']['duration_ms']:.0f}, sparse copy {dm['extraction']['sparse']}")
EOF
core=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["coredump"]["core_file"])' "$timeline")
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["coredump"]["fields"]["COREDUMP_PID"])' "$timeline")
zstd -q -d -c "$core" >"$work/core"
for format in json compact text; do
  /usr/bin/time -f "%e s (CPU %U s user, %S s system), %M KB peak RSS" -o "$work/time" \
    "$build/bin/core-timeline-read" --format="$format" "$work/core" >"$work/read.$format" 2>/dev/null || true
  echo "core-timeline-read --format=$format: $(cat "$work/time"), $(stat -c %s "$work/read.$format") bytes"
done
/usr/bin/time -f "%e s (CPU %U s user, %S s system), %M KB peak RSS" -o "$work/time" \
  "$build/bin/ctl-query" -D "$work/out" show "$pid" >"$work/show.txt" 2>/dev/null || true
same=no
cmp -s "$work/show.txt" "$work/read.text" && same=yes
echo "ctl-query show: $(cat "$work/time"); its text is core-timeline-read's byte for byte: $same"
