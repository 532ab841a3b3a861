"""PyTorch's side of bench_ddp_step: the local step and torch.nn.parallel.DistributedDataParallel's
step on the same models, batch and thread settings. Started by bench_ddp_step once per rank (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT set); rank 0 prints "RESULT model=... impl=pytorch mode=...
step_ms=..." lines.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class CifarNet(nn.Module):
    """conv 3->6 k5, maxpool 2, conv 6->16 k5, fc 400->120->84->10 (bench_models.h)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def resnet18():
    """torchvision's resnet18 with the CIFAR stem, as bench_models.h's ResNet18."""
    net = torchvision.models.resnet18(num_classes=10)
    net.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    net.maxpool = nn.Identity()
    return net


def time_steps(warmup, steps, step):
    for _ in range(warmup):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    return (time.perf_counter() - t0) * 1000 / steps


def bench(name, make, batch, args):
    torch.manual_seed(0)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))
    steps = {}
    for mode in ("local", "local_sync", "ddp"):
        net = make()
        model = torch.nn.parallel.DistributedDataParallel(net) if mode == "ddp" else net
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

        def step(model=model, opt=opt, sync=(mode == "local_sync")):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            if sync:
                dist.barrier()

        steps[mode] = step
    # The gradients' allreduce alone, in 25 MiB buckets (as bench_ddp_step's "allreduce" mode).
    numel = sum(p.numel() for p in make().parameters())
    cap = (25 << 20) // 4
    buckets = [torch.ones(min(cap, numel - at)) for at in range(0, numel, cap)]

    def allreduce():
        works = [dist.all_reduce(b, async_op=True) for b in buckets]
        for w in works:
            w.wait()

    steps["allreduce"] = allreduce
    # As bench_ddp_step: warm every mode up, then passes over all modes; median per mode.
    for step in steps.values():
        for _ in range(args.warmup):
            step()
    times = {mode: [] for mode in steps}
    for _ in range(args.passes):
        for mode, step in steps.items():
            times[mode].append(time_steps(0, args.steps, step))
    if dist.get_rank() == 0:
        for mode, ms in times.items():
            print("RESULT model=%s impl=pytorch mode=%s step_ms=%.3f" % (name, mode, statistics.median(ms)),
                  flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="cnn,resnet18")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-cnn", type=int, default=64)
    p.add_argument("--batch-resnet", type=int, default=16)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo")
    for name in args.models.split(","):
        if name == "cnn":
            bench("cnn", CifarNet, args.batch_cnn, args)
        elif name == "resnet18":
            bench("resnet18", resnet18, args.batch_resnet, args)
    # Torch 2.6's destroy_process_group hung in 2 of ~14 two-rank runs here, on a rank whose peer was
    # still alive (the main thread waiting on a condition variable inside it; pytorch/pytorch#75097
    # reports such hangs). Teardown is not what this measures: once every rank has printed, the
    # ranks meet and leave without it.
    sys.stdout.flush()
    dist.barrier()
    os._exit(0)


if __name__ == "__main__":
    main()
