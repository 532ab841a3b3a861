#!/usr/bin/env bash
# Configures and builds ddp into ${BUILD_DIR:-build} (RelWithDebInfo, Ninja, ccache when present).
# Extra CMake arguments pass through: scripts/build.sh -DDDP_WITH_NCCL=OFF
# DDP_BUILD_TARGETS="ddprun train_cifar10" builds only those (and what they link).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# ccache: paths relative to the clone and no working directory in the hash, so a clone in another
# folder (CI's fresh clone, a worktree) reuses what an earlier build compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
targets=()
for t in ${DDP_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" --parallel "${DDP_BUILD_JOBS:-$(nproc)}" "${targets[@]}"
