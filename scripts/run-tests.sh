#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, and runs the whole suite twice:
# against Debian 12's LibTorch 1.13 on this machine, then against Debian 13's LibTorch 2.6 in a
# cached trixie root (scripts/run-tests-trixie.sh). Between them, on Debian 12, the store, Gloo,
# reducer and checkpoint tests run again built with ASan + UBSan (scripts/sanitize.sh asan, in
# build-asan), and the failure tests run with every core busy (scripts/stress-tests.sh) instead of
# on the quiet machine: a race that a busy machine exposes is what they look for. All run even
# when one fails; the exit code is non-zero when any failed.
#
# The Debian 13 root is made (or found cached) in the background from the start, while the 1.13
# suite builds: making it is mostly download and unpacking, the build mostly compiling.
#
# DDP_SUITES picks some of the parts (default "1.13 asan load 2.6"). Extra arguments go to the two
# full ctest runs. docs/TESTING.md, "How long it takes", has the time of each part.
set -uo pipefail
cd "$(dirname "$0")/.."
SUITES=${DDP_SUITES:-1.13 asan load 2.6}
declare -A result took
# The failed tests' last output lines, printed again at the very end (scripts/failure-tails.sh).
tails=$(mktemp /tmp/ddp-failure-tails.XXXXXX)
# The sanitized part CI runs: the threaded and byte-handling core (docs/TESTING.md, "Sanitizers").
CI_ASAN_TARGETS="test_store test_gloo test_gloo_peer_directory test_ddp_buckets test_ddp test_checkpoint"
# The tests run again under load: the ones about failures and exits, whose timing a busy machine
# changes (docs/TESTING.md, "Under load").
LOAD_TESTS='^(tcp\.)?Gloo(Failure|Leave|Mismatch)\.|^Resume\.|^DdprunFaults\.|^rehearsal_gloo_hosts$'
start=$(date +%s)
has() { [[ " $SUITES " == *" $1 "* ]]; }
# finish NAME STATUS T0: records a part's result and time.
finish() {
  result[$1]=$2
  took[$1]=$(( $(date +%s) - $3 ))
  echo "== $1: exit $2 after ${took[$1]} s"
}

t0=$(date +%s)
bash scripts/install-deps.sh || exit
took[packages]=$(( $(date +%s) - t0 ))

root_log=$(mktemp /tmp/ddp-trixie-root.XXXXXX.log)
if has 2.6; then
  bash scripts/trixie-root.sh > "$root_log" 2>&1 &
  root_pid=$!
fi

if has 1.13; then
  t0=$(date +%s)
  echo "== LibTorch 1.13 suite (Debian 12)"
  ( set -e
    bash scripts/build.sh
    echo "== LibTorch 1.13 suite: built after $(( $(date +%s) - t0 )) s"
    cd "${BUILD_DIR:-build}"
    # The failure tests run once, under load (the load part), when that part is chosen.
    skip=()
    if has load; then skip=(-E "$LOAD_TESTS"); fi
    ctest --output-on-failure --timeout 900 -j "${DDP_TEST_JOBS:-2}" "${skip[@]}" "$@" )
  finish 1.13 $? "$t0"
  bash scripts/failure-tails.sh "${BUILD_DIR:-build}" 1.13 >> "$tails"
fi
if has asan; then
  t0=$(date +%s)
  echo "== ASan + UBSan: store, Gloo, reducer, checkpoint (Debian 12)"
  DDP_ASAN_TARGETS=${DDP_ASAN_TARGETS:-$CI_ASAN_TARGETS} bash scripts/sanitize.sh asan
  finish asan $? "$t0"
  bash scripts/failure-tails.sh build-asan asan >> "$tails"
fi
if has load; then
  t0=$(date +%s)
  echo "== Under load: the failure tests again with every core busy (Debian 12)"
  bash scripts/stress-tests.sh -- ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 900 \
    --no-tests=error -j "${DDP_TEST_JOBS:-2}" -R "$LOAD_TESTS"
  finish load $? "$t0"
  bash scripts/failure-tails.sh "${BUILD_DIR:-build}" load >> "$tails"
fi
if has 2.6; then
  t0=$(date +%s)
  if wait "$root_pid"; then
    echo "== Debian 13 root ready ($(tail -n 1 "$root_log")), waited $(( $(date +%s) - t0 )) s for it"
    bash scripts/run-tests-trixie.sh "$@"
    finish 2.6 $? "$t0"
    bash scripts/failure-tails.sh "${TRIXIE_BUILD_DIR:-build-trixie}" 2.6 >> "$tails"
  else
    cat "$root_log"
    finish 2.6 1 "$t0"
  fi
fi
rm -f "$root_log"
if [[ -s $tails ]]; then
  echo "== the failed tests, their output's end"
  cat "$tails"
fi
rm -f "$tails"

passed=0 failed=0
for s in "${!result[@]}"; do
  if [[ ${result[$s]} == 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "run-tests: $(( $(date +%s) - start )) s in all (packages ${took[packages]} s$(
  for s in 1.13 asan load 2.6; do [[ -n ${took[$s]:-} ]] && printf ', %s %s s' "$s" "${took[$s]}"; done))"
echo "suites: $passed passed, $failed failed"
((failed == 0 && passed > 0))
