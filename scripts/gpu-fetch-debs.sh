#!/usr/bin/env bash
# Companion of scripts/gpu-check.sh, run HERE (Debian 12 with apt, no GPU): downloads the Debian
# packages the GPU machine lacks (it has CUDA, pip torch, cmake, ninja, a compiler; no apt access)
# into .debs/ (git-ignored). gpu-check.sh unpacks them there with `dpkg -x` into a local prefix.
#   bash scripts/gpu-fetch-debs.sh          # then carry .debs to the device run
# OpenCV is left out on purpose: libopencv-imgcodecs pulls GDAL and ~60 more libraries (far over
# the device tool's 64 MiB carry limit), so the GPU check builds without the RANZCR trainer.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(
  libgloo0 libgloo-dev               # Gloo 0.5 (the CPU process group); same as this machine's
  libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200   # libgloo0's run-time dependencies
  libgtest-dev                       # GoogleTest 1.12 (static libs + CMake config)
  libcxxopts-dev                     # header-only flags parser of the apps
)
mkdir -p .debs
cd .debs
rm -f ./*.deb
if ! apt-get download "${PACKAGES[@]}" 2>/dev/null; then
  apt-get update -q
  apt-get download "${PACKAGES[@]}"
fi
ls -l ./*.deb
du -sh .
