#!/usr/bin/env bash
# The README's main job: train the workshop's CIFAR-10 CNN on real images with 2 local processes
# under ddprun (Gloo over loopback), printing the test accuracy after each epoch, then drawing its
# curves (loss, test accuracy, images/s) with tools/ddp_plot/ddp-plot to $DEMO_DIR/curves.png and .svg.
#
# The images are Fashion-MNIST (Zalando's 70,000 photographs of clothes, 10 classes, 28x28 grey),
# which Debian ships as the package dataset-fashion-mnist; tools/make_cifar10_from_idx writes them
# in the CIFAR-10 layout the workshop's script reads (cifar-10-batches-py/), each image centred on
# a 32x32 canvas in R, G and B. Installs only what this needs and builds only ddprun, train_cifar10
# and the data tools, in build-demo/ (the tests build in build/).
#   DEMO_DATA=fashion (default) | synthetic   synthetic: make_cifar10_synthetic's generated stripes
#   DEMO_DIR (default /tmp/ddp-demo)          where data, checkpoints, metrics and the model go
#   DEMO_EPOCHS (default 2), DEMO_NPROC (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/install-deps.sh --demo
export BUILD_DIR=${BUILD_DIR:-build-demo}
# Release without debug info compiles faster; tests and benchmarks are left out of this build.
DDP_BUILD_TARGETS="ddprun train_cifar10 make_cifar10_from_idx make_cifar10_synthetic" bash scripts/build.sh \
  -DCMAKE_BUILD_TYPE=Release -DDDP_BUILD_TESTS=OFF -DDDP_BUILD_BENCH=OFF -DDDP_WITH_OPENCV=OFF
echo "run-demo: built in $(( $(date +%s) - start )) s"

DEMO_DIR=${DEMO_DIR:-/tmp/ddp-demo}
DEMO_DATA=${DEMO_DATA:-fashion}
data="$DEMO_DIR/data-$DEMO_DATA"
if [ ! -f "$data/cifar-10-batches-py/test_batch" ]; then
  case $DEMO_DATA in
    fashion) "$BUILD_DIR/tools/make_cifar10_from_idx/make_cifar10_from_idx" --out "$data" --layout py ;;
    synthetic) "$BUILD_DIR/tools/make_cifar10_synthetic/make_cifar10_synthetic" --out "$data" --train 20000 --test 2000 \
                 --layout py --seed 0 ;;
    *) echo "run-demo: DEMO_DATA='$DEMO_DATA' is not fashion or synthetic" >&2; exit 2 ;;
  esac
fi
# A fresh run each time; --resume auto serves restarts within this run (--max-restarts 1).
rm -rf "$DEMO_DIR/checkpoints" "$DEMO_DIR/model" "$DEMO_DIR/metrics.jsonl" "$DEMO_DIR/curves.png" "$DEMO_DIR/curves.svg"
# SGD with momentum 0.9 and no augmentation learns Fashion-MNIST in two epochs (~87% test accuracy).
set +e
"$BUILD_DIR/apps/ddprun/ddprun" --standalone --nproc-per-node "${DEMO_NPROC:-2}" --max-restarts 1 \
  "$BUILD_DIR/apps/train_cifar10/train_cifar10" \
  --data-dir "$data" --model-dir "$DEMO_DIR/model" --epochs "${DEMO_EPOCHS:-2}" --lr 0.02 --momentum 0.9 --no-augment \
  --metrics-file "$DEMO_DIR/metrics.jsonl" --checkpoint-dir "$DEMO_DIR/checkpoints" --resume auto
rc=$?
# The curves of whatever the run logged, a failed run's too (it shows where it went wrong).
plot_rc=0
if [ -s "$DEMO_DIR/metrics.jsonl" ]; then
  tools/ddp_plot/ddp-plot "$DEMO_DIR/metrics.jsonl" --label "train_cifar10 ($DEMO_DATA)" --out "$DEMO_DIR/curves" ||
    plot_rc=$?
fi
echo "run-demo: exit $rc after $(( $(date +%s) - start )) s; model in $DEMO_DIR/model/model.pt, metrics in $DEMO_DIR/metrics.jsonl"
if [ -s "$DEMO_DIR/curves.png" ] && [ $plot_rc = 0 ]; then
  echo "run-demo: curves (loss, test accuracy, images/s) in $DEMO_DIR/curves.png and $DEMO_DIR/curves.svg"
fi
# Training's failure first; else the picture's.
if [ $rc != 0 ]; then exit $rc; fi
exit $plot_rc
