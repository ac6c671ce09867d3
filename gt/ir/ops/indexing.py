"""Indexing ops: basic indexing (`getitem`, out-of-place `setitem`) and the index-tensor
ops `gather`, `scatter_add`, `embedding` and `index_add`, all out of place.

A basic index is a list of items, `['int', k]`, `['slice', start, stop, step]`,
`['none']` or `['ellipsis']`, so that it survives msgpack; `index_key` makes it Python's.
"""

import numpy as np
import torch

from gt.ir import sharding
from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops.gradients import reshaped, wanted, zeros_of
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import check_assignable, indexed_shape, normalize_dim, numel

INDEX_DTYPES = ('int32', 'int64')

_KEYS = {
    'int': lambda item: item[1],
    'slice': lambda item: slice(item[1], item[2], item[3]),
    'none': lambda item: None,
    'ellipsis': lambda item: Ellipsis,
}


def index_key(index: list) -> tuple:
    """The Python key (`(0, slice(1, None, None), None)`) that a GT index stands for."""
    return tuple(_KEYS[item[0]](item) for item in index)


def _check_index(op: str, index: TensorType) -> None:
    if index.dtype not in INDEX_DTYPES:
        raise InvalidOpError(f'{op}: expected an int32 or int64 index tensor, got {index.dtype}')


def _check_same_dtype(op: str, x: TensorType, source: TensorType) -> None:
    if source.dtype != x.dtype:
        raise InvalidOpError(f'{op}: expected the source to have dtype {x.dtype} like the input, '
                        f'got {source.dtype}')


def _ranked(op: str, *shapes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Shapes of equal rank; like torch, a mix of 0-d and 1-D shapes counts as 1-D."""
    ranks = {len(shape) for shape in shapes}
    if max(ranks) <= 1:
        return [shape or (1,) for shape in shapes]
    if len(ranks) > 1:
        raise ValueError(f'{op}: the index must have as many dimensions as the input, got '
                         f'shapes {" and ".join(str(list(shape)) for shape in shapes)}')
    return list(shapes)


def _getitem_type(types, index):
    (x,) = types
    return (TensorType(indexed_shape('getitem', x.shape, index), x.dtype),)


def _setitem_type(types, index):
    x, value = types
    check_assignable('setitem', value.shape, indexed_shape('setitem', x.shape, index))
    return (x,)


def _gather_type(types, dim):
    x, index = types
    _check_index('gather', index)
    axis = normalize_dim('gather', dim, len(x.shape))
    x_shape, index_shape = _ranked('gather', x.shape, index.shape)
    if any(i > s for d, (i, s) in enumerate(zip(index_shape, x_shape)) if d != axis):
        raise ValueError(f'gather: index of shape {list(index.shape)} is larger than the '
                         f'input of shape {list(x.shape)} outside dimension {axis}')
    return (TensorType(index.shape, x.dtype),)


def _scatter_add_type(types, dim):
    x, index, source = types
    _check_index('scatter_add', index)
    _check_same_dtype('scatter_add', x, source)
    axis = normalize_dim('scatter_add', dim, len(x.shape))
    x_shape, index_shape, source_shape = _ranked('scatter_add', x.shape, index.shape,
                                                 source.shape)
    too_big = any(i > s or (d != axis and i > n)
                  for d, (i, s, n) in enumerate(zip(index_shape, source_shape, x_shape)))
    if too_big:
        raise ValueError(f'scatter_add: index of shape {list(index.shape)} must be no larger '
                         f'than the source {list(source.shape)}, nor than the input '
                         f'{list(x.shape)} outside dimension {axis}')
    return (x,)


def _embedding_type(types):
    weight, indices = types
    if len(weight.shape) != 2:
        raise ValueError(f'embedding: weight must be 2-D, got shape {list(weight.shape)}')
    _check_index('embedding', indices)
    return (TensorType(indices.shape + weight.shape[1:], weight.dtype),)


def _embedding_backward_type(types, rows):
    grad, indices = types
    _check_index('embedding_backward', indices)
    if grad.shape[:-1] != indices.shape:
        raise ValueError(f'embedding_backward: a gradient of shape {list(grad.shape)} does not '
                         f'match indices of shape {list(indices.shape)}')
    return (TensorType((rows, grad.shape[-1]), grad.dtype),)


def _index_add_type(types, dim):
    x, index, source = types
    _check_index('index_add', index)
    _check_same_dtype('index_add', x, source)
    if len(index.shape) > 1:
        raise ValueError(f'index_add: the index must be 1-D, got shape {list(index.shape)}')
    axis = normalize_dim('index_add', dim, len(x.shape))
    expected = x.shape[:axis] + (numel(index.shape),) + x.shape[axis + 1:] if x.shape else ()
    if source.shape != expected:
        raise ValueError(f'index_add: source of shape {list(source.shape)} must have shape '
                         f'{list(expected)} (the input {list(x.shape)} with dimension {axis} '
                         f'as long as the index)')
    return (x,)


def _setitem(x, value, index):
    out = x.clone()
    out[index_key(index)] = value
    return out


def _np_setitem(x, value, index):
    out = x.copy()
    key = index_key(index)
    # A trailing ellipsis makes numpy assign into a 0-d view rather than one element, so
    # a value of shape [1] broadcasts as it does in torch.
    out[key if Ellipsis in key else key + (Ellipsis,)] = value
    return out


def _np_gather(x, index, dim):
    if x.ndim <= 1:
        return x.reshape(-1)[index.reshape(-1)].reshape(index.shape)
    # take_along_axis wants the other dims equal; gather reads only their leading part.
    x = x[tuple(slice(None) if axis == dim % x.ndim else slice(0, size)
                for axis, size in enumerate(index.shape))]
    return np.take_along_axis(x, index, axis=dim)


def _np_scatter_add(x, index, source, dim):
    out = x.copy()
    if x.ndim <= 1:
        flat = index.reshape(-1)
        np.add.at(out.reshape(-1), flat, source.reshape(-1)[: flat.size])
        return out
    coordinates = list(np.indices(index.shape, sparse=True))
    coordinates[dim] = index
    region = tuple(slice(0, size) for size in index.shape)
    np.add.at(out, tuple(coordinates), source[region])
    return out


def _np_index_add(x, index, source, dim):
    out = x.copy()
    if x.ndim == 0:
        np.add.at(out.reshape(1), index.reshape(-1), source.reshape(1))
    else:
        np.add.at(np.moveaxis(out, dim, 0), index.reshape(-1), np.moveaxis(source, dim, 0))
    return out


def _torch_embedding_backward(grad, indices, rows):
    """torch's own kernel: in half precision it sums a row's gradients otherwise than
    `index_add` does (bfloat16 embeddings differed by up to 0.0156). Its CPU kernel does
    not check the indices, which torch's lookup did before it (here the lookup may not
    run, its value unused): an index out of bounds raises, as the lookup's would."""
    if indices.device.type == 'cpu' and indices.numel():
        outside = (indices < 0) | (indices >= rows)
        if outside.any():
            raise IndexError(f'embedding_backward: index {int(indices[outside][0])} is out of '
                             f'bounds for a weight of {rows} rows')
    return torch.ops.aten.embedding_dense_backward(grad, indices, rows, -1, False)


