#!/bin/sh
# coverage.sh BUILD [OUT]
#
# Source-based coverage (clang -fprofile-instr-generate -fcoverage-mapping)
# of the reader and the document module over the repository's corpora:
# builds fuzz_reader_cov and fuzz_recipe_cov, runs each input of
# reader/fuzz/corpus and reader/fuzz/corpus-recipe once (-runs=0), merges
# the profiles with llvm-profdata-14 and prints llvm-cov-14's report of
# reader/src (document/ included) per target and for both.  OUT (default
# BUILD/fuzz-coverage) keeps the profiles and an HTML report.
set -eu
build=$1 out=${2:-$1/fuzz-coverage}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
nice ninja -C "$build" -j2 fuzz_reader_cov fuzz_recipe_cov
rm -rf "$out" && mkdir -p "$out"
for t in reader recipe; do
  corpus=$here/corpus
  [ "$t" = recipe ] && corpus=$here/corpus-recipe
  LLVM_PROFILE_FILE="$out/$t-%p.profraw" "$build/bin/fuzz_${t}_cov" -runs=0 "$corpus" > "$out/$t.log" 2>&1
  llvm-profdata-14 merge -sparse "$out/$t"-*.profraw -o "$out/$t.profdata"
done
llvm-profdata-14 merge -sparse "$out/reader.profdata" "$out/recipe.profdata" -o "$out/both.profdata"
filter="$src/reader/src"
ignore='(symbolize|live|export_ctf|tlmap)\.cc$'
for t in reader recipe; do
  echo "== fuzz_$t over its corpus"
  llvm-cov-14 report "$build/bin/fuzz_${t}_cov" -instr-profile="$out/$t.profdata" "$filter" \
    -ignore-filename-regex="$ignore" | tail -n 1
done
echo "== both targets"
llvm-cov-14 report "$build/bin/fuzz_recipe_cov" -object "$build/bin/fuzz_reader_cov" \
  -instr-profile="$out/both.profdata" "$filter" -ignore-filename-regex="$ignore"
llvm-cov-14 show "$build/bin/fuzz_recipe_cov" -object "$build/bin/fuzz_reader_cov" \
  -instr-profile="$out/both.profdata" "$filter" -ignore-filename-regex="$ignore" \
  -format=html -output-dir="$out/html" >/dev/null
echo "(left out: files no core's bytes reach without libdwfl or a live process: $ignore)"
