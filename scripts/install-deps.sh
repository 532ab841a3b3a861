#!/usr/bin/env bash
# Installs what ddp needs on Debian 12 (bookworm), as root. Idempotent: skips apt entirely when
# every package is already there.
#   scripts/install-deps.sh          everything: build, tests, benchmarks (the README's test command)
#   scripts/install-deps.sh --demo   only what scripts/run-demo.sh builds and runs
set -euo pipefail
# The demo: compiler and build tools, LibTorch + Gloo + cxxopts + zlib, an optimized BLAS, real
# images (Fashion-MNIST, 30 MB) for train_cifar10, and matplotlib for ddp-plot's curves at the end.
DEMO_PACKAGES=(
  build-essential cmake ninja-build ccache
  libtorch-dev libgloo-dev libcxxopts-dev zlib1g-dev
  libopenblas0-openmp
  dataset-fashion-mnist
  python3-matplotlib
)
# The tests and benchmarks add: GoogleTest, OpenCV (RANZCR), Python's torch as the oracle, the
# rehearsal's network namespaces, debootstrap for the LibTorch 2.6 suite's Debian 13 root, and clang
# for the fuzz targets.
TEST_PACKAGES=(
  pkg-config git
  libgtest-dev libopencv-dev
  python3 python3-torch python3-torchvision python3-numpy python3-sklearn python3-yaml python3-jsonschema
  iproute2 procps
  debootstrap
  clang libclang-rt-14-dev  # libFuzzer + sanitizers (scripts/fuzz.sh)
  protobuf-compiler python3-protobuf  # real messages: the pipeline spec (tests/pipeline), event files (tests/tensorboard)
  help2man groff-base bash-completion  # the man pages (cmake/DdpManPages.cmake) and their test, the completion's test (tests/cli)
)
PACKAGES=("${DEMO_PACKAGES[@]}")
[[ ${1:-} == --demo ]] || PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
bash "$(dirname "$0")/select-blas.sh"
