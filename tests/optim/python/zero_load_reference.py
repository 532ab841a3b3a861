"""Loads the optimizer state a C++ ZeroRedundancyOptimizer exported (ddp::torch_state_dict, saved
with torch::pickle_save) into PyTorch and trains on: the end must be the C++ run's weights.

Run once per rank (RANK, WORLD_SIZE=2, MASTER_ADDR, MASTER_PORT in the environment) with Debian's
python3-torch:  /usr/bin/python3 zero_load_reference.py DIR
DIR holds (zero_workers.cpp, zero_export_torch_state): data, step3 (the weights after 3 steps),
zero_state.pt and plain_state.pt (the ZeRO run's consolidated state and a plain Adam's beside it,
torch.load-able), cpp_final (the C++ ZeRO run after 3 more steps). Asserts, exiting 1 with the
reason: both files hold the same state and groups (lr 3e-3 and 1e-2, Adam's step 3); torch's
ZeroRedundancyOptimizer and torch's plain Adam, each loading zero_state.pt onto the step-3 weights
under DDP and training steps 3-5 on the same batches, end with cpp_final's weights: bit for bit
where torch's Python Adam computes as LibTorch's C++ Adam does (torch 1.x), else within 1e-6 (torch
2.x's Python Adam moves exp_avg with lerp_, LibTorch's with mul_().add_(): the last bits differ).
"""
import faulthandler
import os
import sys

import torch
import torch.distributed as dist
import torch.jit._pickle  # noqa: F401  (restore_type_tag, for load())
from torch.distributed.optim import ZeroRedundancyOptimizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "ddp", "python"))
from models import Mlp  # noqa: E402
from leave import leave  # noqa: E402
from tensor_files import read_tensors  # noqa: E402


# torch 2.0 changed Python Adam's exp_avg update to lerp_ (torch/optim/adam.py); LibTorch's C++ Adam
# (1.13 and 2.6) keeps exp_avg.mul_(beta1).add_(grad, 1 - beta1). Same math, other rounding.
EXACT_ADAM = int(torch.__version__.split(".")[0]) < 2


def fail(why):
    print("zero_load_reference: " + why, file=sys.stderr, flush=True)
    sys.exit(1)


def groups(net):
    rest = list(net.fc2.parameters()) + list(net.fc3.parameters())
    return [{"params": list(net.fc1.parameters()), "lr": 3e-3}, {"params": rest}]


def load(path):
    """torch.load of a torch::pickle_save file. LibTorch's pickler tags typed dicts with
    torch.jit._pickle.restore_type_tag, which torch 2.6's weights_only loading (its default) refuses
    unless allowed; allowing that one function keeps the rest of the safety (torch 1.13 has no
    weights_only default and no safe_globals)."""
    if hasattr(torch.serialization, "safe_globals"):
        with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
            return torch.load(path)
    return torch.load(path)


def same_state(a, b):
    if a["param_groups"] != b["param_groups"]:
        return "param_groups differ: %r vs %r" % (a["param_groups"], b["param_groups"])
    if sorted(a["state"]) != sorted(b["state"]):
        return "state indices differ"
    for i, s in a["state"].items():
        for k, v in s.items():
            if not torch.equal(v, b["state"][i][k]):
                return "state %d %s differs" % (i, k)
    return None


def main(directory):
    # A hang shows where it is (every thread's stack on stderr) and ends before the test's timeout.
    faulthandler.dump_traceback_later(75, exit=True)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = read_tensors(directory, "data")
    zero_state = load(os.path.join(directory, "zero_state.pt"))
    plain_state = load(os.path.join(directory, "plain_state.pt"))
    why = same_state(zero_state, plain_state)
    if why:
        fail("the consolidated ZeRO state and plain Adam's differ: " + why)
    lrs = [g["lr"] for g in zero_state["param_groups"]]
    steps = {float(s["step"]) for s in zero_state["state"].values()}
    if lrs != [3e-3, 1e-2] or steps != {3.0} or len(zero_state["state"]) != 6:
        fail("unexpected content: lrs %r, steps %r, %d states" % (lrs, steps, len(zero_state["state"])))
    expected = read_tensors(directory, "cpp_final")
    for kind in ("zero", "adam"):
        net = Mlp()
        net.load_state_dict(read_tensors(directory, "step3"))
        model = torch.nn.parallel.DistributedDataParallel(net)
        if kind == "zero":
            opt = ZeroRedundancyOptimizer(groups(net), optimizer_class=torch.optim.Adam, lr=1e-2, weight_decay=1e-4)
        else:
            opt = torch.optim.Adam(groups(net), lr=1e-2, weight_decay=1e-4)
        opt.load_state_dict(load(os.path.join(directory, "zero_state.pt")))
        for step in range(3, 6):
            x, y = data["x%d_%d" % (step, rank)], data["y%d_%d" % (step, rank)]
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        for name, p in net.named_parameters():
            diff = (p.detach() - expected[name]).abs().max().item()
            if not (torch.equal(p.detach(), expected[name]) if EXACT_ADAM else diff <= 1e-6):
                fail("%s, rank %d: %s differs from the C++ run (max |diff| %g)" % (kind, rank, name, diff))
    leave()


if __name__ == "__main__":
    main(sys.argv[1])
