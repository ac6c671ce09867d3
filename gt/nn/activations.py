"""Activation modules beyond the basic ones in layers.py, with torch.nn's arguments and
repr. Each calls its torch.nn.functional form by name (gt/fallback.py), passing `inplace`
through: the functional layer decides what an in-place call does to the input.
"""

import warnings

from gt.nn import functional as F
from gt.nn.module import Module
from gt.tensor import Tensor


def _inplace_suffix(inplace: bool) -> str:
    return ', inplace=True' if inplace else ''


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f'negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}'


class SiLU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return 'inplace=True' if self.inplace else ''


class Mish(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return 'inplace=True' if self.inplace else ''


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f'alpha={self.alpha}{_inplace_suffix(self.inplace)}'


class Hardtanh(Module):
    """Clamp to [min_val, max_val]; `min_value`/`max_value` are torch's deprecated names."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        self.min_val = _renamed(min_val, min_value, 'min_value', 'min_val')
        self.max_val = _renamed(max_val, max_value, 'max_value', 'max_val')
        self.inplace = inplace
        if self.max_val <= self.min_val:
            # torch raises AssertionError here too; ported code may catch it.
            raise AssertionError(f'max_val ({self.max_val}) must be greater than min_val '
                                 f'({self.min_val})')

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, inplace=self.inplace)

    def extra_repr(self) -> str:
        return (f'min_val={self.min_val}, max_val={self.max_val}'
                f'{_inplace_suffix(self.inplace)}')


def _renamed(value: float, old_value: float | None, old: str, new: str) -> float:
    if old_value is None:
        return value
    warnings.warn(f'keyword argument `{old}` is deprecated and renamed to `{new}`',
                  FutureWarning, stacklevel=3)
    return old_value


class ReLU6(Hardtanh):
    """Hardtanh(0, 6), a subclass of it as in torch."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return 'inplace=True' if self.inplace else ''


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f'beta={self.beta}, threshold={self.threshold}'