def _np_embedding_backward(grad, indices, rows):
    out = np.zeros((rows, grad.shape[-1]), dtype=grad.dtype)
    np.add.at(out, indices.reshape(-1), grad.reshape(-1, grad.shape[-1]))
    return out


# ---- gradients: torch's formulas (derivatives.yaml), as ops; index inputs get none -----------
def _getitem_grad(emit, inputs, grads, index):
    (x,), (g,) = inputs, grads
    return [emit('setitem', zeros_of(emit, x.shape, g), g, index=index)]


def _setitem_grad(emit, inputs, grads, index):
    """x gets the gradient outside the region; value gets the region's, summed by the engine
    over what broadcasting stretched (after restoring leading 1s that assignment drops)."""
    x, value = inputs
    (g,) = grads
    grad_value = None
    if wanted(value):
        grad_value = emit('getitem', g, index=index)
        extra = value.ndim - grad_value.ndim
        if extra > 0:
            grad_value = reshaped(emit, grad_value, (1,) * extra + tuple(grad_value.shape))
    return [emit('setitem', g, 0.0, index=index) if wanted(x) else None, grad_value]


def _gather_grad(emit, inputs, grads, dim):
    (x, index), (g,) = inputs, grads
    return [emit('scatter_add', zeros_of(emit, x.shape, g), index, g, dim=dim), None]


def _scatter_add_grad(emit, inputs, grads, dim):
    """The source's gradient is read where it was added; parts of a source larger than the
    index were never read and get zeros (torch rejects such gradients)."""
    x, index, source = inputs
    (g,) = grads
    grad_source = None
    if wanted(source):
        grad_source = emit('gather', g, index, dim=dim)
        if grad_source.shape != source.shape:
            region = [['slice', 0, size, None] for size in index.shape]
            grad_source = emit('setitem', zeros_of(emit, source.shape, g), grad_source,
                               index=region)
    return [g, None, grad_source]


def _index_add_grad(emit, inputs, grads, dim):
    """The source's gradient is torch's index_select(g, dim, index), done as a gather."""
    x, index, source = inputs
    (g,) = grads
    grad_source = None
    if wanted(source) and source.ndim == 0:
        grad_source = g
    elif wanted(source):
        axis = normalize_dim('index_add', dim, x.ndim)
        column = [1] * source.ndim
        column[axis] = numel(index.shape)
        positions = emit('expand', emit('reshape', index, shape=column),
                         shape=list(source.shape))
        grad_source = emit('gather', g, positions, dim=axis)
    return [g, None, grad_source]


def _embedding_grad(emit, inputs, grads):
    (weight, indices), (g,) = inputs, grads
    return [emit('embedding_backward', g, indices, rows=weight.shape[0]), None]


def _embedding_backward_grad(emit, inputs, grads, rows):
    (_, indices), (g,) = inputs, grads
    return [emit('embedding', g, indices), None]


ROWS = [
    OpDef('getitem', _getitem_type, lambda x, index: x[index_key(index)],
          lambda x, index: np.asarray(x[index_key(index)]), grad=_getitem_grad,
          shard=sharding.axis_map(sharding.index_axis)),
    OpDef('setitem', _setitem_type, _setitem, _np_setitem, grad=_setitem_grad),
    OpDef('gather', _gather_type, lambda x, index, dim: torch.gather(x, dim, index), _np_gather,
          grad=_gather_grad,
          shard=sharding.indexed_along),
    OpDef('scatter_add', _scatter_add_type,
          lambda x, index, source, dim: torch.scatter_add(x, dim, index, source),
          _np_scatter_add, grad=_scatter_add_grad,
          shard=sharding.indexed_along),
    OpDef('embedding', _embedding_type, torch.embedding, lambda weight, indices: weight[indices],
          grad=_embedding_grad, shard=sharding.embedding),
    OpDef('embedding_backward', _embedding_backward_type, _torch_embedding_backward,
          _np_embedding_backward, grad=_embedding_backward_grad),
    OpDef('index_add', _index_add_type,
          lambda x, index, source, dim: torch.index_add(x, dim, index, source), _np_index_add,
          grad=_index_add_grad),
]
