"""Shape ops (views in torch; in GT, new SSA values) and indexing."""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import normalize_dim, numel


def _reshape_type(types, shape):
    (x,) = types
    shape = list(shape)
    known = numel([size for size in shape if size != -1])
    if shape.count(-1) > 1:
        raise ValueError(f'reshape: only one dimension can be -1, got {shape}')
    if -1 in shape:
        if known == 0 or numel(x.shape) % known:
            raise ValueError(f'reshape: shape {shape} is invalid for input of shape {list(x.shape)}')
        shape[shape.index(-1)] = numel(x.shape) // known
    if numel(shape) != numel(x.shape):
        raise ValueError(f'reshape: shape {shape} is invalid for input of shape {list(x.shape)}')
    return (TensorType(tuple(shape), x.dtype),)


def _transpose_type(types, dim0, dim1):
    (x,) = types
    shape = list(x.shape)
    a, b = normalize_dim('transpose', dim0, len(shape)), normalize_dim('transpose', dim1, len(shape))
    if shape:
        shape[a], shape[b] = shape[b], shape[a]
    return (TensorType(tuple(shape), x.dtype),)


ROWS = [
    OpDef(
        'reshape', _reshape_type,
        torch=lambda x, shape: torch.reshape(x, shape),
        numpy=lambda x, shape: np.reshape(x, shape),
    ),
    OpDef(
        'transpose', _transpose_type,
        torch=lambda x, dim0, dim1: torch.transpose(x, dim0, dim1),
        numpy=lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1),
    ),
]
