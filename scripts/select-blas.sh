#!/usr/bin/env bash
# Points libblas.so.3 / liblapack.so.3 / libopenblas.so.0 at OpenBLAS's OpenMP variant when the system would otherwise
# give LibTorch the reference BLAS or another OpenBLAS variant. Debian's LibTorch calls whatever
# libblas.so.3 the alternatives system selects; the reference one is 15-20x slower on matmuls.
#
# Why the OpenMP variant: LibTorch's intra-op parallelism is OpenMP (libgomp). OpenBLAS built on
# the same runtime obeys at::set_num_threads (omp_set_num_threads) and runs one thread when called
# inside one of LibTorch's parallel regions; the pthread variant keeps its own pool of one thread
# per core, so ranks that share a node oversubscribe the CPUs (and 'auto' mode prefers it, priority
# 100 vs 95, when both are installed). A BLAS the user chose by hand (MKL, BLIS) is left alone.
set -euo pipefail
# The multiarch folder (x86_64-linux-gnu, aarch64-linux-gnu) from where the package put the library,
# so this also runs in a runtime image without dpkg-dev or a compiler.
want=$(dirname "$(ls /usr/lib/*/openblas-openmp/libblas.so.3 2>/dev/null | head -n 1)")
[[ $want != . ]] || { echo "select-blas: OpenBLAS (openmp) not installed (apt-get install libopenblas0-openmp)" >&2; exit 1; }
arch=$(basename "$(dirname "$want")")
# libopenblas.so.0 too: the variant's libblas.so.3 loads it through $ORIGIN, which is the alternatives
# folder, so a stale libopenblas.so.0 alternative would run another variant's engine behind it.
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  name=$lib-$arch
  current=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p')
  case $current in
    "$want/$lib") ;;
    ""|/usr/lib/$arch/blas/*|/usr/lib/$arch/lapack/*|/usr/lib/$arch/openblas-*/*)
      update-alternatives --quiet --set "$name" "$want/$lib"
      echo "select-blas: $lib -> $want/$lib (was ${current:-unset})" ;;
    *) echo "select-blas: $lib stays $current (chosen by hand)" ;;
  esac
done
