#!/usr/bin/env bash
# The main job of the README: installs dependencies, builds, writes a synthetic CIFAR-10 dataset in the
# Python layout the workshop used (cifar-10-batches-py/), then trains the seed's CNN on 2 local
# processes under ddprun (Gloo over loopback), saving the model and checkpoints.
#   DEMO_DIR (default /tmp/ddp-demo)   where data, checkpoints and the model go
#   DEMO_EPOCHS (default 3), DEMO_NPROC (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
DEMO_DIR=${DEMO_DIR:-/tmp/ddp-demo}
mkdir -p "$DEMO_DIR"
if [ ! -d "$DEMO_DIR/data/cifar-10-batches-py" ]; then
  "$BUILD_DIR/tools/make_cifar10_synthetic/make_cifar10_synthetic" \
    --out "$DEMO_DIR/data" --train 20000 --test 2000 --layout py --seed 0
fi
# A fresh run each time; --resume auto serves restarts within this run (--max-restarts 1).
rm -rf "$DEMO_DIR/checkpoints" "$DEMO_DIR/model" "$DEMO_DIR/metrics.jsonl"
exec "$BUILD_DIR/apps/ddprun/ddprun" --standalone --nproc-per-node "${DEMO_NPROC:-2}" --max-restarts 1 \
  "$BUILD_DIR/apps/train_cifar10/train_cifar10" \
  --data-dir "$DEMO_DIR/data" --model-dir "$DEMO_DIR/model" --epochs "${DEMO_EPOCHS:-3}" \
  --metrics-file "$DEMO_DIR/metrics.jsonl" --checkpoint-dir "$DEMO_DIR/checkpoints" --resume auto
