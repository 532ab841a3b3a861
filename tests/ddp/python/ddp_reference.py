"""PyTorch's own DistributedDataParallel on the models and data the C++ parity test prepared.

Run once per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment) with Debian's
python3-torch:  /usr/bin/python3 ddp_reference.py DIR
Reads DIR/{cnn,cnn_bn}_init and DIR/data (tests/ddp/tensor_files.h format), trains with
torch.nn.parallel.DistributedDataParallel over Gloo (SGD lr 0.05 momentum 0.9, one batch per step
split evenly over the ranks, 1 intra-op thread) and writes DIR/<model>_final_rank<RANK>.
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

STEPS = 5


def main(directory):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = read_tensors(directory, "data")
    for name, batch_norm in (("cnn", False), ("cnn_bn", True)):
        net = Cnn(batch_norm)
        net.load_state_dict(read_tensors(directory, name + "_init"))
        model = torch.nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        for step in range(STEPS):
            train_step(model, opt, data, step, rank, world)
        write_tensors(directory, "%s_final_rank%d" % (name, rank), net.state_dict())
    leave()


if __name__ == "__main__":
    main(sys.argv[1])
