#!/usr/bin/env bash
# Installs what building and testing ddp needs on Debian 12 (bookworm), as root. Idempotent: skips
# apt entirely when every package is already there.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libgloo-dev libcxxopts-dev libgtest-dev libopencv-dev
  python3 python3-torch python3-torchvision python3-numpy python3-sklearn python3-yaml python3-jsonschema
  iproute2 procps
  debootstrap  # the LibTorch 2.6 suite's Debian 13 root (scripts/trixie-root.sh)
)
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
