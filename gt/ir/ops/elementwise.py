"""Elementwise ops: arithmetic, comparisons and activations, with torch's broadcasting
and type promotion."""

import numpy as np
import torch

from gt.ir.dtypes import DEFAULT_FLOAT, FLOATING
from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import broadcast_shapes, common_dtype


def _binary(name: str):
    def infer(types):
        a, b = types
        return (TensorType(broadcast_shapes(name, a.shape, b.shape), common_dtype(a, b)),)
    return infer


def _true_division(types):
    (out,) = _binary('div')(types)
    dtype = out.dtype if out.dtype in FLOATING else DEFAULT_FLOAT
    return (TensorType(out.shape, dtype),)


def _same(types):
    return (types[0],)


def _floating(name: str):
    """Unary ops that compute in floating point: integer inputs give float32, as in torch."""
    def infer(types):
        (x,) = types
        return (TensorType(x.shape, x.dtype if x.dtype in FLOATING else DEFAULT_FLOAT),)
    return infer


def _np_floating(fn):
    def run(x):
        if x.dtype.kind not in 'f':
            x = x.astype(np.float32)
        return fn(x)
    return run


def _np_relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


ROWS = [
    OpDef('add', _binary('add'), torch.add, np.add),
    OpDef('sub', _binary('sub'), torch.sub, np.subtract),
    OpDef('mul', _binary('mul'), torch.mul, np.multiply),
    OpDef('div', _true_division, torch.div, lambda a, b: np.true_divide(a, b).astype(
        np.result_type(a, b) if np.result_type(a, b).kind == 'f' else np.float32)),
    OpDef('neg', _same, torch.neg, np.negative),
    OpDef('relu', _same, torch.relu, _np_relu),
    OpDef('exp', _floating('exp'), torch.exp, _np_floating(np.exp)),
]
