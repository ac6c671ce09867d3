"""Matrix products, with torch.matmul's 1-D, 2-D and batched (broadcast) cases.

Unlike elementwise ops, torch.matmul does not promote: both operands must share a dtype.
"""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import broadcast_shapes


def _matmul_type(types):
    a, b = types
    shapes = f'{list(a.shape)} and {list(b.shape)}'
    if not a.shape or not b.shape:
        raise ValueError(f'matmul: both arguments need at least 1 dimension, got shapes {shapes}')
    if a.dtype != b.dtype:
        raise TypeError(f'matmul: expected both arguments to have the same dtype, got '
                        f'{a.dtype} and {b.dtype}')
    if a.dtype == 'bool':
        raise TypeError('matmul: not supported for bool tensors')
    left = (1,) + a.shape if len(a.shape) == 1 else a.shape
    right = b.shape + (1,) if len(b.shape) == 1 else b.shape
    if left[-1] != right[-2]:
        raise ValueError(f'matmul: shapes {shapes} cannot be multiplied '
                         f'({left[-1]} != {right[-2]})')
    try:
        batch = broadcast_shapes('matmul', left[:-2], right[:-2])
    except ValueError:
        raise ValueError(f'matmul: the batch dimensions of shapes {shapes} cannot be '
                         f'broadcast together') from None
    shape = batch + (left[-2], right[-1])
    if len(a.shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b.shape) == 1:
        shape = shape[:-1]
    return (TensorType(shape, a.dtype),)


ROWS = [
    OpDef('matmul', _matmul_type, torch.matmul, lambda a, b: np.asarray(np.matmul(a, b))),
]
