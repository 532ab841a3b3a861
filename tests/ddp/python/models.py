"""The C++ test models (tests/ddp/test_models.h), in Python, with the same parameter names."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    """The CIFAR-10 tutorial net, optionally with BatchNorm after each conv."""

    def __init__(self, batch_norm=False):
        super().__init__()
        self.batch_norm = batch_norm
        self.conv1 = nn.Conv2d(3, 6, 5)
        if batch_norm:
            self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5)
        if batch_norm:
            self.bn2 = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.conv1(x)
        if self.batch_norm:
            x = self.bn1(x)
        x = F.max_pool2d(F.relu(x), 2)
        x = self.conv2(x)
        if self.batch_norm:
            x = self.bn2(x)
        x = F.max_pool2d(F.relu(x), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Mlp(nn.Module):
    """20 -> 32 -> 32 -> 10 with ReLUs (test_models.h's Mlp)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
