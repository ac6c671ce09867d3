"""Binary elementwise ops: arithmetic, comparisons, logic and `where`, with torch's
broadcasting and type promotion (comparisons compare in the promoted dtype)."""

import functools

import numpy as np
import torch

from gt.ir.dtypes import FLOATING, default_float
from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops import arrays
from gt.ir.ops.gradients import masked, wanted
from gt.ir.ops.opdef import OpDef
from gt.ir.sharding import pointwise
from gt.ir.type_rules import broadcast_shapes, common_dtype, forbid_bool, require_integral


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
            raise InvalidOpError(f'{name}: not supported for bool tensors')
        return (TensorType(shape, result or dtype),)
    return infer


def _bitwise(name: str):
    binary = _binary(name)

    def infer(types):
        require_integral(name, *types)
        return binary(types)
    return infer


def _true_division(types):
    (out,) = _binary('div')(types)
    return (TensorType(out.shape, out.dtype if out.dtype in FLOATING else default_float()),)


def _where_type(types):
    condition, a, b = types
    if condition.dtype != 'bool':
        raise InvalidOpError(f'where: the condition must be a bool tensor, got {condition.dtype}')
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


# ---- gradients: torch's formulas (derivatives.yaml), as ops ----------------------------------
def _add_grad(emit, inputs, grads):
    (g,) = grads
    return [g, g]


def _sub_grad(emit, inputs, grads):
    (g,) = grads
    return [g, emit('neg', g) if wanted(inputs[1]) else None]


def _mul_grad(emit, inputs, grads):
    a, b = inputs
    (g,) = grads
    return [emit('mul', g, b) if wanted(a) else None, emit('mul', g, a) if wanted(b) else None]


def _div_grad(emit, inputs, grads):
    a, b = inputs
    (g,) = grads
    grad_b = None
    if wanted(b):
        grad_b = emit('mul', emit('neg', g), emit('div', emit('div', a, b), b))
    return [emit('div', g, b) if wanted(a) else None, grad_b]


def _pow_grad(emit, inputs, grads, power: str = 'pow'):
    """Exponent 0 gives the base no gradient; base 0 gives a non-negative exponent none.
    `power` is the forward's op: torch differentiates a number exponent with its number
    forms too (`pow_number`)."""
    base, exponent = inputs
    (g,) = grads
    grad_base = grad_exponent = None
    if wanted(base):
        slope = emit('mul', exponent, emit(power, base, emit('sub', exponent, 1)))
        grad_base = emit('where', emit('eq', exponent, 0), 0.0, emit('mul', g, slope))
    if wanted(exponent):
        slope = emit('mul', emit('pow', base, exponent), emit('log', base))
        at_zero = emit('logical_and', emit('ge', exponent, 0), emit('eq', base, 0))
        grad_exponent = emit('mul', g, emit('where', at_zero, 0.0, slope))
    return [grad_base, grad_exponent]


def number_pow(base, exponent):
    """torch.pow of a Python-number exponent (the `pow_number` row, which the client
    records for `x ** 2`, `x.pow(0.5)`): the number reaches the worker as a 0-d host
    tensor, passed as the number it holds, since torch computes `x ** 2` as x * x,
    `x ** 0.5` as sqrt(x) and so on for a number exponent only (in the tensor form, `x ** 2`
    differed from torch's in 166 of 10000 elements, and `x ** 3` in 2543). A script's own
    0-d tensor exponent is the `pow` row's, torch's tensor form. The same dtype keeps the
    result's. Compiled regions trace torch.pow itself."""
    return torch.pow(base, _as_number(base, exponent))


def number_pow_(base, exponent):
    """`number_pow` in place, its twin for gt.runtime.buffer_reuse."""
    return base.pow_(_as_number(base, exponent))


def _as_number(base, exponent):
    if (type(exponent) is torch.Tensor and exponent.ndim == 0 and exponent.dtype == base.dtype
            and exponent.device.type == 'cpu' and not torch.compiler.is_compiling()):
        return exponent.item()
    return exponent


