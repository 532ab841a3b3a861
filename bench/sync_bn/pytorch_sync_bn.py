#!/usr/bin/python3
"""PyTorch's side of bench/sync_bn/run.py: the same step with torch's DDP, torchvision's ResNet-18
with BatchNorm2d and with torch.nn.SyncBatchNorm (convert_sync_batchnorm), alternating passes.
Rank 0 prints "RESULT mode=bn|syncbn pass=P step_ms=X", or "UNSUPPORTED mode=syncbn reason=..." when
torch refuses the mode (its SyncBatchNorm needs a GPU in the versions we test).
Arguments: BATCH SIZE STEPS WARMUP PASSES."""
import sys
import time

import torch
import torch.distributed as dist
import torchvision


def main():
    batch, size, steps, warmup, passes = map(int, sys.argv[1:6])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 10, (batch,))
    modes = {}

    def step(name):
        model, opt = modes[name]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for name in ("bn", "syncbn"):
        torch.manual_seed(0)
        net = torchvision.models.resnet18(num_classes=10)
        if name == "syncbn":
            net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        # torch refuses SyncBatchNorm on CPU (1.13: in DDP's constructor; later versions in its
        # forward), on every rank at the same point, so the group stays usable for the other mode.
        try:
            model = torch.nn.parallel.DistributedDataParallel(net)
            modes[name] = (model, torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9))
            for _ in range(warmup):
                step(name)
        except (ValueError, RuntimeError) as e:
            if rank == 0:
                print(f"UNSUPPORTED mode={name} reason={str(e).splitlines()[0]}", flush=True)
            modes.pop(name, None)
    for p in range(passes):
        for name in modes:
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(steps):
                step(name)
            dist.barrier()
            if rank == 0:
                print(f"RESULT mode={name} pass={p} step_ms={(time.perf_counter() - t0) * 1000 / steps}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
