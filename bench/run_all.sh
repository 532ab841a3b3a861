#!/usr/bin/env bash
# Every benchmark of docs/PERFORMANCE.md, one after the other, each with its PyTorch baseline in the
# same invocation, on LibTorch 1.13 here and then on LibTorch 2.6 in the Debian 13 root. Give it a
# quiet machine: the `setsid`/autogroup/`nice -20` wrapper only helps against background load.
#   bash bench/run_all.sh [OUT_DIR]       logs: OUT_DIR/<benchmark>.log (default bench-out/)
# BENCH_ONLY="cifar10 ddp_step" runs a subset: ranzcr_input ranzcr_step cifar10 cifar10_step
# allreduce ddp_step sync_bn powersgd zero allreduce_2.6 ddp_step_2.6. Our side runs with DDP_SHM=1 and DDP_SHM=0 (shared
# memory between local ranks, TCP only) in the same run, each next to the PyTorch baseline (issue 16).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-bench-out}" && cd "${1:-bench-out}" && pwd)
only=${BENCH_ONLY:-ranzcr_input ranzcr_step cifar10 cifar10_step allreduce ddp_step sync_bn powersgd zero allreduce_2.6 ddp_step_2.6}
want() { [[ " $only " == *" $1 "* ]]; }
prio() { setsid bash -c 'echo -20 > /proc/self/autogroup 2>/dev/null; exec nice -n -20 "$@"' prio "$@"; }
run() {  # run NAME CMD...: logs to OUT_DIR/NAME.log, with the machine's state before and after
  local name=$1; shift
  { echo "== $name: $*"; date -u +%FT%TZ; uptime; bash scripts/select-blas.sh 2>&1 || true; } > "$out/$name.log"
  "$@" >> "$out/$name.log" 2>&1
  uptime >> "$out/$name.log"
  echo "bench: $name done ($out/$name.log)"
}
cmake --build build -j2 --target make_ranzcr_synthetic bench_ranzcr_input bench_ranzcr_train_step \
  train_cifar10 make_cifar10_synthetic cifar10_step_bench bench_allreduce bench_ddp_step bench_sync_bn bench_powersgd bench_zero > "$out/build.log"
want ranzcr_input && run ranzcr_input bench/ranzcr_input/run.sh build 256 2048 2
want ranzcr_step && run ranzcr_step bench/ranzcr_input/run_train_step.sh build 8 3 2
want cifar10 && run cifar10 /usr/bin/python3 bench/cifar10/run_bench.py --build build --epochs 2 --repeats 2 --shm-vs-tcp
want cifar10_step && run cifar10_step build/bench/cifar10/cifar10_step_bench
want allreduce && run allreduce prio /usr/bin/python3 bench/allreduce/run.py --bench build/bench/allreduce/bench_allreduce --rounds 5 --shm-vs-tcp
want ddp_step && run ddp_step prio bash -c 'cd build && ./bench/ddp_step/bench_ddp_step --rounds=5 --passes=3 --steps=5 --warmup=2 --shm=1,0'
want sync_bn && run sync_bn prio /usr/bin/python3 bench/sync_bn/run.py --bench build/bench/sync_bn/bench_sync_bn --rounds 5
want powersgd && run powersgd prio /usr/bin/python3 bench/powersgd/run.py --bench build/bench/powersgd/bench_powersgd --rounds 3
want zero && run zero prio /usr/bin/python3 bench/zero/run.py --bench build/bench/zero/bench_zero --nproc 2,4
if want allreduce_2.6 || want ddp_step_2.6; then
  bash scripts/in-trixie.sh "cmake --build build-trixie -j2 --target bench_allreduce bench_ddp_step" > "$out/build-2.6.log" 2>&1
fi
want allreduce_2.6 && run allreduce_2.6 bash scripts/in-trixie.sh "setsid bash -c 'echo -20 > /proc/self/autogroup; exec nice -n -20 \
  python3 bench/allreduce/run.py --bench build-trixie/bench/allreduce/bench_allreduce --rounds 5 --shm-vs-tcp'"
want ddp_step_2.6 && run ddp_step_2.6 bash scripts/in-trixie.sh "cd build-trixie && setsid bash -c 'echo -20 > /proc/self/autogroup && \
  exec nice -n -20 ./bench/ddp_step/bench_ddp_step --rounds=3 --passes=3 --steps=5 --warmup=2 --shm=1,0'"
echo "bench: all done, logs in $out"
