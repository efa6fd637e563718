#!/bin/sh
# campaign_corpus.sh unpack DEST
# campaign_corpus.sh pack DIR
#
# The fuzzing campaign's merged corpus is kept in the repository as one
# archive per target, reader/fuzz/campaign/<target>.tar.xz, holding
# <target>/<input> (libFuzzer's names: the SHA-1 of the input).  The seeds
# (reader/fuzz/corpus*) and the regression inputs (reader/fuzz/regressions)
# stay files.
#
# unpack DEST: extracts every archive into DEST (DEST/<target>/, emptied
# first, so no input of an older archive stays), with `cmake -E tar`, which
# needs no xz program; then prints one line per target with its count of
# inputs, and fails if an archive yields none.  The build does this into
# <build>/tests/reader/fuzz-campaign for reader_fuzz_recipe_replay (target
# fuzz_campaign_corpus); run_campaign.sh and coverage.sh do it into their
# own directories.
#
# pack DIR: DIR is a directory named after its target (fuzz_recipe), such
# as a `-merge=1` result moved into place; writes
# reader/fuzz/campaign/<target>.tar.xz from DIR's regular files, byte for
# byte the same for the same inputs (sorted names, owner 0, mtime 0, xz -9).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
usage() { echo "usage: campaign_corpus.sh unpack DEST | pack DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
case $1 in
unpack)
  mkdir -p "$2"
  dest=$(cd "$2" && pwd)
  found=0
  for a in "$here"/campaign/*.tar.xz; do
    [ -f "$a" ] || continue
    found=1
    target=$(basename "$a" .tar.xz)
    rm -rf "${dest:?}/$target"
    (cd "$dest" && cmake -E tar xf "$a")
    n=$(find "$dest/$target" -type f 2>/dev/null | wc -l)
    if [ "$n" -eq 0 ]; then
      echo "campaign_corpus.sh: $a holds no inputs under $target/" >&2
      exit 1
    fi
    echo "campaign_corpus.sh: $n inputs of $target in $dest/$target"
  done
  [ "$found" = 1 ] || { echo "campaign_corpus.sh: no archive in $here/campaign" >&2; exit 1; }
  ;;
pack)
  dir=$(cd "$2" && pwd)
  target=$(basename "$dir")
  out=$here/campaign/$target.tar.xz
  mkdir -p "$here/campaign"
  (cd "$dir/.." && find "$target" -type f -print | LC_ALL=C sort |
     tar --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=0644 --no-recursion \
       -cf - -T -) | xz -9 -T1 > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "campaign_corpus.sh: $(find "$dir" -type f | wc -l) inputs of $target in $out ($(wc -c < "$out") bytes)"
  ;;
*) usage ;;
esac
