#!/bin/sh
# Input pipeline: ours vs PIL/torchvision, same JPEGs, same machine, one run.
#   bench/ranzcr_input/run.sh BUILD_DIR [N_IMAGES] [SIZE] [WORKERS]
# Writes N synthetic SIZExSIZE grayscale JPEGs (default 256 of 2048x2048) to a temporary folder,
# then times both pipelines at 224 and 512.
set -eu
build=${1:?usage: run.sh BUILD_DIR [N_IMAGES] [SIZE] [WORKERS]}
n=${2:-256}
size=${3:-2048}
workers=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
data=$(mktemp -d /tmp/ranzcr-bench-XXXXXX)
trap 'rm -rf "$data"' EXIT
"$build/tools/make_ranzcr_synthetic/make_ranzcr_synthetic" --out "$data" --n "$n" --size "$size" --seed 1 --quality 90
du -sh "$data/train"
for s in 224 512; do
  echo "== image size $s, $workers workers"
  "$build/bench/ranzcr_input/bench_ranzcr_input" --data "$data" --image-size $s --workers "$workers" --epochs 2
  /usr/bin/python3 "$here/torchvision_input.py" --data "$data" --image-size $s --workers "$workers" --epochs 2
done
