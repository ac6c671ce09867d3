"""Modules that rearrange a tensor's dims, with torch.nn's arguments, checks and repr:
`Unflatten` (a reshape, whose shape and errors come from torch's own `unflatten` on a
meta tensor), `Unfold` (sliding blocks to columns) and `Fold` (columns summed back into
blocks), which are `F.unfold` and `F.fold` run by name (gt/fallback.py).
"""

from typing import Any

import torch

from gt.nn import functional as F
from gt.nn.module import Module
from gt.tensor import Tensor


class Unflatten(Module):
    """Dim `dim` split into `unflattened_size` (a tuple or list of ints; one may be -1)."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError('unflattened_size must be a tuple of ints, but found type '
                            f'{type(unflattened_size).__name__}')
        for index, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError('unflattened_size must be tuple of ints, but found element of '
                                f'type {type(size).__name__} at pos {index}')
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        # The shape, and any error, is torch's own; the reshape is GT's op.
        meta = torch.empty(tuple(input.shape), device='meta')
        return input.reshape(*meta.unflatten(self.dim, self.unflattened_size).shape)

    def extra_repr(self) -> str:
        return f'dim={self.dim}, unflattened_size={self.unflattened_size}'


class Fold(Module):
    """(N, C * prod(kernel_size), L) columns summed into (N, C, *output_size) blocks."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f'output_size={self.output_size}, kernel_size={self.kernel_size}, '
                f'dilation={self.dilation}, padding={self.padding}, stride={self.stride}')


class Unfold(Module):
    """Sliding (kernel_size) blocks of (N, C, H, W) as (N, C * prod(kernel_size), L)
    columns."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f'kernel_size={self.kernel_size}, dilation={self.dilation}, '
                f'padding={self.padding}, stride={self.stride}')
