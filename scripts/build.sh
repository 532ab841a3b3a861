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
# RelWithDebInfo with line tables only (-g1): enough for backtraces and file:line in every tool,
# and full -g nearly doubled the compile time of a LibTorch-heavy file (checkpoint_test.cpp: 80 CPU
# seconds at -O2 -g, 46 at -O2 -g1). Arguments after these win: -DCMAKE_BUILD_TYPE=Debug for gdb.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "$@"
targets=()
for t in ${DDP_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" --parallel "${DDP_BUILD_JOBS:-$(nproc)}" "${targets[@]}"
