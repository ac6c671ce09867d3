"""`Conv1d` and `Conv2d` with torch.nn's arguments, parameters, initialization and repr.
The convolution itself is torch's, run by name on the worker (`F.conv1d`, `F.conv2d`
through gt/fallback.py), so values and gradients are torch's kernels'. Initialization is
torch's `reset_parameters` through gt.nn.init: same seed, same weights as torch.
"""

import math
from typing import Any

from gt.creation import zeros
from gt.nn import functional as F
from gt.nn import init
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor

PADDING_STRINGS = ('same', 'valid')
PADDING_MODES = ('zeros', 'reflect', 'replicate', 'circular')


def _tuple(value: Any, n: int) -> tuple:
    """torch's `_single`/`_pair`: an int repeated n times, a sequence as a tuple."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    """What Conv1d and Conv2d share: torch's argument checks, the weight
    (out_channels, in_channels // groups, *kernel_size) and bias, and the repr."""

    dimensions = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = 'zeros', device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n = self.dimensions
        stride = _tuple(stride, n)
        if groups <= 0:
            raise ValueError('groups must be a positive integer')
        if in_channels % groups != 0:
            raise ValueError('in_channels must be divisible by groups')
        if out_channels % groups != 0:
            raise ValueError('out_channels must be divisible by groups')
        if isinstance(padding, str):
            if padding not in PADDING_STRINGS:
                raise ValueError(f'Invalid padding string {padding!r}, should be one of '
                                 f'{set(PADDING_STRINGS)}')
            if padding == 'same' and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f'padding_mode must be one of {set(PADDING_MODES)}, but got '
                             f"padding_mode='{padding_mode}'")
        if padding_mode != 'zeros':
            raise NotImplementedError(f"GT's {type(self).__name__} supports padding_mode="
                                      f"'zeros' only, got {padding_mode!r}; pad the input "
                                      "with F.pad(input, ..., mode=...) instead")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = stride
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.transposed, self.output_padding = False, (0,) * n
        self.groups, self.padding_mode = groups, padding_mode
        self.weight = Parameter(zeros(out_channels, in_channels // groups, *self.kernel_size,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(zeros(out_channels, dtype=dtype))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's: kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
        for the weight, and the same bound for the bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = f'{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, ' \
               f'stride={self.stride}'
        if self.padding != (0,) * len(self.padding):
            text += f', padding={self.padding}'
        if self.dilation != (1,) * len(self.dilation):
            text += f', dilation={self.dilation}'
        if self.groups != 1:
            text += f', groups={self.groups}'
        if self.bias is None:
            text += ', bias=False'
        return text


class Conv1d(_ConvNd):
    """Over (N, C, L) or (C, L) inputs."""

    dimensions = 1

    def forward(self, input: Tensor) -> Tensor:
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)


class Conv2d(_ConvNd):
    """Over (N, C, H, W) or (C, H, W) inputs."""

    dimensions = 2

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)
