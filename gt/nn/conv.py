"""`Conv1d/2d/3d` and `ConvTranspose1d/2d/3d` with torch.nn's arguments, parameters,
initialization and repr. The convolution itself is torch's, run by name on the worker
(`F.conv2d`, `F.conv_transpose2d`, ... through gt/fallback.py), so values and gradients
are torch's kernels' (the gradient `aten.convolution_backward`,
gt/ir/direct_gradients.py), and a sharded batch stays sharded
(gt/ir/by_name_sharding.py). Initialization is torch's `reset_parameters` through
gt.nn.init: same seed, same weights as torch.
"""

import math
from typing import Any, Sequence

import torch

from gt.creation import zeros
from gt.ir.invalid_op import InvalidOpError
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
    """What the convolutions share: torch's argument checks, the weight
    (out_channels, in_channels // groups, *kernel_size), transposed (in_channels,
    out_channels // groups, *kernel_size), the bias, and the repr."""

    dimensions = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = 'zeros', device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self._build(in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                    0, groups, bias, padding_mode, dtype)

    def _build(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
               padding: Any, dilation: Any, transposed: bool, output_padding: Any,
               groups: int, bias: bool, padding_mode: str, dtype: Any) -> None:
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
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = stride
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.transposed, self.output_padding = transposed, _tuple(output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        # F.pad's widths for the other padding modes, last dim first, as torch keeps them
        # ('same': the kernel's reach split, the larger half after)
        widths = []
        for index in reversed(range(n)):
            if self.padding == 'valid':
                before = after = 0
            elif self.padding == 'same':
                reach = self.dilation[index] * (self.kernel_size[index] - 1)
                before, after = reach // 2, reach - reach // 2
            else:
                before = after = self.padding[index]
            widths += [before, after]
        self._reversed_padding_repeated_twice = widths if isinstance(padding, str) \
            else tuple(widths)
        shape = (in_channels, out_channels // groups) if transposed \
            else (out_channels, in_channels // groups)
        self.weight = Parameter(zeros(*shape, *self.kernel_size, dtype=dtype))
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
        if self.output_padding != (0,) * len(self.output_padding):
            text += f', output_padding={self.output_padding}'
        if self.groups != 1:
            text += f', groups={self.groups}'
        if self.bias is None:
            text += ', bias=False'
        if self.padding_mode != 'zeros':
            text += f', padding_mode={self.padding_mode}'
        return text

    def _convolve(self, convolution: Any, input: Tensor, weight: Tensor,
                  bias: Tensor | None) -> Tensor:
        """The padding modes other than zeros pad first (F.pad by name), as torch does."""
        if self.padding_mode == 'zeros':
            return convolution(input, weight, bias, self.stride, self.padding, self.dilation,
                               self.groups)
        padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return convolution(padded, weight, bias, self.stride, (0,) * self.dimensions,
                           self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        """`_conv_forward` with the layer's weight and bias, as torch's: a subclass that
        standardizes or masks its weight calls that with its own."""
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """Over (N, C, L) or (C, L) inputs."""

    dimensions = 1

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return self._convolve(F.conv1d, input, weight, bias)


class Conv2d(_ConvNd):
    """Over (N, C, H, W) or (C, H, W) inputs."""

    dimensions = 2

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return self._convolve(F.conv2d, input, weight, bias)


class Conv3d(_ConvNd):
    """Over (N, C, D, H, W) or (C, D, H, W) inputs."""

    dimensions = 3

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return self._convolve(F.conv3d, input, weight, bias)


class _ConvTransposeNd(_ConvNd):
    """torch's argument order (output_padding after padding, dilation after bias); only
    zero padding, as in torch. `forward(input, output_size)` picks the output padding
    that gives that size."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = 'zeros', device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != 'zeros':
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        Module.__init__(self)
        n = self.dimensions
        self._build(in_channels, out_channels, kernel_size, stride, _tuple(padding, n),
                    dilation, True, output_padding, groups, bias, padding_mode, dtype)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """Channels checked here, at the call, as torch checks them: a meta tensor's
        transposed convolution does not, and the worker's error came at the next fetch."""
        channels = input.shape[input.ndim - self.dimensions - 1]
        if channels != self.in_channels:  # not read from self.weight: a parametrization's
            # weight (spectral_norm's) would be computed twice, its power iteration too
            shape = [self.in_channels, self.out_channels // self.groups, *self.kernel_size]
            raise InvalidOpError(
                f'Given transposed=1, weight of size {shape}, expected input'
                f'{list(input.shape)} to have {self.in_channels} channels, but got {channels} '
                'channels instead')
        convolve = getattr(F, f'conv_transpose{self.dimensions}d')
        return convolve(input, self.weight, self.bias, self.stride, self.padding,
                        self._output_padding(input, output_size), self.groups, self.dilation)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple:
        """torch's: the padding that makes the output `output_size` (spatial dims, or
        with the leading batch and channel dims), checked against the sizes reachable."""
        if output_size is None:
            return self.output_padding
        n = self.dimensions
        leading = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == leading + n:
            output_size = output_size[leading:]
        if len(output_size) != n:
            raise ValueError(f'ConvTranspose{n}D: for {input.ndim}D input, output_size must '
                             f'have {n} or {leading + n} elements (got {len(output_size)})')
        smallest = [(input.shape[leading + d] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        largest = [size + self.stride[d] - 1 for d, size in enumerate(smallest)]
        for size, low, high in zip(output_size, smallest, largest):
            if size < low or size > high:
                raise ValueError(f'requested an output size of {output_size}, but valid sizes '
                                 f'range from {smallest} to {largest} (for an input of '
                                 f'{torch.Size(input.shape[leading:])})')
        return tuple(size - low for size, low in zip(output_size, smallest))


class ConvTranspose1d(_ConvTransposeNd):
    """The gradient of Conv1d with respect to its input, over (N, C, L) or (C, L)."""

    dimensions = 1


class ConvTranspose2d(_ConvTransposeNd):
    """The gradient of Conv2d with respect to its input, over (N, C, H, W) or (C, H, W)."""

    dimensions = 2


class ConvTranspose3d(_ConvTransposeNd):
    """The gradient of Conv3d with respect to its input, over 5-d or 4-d inputs."""

    dimensions = 3
