"""Upsampling modules with torch.nn's arguments and repr: `Upsample` (and its
`UpsamplingNearest2d` / `UpsamplingBilinear2d` forms), `PixelShuffle`, `PixelUnshuffle`
and `ChannelShuffle`. Each is torch's functional form (`F.interpolate`,
`F.pixel_shuffle`, ...) run by name (gt/fallback.py), so values and gradients are
torch's kernels'.
"""

from typing import Any

from gt.nn import functional as F
from gt.nn.module import Module
from gt.tensor import Tensor


class Upsample(Module):
    """`F.interpolate` to a `size` or by a `scale_factor` (kept as floats, as torch
    keeps them) with `mode` nearest, linear, bilinear, bicubic, trilinear or area."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = 'nearest',
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f'scale_factor={self.scale_factor!r}'
        else:
            info = f'size={self.size!r}'
        return f'{info}, mode={self.mode!r}'


class UpsamplingNearest2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode='nearest')


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode='bilinear', align_corners=True)


class PixelShuffle(Module):
    """(*, C * r^2, H, W) to (*, C, H * r, W * r), r the `upscale_factor`."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f'upscale_factor={self.upscale_factor}'


class PixelUnshuffle(Module):
    """PixelShuffle's inverse: (*, C, H * r, W * r) to (*, C * r^2, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f'downscale_factor={self.downscale_factor}'


class ChannelShuffle(Module):
    """Interleave the channels of `groups` groups (ShuffleNet's shuffle)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f'groups={self.groups}'
