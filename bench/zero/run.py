#!/usr/bin/python3
"""ZeRO's optimizer-state memory per rank on ResNet-18 with Adam, ddp next to PyTorch, in one run.

For each world size in --nproc, starts the ranks of bench_zero (ours) and of pytorch_zero.py
(torch's DDP, torchvision's ResNet-18, torch's ZeroRedundancyOptimizer), taking turns. Prints per
side, world size and mode: the optimizer-state bytes of the rank holding the most, that as a share
of the plain optimizer's (the goal: at most 1/N + 5%), and the median step time.

  /usr/bin/python3 bench/zero/run.py --bench build/bench/zero/bench_zero
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from ranks import result_lines, run_ranks  # noqa: E402


def run_once(cmd, nranks):
    """{mode: [fields per rank]} from every rank's output."""
    results = {}
    for out, _ in run_ranks(cmd, nranks):
        for f in result_lines(out):
            results.setdefault(f["mode"], []).append(f)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="path of bench_zero")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--nproc", default="2,4", help="world sizes")
    p.add_argument("--batch", type=int, default=4, help="images per rank")
    p.add_argument("--size", type=int, default=64, help="image side")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--passes", type=int, default=3)
    a = p.parse_args()
    args = [str(v) for v in (a.batch, a.size, a.steps, a.warmup, a.passes)]
    sides = {"ddp": [a.bench] + args, "torch": [a.python, os.path.join(HERE, "pytorch_zero.py")] + args}
    print(f"ResNet-18 (1000 classes), Adam, {a.batch} images of {a.size}x{a.size} per rank, 1 thread per rank; "
          f"state: the bytes of the tensors in a rank's optimizer state (exp_avg, exp_avg_sq); "
          f"step: median of {a.passes} passes of {a.steps} steps\n")
    print("| side | ranks | mode | state MiB, largest rank | smallest rank | share of plain Adam | goal 1/N + 5% | step ms |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(v) for v in a.nproc.split(",")):
        for side, cmd in sides.items():
            res = run_once(cmd, n)
            plain = max(int(f["state_bytes"]) for f in res["adam"])
            for mode in ("adam", "zero"):
                per_rank = [int(f["state_bytes"]) for f in res[mode]]
                share = max(per_rank) / plain
                goal = "" if mode == "adam" else ("met" if share <= 1 / n + 0.05 else "MISSED")
                step = statistics.median(float(f["step_ms"]) for f in res[mode])
                print(f"| {side} | {n} | {mode} | {max(per_rank) / 2**20:.2f} | {min(per_rank) / 2**20:.2f} | "
                      f"{share:.3f} | {goal} | {step:.1f} |")


if __name__ == "__main__":
    main()
