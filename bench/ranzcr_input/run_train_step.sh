#!/bin/sh
# Training-step throughput, ours vs PyTorch (same model, same LibTorch kernels), one process each.
#   bench/ranzcr_input/run_train_step.sh BUILD_DIR [BATCH] [STEPS] [THREADS]
set -eu
build=${1:?usage: run_train_step.sh BUILD_DIR [BATCH] [STEPS] [THREADS]}
batch=${2:-8}
steps=${3:-3}
threads=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
for s in 224 512; do
  "$build/bench/ranzcr_input/bench_ranzcr_train_step" --image-size $s --batch-size "$batch" --steps "$steps" --warmup 1 --threads "$threads"
  /usr/bin/python3 "$here/train_step_torch.py" --image-size $s --batch-size "$batch" --steps "$steps" --warmup 1 --threads "$threads"
done
