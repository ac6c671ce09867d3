"""Padding modules with torch.nn's arguments and repr: constant (and zero), reflection,
replication and circular padding over 1, 2 and 3 dims. Each is `F.pad`: constant padding
is GT's own (concatenations, so it shards and differentiates as they do), the other modes
are torch's, run by name (gt/fallback.py).
"""

from typing import Any

from gt.nn import functional as F
from gt.nn.module import Module
from gt.tensor import Tensor


def _amounts(padding: Any, count: int) -> tuple:
    """torch's _ntuple: an int for every side, any iterable as a tuple."""
    return tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * count


class _ConstantPadNd(Module):
    sides = 0

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__()
        self.padding, self.value = _amounts(padding, self.sides), value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, 'constant', self.value)

    def extra_repr(self) -> str:
        return f'padding={self.padding}, value={self.value}'


class ConstantPad1d(_ConstantPadNd):
    sides = 2


class ConstantPad2d(_ConstantPadNd):
    sides = 4


class ConstantPad3d(_ConstantPadNd):
    sides = 6


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f'{self.padding}'


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f'{self.padding}'


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f'{self.padding}'


class _ModePadNd(Module):
    """Padding by a mode other than a constant; `dims` are the input ranks accepted
    (checked by the module only for circular padding, as in torch)."""

    sides = 0
    mode = ''
    dims: tuple[int, ...] = ()

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, self.sides)

    def forward(self, input: Tensor) -> Tensor:
        if self.dims and input.ndim not in self.dims:
            raise ValueError(f'expected {self.dims[0]}D or {self.dims[1]}D input (got '
                             f'{input.ndim}D input)')
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f'{self.padding}'


class _ReflectionPadNd(_ModePadNd):
    mode = 'reflect'


class ReflectionPad1d(_ReflectionPadNd):
    sides = 2


class ReflectionPad2d(_ReflectionPadNd):
    sides = 4


class ReflectionPad3d(_ReflectionPadNd):
    sides = 6


class _ReplicationPadNd(_ModePadNd):
    mode = 'replicate'


class ReplicationPad1d(_ReplicationPadNd):
    sides = 2


class ReplicationPad2d(_ReplicationPadNd):
    sides = 4


class ReplicationPad3d(_ReplicationPadNd):
    sides = 6


class _CircularPadNd(_ModePadNd):
    mode = 'circular'


class CircularPad1d(_CircularPadNd):
    sides, dims = 2, (2, 3)


class CircularPad2d(_CircularPadNd):
    sides, dims = 4, (3, 4)


class CircularPad3d(_CircularPadNd):
    sides, dims = 6, (4, 5)
