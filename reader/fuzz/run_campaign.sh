#!/bin/sh
# run_campaign.sh BUILD WORK [TOTAL [RECIPE_ROUND [READER_ROUND]]]
#
# The documented fuzzing campaign (docs/fuzzing.md): rounds of fuzz_recipe
# (RECIPE_ROUND executions, default 100,000) then fuzz_reader (READER_ROUND,
# default 10,000), until TOTAL executions (default 10,000,000) are done, one
# process at a time at nice 10 (the machine is shared).  Each target starts
# from the repository's corpus and grows its own copy under
# WORK/<target>/corpus across rounds.  Each round's log is
# WORK/<target>.<round>.log; WORK/campaign.log has one line per round:
#   TIME TARGET round N: exit RC, E execs in S s (R exec/s), total T; corpus F files K KiB
# Crashes go to WORK/<target>/artifacts/; the script stops at the first
# crash, leak, timeout, out-of-memory or oracle failure (libFuzzer's exit
# code).  Run it in the background and look at it now and then:
#   nohup reader/fuzz/run_campaign.sh build /var/tmp/ct-fuzz > /var/tmp/ct-fuzz.out 2>&1 &
#   tail /var/tmp/ct-fuzz/campaign.log
# Afterwards, keep what it found, minimized, in the repository, beside the
# seeds (which CI runs once each; reader_fuzz_smoke), as the archive
# reader/fuzz/campaign/<target>.tar.xz (which the next campaign starts
# from, and CI's sanitizer step replays; campaign_corpus.sh):
#   reader/fuzz/campaign_corpus.sh unpack K
#   mkdir -p M && build/bin/fuzz_recipe -merge=1 M reader/fuzz/corpus-recipe \
#     K/fuzz_recipe /var/tmp/ct-fuzz/job*/fuzz_recipe/corpus
#   then put into a directory named fuzz_recipe what M has and corpus-recipe
#   has not, and run reader/fuzz/campaign_corpus.sh pack on it (the same
#   for fuzz_reader and reader/fuzz/corpus).
#
# CT_FUZZ_TIMEOUT=S (default 120): libFuzzer's -timeout, in seconds.
# CT_FUZZ_JOBS=N (default 1) runs N such campaigns at once, one per core,
# each of TOTAL/N executions in WORK/jobK (each its own corpus), and sums
# them when all are done: the campaign on this 2-core machine was JOBS=2.
set -eu
build=$1 work=$2 total=${3:-10000000} recipe_round=${4:-100000} reader_round=${5:-10000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
jobs=${CT_FUZZ_JOBS:-1}
if [ "$jobs" -gt 1 ]; then
  pids=
  k=1
  while [ "$k" -le "$jobs" ]; do
    CT_FUZZ_JOBS=1 "$0" "$build" "$work/job$k" $((total / jobs)) "$recipe_round" "$reader_round" \
      > "$work/job$k.out" 2>&1 &
    pids="$pids $!"
    k=$((k + 1))
  done
  rc=0
  for p in $pids; do wait "$p" || rc=$?; done
  sum=$(cat "$work"/job*/campaign.log |
        sed -n 's/.* round [0-9]*: exit [0-9]*, \([0-9]*\) execs .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  echo "$(date -u +%FT%TZ) campaign: $jobs jobs ended (last exit $rc), $sum executions in all" | tee -a "$work/campaign.log"
  exit "$rc"
fi
# A campaign stopped and started again with the same WORK goes on: its
# executions so far are the sum of campaign.log's rounds.
done_total=$(sed -n 's/.* round [0-9]*: exit [0-9]*, \([0-9]*\) execs .*/\1/p' "$work/campaign.log" 2>/dev/null |
             awk '{ s += $1 } END { print s + 0 }')
round=$(grep -c ' fuzz_recipe round [0-9]*: ' "$work/campaign.log" 2>/dev/null || true)
round=${round:-0}
# What earlier campaigns grew, unpacked from reader/fuzz/campaign/*.tar.xz
# into WORK/campaign/<target>, seeds this one too.
"$here/campaign_corpus.sh" unpack "$work/campaign"
run() {
  target=$1 runs=$2 seeds=$3 max_len=$4
  grown=$work/campaign/$target
  [ -d "$grown" ] || grown=$seeds
  mkdir -p "$work/$target/corpus" "$work/$target/artifacts"
  log=$work/$target.$round.log
  start=$(date +%s)
  rc=0
  # -entropic=0: the entropic schedule's per-feature bookkeeping cost 3.7
  # times the executions per CPU second here (docs/fuzzing.md).
  # malloc_context_size=0: no allocation stacks in reports (a finding is
  # replayed with them); ASan's stack depot was a tenth of the time.
  # quarantine_size_mb=16: ASan holds freed blocks back 16 MB deep, not
  # 256, so a use after free is caught while the block is among the last
  # 16 MB freed, and the allocator reuses warm pages instead of faulting
  # in fresh ones: a replay of the campaign corpus of fuzz_recipe took a fifth less
  # time (docs/fuzzing.md, "Speed").
  # -timeout: libFuzzer's is wall-clock time, and at nice 19 on a machine
  # busy with builds an input of 0.1 s was starved past 10 s (two false
  # timeouts in the first 20 minutes; replayed, they took 25-121 ms).
  # (No comment may stand between the assignment and the command: a
  # comment line ends the command there, and the variable is then set in
  # this shell only, never in the fuzzer's environment.)
  ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0:quarantine_size_mb=16} \
  nice -n 10 "$build/bin/$target" -runs="$runs" -entropic=0 -max_len="$max_len" -timeout="${CT_FUZZ_TIMEOUT:-120}" \
    -rss_limit_mb=2048 -print_final_stats=1 -reload=0 -artifact_prefix="$work/$target/artifacts/" \
    "$work/$target/corpus" "$seeds" "$grown" > "$log" 2>&1 || rc=$?
  end=$(date +%s)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  done_total=$((done_total + ${execs:-0}))
  echo "$(date -u +%FT%TZ) $target round $round: exit $rc, ${execs:-?} execs in $((end - start)) s" \
       "(${rate:-?} exec/s), total $done_total; corpus $(ls "$work/$target/corpus" | wc -l) files" \
       "$(du -sk "$work/$target/corpus" | cut -f1) KiB; artifacts $(ls "$work/$target/artifacts" | wc -l)" \
    | tee -a "$work/campaign.log"
  return "$rc"
}
echo "$(date -u +%FT%TZ) campaign: $total executions ($done_total done before), rounds of $recipe_round (fuzz_recipe) and" \
     "$reader_round (fuzz_reader); $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')" \
  | tee -a "$work/campaign.log"
while [ "$done_total" -lt "$total" ]; do
  round=$((round + 1))
  run fuzz_recipe "$recipe_round" "$here/corpus-recipe" 1024
  [ "$done_total" -lt "$total" ] || break
  run fuzz_reader "$reader_round" "$here/corpus" 32768
done
echo "$(date -u +%FT%TZ) campaign: done, $done_total executions" | tee -a "$work/campaign.log"
