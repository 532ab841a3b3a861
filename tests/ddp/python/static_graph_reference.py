"""PyTorch's DistributedDataParallel(static_graph=True), for the C++ static_graph parity test.

Run once per rank (RANK, WORLD_SIZE=2, MASTER_ADDR, MASTER_PORT set) with the system python3-torch:
    python3 static_graph_reference.py DIR
Reads DIR/sg_init (StaticNet, python/static_graph.py) and DIR/sg_data ("x<s>", "y<s>"), trains
STEPS steps of SGD (lr 0.1, momentum 0.9, 1 intra-op thread) on this rank's half of each batch,
and writes DIR/sg_rank<RANK>: the parameters, and "grad.<name>" for every gradient that is
defined after the last step (unused.* has none: no rank ever used it). Only APIs present in
torch 1.13 and 2.x are used.
"""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from static_graph import StaticNet  # noqa: E402
from tensor_files import read_tensors, write_tensors  # noqa: E402
from train_step import train_step  # noqa: E402
from leave import leave  # noqa: E402

STEPS = 5


def main(directory):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = read_tensors(directory, "sg_data")
    net = StaticNet()
    net.load_state_dict(read_tensors(directory, "sg_init"))
    model = torch.nn.parallel.DistributedDataParallel(net, static_graph=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        train_step(model, opt, data, step, rank, world)
    out = dict(net.state_dict())
    for name, p in net.named_parameters():
        if p.grad is not None:
            out["grad." + name] = p.grad
    write_tensors(directory, "sg_rank%d" % rank, out)
    leave()


if __name__ == "__main__":
    main(sys.argv[1])
