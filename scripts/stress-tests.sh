#!/usr/bin/env bash
# Runs a test command with every core busy: one busy loop per core at nice 0 (the priority the
# tests themselves run at), started before the command and stopped after it, however it ends.
# A timing-bound test that fails here is a race in the code or a wrong assumption in the test
# (docs/TESTING.md, "Under load").
#
#   scripts/stress-tests.sh [--runs N] [--hogs N] [--] [command ...]
#
#   --runs N   run the command N times in a row, stopping at the first failure (default 1)
#   --hogs N   busy loops (default: nproc)
#   command    default: the README's test command, bash scripts/run-tests.sh
#
# Examples:
#   sudo bash scripts/stress-tests.sh --runs 3                              # the whole suite, 3 in a row
#   bash scripts/stress-tests.sh -- ctest --test-dir build -L quick -j 2    # one label
# Exit: the first failing run's status, else 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
runs=1
hogs=$(nproc)
while (($#)); do
  case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --hogs) hogs=${2:?--hogs needs a number}; shift 2 ;;
    --) shift; break ;;
    -*) echo "stress-tests.sh: unknown option '$1' (--runs N, --hogs N, -- command)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "stress-tests.sh: --runs '$runs' is not a positive number" >&2; exit 2; }
[[ $hogs =~ ^[0-9]+$ ]] || { echo "stress-tests.sh: --hogs '$hogs' is not a number" >&2; exit 2; }
(($#)) || set -- bash scripts/run-tests.sh

pids=()
stop_hogs() {
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
  ((${#pids[@]})) && wait "${pids[@]}" 2>/dev/null
  pids=()
}
trap stop_hogs EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
# A pure user-space loop: no system calls, so it competes for the cores the way a compiler or a
# neighbour's training job does, at the tests' own priority.
for ((i = 0; i < hogs; i++)); do
  nice -n 0 bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "stress-tests: $hogs busy loops (pids ${pids[*]}) beside: $*"

status=0
for ((run = 1; run <= runs; run++)); do
  t0=$(date +%s)
  "$@"
  status=$?
  echo "stress-tests: run $run of $runs: exit $status after $(( $(date +%s) - t0 )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  ((status == 0)) || break
done
exit "$status"
