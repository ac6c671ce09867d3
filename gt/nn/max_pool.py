"""torch.nn.functional's max pooling, whose gradient uses the indices the forward found.

The pooling is torch's function run by name (gt/fallback.py). When its gradient will be
wanted, it runs as `max_pool{n}d_with_indices` and the result is recorded as
`max_pooled(x, values, indices)`, whose gradient is torch's backward kernel on those
indices (gt/ir/ops/pooling.py); through the call's own gradient, the forward, the
slow part on a CPU, ran twice.
"""

from typing import Any

from gt.autograd import is_grad_enabled, no_grad
from gt.fallback import call
from gt.ir.ops.pooling import pooling_attrs
from gt.tensor import Tensor, emit


def _max_pool(dims: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    function = f'torch.nn.functional.max_pool{dims}d'
    attrs = pooling_attrs(dims, kernel_size, stride, padding, dilation, ceil_mode)
    if attrs is None or not (isinstance(input, Tensor) and input.requires_grad
                             and is_grad_enabled()):
        return call(function, (input, kernel_size, stride, padding, dilation),
                    {'ceil_mode': ceil_mode, 'return_indices': return_indices})
    with no_grad():
        values, indices = call(function + '_with_indices',
                               (input, kernel_size, stride, padding, dilation),
                               {'ceil_mode': ceil_mode})
    result = emit('max_pooled', input, values, indices, **attrs)
    return (result, indices) if return_indices else result


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)
