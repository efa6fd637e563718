#!/bin/sh
# coverage.sh BUILD [OUT]
#
# Source-based coverage (clang -fprofile-instr-generate -fcoverage-mapping)
# of the reader and the document module over the repository's corpora:
# builds fuzz_reader_cov and fuzz_recipe_cov, runs each input of
# reader/fuzz/corpus and reader/fuzz/corpus-recipe (the seeds) and of
# the campaign's corpora (what it kept, reader/fuzz/campaign/<target>.tar.xz
# where there is such an archive, unpacked into OUT/campaign) once (-runs=0), merges
# the profiles with llvm-profdata-14 and prints llvm-cov-14's report of
# reader/src (document/ included) per target and for both; then
# fuzz_document_cov over reader/fuzz/corpus-document, reported over the
# document module and ctl-query's document reader.  OUT (default
# BUILD/fuzz-coverage) keeps the profiles and an HTML report.
set -eu
build=$1 out=${2:-$1/fuzz-coverage}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
nice cmake --build "$build" -j2 --target fuzz_reader_cov fuzz_recipe_cov fuzz_document_cov
rm -rf "$out" && mkdir -p "$out"
"$here/campaign_corpus.sh" unpack "$out/campaign"
for t in reader recipe; do
  corpus=$here/corpus
  [ "$t" = recipe ] && corpus=$here/corpus-recipe
  kept=
  [ -d "$out/campaign/fuzz_$t" ] && kept=$out/campaign/fuzz_$t
  # shellcheck disable=SC2086
  LLVM_PROFILE_FILE="$out/$t-%p.profraw" "$build/bin/fuzz_${t}_cov" -runs=0 "$corpus" $kept > "$out/$t.log" 2>&1
  echo "fuzz_$t: $(find "$corpus" $kept -type f | wc -l) inputs ($corpus${kept:+ and $kept})"
  llvm-profdata-14 merge -sparse "$out/$t"-*.profraw -o "$out/$t.profdata"
done
llvm-profdata-14 merge -sparse "$out/reader.profdata" "$out/recipe.profdata" -o "$out/both.profdata"
# Only reader/src (the document module is reader/src/document): headers,
# the builder, the fuzz targets and system headers are left out.
base='(^/usr/|/include/|/tests/reader/|reader/fuzz/[a-z_]+\.(cc|h)$)'
unreached='(symbolize|live|export_ctf|tlmap)\.cc$'
report() { # PROFDATA IGNORE BINARIES...
  prof=$1 ign=$2
  shift 2
  first=$1
  shift
  objs=""
  for b in "$@"; do objs="$objs -object $b"; done
  # shellcheck disable=SC2086
  llvm-cov-14 report "$first" $objs -instr-profile="$prof" -ignore-filename-regex="$ign" 2>/dev/null
}
for t in reader recipe; do
  echo "== fuzz_$t over its corpus: reader/src less $unreached"
  report "$out/$t.profdata" "$base|$unreached" "$build/bin/fuzz_${t}_cov" | tail -n 1
done
echo "== both targets: reader/src less $unreached"
report "$out/both.profdata" "$base|$unreached" "$build/bin/fuzz_recipe_cov" "$build/bin/fuzz_reader_cov"
echo "== both targets: the document module (reader/src/document)"
report "$out/both.profdata" "$base|reader/src/[a-z_]*\.cc$" "$build/bin/fuzz_recipe_cov" "$build/bin/fuzz_reader_cov"
echo "== both targets: all of reader/src"
report "$out/both.profdata" "$base" "$build/bin/fuzz_recipe_cov" "$build/bin/fuzz_reader_cov" | tail -n 1
llvm-cov-14 show "$build/bin/fuzz_recipe_cov" -object "$build/bin/fuzz_reader_cov" \
  -instr-profile="$out/both.profdata" -ignore-filename-regex="$base" \
  -format=html -output-dir="$out/html" >/dev/null 2>&1
LLVM_PROFILE_FILE="$out/document-%p.profraw" "$build/bin/fuzz_document_cov" -runs=0 "$here/corpus-document" \
  > "$out/document.log" 2>&1
llvm-profdata-14 merge -sparse "$out"/document-*.profraw -o "$out/document.profdata"
echo "== fuzz_document over its corpus: reader/src/document and daemon/ctl-query/document_reader.cc"
report "$out/document.profdata" "$base|reader/src/[a-z_]*\.cc$" "$build/bin/fuzz_document_cov"
echo "(HTML: $out/html/index.html; columns: regions, functions, lines, branches)"
