"""Baseline for bench_nccl_allreduce: torch.distributed's NCCL allreduce at world size 1, same sizes
and output format. Usage: python3 allreduce_torch.py [--iters N]"""
import argparse
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=50)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("skipped: torch.cuda.is_available() is False")
        return 0
    init = "file://" + os.path.join(tempfile.mkdtemp(), "store")
    dist.init_process_group("nccl", init_method=init, rank=0, world_size=1)
    torch.cuda.set_device(0)
    print(f"impl=torch nccl={'.'.join(map(str, torch.cuda.nccl.version()))} world=1")
    size = 4096
    while size <= 256 << 20:
        t = torch.ones(size // 4, device="cuda", dtype=torch.float32)
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(a.iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        us = (time.perf_counter() - start) / a.iters * 1e6
        print(f"bytes={size} us_per_op={us:.2f} algbw_GBps={size / us / 1e3:.2f}")
        size *= 4
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
