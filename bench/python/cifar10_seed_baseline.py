"""The seed script's training job, for side-by-side benchmarks with train_cifar10.

What aws-do-kubeflow's cifar10-distributed-gpu-final.py does, written afresh: the tutorial Net,
torchvision's CIFAR10 dataset with RandomCrop(32, 4) + RandomHorizontalFlip + ToTensor + Normalize,
a DataLoader (no worker processes, as in the seed) over a DistributedSampler, SGD(lr, momentum),
DistributedDataParallel over Gloo, a test pass over the whole test set on every rank after each
epoch, rank 0 saves the state dict. Rank and world come from RANK / WORLD_SIZE / MASTER_ADDR /
MASTER_PORT (env://), as a PyTorchJob sets them.

Differences from the seed, all of which make this baseline faster or fairer, never slower:
  - the dataset class skips torchvision's md5 check of the *published* files (synthetic data cannot
    match it) and reads the pickles exactly as torchvision does otherwise;
  - the test set is not augmented (the seed applies the training transforms to it) so accuracies
    compare; sampler.set_epoch() is called; no make_grid per step; gradients are averaged once
    (the seed averages again by hand on CPU after DDP already did). --seed-quirks restores all four.
  - intra-op threads: cores / local world size (the same rule train_cifar10 uses).

usage (one process per rank; bench/cifar10/run_bench.sh starts them):
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 python3 cifar10_seed_baseline.py --data-dir D
Prints one JSON line {"baseline": ..., "accuracy": ..., "images_per_sec": ...} on rank 0 at the end.
"""
import argparse
import json
import os
import pickle
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data
import torch.utils.data.distributed
import torchvision
from torchvision import transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CIFAR10Files(torchvision.datasets.CIFAR10):
    """torchvision's CIFAR10 without the md5 check of the published archive's files."""

    def _check_integrity(self):
        folder = os.path.join(self.root, self.base_folder)
        return all(os.path.isfile(os.path.join(folder, name)) for name, _ in self.train_list + self.test_list)

    def _load_meta(self):
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if os.path.isfile(path):
            with open(path, "rb") as f:
                self.classes = pickle.load(f, encoding="latin1")[self.meta["key"]]
        else:
            self.classes = [str(i) for i in range(10)]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


NORMALIZE = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))


def train_transform():
    return transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                               transforms.ToTensor(), NORMALIZE])


def test_transform(seed_quirks):
    return train_transform() if seed_quirks else transforms.Compose([transforms.ToTensor(), NORMALIZE])


def evaluate(model, loader):
    model.eval()
    loss, correct, total = 0.0, 0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            loss += F.cross_entropy(output, target, reduction="sum").item()
            correct += output.argmax(1).eq(target).sum().item()
            total += target.numel()
    model.train()
    return loss / total, correct / total


def main():
    start = time.time()
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--model-dir", default="")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed-quirks", action="store_true",
                   help="also do the seed's wasted work: make_grid per step, second gradient average, augmented test set, no set_epoch")
    args = p.parse_args()

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world_size)))
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // local_world))
    distributed = world_size > 1
    if distributed:
        dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)
    torch.manual_seed(args.seed)

    train_set = CIFAR10Files(root=args.data_dir, train=True, download=False, transform=train_transform())
    test_set = CIFAR10Files(root=args.data_dir, train=False, download=False, transform=test_transform(args.seed_quirks))
    sampler = torch.utils.data.distributed.DistributedSampler(train_set) if distributed else None
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=args.test_batch_size, shuffle=True)

    model = Net()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

    trained = 0
    loss_value, accuracy = float("nan"), float("nan")
    for epoch in range(1, args.epochs + 1):
        epoch_start = time.time()
        if sampler is not None and not args.seed_quirks:
            sampler.set_epoch(epoch)
        model.train()
        running_correct = 0
        for batch_idx, (data, target) in enumerate(train_loader, 1):
            if args.seed_quirks:
                torchvision.utils.make_grid(data)
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output, target)
            loss.backward()
            if args.seed_quirks and distributed:
                for param in model.parameters():
                    dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
                    param.grad.data /= world_size
            optimizer.step()
            running_loss = loss.item()
            running_correct += output.max(1, keepdim=True)[1].eq(target.view(-1, 1)).sum().item()
            trained += len(data) * world_size
            if batch_idx % args.log_interval == 0 and rank == 0:
                print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.sampler)}] Loss: {running_loss:.6f}",
                      file=sys.stderr)
        loss_value, accuracy = evaluate(model, test_loader)
        if rank == 0:
            print(f"Test set: Average loss: {loss_value:.4f}, Accuracy: {accuracy:.4f} ({time.time() - epoch_start:.1f} s)",
                  file=sys.stderr)

    if rank == 0 and args.model_dir:
        os.makedirs(args.model_dir, exist_ok=True)
        module = model.module if distributed else model
        torch.save(module.state_dict(), os.path.join(args.model_dir, "model.pth"))
    if distributed:
        dist.barrier()
    total = time.time() - start
    if rank == 0:
        print(json.dumps({"baseline": "seed" + ("+quirks" if args.seed_quirks else ""), "world_size": world_size,
                          "trained_images": trained, "total_seconds": round(total, 3),
                          "images_per_sec": round(trained / total, 1), "accuracy": accuracy, "loss": loss_value,
                          "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
