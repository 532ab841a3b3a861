#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, runs the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "${DDP_TEST_JOBS:-2}" "$@"
