#!/usr/bin/env bash
# Builds a fuzz target with clang + libFuzzer + ASan + UBSan and runs it.
#   scripts/fuzz.sh TARGET SECONDS [OUT_DIR]     e.g. scripts/fuzz.sh idx 3600 /tmp/fuzz-idx
# TARGET names tests/fuzz/TARGET_fuzz.cpp; its seeds are tests/fuzz/corpus/TARGET/ (read only: new
# inputs go to OUT_DIR/corpus). A crash leaves OUT_DIR/crash-* and exits non-zero; once fixed, copy
# the file into tests/fuzz/corpus/TARGET/ so every test run replays it. The last lines are
# libFuzzer's final stats (executions, coverage) for docs/RELIABILITY.md.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz.sh TARGET SECONDS [OUT_DIR]} seconds=${2:?usage: fuzz.sh TARGET SECONDS [OUT_DIR]}
out=${3:-build-fuzz/$target}
# What the target is built from: tests/fuzz/TARGET.sources (sources, -l and -I flags), the same list
# the replay ctest builds from (no LibTorch library: the parsers are plain C++).
list=tests/fuzz/$target.sources
if [[ ! -f $list || ! -f tests/fuzz/${target}_fuzz.cpp ]]; then
  echo "fuzz.sh: unknown target '$target' (no $list or tests/fuzz/${target}_fuzz.cpp)" >&2
  exit 2
fi
sources=() flags=()
while read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  case $line in -l*|-I*) flags+=("$line") ;; *) sources+=("$line") ;; esac
done < "$list"
clangxx=$(command -v clang++ || command -v clang++-14 || true)
if [[ -z $clangxx ]]; then
  echo "fuzz.sh: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 3
fi
mkdir -p "$out/corpus" "$out/obj"
# One object per source, through ccache when there is one: the targets share their helpers
# (numbers.cpp is in six, json.cpp and files.cpp in four), so each compiles once per machine, not
# once per target. -fsanitize=fuzzer-no-link instruments without libFuzzer's main; the link adds it.
cache=()
if command -v ccache > /dev/null; then
  cache=(ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
compile=("${cache[@]}" "$clangxx" -std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined
         -fno-sanitize-recover=undefined -Iinclude -Isrc)
includes=()
for f in "${flags[@]}"; do [[ $f == -I* ]] && includes+=("$f"); done
objects=()
for src in "tests/fuzz/${target}_fuzz.cpp" "${sources[@]}"; do
  obj="$out/obj/$(printf %s "${src%.cpp}" | tr / _).o"
  "${compile[@]}" "${includes[@]}" -c "$src" -o "$obj"
  objects+=("$obj")
done
libs=()
for f in "${flags[@]}"; do [[ $f == -l* ]] && libs+=("$f"); done
"$clangxx" -fsanitize=fuzzer,address,undefined "${objects[@]}" "${libs[@]}" -lpthread -o "$out/${target}_fuzz"
echo "fuzz.sh: running $target for $seconds s"
set +e
"$out/${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/corpus" "tests/fuzz/corpus/$target" > "$out/fuzz.log" 2>&1
rc=$?
set -e
if ((rc != 0)); then
  tail -n 60 "$out/fuzz.log"
  echo "fuzz.sh: $target FAILED (exit $rc); the input is in $out/crash-* (full log: $out/fuzz.log)" >&2
  exit 1
fi
grep -E "DONE|stat::" "$out/fuzz.log"
echo "fuzz.sh: $target ran $seconds s with no crash (log: $out/fuzz.log)"
