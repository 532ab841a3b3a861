"""ResNet-18 as src/models/resnet.cpp builds it (torchvision's names and layout), in Python.

torchvision is not a dependency, and the parity test needs more than the names to match: the
parameters must be registered in the same order (bucket indices refer to it) and the forward must
issue the same operations in the same order (the autograd graph, hence the order gradients arrive
in, follows it). So a block computes its downsample branch first, as the C++ block does.
"""
import torch
import torch.nn as nn


def _conv(cin, cout, kernel, stride, padding):
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = _conv(in_planes, planes, 3, stride, 1)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv(planes, planes, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(_conv(in_planes, planes, 1, stride, 0), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = self.downsample(x) if self.downsample is not None else x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """The ImageNet stem (7x7/2 conv, 3x3/2 max-pool), four stages of two BasicBlocks, fc."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = _conv(3, 64, 7, 2, 3)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_planes = 64
        for i, planes in enumerate((64, 128, 256, 512)):
            blocks = []
            for b in range(2):
                blocks.append(BasicBlock(in_planes, planes, 2 if (b == 0 and i > 0) else 1))
                in_planes = planes
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = getattr(self, "layer%d" % i)(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))
