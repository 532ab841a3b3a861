#!/bin/sh
# Two small local packages docker/Dockerfile.cuda installs next to Debian's, in both stages, where
# Debian's own packages would download at install time or put a driver into the image:
#
#   cuda-local-debs.sh libcuda OUT      OUT/ddp-host-libcuda_*.deb: empty; Provides libcuda.so.1. The
#       CUDA driver library comes from the host (nvidia-container-toolkit mounts the node's libcuda),
#       never from the image: Debian's libcuda1 (driver 550) would shadow an older host driver.
#       libtorch-cuda-2.6 and nvidia-cuda-dev only need it satisfied; nothing we build links it.
#   cuda-local-debs.sh cudnn SRC OUT    OUT/ddp-cudnn_*.deb: cuDNN 9's shared libraries; Provides
#       nvidia-cudnn, which libtorch-cuda-2.6 depends on (libtorch_cuda.so links libcudnn.so.9).
#       Debian's nvidia-cudnn is an installer whose postinst downloads NVIDIA's archive; here the
#       archive (or its unpacked libraries) is in SRC, from the build context (docker/cudnn/README.md):
#         - SRC/cudnn-linux-x86_64-9.0.0.312_cuda12-archive.tar.xz, the file nvidia-cudnn
#           9.0.0.312~cuda12 downloads, checked against the sha512 that package pins; or
#         - SRC/lib/libcudnn*.so.9* (+ SRC/include/cudnn_version*.h for the version): a cuDNN 9
#           you already have, not checksummed (the package's version says which cuDNN it holds).
#       The libraries land in /usr/lib/x86_64-linux-gnu, where nvidia-cudnn would put them.
set -eu
what=${1:?usage: cuda-local-debs.sh libcuda OUT | cudnn SRC OUT}
MULTIARCH=x86_64-linux-gnu
ARCH=amd64

build_deb() {  # build_deb DIR OUT
  dpkg-deb --root-owner-group --build "$1" "$2" >/dev/null
  echo "cuda-local-debs: built $(basename "$2")"
}

case $what in
libcuda)
  out=${2:?OUT}
  d=$(mktemp -d) && chmod 755 "$d"
  mkdir -p "$d/DEBIAN" "$out"
  cat > "$d/DEBIAN/control" <<EOF
Package: ddp-host-libcuda
Version: 550
Architecture: $ARCH
Maintainer: ddp <ddp@localhost>
Provides: libcuda.so.1 (= 550), libcuda-12.4-1
Section: non-free/libs
Priority: optional
Description: CUDA driver library from the host (nvidia-container-toolkit)
 An empty package: in a container the NVIDIA driver's libcuda.so.1 is mounted from the node by the
 NVIDIA container toolkit (NVIDIA_DRIVER_CAPABILITIES=compute,utility), matching its kernel module.
EOF
  build_deb "$d" "$out/ddp-host-libcuda_550_$ARCH.deb"
  rm -rf "$d"
  ;;
cudnn)
  src=${2:?SRC} out=${3:?OUT}
  # Pinned by Debian's nvidia-cudnn 9.0.0.312~cuda12 (update-nvidia-cudnn, URL_amd64/SHA512_amd64).
  archive=cudnn-linux-x86_64-9.0.0.312_cuda12-archive.tar.xz
  sha512=ccb14614aacf68eba8481455cabeeeb3ba16b02370977d293fed3f4c81679716e1e26fffb363c28ca9c4c6c7dbfab34d6a839b1f0906d667fabeb6177b4d7f66
  d=$(mktemp -d) && chmod 755 "$d"
  libdir=$d/usr/lib/$MULTIARCH
  mkdir -p "$d/DEBIAN" "$libdir" "$out"
  if [ -f "$src/$archive" ]; then
    echo "$sha512  $src/$archive" | sha512sum -c -
    tar -xJf "$src/$archive" -C "$d" --strip-components=1 --wildcards '*/lib/libcudnn*.so*' '*/LICENSE'
    mv "$d"/lib/libcudnn*.so* "$libdir/" && rmdir "$d/lib"
    mkdir -p "$d/usr/share/doc/ddp-cudnn" && mv "$d/LICENSE" "$d/usr/share/doc/ddp-cudnn/"
    version=9.0.0.312~cuda12
  elif ls "$src"/lib/libcudnn.so.9* >/dev/null 2>&1; then
    cp -a "$src"/lib/libcudnn*.so.9* "$libdir/"
    h=$(ls "$src"/include/cudnn_version*.h 2>/dev/null | head -n 1)
    [ -n "$h" ] || { echo "cuda-local-debs: $src/include/cudnn_version.h is needed to name the cuDNN version" >&2; exit 1; }
    v() { sed -n "s/^#define CUDNN_$1 *\([0-9][0-9]*\).*/\1/p" "$h"; }
    version=$(v MAJOR).$(v MINOR).$(v PATCHLEVEL)
    [ "$(v MAJOR)" = 9 ] || { echo "cuda-local-debs: $h is cuDNN $version; libtorch-cuda-2.6 needs cuDNN 9" >&2; exit 1; }
  else
    echo "cuda-local-debs: no cuDNN in $src: put $archive there (see docker/cudnn/README.md)" >&2
    exit 1
  fi
  # Unversioned development links are not shipped (nothing we build includes cudnn.h).
  find "$libdir" -name 'libcudnn*.so' -delete
  chmod 644 $(find "$libdir" -type f)
  cat > "$d/DEBIAN/control" <<EOF
Package: ddp-cudnn
Version: $version
Architecture: $ARCH
Maintainer: ddp <ddp@localhost>
Provides: nvidia-cudnn (= $version)
Conflicts: nvidia-cudnn
Replaces: nvidia-cudnn
Section: non-free/libs
Priority: optional
Description: NVIDIA cuDNN $version shared libraries (from the build context)
 What Debian's nvidia-cudnn installs by downloading NVIDIA's archive in its postinst, packaged from
 a copy given to the image build instead, so the build downloads nothing but Debian packages.
EOF
  build_deb "$d" "$out/ddp-cudnn_${version}_$ARCH.deb"
  rm -rf "$d"
  ;;
*)
  echo "usage: cuda-local-debs.sh libcuda OUT | cudnn SRC OUT" >&2
  exit 2
  ;;
esac
