"""Normalization layers beyond batch and layer norm: `GroupNorm`, `InstanceNorm1d/2d/3d`,
`RMSNorm` and `LocalResponseNorm`, with torch.nn's arguments, parameter and buffer names,
initialization and repr. The normalizations are torch's kernels run by name
(gt/fallback.py), except the running statistics of instance norm: torch's kernel would
write them in place on a worker, so GT rebinds them to their new values, as batch_norm does.
"""

import numbers
import warnings
from typing import Any, Sequence

from gt.autograd import no_grad
from gt.creation import ones, zeros
from gt.fallback import call
from gt.nn import functional as F
from gt.nn import init
from gt.nn.batch_norm import _NormBase
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """torch's F.instance_norm: each (sample, channel) normalized over its spatial dims.
    With the input's statistics, the output is torch's kernel run without the running
    tensors, and those are then moved toward the batch's mean of the instances'
    statistics (unbiased variance), as torch's kernel moves them, by rebinding."""
    if not use_input_stats:
        return call('torch.nn.functional.instance_norm',
                    (input, running_mean, running_var, weight, bias, False, momentum, eps), {})
    output = call('torch.nn.functional.instance_norm',
                  (input, None, None, weight, bias, True, momentum, eps), {})
    if running_mean is not None or running_var is not None:
        _update_running_stats(input, running_mean, running_var, momentum)
    return output


def _update_running_stats(input: Tensor, running_mean: Tensor | None,
                          running_var: Tensor | None, momentum: float) -> None:
    """torch repeats the running tensors per sample, updates each like batch_norm does,
    then keeps their mean over the batch; so does this, in that order."""
    spatial = list(range(2, input.ndim))
    with no_grad():
        if running_mean is not None:
            mean = input.mean(spatial)
            running_mean.copy_((running_mean * (1 - momentum) + mean * momentum).mean(0))
        if running_var is not None:
            unbiased = input.var(spatial, unbiased=True)
            running_var.copy_((running_var * (1 - momentum) + unbiased * momentum).mean(0))


class _InstanceNorm(_NormBase):
    """torch's _InstanceNorm: _NormBase's parameters and buffers (`num_batches_tracked`
    is kept but never counted), affine and running statistics off by default."""

    no_batch_dims = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        dims = (self.no_batch_dims, self.no_batch_dims + 1)
        if input.ndim not in dims:
            raise ValueError(f'expected {dims[0]}D or {dims[1]}D input (got {input.ndim}D '
                             'input)')
        feature_dim = input.ndim - self.no_batch_dims
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f'num_features ({self.num_features}), but got: '
                                 f'{input.shape[feature_dim]}.')
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          'You can silence this warning by not passing in num_features, '
                          'which is not used because affine=False', stacklevel=2)
        batched = input.ndim != self.no_batch_dims
        output = instance_norm(
            input if batched else input.unsqueeze(0), self.running_mean, self.running_var,
            self.weight, self.bias, self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0, self.eps)
        return output if batched else output.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or (C, L) inputs."""

    no_batch_dims = 2


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or (C, H, W) inputs."""

    no_batch_dims = 3


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or (C, D, H, W) inputs."""

    no_batch_dims = 4


class GroupNorm(Module):
    """The channels split into `num_groups` groups, each normalized over its channels and
    spatial dims; per-channel `weight` (ones) and `bias` (zeros)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f'num_channels ({num_channels}) must be divisible by num_groups '
                             f'({num_groups})')
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        floating = {} if dtype is None else {'dtype': dtype}
        self.register_parameter('weight', Parameter(ones(num_channels, **floating))
                                if affine else None)
        self.register_parameter('bias', Parameter(zeros(num_channels, **floating))
                                if affine and bias else None)

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f'{self.num_groups}, {self.num_channels}, eps={self.eps}, '
                f'affine={self.affine}, bias={self.bias is not None}')


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over the last dims) + eps) * weight; eps None is the machine
    epsilon of the computation type, as in torch."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        floating = {} if dtype is None else {'dtype': dtype}
        self.register_parameter('weight', Parameter(ones(*self.normalized_shape, **floating))
                                if elementwise_affine else None)

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f'{self.normalized_shape}, eps={self.eps}, '
                f'elementwise_affine={self.elementwise_affine}')


class LocalResponseNorm(Module):
    """Each channel divided by (k + alpha/n * sum of squares over `size` neighbouring
    channels)^beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f'{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}'
