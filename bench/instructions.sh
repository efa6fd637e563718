#!/bin/bash
# bench/instructions.sh [BUILD_DIR] - instructions per tl_mark2 call, enabled
# and disabled, counted by callgrind (inclusive of what tl_mark2 calls).
# Instruction counts are repeatable whatever else the machine is doing.
set -euo pipefail
build=${1:-build}
bin=$build/bin/bench_instr
n=100000
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for mode in disabled enabled; do
  valgrind --tool=callgrind --callgrind-out-file="$out/$mode.out" \
    --toggle-collect=tl_mark2 "$bin" "$mode" "$n" >/dev/null 2>&1
  total=$(callgrind_annotate "$out/$mode.out" 2>/dev/null |
    sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
  # The lane claim happens before counting starts; the loop makes n calls.
  printf '%-8s %s instructions per tl_mark2 call (%s over %s calls)\n' \
    "$mode" "$(awk -v t="$total" -v n="$n" 'BEGIN { printf "%.1f", t / n }')" "$total" "$n"
done
