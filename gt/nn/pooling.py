"""Pooling modules with torch.nn's arguments, attributes and repr: max and average pooling
over 1, 2 and 3 spatial dims, adaptive average and max pooling, max unpooling and power
(LP) pooling. Each is torch's functional form run by name on the worker (gt/fallback.py),
so values and gradients are torch's kernels'; max pooling's gradient reads the indices
its forward found (gt/nn/max_pool.py).
"""

from typing import Any

from gt.nn import functional as F
from gt.nn.module import Module
from gt.tensor import Tensor


class _MaxPoolNd(Module):
    """torch keeps the arguments as given (an int stays an int in the repr); the stride
    defaults to the kernel size."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f'kernel_size={self.kernel_size}, stride={self.stride}, '
                f'padding={self.padding}, dilation={self.dilation}, '
                f'ceil_mode={self.ceil_mode}')


class MaxPool1d(_MaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPoolNd(Module):
    """AvgPool2d's and AvgPool3d's arguments, kept as given."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f'kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}'


class AvgPool1d(_AvgPoolNd):
    """torch stores its 1-d sizes as 1-tuples (and shows them so), unlike AvgPool2d's."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__(_single(kernel_size),
                         _single(stride if stride is not None else kernel_size),
                         _single(padding), ceil_mode, count_include_pad)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptiveAvgPoolNd(Module):
    """Average pooling to a fixed `output_size` (None keeps that dim's size)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f'output_size={self.output_size}'


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptiveAvgPoolNd):
    """Max pooling to a fixed `output_size`; with `return_indices`, also where each
    maximum came from."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


def _single(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class _MaxUnpoolNd(Module):
    """The inverse of max pooling: each value back where `indices` (max pooling's
    `return_indices`) says it came from, zeros elsewhere. torch keeps the sizes as tuples."""

    dims = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self.dims)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self.dims)
        self.padding = _ntuple(padding, self.dims)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        unpool = getattr(F, f'max_unpool{self.dims}d')
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f'kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}'


class MaxUnpool1d(_MaxUnpoolNd):
    dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    dims = 3


class _LPPoolNd(Module):
    """The p-norm of each window: (sum x^p)^(1/p)."""

    dims = 1

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        pool = getattr(F, f'lp_pool{self.dims}d')
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f'norm_type={self.norm_type}, kernel_size={self.kernel_size}, '
                f'stride={self.stride}, ceil_mode={self.ceil_mode}')


class LPPool1d(_LPPoolNd):
    dims = 1


class LPPool2d(_LPPoolNd):
    dims = 2


class LPPool3d(_LPPoolNd):
    dims = 3


def _ntuple(value: Any, count: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * count
