#!/usr/bin/python3
"""SyncBatchNorm's cost in a training step, ddp next to PyTorch, in the same run.

Starts 2 ranks of bench_sync_bn (ours) and of pytorch_sync_bn.py (torch.nn.parallel DDP,
torchvision's ResNet-18), taking turns for --rounds rounds. Each side times a DDP step of ResNet-18
with BatchNorm and with SyncBatchNorm in alternating passes. Prints the median step time per side
and mode and SyncBatchNorm's overhead over BatchNorm; a mode torch refuses is shown with its reason.

  /usr/bin/python3 bench/sync_bn/run.py --bench build/bench/sync_bn/bench_sync_bn
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from ranks import result_lines, run_ranks  # noqa: E402


def run_once(cmd, nranks):
    """{mode: [step_ms per pass]} and {mode: reason} from rank 0's output."""
    out = run_ranks(cmd, nranks)[0][0]
    times, unsupported = {}, {}
    for f in result_lines(out):
        times.setdefault(f["mode"], []).append(float(f["step_ms"]))
    for line in out.splitlines():
        if line.startswith("UNSUPPORTED "):
            mode = line.split("mode=", 1)[1].split(" ", 1)[0]
            unsupported[mode] = line.split("reason=", 1)[1]
    return times, unsupported


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="path of bench_sync_bn")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=8, help="images per rank")
    p.add_argument("--size", type=int, default=64, help="image side")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--passes", type=int, default=3)
    a = p.parse_args()
    args = [str(v) for v in (a.batch, a.size, a.steps, a.warmup, a.passes)]
    sides = {"ddp": [a.bench] + args, "torch": [a.python, os.path.join(HERE, "pytorch_sync_bn.py")] + args}
    medians = {side: {} for side in sides}   # side -> mode -> [median of passes, per round]
    reasons = {}
    for r in range(a.rounds):
        for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            times, unsupported = run_once(sides[side], a.nproc)
            for mode, ms in times.items():
                medians[side].setdefault(mode, []).append(statistics.median(ms))
            for mode, why in unsupported.items():
                reasons[(side, mode)] = why
    print(f"ResNet-18, {a.nproc} ranks x {a.batch} images of {a.size}x{a.size}, 1 thread per rank, "
          f"DDP step in ms (median of {a.rounds} rounds of the median of {a.passes} passes of {a.steps} steps)\n")
    print("| side | BatchNorm | SyncBatchNorm | SyncBatchNorm overhead |")
    print("|---|---|---|---|")
    for side in sides:
        bn = statistics.median(medians[side]["bn"]) if "bn" in medians[side] else None
        if "syncbn" in medians[side]:
            sbn = statistics.median(medians[side]["syncbn"])
            print(f"| {side} | {bn:.1f} | {sbn:.1f} | {100 * (sbn / bn - 1):+.1f} % |")
        else:
            print(f"| {side} | {bn:.1f} | refused: {reasons.get((side, 'syncbn'), 'no result')} | n/a |")


if __name__ == "__main__":
    main()
