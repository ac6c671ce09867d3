"""Shape ops: views in torch, new SSA values in GT; plus cat, stack and split.

Size lists arrive from the client as lists (msgpack has no tuples); the rules accept both.
"""

import numpy as np
import torch

from gt.ir import sharding
from gt.ir.graph import TensorType
from gt.ir.ops import arrays
from gt.ir.ops.gradients import reshaped, zeros_of
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import common_dtype, normalize_dim, normalize_dims, numel


def _reshape_type(types, shape):
    (x,) = types
    sizes = list(shape)
    invalid = f'reshape: shape {sizes} is invalid for input of shape {list(x.shape)}'
    if any(not isinstance(size, int) or size < -1 for size in sizes):
        raise ValueError(f'{invalid} (sizes must be non-negative, or -1 once)')
    if sizes.count(-1) > 1:
        raise ValueError(f'reshape: only one dimension can be -1, got {sizes}')
    if -1 in sizes:
        known = numel([size for size in sizes if size != -1])
        if known == 0 or numel(x.shape) % known:
            raise ValueError(invalid)
        sizes[sizes.index(-1)] = numel(x.shape) // known
    if numel(sizes) != numel(x.shape):
        raise ValueError(invalid)
    return (TensorType(tuple(sizes), x.dtype),)


def _transpose_type(types, dim0, dim1):
    (x,) = types
    shape = list(x.shape)
    a = normalize_dim('transpose', dim0, len(shape))
    b = normalize_dim('transpose', dim1, len(shape))
    if shape:
        shape[a], shape[b] = shape[b], shape[a]
    return (TensorType(tuple(shape), x.dtype),)


def _permute_type(types, dims):
    (x,) = types
    order = [normalize_dim('permute', dim, len(x.shape)) for dim in dims]
    if sorted(order) != list(range(len(x.shape))):
        raise ValueError(f'permute: dims {list(dims)} are not a permutation of the '
                         f'{len(x.shape)} dimension(s) of shape {list(x.shape)}')
    return (TensorType(tuple(x.shape[dim] for dim in order), x.dtype),)


def _unsqueeze_type(types, dim):
    (x,) = types
    axis = normalize_dim('unsqueeze', dim, len(x.shape) + 1)
    return (TensorType(x.shape[:axis] + (1,) + x.shape[axis:], x.dtype),)


def _squeeze_type(types, dim):
    (x,) = types
    if dim is None:
        dims = range(len(x.shape))
    elif isinstance(dim, int) or not isinstance(dim, (list, tuple)) or dim:
        dims = normalize_dims('squeeze', dim, len(x.shape))  # refuses what is not an int
    else:
        dims = ()  # torch.squeeze(x, []) squeezes nothing
    dropped = {axis for axis in dims if x.shape and x.shape[axis] == 1}
    shape = tuple(size for axis, size in enumerate(x.shape) if axis not in dropped)
    return (TensorType(shape, x.dtype),)


def _expanded(op: str, shape: tuple[int, ...], sizes) -> tuple[int, ...]:
    """torch.Tensor.expand's target: new dims lead, -1 keeps a size, only 1s may grow."""
    sizes = list(sizes)
    if len(sizes) < len(shape):
        raise ValueError(f'{op}: the {len(sizes)} sizes {sizes} are fewer than the '
                         f'{len(shape)} dimensions of shape {list(shape)}')
    lead = len(sizes) - len(shape)
    result = []
    for axis, size in enumerate(sizes):
        old = shape[axis - lead] if axis >= lead else None
        if size == -1 and old is not None:
            size = old
        if not isinstance(size, int) or size < 0 or old not in (None, 1, size):
            raise ValueError(f'{op}: cannot expand shape {list(shape)} to {sizes} '
                             f'(size {sizes[axis]} at dimension {axis})')
        result.append(size)
    return tuple(result)


def _expand_type(types, shape):
    (x,) = types
    return (TensorType(_expanded('expand', x.shape, shape), x.dtype),)


def _legacy_empty(shape: tuple[int, ...]) -> bool:
    # torch.cat skips 1-D tensors of size 0 whatever the other tensors' shapes are.
    return shape == (0,)


def _cat_type(types, dim):
    if not types:
        raise ValueError('cat: expected a non-empty list of tensors')
    dtype = common_dtype(*types)
    shapes = [t.shape for t in types if not _legacy_empty(t.shape)]
    if not shapes:
        return (TensorType((0,), dtype),)
    first = shapes[0]
    if not first:
        raise ValueError('cat: zero-dimensional tensors cannot be concatenated')
    axis = normalize_dim('cat', dim, len(first))
    for shape in shapes:
        same = len(shape) == len(first) and all(
            a == b for i, (a, b) in enumerate(zip(shape, first)) if i != axis)
        if not same:
            raise ValueError(f'cat: shapes {[list(t.shape) for t in types]} must match '
                             f'except in dimension {axis}')
    size = sum(shape[axis] for shape in shapes)
    return (TensorType(first[:axis] + (size,) + first[axis + 1:], dtype),)


def _stack_type(types, dim):
    if not types:
        raise ValueError('stack: expected a non-empty list of tensors')
    first = types[0].shape
    if any(t.shape != first for t in types):
        raise ValueError(f'stack: expects each tensor to be equal size, got '
                         f'{[list(t.shape) for t in types]}')
    axis = normalize_dim('stack', dim, len(first) + 1)
    return (TensorType(first[:axis] + (len(types),) + first[axis:], common_dtype(*types)),)


