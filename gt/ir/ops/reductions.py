"""Reductions over all, one or several dims, with `dim`/`keepdim` as torch has them."""

import numpy as np
import torch

from gt.ir.dtypes import DEFAULT_INT, INTEGRAL
from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import normalize_dims, reduced_shape


def _sum_type(types, dim, keepdim):
    (x,) = types
    dims = normalize_dims('sum', dim, len(x.shape))
    dtype = DEFAULT_INT if x.dtype in INTEGRAL or x.dtype == 'bool' else x.dtype
    return (TensorType(reduced_shape(x.shape, dims, keepdim), dtype),)


def _np_axis(x, dim):
    if dim is None or (not isinstance(dim, int) and not dim):
        return None
    return dim if isinstance(dim, int) else tuple(dim)


ROWS = [
    OpDef(
        'sum', _sum_type,
        torch=lambda x, dim, keepdim: torch.sum(x, dim=dim, keepdim=keepdim),
        numpy=lambda x, dim, keepdim: np.asarray(
            np.sum(x, axis=_np_axis(x, dim), keepdims=keepdim,
                   dtype=np.int64 if x.dtype.kind in 'biu' else x.dtype)),
    ),
]
