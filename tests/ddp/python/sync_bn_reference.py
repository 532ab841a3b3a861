#!/usr/bin/env python3
"""The oracle of tests/ddp/sync_batch_norm_test.cpp: torch.nn.BatchNorm2d on the whole batch.

Reads <dir>/inputs (x0, g0, x1, g1, weight, bias; tensors_files.h format), runs two training steps
of BatchNorm2d on the whole batch in one process (the loss of step s is sum(y_s * g_s)) and writes
<dir>/expected: y<s>, dx<s>, dweight<s>, dbias<s> per step and the running statistics after both.
SyncBatchNorm on N ranks, each holding some rows of the batch, must produce these on its rows.
Exits 3 when torch cannot be imported (the C++ side then fails, naming the interpreter).
"""
import os
import sys

try:
    import torch
except ImportError as e:
    print(f"PYTHON_TORCH_MISSING: {e}", file=sys.stderr)
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_files import read_tensors, write_tensors  # noqa: E402

STEPS = 2


def main(directory):
    torch.set_num_threads(1)
    inputs = read_tensors(directory, "inputs")
    channels = inputs["weight"].numel()
    bn = torch.nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.weight.copy_(inputs["weight"])
        bn.bias.copy_(inputs["bias"])
    bn.train()
    out = {}
    for s in range(STEPS):
        x = inputs[f"x{s}"].clone().requires_grad_(True)
        bn.zero_grad()
        y = bn(x)
        y.backward(inputs[f"g{s}"])
        out[f"y{s}"] = y
        out[f"dx{s}"] = x.grad
        out[f"dweight{s}"] = bn.weight.grad.clone()
        out[f"dbias{s}"] = bn.bias.grad.clone()
    out["running_mean"] = bn.running_mean
    out["running_var"] = bn.running_var
    write_tensors(directory, "expected", out)
    print(f"torch {torch.__version__}: BatchNorm2d({channels}) on {inputs['x0'].shape[0]} rows, {STEPS} steps")


if __name__ == "__main__":
    main(sys.argv[1])
