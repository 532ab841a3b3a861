#!/usr/bin/env bash
# The GPU check: builds ddp against the device machine's pip LibTorch (CUDA) and runs what needs a
# GPU. Meant for the device tool's machine (one H200, python3 with torch 2.x+cu13x, CUDA toolkit,
# cmake, ninja, g++, no internet, no apt). Everything it lacks comes from Debian packages that
# scripts/gpu-fetch-debs.sh downloads beforehand on the development machine into .debs/.
#
#   here:   bash scripts/gpu-fetch-debs.sh
#   there:  bash scripts/gpu-check.sh              (device run: carry .debs; logs land in $OUT)
#   here:   bash scripts/gpu-check.sh --dry-run    (Debian's CPU LibTorch, -j2: exercises the
#                                                   configure/build/skip logic; GPU steps skip)
#
# Steps (each logged with its status in $OUT/summary.txt; a failure never stops the next step):
#   env        GPU, torch, ABI, NCCL, compiler facts
#   deps       dpkg -x .debs/*.deb into .gpu-prefix/ (Gloo, GoogleTest, cxxopts)
#   configure  CMake against torch.utils.cmake_prefix_path, NCCL = the one torch loads
#   build      GPU targets first (tests, trainer, benches), all cores
#   gpu-tests  ctest -L gpu (NCCL group: ops, dtypes, stream ordering, watchdog)
#   train      1-GPU NCCL run of train_cifar10 on generated CIFAR-10 data (if the app exists)
#   bench      allreduce at world 1 (ours vs torch.distributed); trainer vs Python images/s (if any)
#   build-all, suite   the rest of the project and its CPU tests, with whatever time is left
# Total wall time is capped by DDP_GPU_CHECK_BUDGET_S (default 510 s; the device tool allows 600).
#
# Gloo clash: pip torch links its own Gloo statically into libtorch_cpu.so and may export its
# symbols; Debian's libgloo.so.0 (which our Gloo group is compiled against) then loses symbol lookup
# to torch's copy, a different Gloo version, for every symbol both define. When torch exports Gloo
# symbols, this script preloads Debian's libgloo (LD_PRELOAD) so our binaries use one consistent
# Gloo; torch's own (c10d) Gloo code is never run by them. DDP_GPU_CHECK_GLOO_PRELOAD=0|1 overrides.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
export ROOT

DRY_RUN=0
[[ "${1:-}" == "--dry-run" ]] && DRY_RUN=1
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
: >"$OUT/summary.txt"
LOG=$OUT/gpu-check.log
exec > >(tee -a "$LOG") 2>&1
set -x

START=$(date +%s)
if ((DRY_RUN)); then
  BUDGET=${DDP_GPU_CHECK_BUDGET_S:-3000}
  JOBS=${DDP_GPU_CHECK_JOBS:-2}
  PY=${DDP_PYTHON:-/usr/bin/python3}
  BUILD=${DDP_GPU_CHECK_BUILD_DIR:-$ROOT/build-gpu-dry}
else
  BUDGET=${DDP_GPU_CHECK_BUDGET_S:-510}
  JOBS=${DDP_GPU_CHECK_JOBS:-$(nproc)}
  PY=${DDP_PYTHON:-python3}
  BUILD=${DDP_GPU_CHECK_BUILD_DIR:-$ROOT/build-gpu}
fi
DEADLINE=$((START + BUDGET))
# The GPU machine builds the GPU targets with 16 cores in a few minutes; here, with 2, it takes longer.
BUILD_LIMIT=${DDP_GPU_CHECK_BUILD_S:-$( ((DRY_RUN)) && echo 1800 || echo 330)}
PREFIX=$ROOT/.gpu-prefix
DATA=${TMPDIR:-/tmp}/ddp-gpu-check-data
export OUT BUILD PREFIX PY JOBS DRY_RUN DATA

record() { printf '%-12s %-8s %s\n' "$1" "$2" "$3" | tee -a "$OUT/summary.txt"; }

# step NAME LOGFILE LIMIT_S FUNCTION: runs FUNCTION in a child bash under `timeout`, appending its
# output to $OUT/LOGFILE, and records OK / FAIL / TIMEOUT / SKIP (exit 3 = skipped, reason on the
# last line of output).
step() {
  local name=$1 logfile=$2 limit=$3 fn=$4
  local left=$((DEADLINE - $(date +%s)))
  if ((left < 20)); then
    record "$name" SKIP "time budget spent"
    return 1
  fi
  ((limit > left)) && limit=$left
  local t0
  t0=$(date +%s)
  echo "===== $name (limit ${limit}s) =====" >>"$OUT/$logfile"
  timeout -k 10 "$limit" bash -c "set -x; $fn" >>"$OUT/$logfile" 2>&1
  local rc=$? dt=$(($(date +%s) - t0))
  case $rc in
    0) record "$name" OK "${dt}s" ;;
    3) record "$name" SKIP "$(grep -v '^+' "$OUT/$logfile" | tail -n 1)" ;;
    124 | 137) record "$name" TIMEOUT "after ${dt}s (limit ${limit}s), see $logfile" ;;
    *) record "$name" FAIL "exit $rc after ${dt}s, see $logfile" ;;
  esac
  grep -v '^+' "$OUT/$logfile" | tail -n 15
  return $rc
}
note() { echo "$*"; }

