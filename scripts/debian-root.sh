#!/usr/bin/env bash
# Prints the path of a cached Debian root (debootstrap --variant=minbase SUITE, plus PACKAGES), making
# it first when it is missing. Needs root and debootstrap. Progress goes to stderr, the path to stdout.
#
#   root=$(bash scripts/debian-root.sh NAME SUITE [PACKAGE...])
#
#   scripts/trixie-root.sh   NAME trixie: Debian 13 with LibTorch 2.6 for the 2.6 suite
#   tests/package/debs_in_fresh_root.sh   NAME bookworm-base: a bare Debian 12, copied for each run
#
# The root is cached outside the clone (DDP_ROOT_CACHE, default /var/cache/ddp) as NAME-<hash of the
# mirror, the package list and ROOT_FORMAT> (raise ROOT_FORMAT when the way a root is made changes),
# so editing any of them makes a fresh root; older roots of the same NAME are removed then. A root
# is only used once it is complete (marker written last), so an interrupted run starts over instead
# of reusing half a root.
set -euo pipefail
ROOT_FORMAT=1
NAME=${1:?usage: debian-root.sh NAME SUITE [PACKAGE...]}
SUITE=${2:?usage: debian-root.sh NAME SUITE [PACKAGE...]}
shift 2
PACKAGES=("$@")
MIRROR=${DDP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${DDP_ROOT_CACHE:-${DDP_TRIXIE_CACHE:-/var/cache/ddp}}

log() { echo "debian-root($NAME): $*" >&2; }
[[ $(id -u) == 0 ]] || { log "needs root (debootstrap, chroot)"; exit 2; }
command -v debootstrap >/dev/null || { log "debootstrap not found (apt-get install debootstrap)"; exit 2; }

key=$(printf '%s\n' "$ROOT_FORMAT" "$MIRROR" "${PACKAGES[@]}" | sha256sum | cut -c1-12)
ROOT=$CACHE/$NAME-$key
if [[ -f $ROOT/.ddp-root-ready ]]; then
  echo "$ROOT"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/$NAME.lock"
flock 9  # two runs at once make the root once
if [[ ! -f $ROOT/.ddp-root-ready ]]; then
  for old in "$CACHE/$NAME"-*; do
    [[ -d $old && $old != "$ROOT" ]] && { log "removing outdated root $old"; rm -rf --one-file-system "$old"; }
  done
  rm -rf --one-file-system "$ROOT"
  start=$(date +%s)
  log "debootstrap $SUITE into $ROOT from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >&2
  if ((${#PACKAGES[@]})); then
    log "installing ${#PACKAGES[@]} packages"
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
  fi
  touch "$ROOT/.ddp-root-ready"
  log "ready after $(( $(date +%s) - start )) s"
fi
echo "$ROOT"