def _split_type(types, sizes, dim):
    (x,) = types
    if not x.shape:
        raise ValueError('split: expects a tensor with at least one dimension')
    axis = normalize_dim('split', dim, len(x.shape))
    sizes = list(sizes)
    if any(not isinstance(size, int) or size < 0 for size in sizes) or \
            sum(sizes) != x.shape[axis]:
        raise ValueError(f'split: sizes {sizes} must be non-negative and sum to '
                         f'{x.shape[axis]}, the size of dimension {axis} of shape '
                         f'{list(x.shape)}')
    return tuple(TensorType(x.shape[:axis] + (size,) + x.shape[axis + 1:], x.dtype)
                 for size in sizes)


def _squeeze(x, dim):
    return torch.squeeze(x) if dim is None else torch.squeeze(x, dim)


def _split(x, sizes, dim):
    parts = torch.split(x, sizes, dim)
    # One output is returned bare: engines wrap single results themselves.
    return parts[0] if len(parts) == 1 else parts


def _np_squeeze(x, dim):
    (out,) = _squeeze_type((TensorType(x.shape, x.dtype.name),), dim)
    return x.reshape(out.shape)


def _np_cat(*xs, dim):
    dtype = arrays.common(*xs)
    kept = [x.astype(dtype) for x in xs if not _legacy_empty(x.shape)]
    if not kept:
        return np.zeros((0,), dtype)
    return np.concatenate(kept, axis=dim)


def _np_split(x, sizes, dim):
    parts = np.split(x, np.cumsum(sizes)[:-1], axis=dim)
    return parts[0] if len(parts) == 1 else tuple(parts)


# ---- gradients: shape ops move gradients back; the engine sums out what expand broadcast -----
def _reshape_grad(emit, inputs, grads, **attrs):
    """reshape, unsqueeze and squeeze: the gradient takes the input's shape back."""
    return [reshaped(emit, grads[0], inputs[0].shape)]


def _transpose_grad(emit, inputs, grads, dim0, dim1):
    return [emit('transpose', grads[0], dim0=dim0, dim1=dim1)]


def _permute_grad(emit, inputs, grads, dims):
    order = [normalize_dim('permute', dim, inputs[0].ndim) for dim in dims]
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return [emit('permute', grads[0], dims=inverse)]


def _expand_grad(emit, inputs, grads, shape):
    return [grads[0]]


def _cat_grad(emit, inputs, grads, dim):
    (g,) = grads
    kept = [x for x in inputs if not _legacy_empty(tuple(x.shape))]
    if not kept:
        return [zeros_of(emit, (0,), g) for _ in inputs]
    axis = normalize_dim('cat', dim, kept[0].ndim)
    parts = emit('split', g, sizes=[x.shape[axis] for x in kept], dim=axis)
    parts = iter(parts if isinstance(parts, list) else [parts])
    return [zeros_of(emit, (0,), g) if _legacy_empty(tuple(x.shape)) else next(parts)
            for x in inputs]


def _stack_grad(emit, inputs, grads, dim):
    axis = normalize_dim('stack', dim, inputs[0].ndim + 1)
    whole = [['slice', None, None, None]] * axis
    return [emit('getitem', grads[0], index=[*whole, ['int', position]])
            for position in range(len(inputs))]


def _split_grad(emit, inputs, grads, sizes, dim):
    """Outputs that got no gradient count as zeros."""
    (x,) = inputs
    if len(grads) == 1:
        return [grads[0]]
    axis = normalize_dim('split', dim, x.ndim)
    parts = [g if g is not None else
             zeros_of(emit, x.shape[:axis] + (size,) + x.shape[axis + 1:], x)
             for g, size in zip(grads, sizes)]
    return [emit('cat', *parts, dim=axis)]


ROWS = [
    OpDef('reshape', _reshape_type, torch.reshape,
          lambda x, shape: np.reshape(x, shape), grad=_reshape_grad,
          shard=sharding.axis_map(sharding.reshape_axis)),
    OpDef('transpose', _transpose_type, torch.transpose,
          lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1) if x.ndim else x,
          grad=_transpose_grad, shard=sharding.axis_map(sharding.transpose_axis)),
    OpDef('permute', _permute_type, torch.permute, lambda x, dims: np.transpose(x, dims),
          grad=_permute_grad, shard=sharding.axis_map(sharding.permute_axis)),
    OpDef('unsqueeze', _unsqueeze_type, torch.unsqueeze, lambda x, dim: np.expand_dims(x, dim),
          grad=_reshape_grad, shard=sharding.axis_map(sharding.unsqueeze_axis)),
    OpDef('squeeze', _squeeze_type, _squeeze, _np_squeeze, grad=_reshape_grad,
          shard=sharding.axis_map(sharding.squeeze_axis)),
    OpDef('expand', _expand_type, lambda x, shape: x.expand(shape),
          lambda x, shape: np.broadcast_to(x, _expanded('expand', x.shape, shape)),
          grad=_expand_grad, shard=sharding.axis_map(sharding.expand_axis)),
    OpDef('cat', _cat_type, lambda *xs, dim: torch.cat(xs, dim), _np_cat, grad=_cat_grad,
          shard=sharding.axis_map(sharding.concatenation_axis)),
    OpDef('stack', _stack_type, lambda *xs, dim: torch.stack(xs, dim),
          lambda *xs, dim: np.stack(arrays.promoted(*xs), axis=dim), grad=_stack_grad,
          shard=sharding.axis_map(sharding.stack_axis)),
    OpDef('split', _split_type, _split, _np_split, grad=_split_grad,
          shard=sharding.axis_map(sharding.concatenation_axis)),
]
