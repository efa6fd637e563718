#!/bin/sh
# run_fuzz_smoke.sh WORKDIR SECONDS FUZZER CORPUS REGRESSIONS [FUZZER CORPUS REGRESSIONS]...
# For each target: replays every regression input, runs every corpus input
# once (-runs=0), then fuzzes from the corpus for SECONDS (new inputs go to
# WORKDIR, never into the repository).  Exits non-zero on the first crash,
# leak, timeout or oracle failure libFuzzer reports.
set -eu
work=$1 seconds=$2
shift 2
while [ $# -ge 3 ]; do
  fuzzer=$1 corpus=$2 regressions=$3
  shift 3
  name=$(basename "$fuzzer")
  mkdir -p "$work/$name/corpus" "$work/$name/artifacts"
  flags="-rss_limit_mb=2048 -timeout=10 -artifact_prefix=$work/$name/artifacts/"
  inputs=$(find "$regressions" -type f ! -name .keep | sort)
  if [ -n "$inputs" ]; then
    echo "== $name: $(echo "$inputs" | wc -l) regression inputs"
    # shellcheck disable=SC2086
    "$fuzzer" $flags $inputs
  fi
  echo "== $name: the corpus $corpus once"
  # shellcheck disable=SC2086
  "$fuzzer" $flags -runs=0 "$corpus"
  echo "== $name: $seconds s from the corpus"
  # shellcheck disable=SC2086
  "$fuzzer" $flags -max_total_time="$seconds" -max_len=32768 -print_final_stats=1 "$work/$name/corpus" "$corpus"
done
