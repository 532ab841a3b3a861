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
# The sources each target needs (no LibTorch: the parsers are plain C++).
case $target in
  idx) sources=(src/data/idx/idx_file.cpp src/data/common/gzip.cpp src/data/common/file_bytes.cpp
                src/data/cifar/cifar_from_idx.cpp) libs=(-lz) ;;
  *) echo "fuzz.sh: unknown target '$target'" >&2; exit 2 ;;
esac
clangxx=$(command -v clang++ || command -v clang++-14 || true)
if [[ -z $clangxx ]]; then
  echo "fuzz.sh: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 3
fi
mkdir -p "$out/corpus"
"$clangxx" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -Isrc "tests/fuzz/${target}_fuzz.cpp" "${sources[@]}" "${libs[@]}" -o "$out/${target}_fuzz"
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