def _extreme_grad(emit, a, b, g, loses):
    """maximum/minimum: the operand that loses (`loses(a, b)`) gets nothing and a tie
    splits the gradient in half, as torch does; NaNs take the whole gradient."""
    tied = emit('where', emit('eq', a, b), emit('div', g, 2), g)
    grad_a = emit('where', emit(loses, a, b), 0.0, tied) if wanted(a) else None
    grad_b = emit('where', emit(loses, b, a), 0.0, tied) if wanted(b) else None
    return [grad_a, grad_b]


def _maximum_grad(emit, inputs, grads):
    return _extreme_grad(emit, *inputs, grads[0], 'lt')


def _minimum_grad(emit, inputs, grads):
    return _extreme_grad(emit, *inputs, grads[0], 'gt')


def _remainder_grad(emit, inputs, grads):
    a, b = inputs
    (g,) = grads
    grad_b = emit('mul', emit('neg', g), emit('floor_divide', a, b)) if wanted(b) else None
    return [g, grad_b]


def _where_grad(emit, inputs, grads):
    condition, a, b = inputs
    (g,) = grads
    grad_b = emit('where', condition, 0.0, g) if wanted(b) else None
    return [None, masked(emit, condition, g) if wanted(a) else None, grad_b]


ARITHMETIC = [
    ('add', torch.add, np.add, {}, _add_grad),
    ('sub', torch.sub, np.subtract, {'bool_operands': False}, _sub_grad),
    ('mul', torch.mul, np.multiply, {}, _mul_grad),
    ('pow', torch.pow, np.power, {'bool_result': False}, _pow_grad),
    ('maximum', torch.maximum, np.maximum, {}, _maximum_grad),
    ('minimum', torch.minimum, np.minimum, {}, _minimum_grad),
    # torch has no derivative for floor_divide (it raises); GT gives its result none.
    ('floor_divide', torch.floor_divide, np.floor_divide, {'bool_result': False}, None),
    ('remainder', torch.remainder, np.remainder, {'bool_result': False}, _remainder_grad),
]
# How partial sums pass through (see gt.ir.sharding.pointwise): a sum of partial sums is
# one; so is a partial sum times a whole value.
LINEARITY = {'add': 'all', 'sub': 'all', 'mul': 'one'}
COMPARISONS = [
    ('eq', torch.eq, np.equal),
    ('ne', torch.ne, np.not_equal),
    ('gt', torch.gt, np.greater),
    ('lt', torch.lt, np.less),
    ('ge', torch.ge, np.greater_equal),
    ('le', torch.le, np.less_equal),
]

ROWS = [
    *(OpDef(name, _binary(name, **rules), run, _np_promoted(np_run), grad=grad,
            shard=pointwise(LINEARITY.get(name)))
      for name, run, np_run, rules, grad in ARITHMETIC),
    OpDef('pow_number', _binary('pow', bool_result=False), number_pow,
          _np_promoted(np.power), grad=functools.partial(_pow_grad, power='pow_number'),
          shard=pointwise()),
    OpDef('div', _true_division, torch.div, _np_divide, grad=_div_grad,
          shard=pointwise('first')),
    *(OpDef(name, _binary(name, result='bool'), run, _np_promoted(np_run), shard=pointwise())
      for name, run, np_run in COMPARISONS),
    OpDef('logical_and', _binary('logical_and', result='bool'), torch.logical_and,
          lambda a, b: np.asarray(np.logical_and(a, b)), shard=pointwise()),
    OpDef('logical_or', _binary('logical_or', result='bool'), torch.logical_or,
          lambda a, b: np.asarray(np.logical_or(a, b)), shard=pointwise()),
    OpDef('where', _where_type, torch.where, _np_where, grad=_where_grad, shard=pointwise()),
    OpDef('bitwise_and', _bitwise('bitwise_and'), torch.bitwise_and,
          _np_promoted(np.bitwise_and), shard=pointwise()),
    OpDef('bitwise_or', _bitwise('bitwise_or'), torch.bitwise_or, _np_promoted(np.bitwise_or),
          shard=pointwise()),
    OpDef('bitwise_xor', _bitwise('bitwise_xor'), torch.bitwise_xor,
          _np_promoted(np.bitwise_xor), shard=pointwise()),
]
