#!/usr/bin/python3
"""PowerSGD against DDP's allreduce on ResNet-18, ddp next to PyTorch, in the same run.

Starts 2 ranks of bench_powersgd (ours) and of pytorch_powersgd.py (torch.nn.parallel DDP,
torchvision's ResNet-18, torch's powerSGD_hook), taking turns for --rounds rounds. Each side times
a DDP step with plain allreduce and with PowerSGD of each --ranks, in alternating passes. Prints,
per side and mode, the median step time and the elements allreduced per step (and how many times
fewer than plain allreduce).

  /usr/bin/python3 bench/powersgd/run.py --bench build/bench/powersgd/bench_powersgd
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from ranks import result_lines, run_ranks  # noqa: E402


def run_once(cmd, nranks):
    """{mode: [(step_ms, floats) per pass]} from rank 0's output."""
    results = {}
    for f in result_lines(run_ranks(cmd, nranks)[0][0]):
        results.setdefault(f["mode"], []).append((float(f["step_ms"]), int(f["floats"])))
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="path of bench_powersgd")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=8, help="images per rank")
    p.add_argument("--size", type=int, default=64, help="image side")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--ranks", default="1,2,4", help="PowerSGD ranks")
    a = p.parse_args()
    args = [str(v) for v in (a.batch, a.size, a.steps, a.warmup, a.passes)] + [a.ranks]
    sides = {"ddp": [a.bench] + args, "torch": [a.python, os.path.join(HERE, "pytorch_powersgd.py")] + args}
    medians = {side: {} for side in sides}  # side -> mode -> [median step ms per round]
    floats = {side: {} for side in sides}   # side -> mode -> elements per step (the same every pass)
    for r in range(a.rounds):
        for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            for mode, passes in run_once(sides[side], a.nproc).items():
                medians[side].setdefault(mode, []).append(statistics.median(ms for ms, _ in passes))
                floats[side][mode] = passes[-1][1]
    print(f"ResNet-18 (1000 classes), {a.nproc} ranks x {a.batch} images of {a.size}x{a.size}, 1 thread per rank; "
          f"step in ms: median of {a.rounds} rounds of the median of {a.passes} passes of {a.steps} steps\n")
    print("| side | mode | step ms | elements allreduced per step | fewer than allreduce |")
    print("|---|---|---|---|---|")
    for side in sides:
        base = floats[side]["allreduce"]
        for mode in medians[side]:
            print(f"| {side} | {mode} | {statistics.median(medians[side][mode]):.1f} | {floats[side][mode]:,} | "
                  f"{base / floats[side][mode]:.1f}x |")


if __name__ == "__main__":
    main()
