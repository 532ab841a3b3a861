#!/usr/bin/env bash
# Builds ddp against Debian 13's LibTorch 2.6 (GCC 14, Gloo 2023-12) and runs the whole ctest suite
# there, with torch 2.6 as the oracle wherever the suite asks Python's torch. Runs in the root that
# scripts/trixie-root.sh makes (and caches), through scripts/in-trixie.sh; needs root. Extra
# arguments go to ctest.
#
#   sudo bash scripts/run-tests-trixie.sh [ctest args...]
#
# The build goes to ${TRIXIE_BUILD_DIR:-build-trixie} in this clone.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TRIXIE_BUILD_DIR:-build-trixie}
exec bash scripts/in-trixie.sh "echo \"== LibTorch 2.6 suite (libtorch-dev \$(dpkg-query -W -f='\${Version}' libtorch-dev))\"
  BUILD_DIR=$(printf %q "$BUILD") bash scripts/build.sh
  cd $(printf %q "$BUILD") && ctest --output-on-failure --timeout 900 -j \"\$DDP_TEST_JOBS\" $(printf '%q ' "$@")"
