#!/usr/bin/env bash
# Checks a Dockerfile (docker/Dockerfile, or docker/Dockerfile.cuda with --file) where no Docker engine
# runs: executes its stages faithfully in a Debian root made by debootstrap (bookworm or trixie, as
# its FROM says; docker/chroot_build.py parses the Dockerfile's instructions; nothing is duplicated
# here), then runs the runtime stage like `docker run` would and trains a tiny synthetic CIFAR-10 run
# through its ENTRYPOINT, as the image's non-root user, and without a GPU (the log must say why the
# trainer uses the CPU).
#
#   sudo bash scripts/check-dockerfile.sh [--file docker/Dockerfile.cuda] [--work DIR] [--jobs N]
#                                         [--no-layer-cache] [--keep] [--build-arg K=V]
#
# Each Dockerfile has its own work directory: /var/tmp/ddp-check-dockerfile for docker/Dockerfile,
# /var/tmp/ddp-check-dockerfile-<suffix> for docker/Dockerfile.<suffix>.
#
# Needs root, debootstrap, unshare/setpriv (util-linux) and a reachable Debian mirror. Takes long
# (the build stage installs the toolchain and LibTorch, builds everything and runs the test suite);
# long RUN steps are cached under the work directory so a rerun starts where the sources changed.
# Not part of CI. The outcome of the last run is recorded in docs/KUBEFLOW.md.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
FILE=docker/Dockerfile
WORK=
JOBS=2
CACHE=--layer-cache
KEEP=0
BUILD_ARGS=()
while (($#)); do
  case $1 in
    --build-arg) BUILD_ARGS+=(--build-arg "$2"); shift 2 ;;
    --file) FILE=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --no-layer-cache) CACHE=; shift ;;
    --keep) KEEP=1; shift ;;
    *) echo "check-dockerfile: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "check-dockerfile: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
for tool in debootstrap unshare setpriv chroot mount; do
  command -v "$tool" >/dev/null || { echo "check-dockerfile: $tool not found" >&2; exit 2; }
done
[[ -f $FILE ]] || { echo "check-dockerfile: no $FILE" >&2; exit 2; }
if [[ -z $WORK ]]; then
  suffix=${FILE##*/Dockerfile}
  WORK=/var/tmp/ddp-check-dockerfile${suffix:+-${suffix#.}}
fi
PY=/usr/bin/python3
BUILD=("$PY" "$REPO/docker/chroot_build.py")
mkdir -p "$WORK"
START=$(date +%s)
RUNDIR=$(mktemp -d "$WORK/run-XXXXXX")
cleanup() {
  local rc=$?
  rm -rf "$RUNDIR"
  if ((KEEP == 0)); then rm -rf --one-file-system "$WORK/stages" "$WORK"/container-*; fi
  echo "check-dockerfile: $( ((rc == 0)) && echo PASSED || echo "FAILED (exit $rc)") after $(( $(date +%s) - START )) s"
}
trap cleanup EXIT
# Stopped by a signal: fail (without these, bash ran the EXIT trap with status 0 and said PASSED).
trap 'exit 143' TERM
trap 'exit 130' INT

echo "== build: $FILE (all stages up to runtime), context $REPO, work $WORK"
"${BUILD[@]}" build --file "$FILE" --context "$REPO" --work "$WORK" --target runtime \
  --build-arg BUILD_JOBS="$JOBS" "${BUILD_ARGS[@]}" $CACHE

run() { "${BUILD[@]}" run --work "$WORK" --stage runtime "$@"; }
DATA=$RUNDIR/data MODEL=$RUNDIR/model CKPT=$RUNDIR/ckpt
mkdir -p "$DATA" "$MODEL" "$CKPT"
chown 1000:1000 "$DATA" "$MODEL" "$CKPT"   # the image's user (uid 1000) writes there, as on a PVC
VOLS=(-v "$DATA:/data" -v "$MODEL:/model" -v "$CKPT:/checkpoints")

echo "== runtime: user, shared libraries"
[[ $(run --entrypoint /usr/bin/id -- -u) == 1000 ]] || { echo "runtime stage does not run as uid 1000" >&2; exit 1; }
run --entrypoint /bin/sh -- -c 'ldd $(dpkg -L ddp-tools | grep ^/usr/bin/) /usr/lib/libddp.so.* 2>&1 | tee /dev/stderr | grep -q "not found" && exit 1 || exit 0' 2>"$RUNDIR/ldd.txt" \
  || { grep -B3 "not found" "$RUNDIR/ldd.txt" >&2; echo "runtime stage misses shared libraries" >&2; exit 1; }
echo "all binaries resolve their libraries: $(ls_bins=$(run --entrypoint /bin/sh -- -c 'dpkg -L ddp-tools | grep ^/usr/bin/'); echo $ls_bins)"

echo "== runtime: synthetic data (make_cifar10_synthetic)"
run "${VOLS[@]}" --entrypoint make_cifar10_synthetic -- --out /data --train 500 --test 250 --layout bin --seed 1

echo "== runtime: ENTRYPOINT (train_cifar10), 1 process, no GPU: --device auto falls back to the CPU"
run "${VOLS[@]}" -- --data-dir /data --model-dir /model --epochs 1 --batch-size 64 --seed 1 \
  --metrics-file /model/metrics.json 2>&1 | tee "$RUNDIR/train.log"
grep -q -- "--device auto: ." "$RUNDIR/train.log" \
  || { echo "the trainer's log does not say why it runs on the CPU" >&2; exit 1; }
echo "CPU fallback logged: $(grep -o -- '--device auto: .*' "$RUNDIR/train.log" | head -n 1)"
# With a CUDA LibTorch the reason must be the missing device, not a LibTorch without CUDA (which is
# what a binary that did not load libtorch_cuda would say).
if run --entrypoint /bin/sh -- -c 'ldd /usr/bin/train_cifar10 | grep -q libtorch_cuda'; then
  ! grep -q -- "--device auto: LibTorch built without CUDA" "$RUNDIR/train.log" \
    || { echo "train_cifar10 links libtorch_cuda but says LibTorch has no CUDA" >&2; exit 1; }
  echo "the image's LibTorch has CUDA (train_cifar10 loads libtorch_cuda)"
fi
ls -l "$MODEL"
[[ -n $(ls -A "$MODEL") ]] || { echo "no model written to /model" >&2; exit 1; }

echo "== runtime: ddprun --nproc-per-node 2 train_cifar10 (Gloo over loopback)"
rm -rf "${MODEL:?}"/* "${CKPT:?}"/*
run "${VOLS[@]}" --entrypoint ddprun -- --nproc-per-node 2 --standalone train_cifar10 \
  --data-dir /data --model-dir /model --epochs 1 --batch-size 64 --seed 1
[[ -n $(ls -A "$MODEL") ]] || { echo "no model written by the 2-process run" >&2; exit 1; }

echo "== runtime: a bad flag is a permanent error (exit 2, ExitCode policy does not restart)"
set +e
run "${VOLS[@]}" -- --data-dir /data --model-dir /model --epochs notanumber
rc=$?
set -e
[[ $rc == 2 ]] || { echo "bad flag exited with $rc, expected 2" >&2; exit 1; }
