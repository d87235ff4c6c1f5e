"""Image -> entities adapter: the single input conv layer of every Relations Game model, with the
feature map's xy coordinates appended (``input_module`` and ``_locs`` of ``PrediNet4MultiTask`` in
google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb; paper §4 and Table S2).

    x = image / 256                                     [B, H, W, C] channels last, as the data
    F = ReLU(conv_{12x12, stride 6, VALID}(x))           [B, h, w, 32]   (36x36 -> 5x5)
    L_n = [F_{r,c}, c / w, r / h],  n = r * w + c        [B, h*w, 32 + 2] = [B, 25, 34]

The entity order is the row-major flattening of the feature map, and the two appended features are
(x, y) = (column / w, row / h) in that order, as the notebook builds its ``locs`` (values 0, 0.2, ..., 0.8
for a 5x5 map). The paper's PrediNet reads the last two features of an entity as its position.
The notebook's maps are square and divide both coordinates by the same ``conv_out_size``; for a
non-square image each axis is divided by its own size. Float images are taken to be on the same
0..255 scale as the uint8 data and are divided by 256 too.
"""

from __future__ import annotations

import torch
from torch import nn


class ConvEntityEncoder(nn.Module):
    """[B, H, W, C] images (uint8 or float on the 0..255 scale) -> entities [B, h*w, channels + 2]."""

    def __init__(self, in_channels: int = 3, channels: int = 32, kernel: int = 12, stride: int = 6,
                 image_hw: tuple[int, int] = (36, 36)) -> None:
        super().__init__()
        height, width = int(image_hw[0]), int(image_hw[1])
        if height < kernel or width < kernel:
            raise ValueError(f"image {height}x{width} is smaller than the {kernel}x{kernel} conv kernel")
        self.image_hw = (height, width)
        self.channels = int(channels)
        self.conv = nn.Conv2d(in_channels, channels, kernel_size=kernel, stride=stride, padding=0)  # VALID
        self.grid_hw = ((height - kernel) // stride + 1, (width - kernel) // stride + 1)  # (5, 5) for 36x36
        rows, cols = torch.meshgrid(torch.arange(self.grid_hw[0]), torch.arange(self.grid_hw[1]), indexing="ij")
        coords = torch.stack([cols / self.grid_hw[1], rows / self.grid_hw[0]], dim=-1)  # [h, w, 2] = (x, y)
        self.register_buffer("coords", coords.reshape(-1, 2).float(), persistent=False)  # [h*w, 2]

    @property
    def n_entities(self) -> int:
        return self.grid_hw[0] * self.grid_hw[1]

    @property
    def d_entity(self) -> int:
        return self.channels + 2

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """image [B, H, W, C] -> entities [B, N, D]"""
        if tuple(image.shape[1:3]) != self.image_hw:
            raise ValueError(f"expected images of {self.image_hw[0]}x{self.image_hw[1]}, got {tuple(image.shape)}")
        x = image.to(self.conv.weight.dtype) / 256.0  # the reference's scaling (not 255)
        features = torch.relu(self.conv(x.permute(0, 3, 1, 2)))  # [B, channels, h, w]
        batch = features.shape[0]
        features = features.permute(0, 2, 3, 1).reshape(batch, self.n_entities, self.channels)  # [B, N, channels]
        coords = self.coords.to(features.dtype).expand(batch, -1, -1)  # [B, N, 2]
        return torch.cat([features, coords], dim=-1)  # [B, N, channels + 2]