# ---- env --------------------------------------------------------------------------------------------
env_facts() {
  uname -a
  nproc
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || note "no nvidia-smi"
  command -v nvcc && nvcc --version | tail -n 2
  g++ --version | head -n 1
  cmake --version | head -n 1
  ninja --version || true
  "$PY" - <<'EOF'
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "devices", torch.cuda.device_count())
print("cxx11_abi", torch._C._GLIBCXX_USE_CXX11_ABI)
print("cmake_prefix_path", torch.utils.cmake_prefix_path)
print("torch_lib", os.path.join(os.path.dirname(torch.__file__), "lib"))
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0), "nccl", torch.cuda.nccl.version())
EOF
}

# Facts the later steps need, computed once in this shell.
TORCH_CMAKE="" TORCH_LIB="" TORCH_ABI=1
if ! ((DRY_RUN)); then
  TORCH_CMAKE=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  TORCH_LIB=$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
  TORCH_ABI=$("$PY" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null || echo 1)
fi
export TORCH_CMAKE TORCH_LIB TORCH_ABI

# ---- deps -------------------------------------------------------------------------------------------
unpack_debs() {
  shopt -s nullglob
  local debs=("$ROOT"/.debs/*.deb)
  if ((${#debs[@]} == 0)); then
    if ((DRY_RUN)); then
      note "no .debs/ (run scripts/gpu-fetch-debs.sh): using this machine's packages"
      exit 3
    fi
    note "no .debs/*.deb: run scripts/gpu-fetch-debs.sh on the development machine and carry .debs"
    exit 1
  fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  for d in "${debs[@]}"; do dpkg -x "$d" "$PREFIX" || exit 1; done
  ls "$PREFIX/usr/lib" "$PREFIX/usr/lib/x86_64-linux-gnu"
}

# ---- configure ----------------------------------------------------------------------------------------
find_nccl() {
  # The NCCL that torch itself loads (pip: nvidia-nccl-cu1x), so one libnccl.so.2 is in the process.
  local lib="" inc=""
  if [[ -n "$TORCH_LIB" && -f "$TORCH_LIB/libtorch_cuda.so" ]]; then
    lib=$(ldd "$TORCH_LIB/libtorch_cuda.so" | awk '/libnccl\.so/ {print $3; exit}')
  fi
  if [[ -z "$lib" || ! -f "$lib" ]]; then
    lib=$("$PY" -c 'import nvidia.nccl, glob, os; print((glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so*")) or [""])[0])' 2>/dev/null)
  fi
  [[ -z "$lib" && -f /usr/local/cuda/lib64/libnccl.so ]] && lib=/usr/local/cuda/lib64/libnccl.so
  if [[ -n "$lib" ]]; then
    local d
    d=$(dirname "$(readlink -f "$lib")")
    for c in "$d/../include" /usr/local/cuda/include /usr/include; do
      [[ -f "$c/nccl.h" ]] && inc=$(readlink -f "$c") && break
    done
  fi
  echo "$lib|$inc"
}

configure() {
  local args=(-S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_WITH_NCCL=ON
    -DPython3_EXECUTABLE="$(command -v "$PY")" -DPYTHON_EXECUTABLE="$(command -v "$PY")")
  local prefixes=()
  [[ -n "$TORCH_CMAKE" ]] && prefixes+=("$TORCH_CMAKE")
  if [[ -d "$PREFIX/usr" ]]; then
    prefixes+=("$PREFIX/usr")
    # Debian's GlooTargets.cmake hard-codes /usr/lib/libgloo.so.0.5.0: bypass it, name the files.
    local gloo
    gloo=$(ls "$PREFIX"/usr/lib/libgloo.so.0.* "$PREFIX"/usr/lib/x86_64-linux-gnu/libgloo.so.0.* 2>/dev/null | head -n 1)
    args+=(-DCMAKE_DISABLE_FIND_PACKAGE_Gloo=TRUE -DDDP_GLOO_INCLUDE="$PREFIX/usr/include" -DDDP_GLOO_LIBRARY="$gloo"
      "-DCMAKE_CXX_FLAGS=-idirafter $PREFIX/usr/include")
  fi
  ((${#prefixes[@]})) && args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefixes[*]}")")
  if ! ((DRY_RUN)); then
    if [[ "$TORCH_ABI" != 1 ]]; then
      note "torch uses the pre-cxx11 ABI: Debian's libraries (cxx11 ABI) cannot link with it"
      exit 1
    fi
    local nccl
    nccl=$(find_nccl)
    note "NCCL: library ${nccl%%|*} headers ${nccl##*|}"
    [[ -n "${nccl%%|*}" ]] && args+=(-DDDP_NCCL_LIBRARY="${nccl%%|*}")
    [[ -n "${nccl##*|}" ]] && args+=(-DDDP_NCCL_INCLUDE="${nccl##*|}")
    [[ -d /usr/local/cuda ]] && args+=(-DCUDAToolkit_ROOT=/usr/local/cuda -DDDP_CUDA_ROOT=/usr/local/cuda)
    [[ -x /usr/local/cuda/bin/nvcc ]] && args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
    args+=(-DTORCH_CUDA_ARCH_LIST=9.0 -DDDP_WITH_OPENCV=OFF)
  fi
  cmake "${args[@]}"
}

# ---- build ------------------------------------------------------------------------------------------
GPU_TARGETS="test_nccl test_nccl_internals test_nccl_gpu bench_nccl_allreduce"
build_gpu_targets() {
  local targets=""
  for t in $GPU_TARGETS train_cifar10 make_cifar10_synthetic test_gloo; do
    ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q "^$t:" && targets+=" $t"
  done
  note "building:$targets"
  cmake --build "$BUILD" --parallel "$JOBS" --target $targets
}
build_all() { cmake --build "$BUILD" --parallel "$JOBS"; }

# ---- run-time environment -----------------------------------------------------------------------------
if [[ -d "$PREFIX/usr" ]]; then
  export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
gloo_preload_decision() {
  local want=${DDP_GPU_CHECK_GLOO_PRELOAD:-auto} exported=0
  if [[ -n "$TORCH_LIB" && -f "$TORCH_LIB/libtorch_cpu.so" ]]; then
    exported=$(nm -D --defined-only "$TORCH_LIB/libtorch_cpu.so" 2>/dev/null | grep -c ' _ZN4gloo' || true)
  fi
  echo "torch exports $exported Gloo symbols; torch ships gloo headers: $([[ -d "$TORCH_LIB/../include/gloo" ]] && echo yes || echo no)" >&2
  local gloo
  gloo=$(ls "$PREFIX"/usr/lib/libgloo.so.0 "$PREFIX"/usr/lib/x86_64-linux-gnu/libgloo.so.0 2>/dev/null | head -n 1)
  if [[ -n "$gloo" && ($want == 1 || ($want == auto && $exported -gt 0)) ]]; then echo "$gloo"; fi
}

# ---- gpu tests --------------------------------------------------------------------------------------
gpu_tests() {
  cd "$BUILD" || exit 1
  "$BUILD/tests/nccl/test_nccl" || exit 1
  [[ -x "$BUILD/tests/nccl/test_nccl_internals" ]] && { "$BUILD/tests/nccl/test_nccl_internals" || exit 1; }
  ctest -L gpu --no-tests=error --output-on-failure --timeout 240 -j 1
}

# ---- train --------------------------------------------------------------------------------------------
make_cifar_data() {
  local tool="$BUILD/tools/make_cifar10_synthetic/make_cifar10_synthetic"
  if [[ -x "$tool" ]]; then
    "$tool" --out "$DATA" --train 10000 --test 2000 --seed 0 --layout both && return 0
  fi
  # Fallback, CIFAR-10 binary layout: label byte + 3072 pixel bytes per record, 1,000 per file.
  "$PY" - "$DATA" <<'EOF'
import os, random, sys
root = os.path.join(sys.argv[1], "cifar-10-batches-bin")
os.makedirs(root, exist_ok=True)
rng = random.Random(0)
names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
for n in names:
    with open(os.path.join(root, n), "wb") as f:
        for _ in range(1000):
            label = rng.randrange(10)
            f.write(bytes([label]) + bytes([(label * 25 + rng.randrange(16)) % 256]) * 3072)
with open(os.path.join(root, "batches.meta.txt"), "w") as f:
    f.write("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]) + "\n")
print("generated", root)
EOF
}
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# One process, rank 0 of 1, as a PyTorchJob would start it (RANK/WORLD_SIZE/MASTER_*).
run_one_rank() { RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) "$@"; }

train_args() {
  local bin=$1
  if [[ -n "${DDP_GPU_CHECK_TRAIN_ARGS:-}" ]]; then
    echo "$DDP_GPU_CHECK_TRAIN_ARGS"
    return
  fi
  local a="--data-dir $DATA --epochs 1 --batch-size 128 --device cuda --backend nccl"
  ((DRY_RUN)) && a="--data-dir $DATA --epochs 1 --batch-size 128 --device auto --backend auto --max-steps 20"
  "$bin" --help 2>/dev/null | grep -q -- '--amp' && a+=" --amp bf16"
  echo "$a"
}

train() {
  local bin="$BUILD/apps/train_cifar10/train_cifar10"
  if [[ ! -x "$bin" ]]; then
    note "train_cifar10 not built (apps/train_cifar10 missing on this branch?)"
    exit 3
  fi
  make_cifar_data || exit 1
  "$bin" --help | head -n 60
  # shellcheck disable=SC2046
  DDP_LOG_LEVEL=info run_one_rank "$bin" $(train_args "$bin") --metrics-file "$OUT/train-metrics.jsonl"
}

# ---- bench ----------------------------------------------------------------------------------------------
bench() {
  local bin="$BUILD/bench/nccl_allreduce/bench_nccl_allreduce"
  [[ -x "$bin" ]] || { note "bench_nccl_allreduce not built"; exit 1; }
  echo "## allreduce, world 1 (ours, then torch.distributed)"
  "$bin" --iters 50 || exit 1
  env -u LD_PRELOAD "$PY" "$ROOT/bench/nccl_allreduce/allreduce_torch.py" --iters 50 || exit 1
  echo "## train_cifar10 vs the seed's Python script, 1 epoch, world 1, same data (images/s)"
  local trainer="$BUILD/apps/train_cifar10/train_cifar10" base="$ROOT/bench/python/cifar10_seed_baseline.py"
  if [[ ! -x "$trainer" || ! -f "$base" ]]; then
    echo "skipped: needs apps/train_cifar10 and bench/python/cifar10_seed_baseline.py"
    return 0
  fi
  [[ -d "$DATA/cifar-10-batches-py" ]] || make_cifar_data_py || return 1
  # shellcheck disable=SC2046
  run_one_rank "$trainer" $(train_args "$trainer") --log-interval 100 | tail -n 5
  local base_args=(--data-dir "$DATA" --epochs 1 --batch-size 128 --log-interval 100)
  if grep -q -- '--device' "$base"; then
    base_args+=(--device cuda)
  else
    echo "note: the baseline has no --device flag, so it trains on the CPU (Gloo), not on the GPU"
  fi
  env -u LD_PRELOAD RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" \
    "$PY" "$base" "${base_args[@]}" | tail -n 3
}

make_cifar_data_py() {
  local tool="$BUILD/tools/make_cifar10_synthetic/make_cifar10_synthetic"
  [[ -x "$tool" ]] || { echo "make_cifar10_synthetic not built: no Python-layout data"; return 1; }
  "$tool" --out "$DATA" --train 10000 --test 2000 --seed 0 --layout both
}

suite() {
  cd "$BUILD" || exit 1
  ctest -LE gpu --output-on-failure --timeout 120 -j "$JOBS"
}

# ---- run ------------------------------------------------------------------------------------------------
export -f note env_facts unpack_debs find_nccl configure build_gpu_targets build_all gpu_tests make_cifar_data \
  make_cifar_data_py free_port run_one_rank train_args train bench suite
export GPU_TARGETS
record start "-" "$(date -u +%FT%TZ) dry_run=$DRY_RUN budget=${BUDGET}s jobs=$JOBS out=$OUT"
step env gpu-check.log 60 env_facts
step deps gpu-check.log 60 unpack_debs
PRELOAD=$(gloo_preload_decision)
record gloo "-" "${PRELOAD:+LD_PRELOAD=$PRELOAD}${PRELOAD:-no preload (torch exports no Gloo symbols, or no .debs)}"
# A build that fails or runs out of time still leaves whatever targets it finished: test those.
if step configure build.log 120 configure; then
  step build build.log "$BUILD_LIMIT" build_gpu_targets
  [[ -n "$PRELOAD" ]] && export LD_PRELOAD=$PRELOAD
  step gpu-tests tests.log 240 gpu_tests
  step train train.log 120 train
  step bench bench.txt 180 bench
  if ((DRY_RUN)); then
    record build-all SKIP "dry run: the full suite is CI's job here"
  elif step build-all build.log 240 build_all; then
    step suite tests.log 240 suite
  fi
fi
record end "-" "$(($(date +%s) - START))s in all"
cat "$OUT/summary.txt"
