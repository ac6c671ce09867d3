"""Matrix products, with torch.matmul's 1-D, 2-D and batched cases."""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import broadcast_shapes, common_dtype


def _matmul_type(types):
    a, b = types
    if not a.shape or not b.shape:
        raise ValueError('matmul: both arguments need at least 1 dimension, '
                         f'got shapes {list(a.shape)} and {list(b.shape)}')
    left = (1,) + a.shape if len(a.shape) == 1 else a.shape
    right = b.shape + (1,) if len(b.shape) == 1 else b.shape
    if left[-1] != right[-2]:
        raise ValueError(f'matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be '
                         f'multiplied ({left[-1]} != {right[-2]})')
    batch = broadcast_shapes('matmul', left[:-2], right[:-2])
    shape = batch + (left[-2], right[-1])
    if len(a.shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b.shape) == 1:
        shape = shape[:-1]
    return (TensorType(shape, common_dtype(a, b)),)


ROWS = [
    OpDef('matmul', _matmul_type, torch.matmul, np.matmul),
]
