"""PyTorch's DistributedDataParallel.join() on uneven inputs, for the C++ join parity test.

Run once per rank (RANK, WORLD_SIZE=2, MASTER_ADDR, MASTER_PORT set) with the system python3-torch:
    python3 join_reference.py DIR
Reads DIR/join_init (the CNN with BatchNorm, tests/ddp/python/models.py) and DIR/join_data
(batches "x<s>", "y<s>"). Rank 0 trains on batches 0-4, rank 1 on batches 0-2 (half of each
batch per rank): rank 1 runs out after 3 steps. For each case of CASES, from the same initial
model, `with model.join(divide_by_initial_world_size=...)` around the rank's loop (SGD lr 0.05,
momentum 0.9, 1 intra-op thread), then writes DIR/join_<case>_rank<RANK> (parameters and buffers).
Only APIs present in torch 1.13 and 2.x are used.
"""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import Cnn  # noqa: E402
from tensor_files import read_tensors, write_tensors  # noqa: E402
from train_step import train_step  # noqa: E402
from leave import leave  # noqa: E402

STEPS = {0: 5, 1: 3}  # batches per rank: uneven on purpose
CASES = {"initial": True, "dynamic": False}  # case -> divide_by_initial_world_size


def main(directory):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = read_tensors(directory, "join_data")
    for case, divide_by_initial in CASES.items():
        net = Cnn(batch_norm=True)
        net.load_state_dict(read_tensors(directory, "join_init"))
        model = torch.nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        with model.join(divide_by_initial_world_size=divide_by_initial):
            for step in range(STEPS[rank]):
                train_step(model, opt, data, step, rank, world)
        write_tensors(directory, "join_%s_rank%d" % (case, rank), net.state_dict())
    leave()


if __name__ == "__main__":
    main(sys.argv[1])
