#!/usr/bin/env bash
# "Nothing got slower": the same benchmarks from two build folders, alternating, in one run on one
# machine — for a refactor, build the old commit in a worktree and compare it with this one.
#   bash bench/compare_builds.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]
# 1. CIFAR-10 end to end: ddprun --standalone --nproc-per-node 2 train_cifar10, 1 epoch of a synthetic
#    CIFAR-10 of the real size (50,000 + 10,000, --signal 0.15 --noise 60, binary layout), timed from
#    start to exit; ROUNDS runs per build, alternating, median reported.
# 2. bench_ddp_step of each build (DDP step vs PyTorch DDP in the same invocation, CNN and ResNet-18).
# Give it a quiet machine; the builds must be of the same type (RelWithDebInfo by default).
set -euo pipefail
before=$(cd "$1" && pwd) after=$(cd "$2" && pwd) rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$after/tools/make_cifar10_synthetic/make_cifar10_synthetic" --out "$work/data" --layout bin \
  --signal 0.15 --noise 60 > /dev/null
declare -A times
for r in $(seq "$rounds"); do
  for side in before after; do
    b=${!side}
    t0=$(date +%s.%N)
    "$b/apps/ddprun/ddprun" --standalone --nproc-per-node 2 "$b/apps/train_cifar10/train_cifar10" \
      --data-dir "$work/data" --epochs 1 --model-dir "$work/model-$side" > "$work/$side-$r.log" 2>&1 \
      || { echo "compare_builds: $side run $r failed:"; tail -20 "$work/$side-$r.log"; exit 1; }
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    times[$side]="${times[$side]:-} $t"
    echo "cifar10 e2e, 1 epoch, 2 ranks: $side round $r: $t s ($(grep -o 'accuracy=[0-9.]*' "$work/$side-$r.log" | tail -1))"
  done
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(median "${times[before]}") ma=$(median "${times[after]}")
echo "cifar10 e2e median: before $mb s, after $ma s, after/before $(echo "scale=3; $ma / $mb" | bc)"
for side in before after; do
  echo "== bench_ddp_step ($side: ${!side})"
  (cd "${!side}" && ./bench/ddp_step/bench_ddp_step --rounds=3 --passes=3 --steps=5 --warmup=2)
done
