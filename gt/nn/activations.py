"""Activation modules beyond the basic ones in layers.py, with torch.nn's arguments and
repr. Each calls its torch.nn.functional form (GT's own row where gt.nn.functional has
one, else by name through gt/fallback.py), passing `inplace` through: the functional
layer decides what an in-place call does to the input. `Softmin` and `Softmax2d` are
GT's softmax row; `PReLU` holds its slopes as a parameter.
"""

import warnings
from typing import Any

from gt.creation import zeros
from gt.nn import functional as F
from gt.nn import init
from gt.nn.module import Module
from gt.nn.parameter import Parameter
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


class RReLU(Module):
    """Leaky ReLU with a slope drawn from U(lower, upper) per element in training (on the
    workers, torch's draws), their mean in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f'lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}'


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


class Threshold(Module):
    """`value` where the input is at most `threshold`, the input elsewhere."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f'threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}'


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f'alpha={self.alpha}{_inplace_suffix(self.inplace)}'


class _InplaceActivation(Module):
    """An activation whose one argument is `inplace`; torch shows it only when set, except
    for Hardswish and Hardsigmoid, which show nothing."""

    show_inplace = True

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return 'inplace=True' if self.inplace and self.show_inplace else ''


class SELU(_InplaceActivation):
    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, inplace=self.inplace)


class Hardswish(_InplaceActivation):
    show_inplace = False

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, inplace=self.inplace)


class Hardsigmoid(_InplaceActivation):
    show_inplace = False

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, inplace=self.inplace)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f'{self.lambd}'


class Hardshrink(_Shrink):
    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class GLU(Module):
    """The first half of `dim` gated by the sigmoid of the second."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f'dim={self.dim}'


class Softmin(Module):
    """softmax(-input): torch's own definition, on GT's softmax row. `dim=None` picks
    torch's deprecated implicit dim, with its warning."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        dim = self.dim
        if dim is None:
            dim = F.implicit_softmax_dim('softmin', input.ndim, stacklevel=4)
        return (-input).softmax(dim)

    def extra_repr(self) -> str:
        return f'dim={self.dim}'


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f'Softmax2d: expected input to be 3D or 4D, got {input.ndim}D '
                             'instead')
        return input.softmax(-3)


class PReLU(Module):
    """LeakyReLU with learned slopes: one (`num_parameters=1`) or one per channel, set
    to `init` (a constant, so no draw)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(zeros(num_parameters, **({} if dtype is None
                                                         else {'dtype': dtype})))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f'num_parameters={self.num_parameters}'
