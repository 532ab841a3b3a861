#!/usr/bin/env bash
# The Debian packages install, work and leave cleanly on a fresh Debian 12: makes the .debs from this
# build (cpack, cmake/DdpDebian.cmake), copies a bare cached bookworm root (scripts/debian-root.sh;
# debootstrap --variant=minbase, nothing of ddp's dependencies in it), and inside it, through
# apt as a user would, runs tests/package/in_root_checks.sh (what it asserts is listed there).
#
# usage: debs_in_fresh_root.sh BUILD_DIR WORK_DIR
# Needs root, debootstrap and a reachable Debian mirror: without them it exits 77 (a ctest skip)
# saying why; with CI=true it fails instead. apt reuses the host's downloaded packages
# (/var/cache/apt/archives, bind-mounted) so a machine that ran install-deps.sh downloads little.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd) work=$2
skip() {
  echo "SKIP: $*" >&2
  if [[ ${CI:-} == true ]]; then echo "CI=true: a skip is a failure" >&2; exit 1; fi
  exit 77
}
[[ $(id -u) == 0 ]] || skip "needs root (debootstrap, chroot, mounts)"
for tool in debootstrap unshare chroot cpack; do command -v "$tool" > /dev/null || skip "$tool not found"; done

start=$(date +%s)
rm -rf --one-file-system "$work" && mkdir -p "$work"
# A build whose libddp links NCCL and CUDA from outside Debian (/usr/local/cuda) cannot be packaged:
# cpack refuses it, naming the libraries (packaging/check-debian-deps.sh). Then the packages come
# from a CPU build of the packaged targets (kept for the next run), as a packager on such a machine
# would make them. It sits beside the build folder, at the same depth below the clone, so that
# ccache (scripts/build.sh: base dir, no cwd in the hash) finds the main build's objects: every
# unit whose preprocessed text is the same hits. Measured from an empty cache, libddp's 66 units:
# 64 hits, 16 s, against 0 hits and 114 s from a folder inside the build (the relative paths in
# the preprocessed text differ there). Stop 31's CI spent 705 s here on a busy machine.
cpu_build=$(dirname "$build")/$(basename "$build")-package-cpu
if ! ( cd "$build" && cpack -G DEB -B "$work/debs" > "$work/cpack.log" 2>&1 ); then
  grep -q "outside Debian" "$work/cpack.log" || { cat "$work/cpack.log"; echo "FAIL: cpack"; exit 1; }
  grep "check-debian-deps:" "$work/cpack.log" | head -n 3
  echo "this build cannot be packaged as is; building the packaged targets without NCCL in $cpu_build"
  BUILD_DIR=$cpu_build DDP_BUILD_JOBS=${DDP_BUILD_JOBS:-2} bash "$repo/scripts/build.sh" -DDDP_WITH_NCCL=OFF \
    -DDDP_BUILD_TESTS=OFF -DDDP_BUILD_BENCH=OFF > "$work/package-build.log" 2>&1 ||
    { tail -n 30 "$work/package-build.log"; echo "FAIL: the CPU build for the packages"; exit 1; }
  rm -rf "$work/debs"
  ( cd "$cpu_build" && cpack -G DEB -B "$work/debs" > "$work/cpack.log" 2>&1 ) ||
    { cat "$work/cpack.log"; echo "FAIL: cpack of the CPU build"; exit 1; }
fi
grep "check-debian-deps:" "$work/cpack.log"
ls "$work/debs"/*.deb
echo "debs made after $(( $(date +%s) - start )) s"

base=$(bash "$repo/scripts/debian-root.sh" bookworm-base bookworm)
root=$work/root
cp -a --reflink=auto "$base" "$root"
mkdir -p "$root/tmp/debs" "$root/tmp/consumer"
cp "$work/debs"/*.deb "$root/tmp/debs/"
cp -r "$repo/tests/package/consumer/." "$root/tmp/consumer/"
cp "$here/in_root_checks.sh" "$root/tmp/in_root_checks.sh"
echo "fresh root copied after $(( $(date +%s) - start )) s"

# A private mount namespace: the mounts go when it ends, whatever happens inside.
rc=0
unshare --mount --propagation private bash -c '
  set -e
  root=$0
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  [[ -d /var/cache/apt/archives ]] && mount --bind /var/cache/apt/archives "$root/var/cache/apt/archives"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive \
    bash /tmp/in_root_checks.sh
' "$root" || rc=$?
echo "debs_in_fresh_root: $( ((rc == 0)) && echo PASSED || echo "FAILED (exit $rc)") after $(( $(date +%s) - start )) s"
((rc == 0)) && rm -rf --one-file-system "$root"
exit "$rc"
