#!/bin/sh
# run_fuzz_smoke.sh FUZZER SEEDS REGRESSIONS WORKDIR SECONDS
# Replays every regression input, then fuzzes from the seeds for SECONDS
# (new inputs go to WORKDIR, never into the repository).  Exits non-zero on
# the first crash, leak or timeout libFuzzer reports.
set -eu
fuzzer=$1 seeds=$2 regressions=$3 work=$4 seconds=$5
mkdir -p "$work/corpus" "$work/artifacts"
set -- "$regressions"/*
if [ -e "$1" ]; then
  "$fuzzer" -rss_limit_mb=2048 -timeout=10 "$@"
fi
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=1048576 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$seeds"
