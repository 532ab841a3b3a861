"""The training step every parity reference takes: this rank's share of batch `step` (batches
"x<step>" and "y<step>" split evenly over the ranks, in rank order), cross-entropy, SGD.
The C++ workers take the same share (tests/ddp/*_workers.cpp)."""
import torch.nn.functional as F


def train_step(model, opt, data, step, rank, world):
    x, y = data["x%d" % step], data["y%d" % step]
    per = x.shape[0] // world
    x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
