#!/usr/bin/env bash
# Points libblas.so.3 / liblapack.so.3 / libopenblas.so.0 at OpenBLAS's OpenMP variant when the system would otherwise
# give LibTorch the reference BLAS or another OpenBLAS variant, and pins that choice (manual mode).
# Debian's LibTorch calls whatever libblas.so.3 the alternatives system selects; the reference one
# is 15-20x slower on matmuls.
#
#   select-blas.sh                  pin the OpenMP variant (install-deps.sh, the images)
#   select-blas.sh --record FILE    the same, and list in FILE each alternative it changed
#                                   (ddp-tools' postinst, so its prerm can undo only those)
#   select-blas.sh --unpin FILE     return the alternatives FILE lists to auto mode where they
#                                   still point at the OpenMP variant, then remove FILE
#
# Why the OpenMP variant: LibTorch's intra-op parallelism is OpenMP (libgomp). OpenBLAS built on
# the same runtime obeys at::set_num_threads (omp_set_num_threads) and runs one thread when called
# inside one of LibTorch's parallel regions; the pthread variant keeps its own pool of one thread
# per core, so ranks that share a node oversubscribe the CPUs.
#
# Why manual mode even when auto already picks the OpenMP variant: in auto mode the highest priority
# wins, and libopenblas0-pthread has 100 against the OpenMP variant's 95, so any later `apt install`
# that pulls the pthread variant in silently moves LibTorch onto it (seen on a fresh machine).
# `update-alternatives --set` pins the choice; tests/package/debs_in_fresh_root.sh installs the
# pthread variant afterwards and checks the choice holds. A BLAS the user chose by hand (MKL, BLIS)
# is left alone.
set -euo pipefail
mode=pin record=
case ${1:-} in
  --record) record=${2:?--record needs a FILE} ;;
  --unpin) mode=unpin record=${2:?--unpin needs a FILE} ;;
  "") ;;
  *) echo "select-blas: unknown argument '$1' (--record FILE, --unpin FILE)" >&2; exit 2 ;;
esac
# The multiarch folder (x86_64-linux-gnu, aarch64-linux-gnu) from where the package put the library,
# so this also runs in a runtime image without dpkg-dev or a compiler.
want=$(dirname "$(ls /usr/lib/*/openblas-openmp/libblas.so.3 2>/dev/null | head -n 1)")
if [[ $mode == unpin ]]; then
  [[ -f $record ]] || exit 0
  while read -r name; do
    [[ -n $name ]] || continue
    value=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p')
    if [[ $want != . && $value == "$want/"* ]]; then
      update-alternatives --quiet --auto "$name"
      echo "select-blas: $name back to auto mode"
    fi
  done < "$record"
  rm -f "$record"
  exit 0
fi
[[ $want != . ]] || { echo "select-blas: OpenBLAS (openmp) not installed (apt-get install libopenblas0-openmp)" >&2; exit 1; }
arch=$(basename "$(dirname "$want")")
[[ -z $record ]] || { mkdir -p "$(dirname "$record")"; : > "$record"; }
# libopenblas.so.0 too: the variant's libblas.so.3 loads it through $ORIGIN, which is the alternatives
# folder, so a stale libopenblas.so.0 alternative would run another variant's engine behind it.
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  name=$lib-$arch
  query=$(update-alternatives --query "$name" 2>/dev/null || true)
  current=$(sed -n 's/^Value: //p' <<< "$query")
  status=$(sed -n 's/^Status: //p' <<< "$query")
  case $current in
    "$want/$lib")
      [[ $status == manual ]] && continue
      update-alternatives --quiet --set "$name" "$want/$lib"
      echo "select-blas: $lib pinned to $want/$lib (was chosen by priority)" ;;
    ""|/usr/lib/$arch/blas/*|/usr/lib/$arch/lapack/*|/usr/lib/$arch/openblas-*/*)
      update-alternatives --quiet --set "$name" "$want/$lib"
      echo "select-blas: $lib -> $want/$lib (was ${current:-unset})" ;;
    *) echo "select-blas: $lib stays $current (chosen by hand)"; continue ;;
  esac
  [[ -z $record ]] || echo "$name" >> "$record"
done
