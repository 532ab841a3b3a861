"""The static_graph test model (tests/ddp/static_graph_workers.cpp), in Python, same names.

`shared` runs twice per iteration: once in the graph, and once more inside Recompute, whose
forward keeps no graph and whose backward recomputes tanh(shared(x)) and runs a nested backward
through it (what torch.utils.checkpoint's reentrant variant does). So shared's gradient
accumulator fires twice per backward; `unused` never gets a gradient.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Recompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, layer):
        ctx.layer = layer
        ctx.save_for_backward(x)
        with torch.no_grad():
            return torch.tanh(F.linear(x, layer.weight, layer.bias))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_()
        with torch.enable_grad():
            y = torch.tanh(F.linear(x, ctx.layer.weight, ctx.layer.bias))
        torch.autograd.backward(y, grad)
        return x.grad, None


class StaticNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.shared = nn.Linear(16, 16)
        self.unused = nn.Linear(16, 4)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        h = self.shared(h)
        h = Recompute.apply(h, self.shared)
        return self.head(h)
