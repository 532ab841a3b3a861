"""Dumps what torch.utils.data.DistributedSampler yields over a grid of arguments.

One line per case: "size replicas rank shuffle seed epoch drop_last: i0 i1 ...". The C++ parity
test (tests/sampler/sampler_test.cpp) runs this with Debian's python3-torch and compares every line
with ddp::DistributedSampler.

usage: /usr/bin/python3 dump_sampler_grid.py OUT.txt
"""
import sys

import torch
from torch.utils.data import DistributedSampler


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def cases():
    for size in (0, 1, 2, 3, 5, 7, 10, 17, 100, 1001):
        for replicas in (1, 2, 3, 4, 8):
            for rank in range(replicas):
                for shuffle in (False, True):
                    for seed in ((0,) if not shuffle else (0, 42, -3)):
                        for epoch in (0, 1, 5):
                            for drop_last in (False, True):
                                yield size, replicas, rank, shuffle, seed, epoch, drop_last
    # A CIFAR-10-sized epoch, where randperm's large-n path matters.
    for rank in range(3):
        for epoch in (0, 7):
            yield 50000, 3, rank, True, 0, epoch, False


def main(out_path):
    torch.set_num_threads(1)
    with open(out_path, "w") as out:
        for size, replicas, rank, shuffle, seed, epoch, drop_last in cases():
            s = DistributedSampler(Sized(size), num_replicas=replicas, rank=rank, shuffle=shuffle,
                                   seed=seed, drop_last=drop_last)
            s.set_epoch(epoch)
            idx = list(iter(s))
            assert len(idx) == len(s)
            out.write("%d %d %d %d %d %d %d:%s\n" % (
                size, replicas, rank, int(shuffle), seed, epoch, int(drop_last),
                "".join(" %d" % i for i in idx)))


if __name__ == "__main__":
    main(sys.argv[1])
