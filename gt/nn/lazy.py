"""Lazy modules: `LazyLinear(out)`, `LazyConv1d/2d/3d(out, kernel, ...)`,
`LazyConvTranspose1d/2d/3d`, `LazyBatchNorm1d/2d/3d` and `LazyInstanceNorm1d/2d/3d` learn
their input size from their first call, then become the module they stand for, as
torch's do.

Their parameters (and a norm's running statistics) exist from the start, empty, and are
filled at the first call with the values the real module's initialization makes then
(torch's draws, at torch's moment), so an optimizer made before that call holds the very
tensors that train (torch's holds uninitialized ones and asks for a dry run first).
"""

from typing import Any

from gt.autograd import no_grad
from gt.creation import tensor, zeros
from gt.nn import module_hooks
from gt.nn.batch_norm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from gt.nn.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from gt.nn.layers import Linear
from gt.nn.module import Module
from gt.nn.normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from gt.nn.parameter import Parameter

# What the lazy module keeps of its own when it becomes the real one: its tensors, mode
# and hooks (the real module's registries are empty).
KEPT = ('_parameters', '_buffers', '_modules', '_non_persistent_buffers_set', 'training',
        *module_hooks.REGISTRIES)


class _Lazy(Module):
    cls_to_become: type
    input_dims: int  # a batched input's dims: the size learned is its dim 1, else dim 0

    def __init__(self, *args: Any, bias: bool = True, **kwargs: Any) -> None:
        super().__init__()
        self._arguments = (args, {'bias': bias, **kwargs})
        dtype = kwargs.get('dtype')
        self.weight = Parameter(zeros(0, dtype=dtype))
        self.bias = Parameter(zeros(0, dtype=dtype)) if bias else None

    def _size(self, input: Any) -> int:
        """The size the real module is made with: the features, or the channels."""
        return input.shape[-1] if self.input_dims == 1 else input.shape[
            1 if input.ndim == self.input_dims + 1 else 0]

    def _size_in(self, weight: Any) -> int:
        """The size a checkpoint's weight of the real module says it was made with."""
        return weight.shape[1]

    def _materialize(self, size: int) -> None:
        args, kwargs = self._arguments
        for held in (*self._parameters.values(), *self._buffers.values()):
            if held is not None and held.dtype.is_floating_point:  # `.double()` casts these
                kwargs = {**kwargs, 'dtype': held.dtype}
                break
        made = self.cls_to_become(size, *args, **kwargs)
        del self._arguments
        with no_grad():
            for held, own in ((made._parameters, self._parameters),
                              (made._buffers, self._buffers)):
                for name, value in held.items():
                    if value is not None:
                        own[name]._replace(value)
        for name, value in vars(made).items():  # its sizes; hooks and mode stay this one's
            if name not in KEPT:
                self.__dict__[name] = value
        self.__class__ = self.cls_to_become

    def forward(self, input: Any) -> Any:
        self._materialize(self._size(input))
        return self.forward(input)  # inside this call: its hooks run once, around it

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *rest: Any) -> None:
        """A checkpoint loaded before the first call sizes the module, as torch's lazy
        load hook does: from the saved weight (a norm's from its running mean)."""
        for name in ('weight', 'running_mean'):
            if hasattr(state_dict.get(prefix + name), 'shape'):
                self._materialize(self._size_in(state_dict[prefix + name]) if name == 'weight'
                                  else state_dict[prefix + name].shape[0])
                break
        if isinstance(self, _Lazy):  # nothing saved to size it by: loads as it is
            super()._load_from_state_dict(state_dict, prefix, *rest)
        else:
            self._load_from_state_dict(state_dict, prefix, *rest)


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

    def _size_in(self, weight: Any) -> int:
        return weight.shape[1] * self.groups

    def extra_repr(self) -> str:
        return self.cls_to_become.extra_repr(self)  # its in_channels 0, as torch prints


class _LazyConvTranspose(_LazyConv):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = 'zeros', device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype=dtype)
        dims = self.input_dims - 1
        self._arguments = ((out_channels, kernel_size), dict(
            stride=stride, padding=padding, output_padding=output_padding, groups=groups,
            bias=bias, dilation=dilation, padding_mode=padding_mode, dtype=dtype))
        self.output_padding = tuple(output_padding) if isinstance(
            output_padding, (tuple, list)) else (output_padding,) * dims

    def _size_in(self, weight: Any) -> int:
        return weight.shape[0]


class _LazyNorm(_Lazy):
    """A norm's features are its input's dim 1, as torch's lazy norms take them; affine
    and running statistics are on by default, for instance norms too, as in torch."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        tracks = track_running_stats
        Module.__init__(self)
        self._arguments = ((), dict(eps=eps, momentum=momentum, affine=affine,
                                    track_running_stats=tracks, dtype=dtype))
        self.num_features, self.eps, self.momentum = 0, eps, momentum
        self.affine, self.track_running_stats = affine, tracks
        self.weight = Parameter(zeros(0, dtype=dtype)) if affine else None
        self.bias = Parameter(zeros(0, dtype=dtype)) if affine else None
        for name in ('running_mean', 'running_var'):
            self.register_buffer(name, zeros(0, dtype=dtype) if tracks else None)
        self.register_buffer('num_batches_tracked', tensor(0) if tracks else None)

    def _size(self, input: Any) -> int:
        return input.shape[1]

    def _size_in(self, weight: Any) -> int:
        return weight.shape[0]

    def extra_repr(self) -> str:
        return self.cls_to_become.extra_repr(self)


def _lazy(base: type, becomes: type, input_dims: int = 0) -> type:
    """The lazy form of `becomes` (`LazyConv2d` of `Conv2d`), a module of this one."""
    name = f'Lazy{becomes.__name__}'
    return type(name, (base,), {'cls_to_become': becomes, 'input_dims': input_dims,
                                '__module__': __name__, '__qualname__': name,
                                '__doc__': f'{becomes.__name__}, sized at its first call.'})


LazyConv1d, LazyConv2d, LazyConv3d = (
    _lazy(_LazyConv, cls, dims) for cls, dims in ((Conv1d, 2), (Conv2d, 3), (Conv3d, 4)))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy(_LazyConvTranspose, cls, dims)
    for cls, dims in ((ConvTranspose1d, 2), (ConvTranspose2d, 3), (ConvTranspose3d, 4)))
LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy(_LazyNorm, cls) for cls in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy(_LazyNorm, cls) for cls in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d))
