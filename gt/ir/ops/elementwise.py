"""Binary elementwise ops: arithmetic, comparisons, logic and `where`, with torch's
broadcasting and type promotion (comparisons compare in the promoted dtype)."""

import numpy as np
import torch

from gt.ir.dtypes import DEFAULT_FLOAT, FLOATING
from gt.ir.graph import TensorType
from gt.ir.ops import arrays
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import broadcast_shapes, common_dtype, forbid_bool


def _binary(name: str, result: str | None = None, bool_operands: bool = True,
            bool_result: bool = True):
    """The type rule of a broadcasting binary op.

    `result` fixes the output dtype (comparisons give bool); otherwise it is the promoted
    dtype. torch refuses `sub` with any bool operand and `pow`/`floor_divide`/`remainder`
    when both promote to bool.
    """
    def infer(types):
        a, b = types
        shape = broadcast_shapes(name, a.shape, b.shape)
        if not bool_operands:
            forbid_bool(name, a, b)
        dtype = common_dtype(a, b)
        if not bool_result and dtype == 'bool':
            raise TypeError(f'{name}: not supported for bool tensors')
        return (TensorType(shape, result or dtype),)
    return infer


def _true_division(types):
    (out,) = _binary('div')(types)
    return (TensorType(out.shape, out.dtype if out.dtype in FLOATING else DEFAULT_FLOAT),)


def _where_type(types):
    condition, a, b = types
    if condition.dtype != 'bool':
        raise TypeError(f'where: the condition must be a bool tensor, got {condition.dtype}')
    shape = broadcast_shapes('where', condition.shape, a.shape, b.shape)
    return (TensorType(shape, common_dtype(a, b)),)


def _np_promoted(fn):
    """A numpy binary ufunc run on operands promoted as torch promotes them."""
    @arrays.quiet
    def run(a, b):
        return np.asarray(fn(*arrays.promoted(a, b)))
    return run


@arrays.quiet
def _np_divide(a, b):
    a, b = arrays.promoted(a, b)
    return np.asarray(np.true_divide(arrays.floating(a), arrays.floating(b)))


def _np_where(condition, a, b):
    return np.where(condition, *arrays.promoted(a, b))


ARITHMETIC = [
    ('add', torch.add, np.add, {}),
    ('sub', torch.sub, np.subtract, {'bool_operands': False}),
    ('mul', torch.mul, np.multiply, {}),
    ('pow', torch.pow, np.power, {'bool_result': False}),
    ('maximum', torch.maximum, np.maximum, {}),
    ('minimum', torch.minimum, np.minimum, {}),
    ('floor_divide', torch.floor_divide, np.floor_divide, {'bool_result': False}),
    ('remainder', torch.remainder, np.remainder, {'bool_result': False}),
]
COMPARISONS = [
    ('eq', torch.eq, np.equal),
    ('ne', torch.ne, np.not_equal),
    ('gt', torch.gt, np.greater),
    ('lt', torch.lt, np.less),
    ('ge', torch.ge, np.greater_equal),
    ('le', torch.le, np.less_equal),
]

ROWS = [
    *(OpDef(name, _binary(name, **rules), run, _np_promoted(np_run))
      for name, run, np_run, rules in ARITHMETIC),
    OpDef('div', _true_division, torch.div, _np_divide),
    *(OpDef(name, _binary(name, result='bool'), run, _np_promoted(np_run))
      for name, run, np_run in COMPARISONS),
    OpDef('logical_and', _binary('logical_and', result='bool'), torch.logical_and,
          lambda a, b: np.asarray(np.logical_and(a, b))),
    OpDef('logical_or', _binary('logical_or', result='bool'), torch.logical_or,
          lambda a, b: np.asarray(np.logical_or(a, b))),
    OpDef('where', _where_type, torch.where, _np_where),
]
