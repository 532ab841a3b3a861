"""Allreduce bandwidth of torch.distributed's Gloo backend: the baseline for bench_allreduce.

Same protocol as bench_allreduce.cpp (start like a torchrun worker; rank 0 prints
"<bytes> <iterations> <seconds per allreduce (slowest rank)>" per size). Run through run.py.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def timed(t, iters):
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return elapsed.item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-bytes", type=int, default=4096)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--seconds", type=float, default=0.5)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    dist.init_process_group("gloo")  # env://
    bytes_ = a.min_bytes
    while bytes_ <= a.max_bytes:
        t = torch.ones(bytes_ // 4, dtype=torch.float32)
        warm = timed(t, a.warmup) / a.warmup
        w = torch.tensor([warm], dtype=torch.float64)
        dist.all_reduce(w, op=dist.ReduceOp.MAX)
        iters = min(max(int(a.seconds / max(w.item(), 1e-7)), 5), 20000)
        per_op = timed(t, iters) / iters
        if dist.get_rank() == 0:
            print(f"{bytes_} {iters} {per_op:.9f}", flush=True)
        bytes_ *= 2
    dist.barrier()
    # A rank of torch 2.6's Gloo group (Debian 13) can hang in destroy_process_group or interpreter
    # teardown after the last op, which left the driver waiting forever. Everything is measured and
    # printed by now, so leave without the teardown (on 1.13 too: the same exit for both).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
