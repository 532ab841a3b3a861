"""Loads train_cifar10's model.pt into the seed's Net with Debian's python3-torch.

usage: load_model.py MODEL_PT [CIFAR_ROOT MIN_ACCURACY]

Checks that torch.load gives exactly the seed Net's state-dict keys and shapes, that
load_state_dict(strict=True) accepts it, and (with CIFAR_ROOT) that the loaded network classifies
the test batch of CIFAR_ROOT/cifar-10-batches-py with at least MIN_ACCURACY. Prints "OK".
"""
import os
import pickle
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):  # the seed's network, module for module
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
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def main():
    # weights_only=True is torch >= 2.6's default and the safe way to load a file from elsewhere
    # (1.13 has the switch too): the model must load under it, not only with the unsafe loader.
    state = torch.load(sys.argv[1], weights_only=True)
    net = Net()
    want = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    assert got == want, f"keys/shapes differ:\n got  {got}\n want {want}"
    assert all(v.dtype == torch.float32 for v in state.values())
    net.load_state_dict(state, strict=True)
    net.eval()
    print(f"loaded {len(state)} tensors, {sum(v.numel() for v in state.values())} parameters")
    if len(sys.argv) > 2:
        root, minimum = sys.argv[2], float(sys.argv[3])
        with open(os.path.join(root, "cifar-10-batches-py", "test_batch"), "rb") as f:
            batch = pickle.load(f, encoding="latin1")
        x = torch.from_numpy(batch["data"].reshape(-1, 3, 32, 32).astype(np.float32) / 255.0)
        mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
        std = torch.tensor([0.2023, 0.1994, 0.2010]).view(1, 3, 1, 1)
        with torch.no_grad():
            pred = net((x - mean) / std).argmax(1)
        acc = (pred == torch.tensor(batch["labels"])).float().mean().item()
        print(f"accuracy in Python: {acc:.4f}")
        assert acc >= minimum, f"accuracy {acc} below {minimum}"
    print("OK")


if __name__ == "__main__":
    main()
