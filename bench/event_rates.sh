#!/bin/bash
# bench/event_rates.sh [BUILD_DIR [RUNS]] - events per second that real
# programs record under the preload wrappers (docs/performance.md, "Event
# rates of real programs").
#
# BUILD_DIR (default: build) must hold a build of libtimeline, the two
# wrappers, core-timeline-read and bench/rates_workload (ninja -C BUILD_DIR
# timeline timeline_alloc timeline_io core-timeline-read rates_workload).
# Each workload runs RUNS times (default 3) with
#
#   LD_PRELOAD="libtimeline.so.1 libtimeline-alloc.so libtimeline-io.so"
#
# (the real ones, from BUILD_DIR) and a ring large enough that nothing is
# overwritten (TL_SLOTS=1048576):
#
#   python    /usr/bin/python3: json.dumps/json.loads of a medium structure
#             and a read of a small file, in a loop, for 1.5 s
#   cxx       rates_workload 8 0.5: 8 threads of std::map/std::string work and
#             small file writes for 0.5 s (one thread may record 1.2
#             million events a second: 1 s would overwrite its lane),
#             tl_mark 1000 times a second
#   pipeline  bash -c '{ for i in $(seq 10000); do echo $i; done; ...; } |
#             sort -n | uniq | wc -l'; measured in its busiest process, the
#             subshell running the loop (each process has its own ring).
#             10000, not fewer: the ages need the helper thread's first
#             clock anchor, taken 100 ms after tl_init, and 2000 lines take
#             some 30 ms
#
# At its end the measured process stops itself (SIGSTOP), gdb takes its core
# (gcore: no core_pattern, no systemd-coredump), it is continued, and the
# real reader decodes the core (core-timeline-read --no-symbols).  Its
# events are counted by kind (the text names a built-in event by its kind
# and a user or span event by its id's name, "id=0x5101": the workloads
# name none, and any other name is an error); the duration is the time from the process's
# first event to its last (ages in the reader's text).  A run with events
# dropped, overwritten or torn, or whose counted events differ from the
# reader's total, is an error.
#
# Prints one line per run and a summary (min-max over the runs) of events
# per second per source class: user (USER, USER_PTR, SPAN_BEGIN, SPAN_END,
# THREAD_NAME), alloc (MALLOC, FREE, CALLOC, REALLOC) and io (OPEN, READ,
# WRITE, CONNECT, CLOSE).  Then, for comparison, the work each workload does
# in the same time with the default ring (256 slots a lane) and no core: a
# big ring's first pass costs a page fault per 32 slots, which slows an
# allocation-heavy program down.
#
# Needs gdb and the right to ptrace the workload (root, or
# kernel.yama.ptrace_scope 0).  Takes about a minute for 3 runs; the cores
# (up to 1.4 GB) are made in a temporary directory and removed at once.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${2:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: bench/event_rates.sh [BUILD_DIR [RUNS]]" >&2; exit 64; }

find_built() {  # find_built NAME: the one file NAME under BUILD_DIR
  local found
  found=$(find "$build" -name "$1" \( -type f -o -type l \) -not -path '*/CMakeFiles/*' | head -1)
  [[ -n $found ]] || { echo "bench/event_rates.sh: no $1 in $build (build it first)" >&2; exit 1; }
  readlink -f "$found"
}
libtl=$(find_built libtimeline.so.1)
alloc=$(find_built libtimeline-alloc.so)
io=$(find_built libtimeline-io.so)
reader=$(find_built core-timeline-read)
workload=$(find_built rates_workload)
preload="$libtl $alloc $io"
python=/usr/bin/python3
command -v gdb >/dev/null || { echo "bench/event_rates.sh: needs gdb" >&2; exit 1; }

work=$(mktemp -d /tmp/event_rates.XXXXXX)
trap 'rm -rf "$work"' EXIT

cat > "$work/workload.py" <<'EOF'
# The python workload: json round trips of a medium structure and a read
# of a small file, for SECONDS; with STOP=1, SIGSTOP itself at the end.
import json, os, signal, sys, time
seconds = float(sys.argv[1])
path = sys.argv[2]
with open(path, "w") as f:
    f.write("line of text for the workload to read\n" * 100)
