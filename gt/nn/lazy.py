"""Lazy modules: `LazyLinear(out)` and `LazyConv1d/2d/3d(out, kernel, ...)` learn their
input size from their first call, then become `Linear` and `Conv*d`, as torch's do.

Their parameters exist from the start, empty, and are filled at the first call with the
values the real module's initialization draws then (torch's draws, at torch's moment), so
an optimizer made before that call holds the very tensors that train (torch's holds
uninitialized ones and asks for a dry run first).
"""

from typing import Any

from gt.autograd import no_grad
from gt.creation import zeros
from gt.nn.conv import Conv1d, Conv2d, Conv3d
from gt.nn.layers import Linear
from gt.nn.module import Module
from gt.nn.parameter import Parameter

# What the lazy module keeps of its own when it becomes the real one.
KEPT = ('_parameters', '_buffers', '_modules', '_non_persistent_buffers_set', 'training')


class _Lazy(Module):
    cls_to_become: type
    input_dims: int  # a batched input's dims: the size learned is its dim 1, else dim 0

    def __init__(self, *args: Any, bias: bool = True, **kwargs: Any) -> None:
        super().__init__()
        self._arguments = (args, {'bias': bias, **kwargs})
        self.weight = Parameter(zeros(0))
        self.bias = Parameter(zeros(0)) if bias else None

    def forward(self, input: Any) -> Any:
        size = input.shape[-1] if self.input_dims == 1 else input.shape[
            1 if input.ndim == self.input_dims + 1 else 0]
        args, kwargs = self._arguments
        made = self.cls_to_become(size, *args, **kwargs)
        del self._arguments
        with no_grad():
            for name, parameter in made._parameters.items():
                if parameter is not None:
                    self._parameters[name]._replace(parameter)
        for name, value in vars(made).items():  # its sizes; hooks and mode stay this one's
            if name not in KEPT:
                self.__dict__[name] = value
        self.__class__ = self.cls_to_become
        return self(input)


class LazyLinear(_Lazy):
    cls_to_become, input_dims = Linear, 1

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(out_features, bias=bias, dtype=dtype)
        self.in_features, self.out_features = 0, out_features

    def extra_repr(self) -> str:
        return (f'in_features=0, out_features={self.out_features}, '
                f'bias={self.bias is not None}')


class _LazyConv(_Lazy):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = 'zeros', device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, dilation, groups,
                         bias=bias, padding_mode=padding_mode, dtype=dtype)
        dims = self.input_dims - 1
        self.in_channels, self.out_channels, self.groups = 0, out_channels, groups
        self.padding_mode = padding_mode
        self.kernel_size, self.stride, self.dilation = (
            tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims
            for value in (kernel_size, stride, dilation))
        self.padding = padding if isinstance(padding, str) else tuple(
            padding) if isinstance(padding, (tuple, list)) else (padding,) * dims
        self.output_padding = (0,) * dims

    def extra_repr(self) -> str:
        return self.cls_to_become.extra_repr(self)  # its in_channels 0, as torch prints


class LazyConv1d(_LazyConv):
    cls_to_become, input_dims = Conv1d, 2


class LazyConv2d(_LazyConv):
    cls_to_become, input_dims = Conv2d, 3


class LazyConv3d(_LazyConv):
    cls_to_become, input_dims = Conv3d, 4
