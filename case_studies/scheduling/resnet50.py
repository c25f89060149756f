"""ResNet-50 (bottleneck blocks 3-4-6-3, 25.6 M parameters) written in plain PyTorch for timing.

Only the forward pass of inference is used: ``profile.measure_batch_latency`` times it per batch size to
build the execution-time profile of the scheduling simulator. Weights are randomly initialised; nothing
is downloaded (the timing of a convolutional network does not depend on its weight values).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (with the block's stride), 1x1 expand by 4; projection shortcut when shapes change."""

    expansion = 4

    def __init__(self, in_channels: int, width: int, stride: int) -> None:
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + self.shortcut(x))


class ResNet50(nn.Module):
    """ImageNet ResNet-50: 7x7 stem and max-pool, four stages of bottlenecks, global average pool, linear."""

    def __init__(self, classes: int = 1000, blocks: tuple[int, ...] = (3, 4, 6, 3)) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1))
        layers: list[nn.Module] = []
        in_channels = 64
        for stage, count in enumerate(blocks):
            width = 64 * 2 ** stage
            for i in range(count):
                layers.append(Bottleneck(in_channels, width, stride=2 if (i == 0 and stage > 0) else 1))
                in_channels = width * Bottleneck.expansion
        self.stages = nn.Sequential(*layers)
        self.classifier = nn.Linear(in_channels, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(images))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
