#!/usr/bin/env bash
# The C++ tests under sanitizers (docs/TESTING.md, "Sanitizers").
#
#   scripts/sanitize.sh [asan|tsan|all] [ctest regex]
#
#   asan  ASan + UBSan (build-asan): the store, Gloo, reducer, checkpoint, launcher, sampler and util
#         tests. A finding ends the process; LeakSanitizer runs at every exit.
#   tsan  TSan (build-tsan): the threaded parts: store, Gloo, reducer, launcher.
#   all   both (the default).
#
# Only the test executables named below (and what they link) are built: an instrumented build of
# the LibTorch-including files is slow. Third-party libraries (LibTorch, Gloo, GoogleTest) come
# from Debian uninstrumented; tests/sanitizers/*.supp lists the reports that belong to them.
#
# Every sanitizer writes its reports to files under the build folder (log_path), and the run
# fails when any appeared: a child process that was expected to fail (a worker a test kills, a
# ddprun a test wants to exit 2) cannot hide a report that way.
#
# Environment:
#   DDP_ASAN_TARGETS / DDP_TSAN_TARGETS  the test executables (defaults below)
#   DDP_SANITIZE_EXCLUDE                 ctest -E regex (default: below)
#   DDP_TEST_JOBS (2), DDP_BUILD_JOBS (nproc)
# Extra arguments after the regex go to ctest.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
ROOT=$PWD
MODE=${1:-all}
REGEX=${2:-}
shift $(( $# < 2 ? $# : 2 ))
CTEST_EXTRA=("$@")
case $MODE in asan | tsan | all) ;; *)
  echo "sanitize.sh: unknown mode '$MODE' (asan, tsan or all)" >&2
  exit 2 ;;
esac

ASAN_TARGETS=${DDP_ASAN_TARGETS:-test_store test_gloo test_gloo_peer_directory test_ddp_buckets test_ddp \
test_checkpoint test_launcher test_sampler test_util}
TSAN_TARGETS=${DDP_TSAN_TARGETS:-test_store test_gloo test_gloo_peer_directory test_ddp_buckets test_ddp \
test_launcher}
# Left out by default (all of them run uninstrumented in the normal suite):
#  MatchesPyTorch: the parity tests spend minutes in uninstrumented Python.
#  WorkerStartedBeforeTheServerJoins, KilledWriterNeverLeavesATornCheckpoint: they assume a child
#  process is up within 4-5 s; an instrumented child that loads LibTorch takes 6-8 s on a loaded
#  2-core machine (docs/RELIABILITY.md, "Sanitizers").
#  PeerKilledMidAllreduce: bounds how soon a rank notices a dead peer (0.5 s); 0.96 s instrumented.
EXCLUDE=${DDP_SANITIZE_EXCLUDE-MatchesPyTorch|WorkerStartedBeforeTheServerJoins|KilledWriterNeverLeavesATornCheckpoint|PeerKilledMidAllreduce}

# run_one <name> <build dir> <-fsanitize list> <targets...>
run_one() {
  local name=$1 dir=$2 sanitizers=$3
  shift 3
  local targets=("$@") t0 reports status
  t0=$(date +%s)
  reports="$ROOT/$dir/sanitizer-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  # The options hold for the build as well: gtest_discover_tests runs each test executable.
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan"
  export LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/sanitizers/tsan.supp:log_path=$reports/tsan"
  # LibTorch's OpenMP pool is uninstrumented libgomp, whose barriers TSan cannot see; our tests use
  # small tensors, so one intra-op thread costs nothing and keeps those threads out.
  export OMP_NUM_THREADS=1
  echo "== sanitize $name: building ${targets[*]} in $dir"
  if ! DDP_BUILD_TARGETS="${targets[*]}" BUILD_DIR=$dir bash scripts/build.sh \
      -DDDP_SANITIZE="$sanitizers" -DDDP_BUILD_BENCH=OFF -DDDP_WITH_NCCL=OFF; then
    echo "== sanitize $name: build failed" >&2
    return 1
  fi
  # The tests of the executables built (each test carries its executable's name as a label).
  local labels
  labels="^($(IFS='|'; echo "${targets[*]}"))\$"
  local args=(--output-on-failure --no-tests=error -j "${DDP_TEST_JOBS:-2}" -L "$labels")
  [[ -n $REGEX ]] && args+=(-R "$REGEX")
  local exclude=$EXCLUDE
  # Under TSan (every access checked, -O0) a 40 MiB value round trip outlasts the test's 5 s client
  # timeout; no report, only time.
  [[ $name == tsan && -z ${DDP_SANITIZE_EXCLUDE+set} ]] && exclude+="|BoundsWhatOneConnectionMayBuffer"
  [[ -n $exclude ]] && args+=(-E "$exclude")
  args+=("${CTEST_EXTRA[@]}")
  echo "== sanitize $name: ctest ${args[*]}"
  (cd "$dir" && ctest "${args[@]}")
  status=$?
  if compgen -G "$reports/*" > /dev/null; then
    echo "== sanitize $name: sanitizer reports (also in $reports):"
    for f in "$reports"/*; do echo "---- $f"; head -c 20000 "$f"; done
    status=1
  fi
  echo "== sanitize $name: exit $status after $(( $(date +%s) - t0 )) s"
  return $status
}

failed=0
if [[ $MODE == asan || $MODE == all ]]; then
  # shellcheck disable=SC2086  # the target lists are word lists
  ( run_one asan build-asan address,undefined $ASAN_TARGETS ) || failed=1
fi
if [[ $MODE == tsan || $MODE == all ]]; then
  # shellcheck disable=SC2086
  ( run_one tsan build-tsan thread $TSAN_TARGETS ) || failed=1
fi
exit $failed
