"""PyTorch's own ZeroRedundancyOptimizer on the model and batches the C++ parity test prepared.

Run once per rank (RANK, WORLD_SIZE=2, MASTER_ADDR, MASTER_PORT in the environment) with Debian's
python3-torch:  /usr/bin/python3 zero_reference.py DIR
Reads DIR/init (the Mlp's weights) and DIR/data (x<step>_<rank>, y<step>_<rank>), trains 6 steps
with torch.nn.parallel.DistributedDataParallel over Gloo and ZeroRedundancyOptimizer, MSE loss,
the first group's learning rate halved before step 3, twice:
  sgd:  one group, SGD lr 0.05 momentum 0.9 weight_decay 1e-4
  adam: fc1 in a group of its own at lr 3e-3, the rest at Adam's lr 1e-2, weight_decay 1e-4
and writes DIR/<kind>_torch_rank<RANK>: the final parameters, "owners", the rank torch's partition
gave each parameter (in the optimizer's order, group by group), and "exact" (1 where torch's Python
optimizer rounds as LibTorch's C++ one does, so the C++ side asserts equality; 0: within 1e-6).
"""
import faulthandler
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "ddp", "python"))
from models import Mlp  # noqa: E402
from leave import leave  # noqa: E402
from tensor_files import read_tensors, write_tensors  # noqa: E402

STEPS = 6


def main(directory):
    # A hang shows where it is (every thread's stack on stderr) and ends before the test's timeout.
    faulthandler.dump_traceback_later(75, exit=True)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    init = read_tensors(directory, "init")
    data = read_tensors(directory, "data")
    for kind in ("sgd", "adam"):
        net = Mlp()
        net.load_state_dict(init)
        model = torch.nn.parallel.DistributedDataParallel(net)
        if kind == "sgd":
            opt = ZeroRedundancyOptimizer(net.parameters(), optimizer_class=torch.optim.SGD,
                                          lr=0.05, momentum=0.9, weight_decay=1e-4)
        else:
            rest = list(net.fc2.parameters()) + list(net.fc3.parameters())
            opt = ZeroRedundancyOptimizer([{"params": list(net.fc1.parameters()), "lr": 3e-3},
                                           {"params": rest}],
                                          optimizer_class=torch.optim.Adam, lr=1e-2, weight_decay=1e-4)
        for step in range(STEPS):
            if step == 3:
                opt.param_groups[0]["lr"] /= 2
            x, y = data["x%d_%d" % (step, rank)], data["y%d_%d" % (step, rank)]
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        params = [p for g in opt.param_groups for p in g["params"]]
        out = dict(net.named_parameters())
        out = {k: v.detach() for k, v in out.items()}
        out["owners"] = torch.tensor([opt._param_to_rank[p] for p in params], dtype=torch.int64)
        # torch 2.0 changed Python Adam's exp_avg update to lerp_; LibTorch's C++ Adam (1.13, 2.6)
        # keeps mul_().add_(): the same math rounded differently, so Adam matches bit for bit on
        # torch 1.x only (SGD on both).
        exact = kind == "sgd" or int(torch.__version__.split(".")[0]) < 2
        out["exact"] = torch.tensor([1 if exact else 0], dtype=torch.int64)
        write_tensors(directory, "%s_torch_rank%d" % (kind, rank), out)
    leave()


if __name__ == "__main__":
    main(sys.argv[1])
