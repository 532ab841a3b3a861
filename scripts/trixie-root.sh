#!/usr/bin/env bash
# Prints the path of a Debian 13 (trixie) root holding LibTorch 2.6, torch 2.6 (the test oracle) and
# everything else ddp's suite needs, making it first when it is missing (scripts/debian-root.sh: cached
# in /var/cache/ddp, remade when this list changes). Needs root and debootstrap.
#
#   root=$(sudo bash scripts/trixie-root.sh)      # progress goes to stderr, the path to stdout
set -euo pipefail
cd "$(dirname "$0")/.."
# What building and testing ddp needs (Debian 12's list in install-deps.sh, with trixie's names).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libgloo-dev libcxxopts-dev libgtest-dev libopencv-dev libopenblas0-openmp zlib1g-dev
  dataset-fashion-mnist
  python3 python3-torch python3-torchvision python3-numpy python3-sklearn python3-yaml python3-jsonschema
  iproute2 procps util-linux
  protobuf-compiler python3-protobuf
)
root=$(bash scripts/debian-root.sh trixie trixie "${PACKAGES[@]}")
chroot "$root" dpkg-query -W libtorch-dev python3-torch libgloo-dev g++ >&2
echo "$root"
