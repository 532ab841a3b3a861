#!/bin/bash
# Seconds from a rank's SIGKILL to the survivors' PeerError, over shared memory and over TCP in
# alternation: test_gloo's worker peer_killed_mid_allreduce (tests/gloo/gloo_failure_test.cpp), run
# by hand so its own printout ("got PeerError X s after rank 1 died") is kept.
#
#   bash bench/gloo_dead_peer/run.sh [build dir] [ranks] [pairs]
set -euo pipefail
build=${1:-build}
ranks=${2:-2}
pairs=${3:-6}
exe=$build/tests/gloo/test_gloo
[[ -x $exe ]] || { echo "no $exe: build test_gloo first" >&2; exit 2; }

once() {  # once DDP_SHM -> the survivors' seconds
  local shm=$1 dir port r
  dir=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  for ((r = 0; r < ranks; r++)); do
    DDP_TEST_WORKER=peer_killed_mid_allreduce RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 DDP_KILLED_AT_FILE=$dir/killed_at DDP_SHM=$shm \
      "$exe" > "$dir/$r.log" 2>&1 &
  done
  wait || true
  grep -ho "got PeerError [0-9.]* s" "$dir"/*.log | awk '{printf "%s ", $3}'
  rm -rf "$dir"
}

echo "ranks=$ranks; seconds from the death to each survivor's PeerError"
for ((i = 0; i < pairs; i++)); do
  echo "shared memory: $(once 1)   tcp: $(once 0)"
done
