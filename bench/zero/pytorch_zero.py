#!/usr/bin/python3
"""PyTorch's side of bench/zero/run.py: torchvision's ResNet-18 under torch's DDP with Adam, plain
("adam") and in torch.distributed.optim.ZeroRedundancyOptimizer ("zero"). Every rank prints
"RESULT mode=adam|zero rank=R state_bytes=B params=P step_ms=X" as bench_zero does; B counts the
tensors in this rank's optimizer state with at least one dimension (exp_avg, exp_avg_sq: what
ddp::optimizer_state_bytes counts; torch's Adam also keeps "step" as a 0-dim tensor per parameter,
4 bytes each, left out so the two sides count the same things).
Arguments: BATCH SIZE STEPS WARMUP PASSES."""
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torchvision
from torch.distributed.optim import ZeroRedundancyOptimizer


def state_bytes(optimizer):
    return sum(t.numel() * t.element_size()
               for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0)


def main():
    batch, size, steps, warmup, passes = map(int, sys.argv[1:6])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 1000, (batch,))
    for mode in ("adam", "zero"):
        torch.manual_seed(0)
        net = torchvision.models.resnet18(num_classes=1000)
        model = torch.nn.parallel.DistributedDataParallel(net)
        if mode == "zero":
            opt = ZeroRedundancyOptimizer(net.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
            local = opt.optim
        else:
            opt = local = torch.optim.Adam(net.parameters(), lr=1e-3)

        def step():
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        for _ in range(warmup):
            step()
        ms = []
        for _ in range(passes):
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            dist.barrier()
            ms.append((time.perf_counter() - t0) * 1000 / steps)
        params = sum(p.numel() for p in net.parameters())
        print("RESULT mode=%s rank=%d state_bytes=%d params=%d step_ms=%.3f"
              % (mode, rank, state_bytes(local), params, statistics.median(ms)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
