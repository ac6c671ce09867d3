"""Max pooling's gradient from the indices its forward found, not from a rerun.

gt.nn's max pooling runs torch's `max_pool{1,2,3}d_with_indices` by name, then records
`max_pooled(x, values, indices)`, which is `values` and exists for its gradient rule: the
tape keeps an op's inputs, not its outputs, so this is how the indices reach the
gradient, `max_pool_backward(gradient, x, indices)`, torch's backward kernel. Through the
gradient of the call by name (gt/ir/ops/torch_call_gradients.py), the forward ran again:
on the CPU, a 2x2 pooling of 32x16x32x32 took 1.4 ms forward and 0.09 ms backward. A
one-dimensional pooling is torch's two-dimensional one over a height of 1, as in torch.

Attrs: `dims` (1, 2 or 3 spatial dims) and torch's `kernel_size`, `stride`, `padding`,
`dilation` (lists of `dims` ints) and `ceil_mode`.
"""

from typing import Any

import torch

from gt.ir.dtypes import TORCH_DTYPES
from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef
from gt.ir.ops.torch_calls import numpy_row
from gt.ir.type_rules import numel, require_floating

aten = torch.ops.aten
POOLING = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
           3: torch.nn.functional.max_pool3d}


def pooled_shape(name: str, x: TensorType, dims: int, kernel_size: list, stride: list,
                 padding: list, dilation: list, ceil_mode: bool) -> tuple[int, ...]:
    """The pooling's output shape, from torch's own checks on a meta tensor."""
    if dims not in POOLING or len(x.shape) not in (dims + 1, dims + 2):
        raise ValueError(f'{name}: a {dims}-d pooling takes {dims + 1}-d or {dims + 2}-d '
                         f'input, not {x}')
    for key, value in (('kernel_size', kernel_size), ('stride', stride),
                       ('padding', padding), ('dilation', dilation)):
        if (not isinstance(value, (list, tuple)) or len(value) != dims
                or not all(type(v) is int for v in value)):
            raise ValueError(f'{name}: {key} must be {dims} ints, not {value!r}')
    meta = torch.empty(x.shape, dtype=TORCH_DTYPES[x.dtype], device='meta')
    try:
        found = POOLING[dims](meta, list(kernel_size), list(stride), list(padding),
                              list(dilation), ceil_mode=bool(ceil_mode))
    except RuntimeError as error:
        raise ValueError(f'{name}: {error}') from None
    return tuple(found.shape)


def _check_indices(name: str, x: TensorType, indices: TensorType, shape: tuple,
                   other: TensorType, what: str) -> None:
    require_floating(name, x)
    if indices.dtype != 'int64' or indices.shape != shape:
        raise ValueError(f'{name}: the indices {indices} must be int64 of the pooled shape '
                         f'{list(shape)}')
    if other.shape != shape or other.dtype != x.dtype:
        raise ValueError(f'{name}: the {what} {other} must be {x.dtype} of the pooled '
                         f'shape {list(shape)}')


def _pooled_type(types, **attrs):
    x, values, indices = types
    shape = pooled_shape('max_pooled', x, **attrs)
    _check_indices('max_pooled', x, indices, shape, values, 'values')
    return (values,)


def _pooled_grad(emit, inputs, grads, **attrs):
    x, _, indices = inputs
    return [emit('max_pool_backward', grads[0], x, indices, **attrs), None, None]


def _backward_type(types, **attrs):
    gradient, x, indices = types
    shape = pooled_shape('max_pool_backward', x, **attrs)
    _check_indices('max_pool_backward', x, indices, shape, gradient, 'gradient')
    return (x,)


def _max_pool_backward(gradient, x, indices, dims, kernel_size, stride, padding, dilation,
                       ceil_mode):
    if dims == 1:
        return aten.max_pool2d_with_indices_backward(
            gradient.unsqueeze(-2), x.unsqueeze(-2), [1, *kernel_size], [1, *stride],
            [0, *padding], [1, *dilation], ceil_mode, indices.unsqueeze(-2)).squeeze(-2)
    kernel = aten.max_pool2d_with_indices_backward if dims == 2 else \
        aten.max_pool3d_with_indices_backward
    return kernel(gradient, x, kernel_size, stride, padding, dilation, ceil_mode, indices)


def _backward_grad(emit, inputs, grads, dims, **attrs):
    """The backward is linear in the gradient: d/dgradient takes each window's entry at
    its index, as torch's double backward does; max pooling is flat in x."""
    _, x, indices = inputs
    spatial = numel(x.shape[-dims:])
    flat = emit('reshape', grads[0], shape=[*x.shape[:-dims], spatial])
    positions = emit('reshape', indices, shape=[*indices.shape[:-dims],
                                                numel(indices.shape[-dims:])])
    picked = emit('gather', flat, positions, dim=-1)
    return [emit('reshape', picked, shape=list(indices.shape)), None, None]


def _batch_rule(kinds, inputs, outputs, dims, **attrs):
    """A batch (dims + 2 axes) sharded on its first axis stays sharded: every input and
    output is rows of it."""
    if len(inputs[0].shape) != dims + 2 or 0 not in kinds:
        return None
    return (0,) * len(inputs), (0,) * len(outputs)


def _max_pooled(x, values, indices, **attrs):
    return values


ROWS = [
    OpDef('max_pooled', _pooled_type, _max_pooled, _max_pooled, grad=_pooled_grad,
          shard=_batch_rule),
    OpDef('max_pool_backward', _backward_type, _max_pool_backward,
          numpy_row(_max_pool_backward), grad=_backward_grad, shard=_batch_rule),
]


def pooling_attrs(dims: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                  ceil_mode: Any) -> dict | None:
    """torch's arguments as the rows' attrs (an int is every dim's, a stride of None or
    [] is the kernel's); None for forms the rows do not take, which run by name."""
    def spread(value: Any) -> list[int] | None:
        if type(value) is int:
            return [value] * dims
        if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
            if len(value) == 1:
                return list(value) * dims
            if len(value) == dims:
                return list(value)
        return None
    if stride is None or (isinstance(stride, (list, tuple)) and not stride):
        stride = kernel_size
    found = {key: spread(value) for key, value in (
        ('kernel_size', kernel_size), ('stride', stride), ('padding', padding),
        ('dilation', dilation))}
    if any(value is None for value in found.values()) or not isinstance(ceil_mode, bool):
        return None
    return dict(dims=dims, **found, ceil_mode=ceil_mode)
