#!/usr/bin/python3
"""PyTorch's side of bench/powersgd/run.py: the same step with torch's DDP and torchvision's
ResNet-18, with DDP's allreduce and with torch's powerSGD_hook of each rank asked for (start 2),
alternating passes. Rank 0 prints "RESULT mode=allreduce|powersgdR pass=P step_ms=X floats=F" (F
from PowerSGDState.compression_stats() over the pass, as the C++ side).

torch's hook issues a bucket's P and Q allreduces from future callbacks; over Gloo with several
buckets the ranks then pair mismatched collectives (torch 1.13: a crash in gloo's pair.cc or a
hang; see docs/DDP.md). Each bucket's future is therefore waited for inside the hook, which
orders the collectives and costs torch the overlap of a bucket's compression with the rest of
backward; the numbers below are of that runnable form.
Arguments: BATCH SIZE STEPS WARMUP PASSES RANKS."""
import sys
import time

import torch
import torch.distributed as dist
import torchvision
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd


def serialized(state, bucket):
    fut = powersgd.powerSGD_hook(state, bucket)
    fut.wait()
    return fut


def main():
    batch, size, steps, warmup, passes = map(int, sys.argv[1:6])
    ranks = [int(r) for r in sys.argv[6].split(",")]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 1000, (batch,))
    modes = {}
    for r in [0] + ranks:
        torch.manual_seed(0)
        net = torchvision.models.resnet18(num_classes=1000)
        model = torch.nn.parallel.DistributedDataParallel(net)
        state = None
        if r:
            state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=r, start_powerSGD_iter=2)
            model.register_comm_hook(state, serialized)
        modes["allreduce" if r == 0 else "powersgd%d" % r] = (model, torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9), state)
    grads = sum(p.numel() for p in modes["allreduce"][0].parameters())

    def step(name):
        model, opt, _ = modes[name]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for name in modes:
        for _ in range(warmup):
            step(name)
    for p in range(passes):
        for name, (_, _, state) in modes.items():
            after0 = state.compression_stats()[2] if state else 0
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(steps):
                step(name)
            dist.barrier()
            floats = (state.compression_stats()[2] - after0) // steps if state else grads
            if rank == 0:
                print(f"RESULT mode={name} pass={p} step_ms={(time.perf_counter() - t0) * 1000 / steps} floats={floats}",
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
