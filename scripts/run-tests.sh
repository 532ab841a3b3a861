#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, and runs the whole suite twice:
# against Debian 12's LibTorch 1.13 on this machine, then against Debian 13's LibTorch 2.6 in a
# cached trixie root (scripts/run-tests-trixie.sh). Between them, on Debian 12, the store, Gloo,
# reducer and checkpoint tests run again built with ASan + UBSan (scripts/sanitize.sh asan, in
# build-asan). All run even when one fails; the exit code is non-zero when any failed.
# DDP_SUITES picks some of them (default "1.13 asan 2.6"). Extra arguments go to the two full
# ctest runs.
set -uo pipefail
cd "$(dirname "$0")/.."
SUITES=${DDP_SUITES:-1.13 asan 2.6}
declare -A result
# The sanitized part CI runs: the threaded and byte-handling core (docs/TESTING.md, "Sanitizers").
CI_ASAN_TARGETS="test_store test_gloo test_gloo_peer_directory test_ddp_buckets test_ddp test_checkpoint"
start=$(date +%s)
bash scripts/install-deps.sh || exit

if [[ " $SUITES " == *" 1.13 "* ]]; then
  t0=$(date +%s)
  echo "== LibTorch 1.13 suite (Debian 12)"
  ( set -e
    bash scripts/build.sh
    cd "${BUILD_DIR:-build}"
    ctest --output-on-failure --timeout 900 -j "${DDP_TEST_JOBS:-2}" "$@" )
  result[1.13]=$?
  echo "== LibTorch 1.13 suite: exit ${result[1.13]} after $(( $(date +%s) - t0 )) s"
fi
if [[ " $SUITES " == *" asan "* ]]; then
  t0=$(date +%s)
  echo "== ASan + UBSan: store, Gloo, reducer, checkpoint (Debian 12)"
  DDP_ASAN_TARGETS=${DDP_ASAN_TARGETS:-$CI_ASAN_TARGETS} bash scripts/sanitize.sh asan
  result[asan]=$?
  echo "== ASan + UBSan: exit ${result[asan]} after $(( $(date +%s) - t0 )) s"
fi
if [[ " $SUITES " == *" 2.6 "* ]]; then
  t0=$(date +%s)
  bash scripts/run-tests-trixie.sh "$@"
  result[2.6]=$?
  echo "== LibTorch 2.6 suite: exit ${result[2.6]} after $(( $(date +%s) - t0 )) s"
fi

passed=0 failed=0
for s in "${!result[@]}"; do
  if [[ ${result[$s]} == 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "run-tests: $(( $(date +%s) - start )) s in all"
echo "suites: $passed passed, $failed failed"
((failed == 0 && passed > 0))
