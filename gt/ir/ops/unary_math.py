"""Unary math rows: trigonometric, hyperbolic, logarithms, erf, reciprocals and rounding.

They are rows rather than fallback calls because models use them in their hot loops
(positional encodings, schedules, quantization): rows keep pointwise sharding, compile
like the other pure rows, and differentiate twice. Transcendental ops compute in
floating point (integers give the default dtype, as in torch); rounding keeps the dtype and, like
torch, refuses bool.
"""

import math

import numpy as np
import torch

from gt.ir.ops.gradients import zeros_like
from gt.ir.ops.opdef import OpDef
from gt.ir.ops.unary import floating_type, np_floating, same_dtype_type
from gt.ir.sharding import pointwise

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
TWO_OVER_ROOT_PI = 2 / math.sqrt(math.pi)


def _np_rounding(fn):
    """Rounding keeps integers as they are, and rounds floats in their own dtype."""
    def run(x, **attrs):
        if x.dtype.kind in 'iu':
            return np.asarray(x.copy())
        return np.asarray(fn(x, **attrs)).astype(x.dtype)
    return run


def _np_round(x, decimals=0):
    return np.round(x, decimals)  # both round half to even


def _torch_round(x, decimals=0):
    return torch.round(x, decimals=decimals) if decimals else torch.round(x)


def _np_sign(x):
    if x.dtype == np.bool_:
        return np.asarray(x.copy())
    return np.asarray(np.sign(x)).astype(x.dtype)


# ---- gradients (derivatives.yaml's formulas, as ops) ------------------------------------------
def _times(formula):
    """A rule `g * formula(emit, x)`."""
    def rule(emit, inputs, grads, **attrs):
        (x,), (g,) = inputs, grads
        return [emit('mul', g, formula(emit, x))]
    return rule


def _over(formula):
    """A rule `g / formula(emit, x)`."""
    def rule(emit, inputs, grads, **attrs):
        (x,), (g,) = inputs, grads
        return [emit('div', g, formula(emit, x))]
    return rule


def _square(emit, x):
    return emit('mul', x, x)


def _no_gradient(emit, inputs, grads, **attrs):
    """Rounding is flat almost everywhere: torch gives zeros."""
    return [zeros_like(emit, inputs[0])]


def _erf_slope(emit, x):
    return emit('mul', TWO_OVER_ROOT_PI, emit('exp', emit('neg', _square(emit, x))))


def _rsqrt_grad(emit, inputs, grads, **attrs):
    """torch's `-0.5 * g * result ** 3` (a cube is `r * r * r`)."""
    (x,), (g,) = inputs, grads
    root = emit('rsqrt', x)
    return [emit('mul', emit('mul', -0.5, g), emit('mul', emit('mul', root, root), root))]


def _reciprocal_grad(emit, inputs, grads, **attrs):
    """torch's `-g * (result * result)`."""
    (x,), (g,) = inputs, grads
    result = emit('reciprocal', x)
    return [emit('mul', emit('neg', g), emit('mul', result, result))]


def _one_minus_square_rsqrt(emit, x):
    """torch's `(-x * x + 1).rsqrt()`, of asin's and acos's gradients."""
    return emit('rsqrt', emit('add', emit('mul', emit('neg', x), x), 1))


UNARY_FLOATING = {
    # name: (torch, numpy, gradient rule)
    'sin': (torch.sin, np.sin, _times(lambda emit, x: emit('cos', x))),
    'cos': (torch.cos, np.cos, _times(lambda emit, x: emit('neg', emit('sin', x)))),
    'tan': (torch.tan, np.tan,
            _times(lambda emit, x: emit('add', 1, _square(emit, emit('tan', x))))),
    'asin': (torch.asin, np.arcsin, _times(_one_minus_square_rsqrt)),
    'acos': (torch.acos, np.arccos,
             _times(lambda emit, x: emit('neg', _one_minus_square_rsqrt(emit, x)))),
    'atan': (torch.atan, np.arctan, _over(lambda emit, x: emit('add', 1, _square(emit, x)))),
    'sinh': (torch.sinh, np.sinh, _times(lambda emit, x: emit('cosh', x))),
    'cosh': (torch.cosh, np.cosh, _times(lambda emit, x: emit('sinh', x))),
    'asinh': (torch.asinh, np.arcsinh,
              _times(lambda emit, x: emit('rsqrt', emit('add', _square(emit, x), 1)))),
    'acosh': (torch.acosh, np.arccosh,
              _times(lambda emit, x: emit('rsqrt', emit('sub', _square(emit, x), 1)))),
    'atanh': (torch.atanh, np.arctanh,
              _over(lambda emit, x: emit('sub', 1, _square(emit, x)))),
    'log1p': (torch.log1p, np.log1p, _over(lambda emit, x: emit('add', x, 1))),
    'expm1': (torch.expm1, np.expm1,
              _times(lambda emit, x: emit('add', emit('expm1', x), 1))),
    'log2': (torch.log2, np.log2, _over(lambda emit, x: emit('mul', x, math.log(2)))),
    'log10': (torch.log10, np.log10, _over(lambda emit, x: emit('mul', x, math.log(10)))),
    'erf': (torch.erf, _erf, _times(_erf_slope)),
    'erfc': (torch.erfc, _erfc, _times(lambda emit, x: emit('neg', _erf_slope(emit, x)))),
    'rsqrt': (torch.rsqrt, lambda x: 1 / np.sqrt(x), _rsqrt_grad),
    'reciprocal': (torch.reciprocal, lambda x: 1 / x, _reciprocal_grad),
}

ROUNDING = {
    'floor': (torch.floor, _np_rounding(np.floor)),
    'ceil': (torch.ceil, _np_rounding(np.ceil)),
    'trunc': (torch.trunc, _np_rounding(np.trunc)),
    'round': (_torch_round, _np_rounding(_np_round)),
}


def _round_type(types, decimals=0):
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise ValueError(f'round: decimals must be an int, got {decimals!r}')
    return same_dtype_type('round')(types)


ROWS = [
    *(OpDef(name, floating_type, run, np_floating(reference), grad=rule, shard=pointwise())
      for name, (run, reference, rule) in UNARY_FLOATING.items()),
    *(OpDef(name, _round_type if name == 'round' else same_dtype_type(name), run, reference,
            grad=_no_gradient, shard=pointwise())
      for name, (run, reference) in ROUNDING.items()),
    OpDef('sign', lambda types: tuple(types), torch.sign, _np_sign, grad=_no_gradient,
          shard=pointwise()),
]