doc = {
    "users": [{"id": i, "name": "user%d" % i, "tags": ["a", "b", "c"][: i % 4],
               "score": i * 1.5, "active": i % 2 == 0} for i in range(200)],
    "meta": {"version": 3, "note": "x" * 300},
}
rounds = 0
start = time.monotonic()
while time.monotonic() - start < seconds:
    text = json.dumps(doc)
    back = json.loads(text)
    assert back["meta"]["version"] == 3
    with open(path) as f:
        f.read()
    rounds += 1
print("python workload: %d rounds in %.3f s" % (rounds, time.monotonic() - start), flush=True)
if os.environ.get("STOP") == "1":
    os.kill(os.getpid(), signal.SIGSTOP)
EOF

# capture PID CORE: wait until PID has stopped itself, take its core with
# gdb, let it go on.
capture() {
  local pid=$1 core=$2 i state
  for ((i = 0; i < 6000; i++)); do
    state=$(sed -n 's/^State:\s*\(\S\).*/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    [[ $state == T ]] && break
    [[ -z $state ]] && { echo "bench/event_rates.sh: process $pid ended before it stopped" >&2; exit 1; }
    sleep 0.01
  done
  [[ $state == T ]] || { echo "bench/event_rates.sh: process $pid did not stop" >&2; exit 1; }
  gdb -nx -p "$pid" -batch -ex "gcore $core" >"$work/gdb.log" 2>&1 ||
    { cat "$work/gdb.log" >&2; echo "bench/event_rates.sh: gcore of $pid failed" >&2; exit 1; }
  [[ -s $core ]] || { cat "$work/gdb.log" >&2; echo "bench/event_rates.sh: gcore wrote no $core" >&2; exit 1; }
  kill -CONT "$pid"
}

# count WORKLOAD RUN CORE: decode CORE with the real reader, count its
# events by kind, print a line and append it to the results.
count() {
  local name=$1 run=$2 core=$3
  "$reader" --no-symbols "$core" >"$work/timeline.txt" || {
    echo "bench/event_rates.sh: core-timeline-read failed on the $name core (exit $?)" >&2
    exit 1
  }
  rm -f "$core"
  awk -v name="$name" -v run="$run" '
    function ns(age,   v) {  # "-12.345ms", "-1.234567s", "0.000ms" -> ns
      v = age
      if (sub(/ms$/, "", v)) return v * 1e6
      if (sub(/s$/, "", v)) return v * 1e9
      bad = "age " age " (a process that lived under 100 ms has no clock rate)"
      return 0
    }
    NR == 1 { total = $(NF - 1); comm = $0; sub(/^.*\(/, "", comm); sub(/\).*$/, "", comm) }
    /^  ring [0-9]+ / {
      rings++
      if ($0 !~ /dropped=0 overwritten=0 torn=0/) lost = $0
    }
    $2 == "tid" && $3 ~ /^[0-9]+$/ {
      kind = $5  # the kind, or for user and span events the id'"'"'s name
      if (kind ~ /^(USER|USER_PTR|SPAN_BEGIN|SPAN_END|THREAD_NAME)$/ || kind ~ /^id=0x[0-9a-f]+$/) user++
      else if (kind ~ /^(MALLOC|FREE|CALLOC|REALLOC)$/) alloc++
      else if (kind ~ /^(OPEN|READ|WRITE|CONNECT|CLOSE)$/) io++
      else if (kind ~ /^(LANE_CLAIM|CRASH)$/) other++
      else bad = "kind " kind
      kinds[kind]++
      t = ns($1)
      if (n == 0) first = t
      last = t
      n++
    }
    END {
      if (rings != 1) { print "bench/event_rates.sh: " rings " rings in the " name " core" > "/dev/stderr"; exit 1 }
      if (lost != "") { print "bench/event_rates.sh: events lost in the " name " core: " lost > "/dev/stderr"; exit 1 }
      if (bad != "") { print "bench/event_rates.sh: unexpected " bad " in the " name " timeline" > "/dev/stderr"; exit 1 }
      if (n != total || n < 2) { print "bench/event_rates.sh: counted " n " events of the " total " the reader reports (" name ")" > "/dev/stderr"; exit 1 }
      span = (last - first) / 1e9
      detail = ""
      for (k in kinds) detail = detail " " k "=" kinds[k]
      printf "%-8s run %d  %-14s %8d events in %7.1f ms   user %9.0f/s  alloc %10.0f/s  io %9.0f/s   (%s)\n",
        name, run, comm, n, span * 1e3, user / span, alloc / span, io / span, substr(detail, 2)
      printf "%s %d %d %d %d %.9f\n", name, user, alloc, io, n, span >> results
    }' results="$work/results" "$work/timeline.txt"
}

big_ring=(TL_SLOTS=1048576)

run_python() {  # run_python RUN
  STOP=1 env "${big_ring[@]}" TL_LANES=2 LD_PRELOAD="$preload" "$python" "$work/workload.py" 1.5 "$work/py.txt" \
    >"$work/python.out" &
  local pid=$!
  capture "$pid" "$work/core"
  wait "$pid"
  count python "$1" "$work/core"
}

run_cxx() {  # run_cxx RUN: 8 workers, the main thread, and the shared lane
  RATES_WORKLOAD_STOP=1 env "${big_ring[@]}" TL_LANES=9 LD_PRELOAD="$preload" "$workload" 8 0.5 "$work" \
    >"$work/cxx.out" &
  local pid=$!
  capture "$pid" "$work/core"
  wait "$pid"
  count cxx "$1" "$work/core"
}

run_pipeline() {  # run_pipeline RUN: the loop's subshell stops itself
  rm -f "$work/pipeline.pid"
  PIDFILE=$work/pipeline.pid env "${big_ring[@]}" TL_LANES=2 LD_PRELOAD="$preload" /bin/bash -c \
    '{ for i in $(seq 10000); do echo $i; done; echo $BASHPID > "$PIDFILE"; kill -STOP $BASHPID; } | sort -n | uniq | wc -l' \
    >"$work/pipeline.out" &
  local shell=$! i
  for ((i = 0; i < 6000; i++)); do
    [[ -s $work/pipeline.pid ]] && break
    sleep 0.01
  done
  capture "$(cat "$work/pipeline.pid")" "$work/core"
  wait "$shell"
  [[ $(tr -d ' ' <"$work/pipeline.out") == 10000 ]] ||
    { echo "bench/event_rates.sh: the pipeline printed $(cat "$work/pipeline.out"), not 10000" >&2; exit 1; }
  count pipeline "$1" "$work/core"
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "kernel: $(uname -r); $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "LD_PRELOAD=\"$preload\""
echo
: >"$work/results"
for ((r = 1; r <= runs; r++)); do
  run_python "$r"
  run_cxx "$r"
  run_pipeline "$r"
done
echo
echo "events per second, min-max over $runs runs (events counted / first to last event):"
awk '
  { k = $1; t = $6
    for (c = 2; c <= 5; c++) {
      v = $c / t
      if (!(k SUBSEP c in lo) || v < lo[k, c]) lo[k, c] = v
      if (!(k SUBSEP c in hi) || v > hi[k, c]) hi[k, c] = v
    }
    if (!(k in seen)) { seen[k] = 1; order[++names] = k }
  }
  END {
    split("- user alloc io all", label, " ")
    for (i = 1; i <= names; i++) {
      k = order[i]
      line = sprintf("%-8s", k)
      for (c = 2; c <= 5; c++) line = line sprintf("  %s %.0f-%.0f/s", label[c], lo[k, c], hi[k, c])
      print line
    }
  }' "$work/results"
echo
echo "the same work with the default ring (256 slots a lane), no core, beside the big ring's last run:"
echo "  big ring:     $(cat "$work/python.out"); $(cat "$work/cxx.out")"
python_default=$(env LD_PRELOAD="$preload" "$python" "$work/workload.py" 1.5 "$work/py.txt")
cxx_default=$(env LD_PRELOAD="$preload" "$workload" 8 0.5 "$work")
echo "  default ring: $python_default; $cxx_default"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
