#!/usr/bin/env bash
# Runs a command in the Debian 13 root of scripts/trixie-root.sh (LibTorch 2.6, torch 2.6), in this
# clone, which is bind-mounted at its own path inside the root. Needs root.
#
#   sudo bash scripts/in-trixie.sh 'BUILD_DIR=build-trixie bash scripts/build.sh'
#   sudo bash scripts/in-trixie.sh 'python3 bench/allreduce/run.py --bench build-trixie/bench/allreduce/bench_allreduce'
#
# The command is one bash string, run with `set -euo pipefail` from the clone's root. Everything it
# mounts lives in a private mount namespace, gone when it exits however it exits. ccache's folder
# is kept outside the root (DDP_TRIXIE_CACHE/ccache-trixie) so a rebuilt root starts warm.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=${DDP_TRIXIE_CACHE:-/var/cache/ddp}
(($# == 1)) || { echo "usage: in-trixie.sh 'COMMAND'" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "in-trixie: needs root (chroot, mounts)" >&2; exit 2; }
ROOT=$(bash scripts/trixie-root.sh)
mkdir -p "$CACHE/ccache-trixie" "$ROOT/root/.cache/ccache"
cp /etc/hosts "$ROOT/etc/hosts"

exec unshare --mount --propagation private bash -s "$ROOT" "$REPO" "$CACHE" "$1" <<'INNER'
set -euo pipefail
ROOT=$1 REPO=$2 CACHE=$3 CMD=$4
# The root is a mount point of its own, as / is in a container: `ip netns exec` (the rehearsal)
# remounts / as a slave and fails on a plain folder.
mount --bind "$ROOT" "$ROOT"
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
mount --rbind /sys "$ROOT/sys"
mount -t tmpfs tmpfs "$ROOT/tmp"
mount -t tmpfs tmpfs "$ROOT/run"
# Made after the tmpfs mounts: a clone under /tmp (a CI checkout) would be hidden by the root's /tmp.
mkdir -p "$ROOT$REPO"
mount --bind "$REPO" "$ROOT$REPO"
mount --bind "$CACHE/ccache-trixie" "$ROOT/root/.cache/ccache"
# kubectl is no Debian package (the k8s tests render kustomizations with it when present): the
# host's static binary serves the root as well, so both suites check the same things.
if host_kubectl=$(command -v kubectl); then
  touch "$ROOT/usr/local/bin/kubectl"
  mount --bind "$host_kubectl" "$ROOT/usr/local/bin/kubectl"
fi
# Debian 13's torch 2.6 is built without libuv but, like every torch >= 2.4, defaults to it: its
# TCPStore, init_process_group and torchrun fail with "use_libuv was requested but PyTorch was build
# without libuv support" until USE_LIBUV=0 says otherwise (what a user of that torch must do too;
# docs/TESTING.md). Probed, not assumed, so a root whose torch has libuv tests the libuv server.
libuv=$(chroot "$ROOT" python3 -c '
import datetime, torch.distributed as d
try:
    d.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=10), wait_for_workers=False)
    print("yes")
except RuntimeError as e:
    print("no" if "libuv" in str(e) else "yes")' 2>/dev/null || echo yes)
no_libuv=()
if [[ $libuv == no ]]; then
  no_libuv=(USE_LIBUV=0)
  echo "in-trixie: this torch has no libuv; USE_LIBUV=0" >&2
fi
# A clean environment, as in a fresh login, plus the switches the suite and build scripts read.
exec chroot "$ROOT" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 CI="${CI:-}" DDP_BUILD_JOBS="${DDP_BUILD_JOBS:-}" DDP_TEST_JOBS="${DDP_TEST_JOBS:-2}" "${no_libuv[@]}" \
  bash -c "set -euo pipefail; cd \"\$0\"; $CMD" "$REPO"
INNER
