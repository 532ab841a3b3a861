#!/usr/bin/env bash
# Prints the path of a Debian 13 (trixie) root holding LibTorch 2.6, torch 2.6 (the test oracle) and
# everything else ddp's suite needs, making it first when it is missing. Needs root and debootstrap.
#
#   root=$(sudo bash scripts/trixie-root.sh)      # progress goes to stderr, the path to stdout
#
# The root is cached outside the clone (DDP_TRIXIE_CACHE, default /var/cache/ddp) under a name that
# hashes the mirror, the package list and ROOT_FORMAT (raise it when the way the root is made
# changes), so editing any of them makes a fresh root; older roots of this kind are removed then. A root is only used once it is complete (marker written last), so an
# interrupted run starts over instead of reusing half a root.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT_FORMAT=1
MIRROR=${DDP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${DDP_TRIXIE_CACHE:-/var/cache/ddp}
# What building and testing ddp needs (Debian 12's list in install-deps.sh, with trixie's names).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libgloo-dev libcxxopts-dev libgtest-dev libopencv-dev libopenblas0-openmp zlib1g-dev
  dataset-fashion-mnist
  python3 python3-torch python3-torchvision python3-numpy python3-sklearn python3-yaml python3-jsonschema
  iproute2 procps util-linux
  protobuf-compiler python3-protobuf
)

log() { echo "trixie-root: $*" >&2; }
[[ $(id -u) == 0 ]] || { log "needs root (debootstrap, chroot)"; exit 2; }
command -v debootstrap >/dev/null || { log "debootstrap not found (apt-get install debootstrap)"; exit 2; }

key=$(printf '%s\n' "$ROOT_FORMAT" "$MIRROR" "${PACKAGES[@]}" | sha256sum | cut -c1-12)
ROOT=$CACHE/trixie-$key
if [[ -f $ROOT/.ddp-root-ready ]]; then
  echo "$ROOT"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/trixie.lock"
flock 9  # two runs at once make the root once
if [[ ! -f $ROOT/.ddp-root-ready ]]; then
  for old in "$CACHE"/trixie-*; do
    [[ -d $old && $old != "$ROOT" ]] && { log "removing outdated root $old"; rm -rf --one-file-system "$old"; }
  done
  rm -rf --one-file-system "$ROOT"
  start=$(date +%s)
  log "debootstrap trixie into $ROOT from $MIRROR"
  debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >&2
  log "installing ${#PACKAGES[@]} packages (LibTorch 2.6, torch 2.6, toolchain)"
  # apt inside the root needs /proc and /dev; a private mount namespace drops the mounts on exit.
  unshare --mount --propagation private bash -c '
    set -e
    mount -t proc proc "$1/proc"
    mount --rbind /dev "$1/dev"
    cp /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
    shift
    chroot "$0" env DEBIAN_FRONTEND=noninteractive bash -c "apt-get update -q && apt-get install -y -q --no-install-recommends $*"
  ' "$ROOT" "$ROOT" "${PACKAGES[@]}" >&2
  chroot "$ROOT" apt-get clean
  chroot "$ROOT" dpkg-query -W libtorch-dev python3-torch libgloo-dev g++ >&2
  touch "$ROOT/.ddp-root-ready"
  log "ready after $(( $(date +%s) - start )) s"
fi
echo "$ROOT"
