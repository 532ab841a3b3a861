#!/usr/bin/env bash
# Installed binaries run from any prefix with a clean environment: installs the build into a
# temporary prefix, MOVES the prefix elsewhere (so only $ORIGIN-relative paths can work), then, with
# `env -i` (no LD_LIBRARY_PATH, no PATH beyond /usr/bin:/bin):
#   1. each installed binary's RUNPATH holds $ORIGIN/../<libdir> and no path into the build tree,
#      and ldd finds every library;
#   2. make_cifar10_synthetic writes a small dataset, and ddprun runs 2 train_cifar10 ranks on it
#      for one epoch; the model file appears;
#   3. the installed ddp-plot (a Python program: no RUNPATH) finds its modules from the moved prefix
#      and draws that run's --metrics-file (without matplotlib: reads it and exits 3 saying so);
#   4. every other installed binary answers --help with exit 0.
# usage: run_installed.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(cd "$1" && pwd) work=$2
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/staging" > "$work/install.log"
mv "$work/staging" "$work/moved"
prefix=$work/moved
clean() { env -i PATH=/usr/bin:/bin HOME="$work" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

libdir=lib
[[ -d $prefix/lib64 && ! -d $prefix/lib ]] && libdir=lib64
# The SONAME link (libddp.so.MAJOR.MINOR before 1.0, cmake/DdpVersion.cmake) beside the library.
sonames=("$prefix/$libdir"/libddp.so.[0-9]*)
[[ -L ${sonames[0]} ]] || fail "no libddp.so.N link under $prefix/$libdir"
bins=("$prefix"/bin/*)
((${#bins[@]} >= 3)) || fail "only ${#bins[@]} binaries installed: ${bins[*]}"
for b in "${bins[@]}"; do
  # Scripts (ddp-plot) have no RUNPATH to check; they are run below.
  [[ $(head -c 4 "$b") == $'\x7fELF' ]] || { echo "ok: $(basename "$b") is no ELF binary"; continue; }
  runpath=$(readelf -d "$b" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  [[ ":$runpath:" == *":\$ORIGIN/../$libdir:"* ]] || fail "$(basename "$b"): RUNPATH '$runpath' lacks \$ORIGIN/../$libdir"
  [[ $runpath != *"$build"* ]] || fail "$(basename "$b"): RUNPATH '$runpath' points into the build tree"
  if clean ldd "$b" | grep -q "not found"; then fail "$(basename "$b"): $(clean ldd "$b" | grep 'not found')"; fi
  echo "ok: $(basename "$b") RUNPATH $runpath"
done

clean "$prefix/bin/make_cifar10_synthetic" --out "$work/data" --train 500 --test 100 --layout bin --seed 1
clean "$prefix/bin/ddprun" --standalone --nproc-per-node 2 "$prefix/bin/train_cifar10" --data-dir "$work/data" \
  --model-dir "$work/model" --epochs 1 --batch-size 50 --threads 1 --metrics-file "$work/metrics.jsonl" \
  > "$work/train.log" 2>&1 ||
  { cat "$work/train.log"; fail "installed ddprun + train_cifar10 failed"; }
[[ -s $work/model/model.pt ]] || fail "no model.pt after the installed run"
echo "ok: installed ddprun ran 2 installed train_cifar10 ranks to a model"
[[ -x $prefix/bin/ddp-plot ]] || fail "no bin/ddp-plot installed"
# Where /usr/bin/python3 has no matplotlib (the LibTorch 2.6 root: ddp-tools only recommends it),
# ddp-plot still has to find its modules and read the run, then say what is missing: exit 3.
if clean /usr/bin/python3 -c 'import matplotlib' 2> /dev/null; then
  clean "$prefix/bin/ddp-plot" "$work/metrics.jsonl" --out "$work/curves" > "$work/plot.log" 2>&1 ||
    { cat "$work/plot.log"; fail "installed ddp-plot failed"; }
  [[ -s $work/curves.png && -s $work/curves.svg ]] || fail "installed ddp-plot wrote no curves.png and curves.svg"
  echo "ok: installed ddp-plot drew the run's metrics file"
else
  rc=0
  clean "$prefix/bin/ddp-plot" "$work/metrics.jsonl" --out "$work/curves" > "$work/plot.log" 2>&1 || rc=$?
  [[ $rc == 3 ]] && grep -q "apt-get install python3-matplotlib" "$work/plot.log" ||
    { cat "$work/plot.log"; fail "installed ddp-plot without matplotlib: exit $rc, not 3 naming python3-matplotlib"; }
  echo "ok: installed ddp-plot read the run's metrics file and, without matplotlib, said so (exit 3)"
fi
for b in "${bins[@]}"; do
  case $(basename "$b") in ddprun|train_cifar10|make_cifar10_synthetic) continue ;; esac
  clean "$b" --help > /dev/null || fail "$(basename "$b") --help exited $?"
  echo "ok: $(basename "$b") --help"
done
echo "installed binaries: all ok"
