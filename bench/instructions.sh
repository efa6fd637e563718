#!/bin/bash
# bench/instructions.sh [BUILD_DIR] - instructions per tl_mark2 call, enabled
# and disabled, and per tl_span_begin + tl_span_end pair, counted by
# callgrind (inclusive of what they call).
# Instruction counts are repeatable whatever else the machine is doing.
set -euo pipefail
build=${1:-build}
bin=$build/bin/bench_instr
n=100000
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for mode in disabled enabled span; do
  if [[ $mode == span ]]; then
    collect=(--toggle-collect=tl_span_begin --toggle-collect=tl_span_end)
    what="tl_span_begin + tl_span_end pair"
  else
    collect=(--toggle-collect=tl_mark2)
    what="tl_mark2 call"
  fi
  valgrind --tool=callgrind --callgrind-out-file="$out/$mode.out" \
    "${collect[@]}" "$bin" "$mode" "$n" >/dev/null 2>&1
  total=$(callgrind_annotate "$out/$mode.out" 2>/dev/null |
    sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
  # The lane claim happens before counting starts; the loop makes n calls.
  printf '%-8s %s instructions per %s (%s over %s calls)\n' \
    "$mode" "$(awk -v t="$total" -v n="$n" 'BEGIN { printf "%.1f", t / n }')" "$what" "$total" "$n"
done
