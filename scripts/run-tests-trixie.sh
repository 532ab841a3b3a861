#!/usr/bin/env bash
# Builds ddp against Debian 13's LibTorch 2.6 (GCC 14, Gloo 2023-12) and runs the suite there, with
# torch 2.6 as the oracle wherever the suite asks Python's torch. Runs in the root that
# scripts/trixie-root.sh makes (and caches), through scripts/in-trixie.sh; needs root. Extra
# arguments go to ctest.
#
# Left to the LibTorch 1.13 suite (they run once, not twice): the tests whose subject has no
# LibTorch in it, labels ONCE_LABELS below: hostile flag values (our flag parsing, 500 s), fuzz
# replays (parsers built without LibTorch), Kubernetes manifests, the KFP spec, Dockerfile lint, and
# the orchestration rehearsals (label once: KFP runner, PyTorchJob, SageMaker, chaos), whose trainers'
# LibTorch paths the trainer, resume and DDP tests cover on 2.6, and ddp-plot (label once: Python and
# matplotlib; its real run only feeds it the trainer's files). rehearsal_gloo_hosts stays: it
# exercises Gloo, which is another release in Debian 13. The benchmarks are not built here.
# DDP_TRIXIE_ALL=1 runs everything.
#
#   sudo bash scripts/run-tests-trixie.sh [ctest args...]
#
# The build goes to ${TRIXIE_BUILD_DIR:-build-trixie} in this clone.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TRIXIE_BUILD_DIR:-build-trixie}
ONCE_LABELS='^(hostile|fuzz|k8s|pipeline|docker|once)$'
select=(-LE "$ONCE_LABELS")
build_args=(-DDDP_BUILD_BENCH=OFF)
if [[ ${DDP_TRIXIE_ALL:-0} == 1 ]]; then select=(); build_args=(); fi
exec bash scripts/in-trixie.sh "echo \"== LibTorch 2.6 suite (libtorch-dev \$(dpkg-query -W -f='\${Version}' libtorch-dev))\"
  BUILD_DIR=$(printf %q "$BUILD") bash scripts/build.sh $(printf '%q ' "${build_args[@]}")
  cd $(printf %q "$BUILD") && ctest --output-on-failure --timeout 900 -j \"\$DDP_TEST_JOBS\" $(printf '%q ' "${select[@]}" "$@")"
