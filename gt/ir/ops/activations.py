"""Pointwise activations with kernels of their own in torch: `silu`, `mish`, `hardswish`,
`hardsigmoid`, `leaky_relu`, `elu` (which is also SELU and CELU: torch computes both
with elu's kernel and constants), `softplus` and `hardtanh` (also ReLU6).

Each has a `<name>_backward` row that is torch's backward kernel, so gradients are
torch's to the bit, and that row's own gradient rule gives second derivatives from ops,
as torch's derivatives.yaml does. Before these rows they ran by name (gt/fallback.py):
a gradient recomputed the call under autograd on the worker, a sharded batch was
gathered first, and the gradient could not join a compiled region.
"""

import math
from typing import Any, Callable, NamedTuple

import numpy as np
import torch

from gt.ir.ops.gradients import masked, wanted, zeros_like
from gt.ir.ops.opdef import OpDef
from gt.ir.ops.unary import beside_gradient, np_floating
from gt.ir.sharding import pointwise
from gt.ir.type_rules import require_floating

aten = torch.ops.aten


class Activation(NamedTuple):
    name: str
    params: tuple[str, ...]  # its attrs, all numbers
    forward: Callable[..., Any]  # torch: (x, **params)
    backward: Callable[..., Any]  # torch's kernel: (gradient, x, **params)
    np_forward: Callable[..., Any]  # on float64 arrays
    np_slope: Callable[..., Any]  # the first derivative, on float64 arrays
    curve: Callable[..., Any] | None  # d/dx of the backward row, from ops; None: it is 0


def _sigmoid(x):
    return np.exp(-np.logaddexp(0, -x))


def _np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)


def _np_mish_slope(x):
    t = np.tanh(np.logaddexp(0, x))
    return t + x * (1 - t * t) * _sigmoid(x)


# Second derivatives: each gives d/dx of the backward row, `product` being g * gradient.
def _silu_curve(emit, x, product):
    s = emit('sigmoid', x)
    one_minus = emit('sub', 1, s)
    curve = emit('mul', emit('mul', s, one_minus),
                 emit('add', 2, emit('mul', x, emit('sub', one_minus, s))))
    return emit('mul', product, curve)


def _mish_curve(emit, x, product):
    """With t = tanh(softplus(x)) and s = sigmoid(x): (1 - t^2) s (2 + x (1 - s - 2 t s))."""
    t = emit('tanh', emit('softplus', x, beta=1.0, threshold=20.0))
    s = emit('sigmoid', x)
    slope = emit('mul', emit('sub', 1, emit('mul', t, t)), s)
    bend = emit('sub', emit('sub', 1, s), emit('mul', emit('mul', 2, t), s))
    return emit('mul', product, emit('mul', slope, emit('add', 2, emit('mul', x, bend))))


def _hardswish_curve(emit, x, product):
    """1/3 strictly inside (-3, 3), as torch's double backward has it."""
    inside = emit('logical_and', emit('gt', x, -3.0), emit('lt', x, 3.0))
    return masked(emit, inside, emit('div', product, 3))


def _elu_curve(emit, x, product, alpha, scale, input_scale):
    rising = emit('mul', emit('exp', emit('mul', x, input_scale)),
                  scale * alpha * input_scale * input_scale)
    return masked(emit, emit('le', x, 0), emit('mul', product, rising))


def _softplus_curve(emit, x, product, beta, threshold):
    s = emit('sigmoid', emit('mul', x, beta))
    bend = emit('mul', emit('mul', s, emit('sub', 1, s)), beta)
    return masked(emit, emit('le', emit('mul', x, beta), threshold), emit('mul', product, bend))


ACTIVATIONS = [
    Activation('silu', (), torch.nn.functional.silu, aten.silu_backward.default,
               lambda x: x * _sigmoid(x),
               lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))), _silu_curve),
    Activation('mish', (), torch.nn.functional.mish, aten.mish_backward.default,
               lambda x: x * np.tanh(np.logaddexp(0, x)), _np_mish_slope, _mish_curve),
    Activation('hardswish', (), torch.nn.functional.hardswish,
               aten.hardswish_backward.default,
               lambda x: x * np.clip(x + 3, 0, 6) / 6,
               lambda x: np.where(x <= -3, 0.0, np.where(x < 3, x / 3 + 0.5, 1.0)),
               _hardswish_curve),
    Activation('hardsigmoid', (), torch.nn.functional.hardsigmoid,
               aten.hardsigmoid_backward.default,
               lambda x: np.clip(x + 3, 0, 6) / 6,
               lambda x: np.where((x > -3) & (x < 3), 1 / 6, 0.0), None),
    Activation('leaky_relu', ('negative_slope',),
               lambda x, negative_slope: torch.nn.functional.leaky_relu(x, negative_slope),
               lambda g, x, negative_slope: aten.leaky_relu_backward.default(
                   g, x, negative_slope, False),
               lambda x, negative_slope: np.where(x > 0, x, x * negative_slope),
               lambda x, negative_slope: np.where(x > 0, 1.0, negative_slope), None),
    Activation('elu', ('alpha', 'scale', 'input_scale'), aten.elu.default,
               lambda g, x, alpha, scale, input_scale: aten.elu_backward.default(
                   g, alpha, scale, input_scale, False, x),
               lambda x, alpha, scale, input_scale: np.where(
                   x > 0, scale * x, scale * alpha * np.expm1(x * input_scale)),
               lambda x, alpha, scale, input_scale: np.where(
                   x > 0, scale, scale * alpha * input_scale * np.exp(x * input_scale)),
               _elu_curve),
    Activation('softplus', ('beta', 'threshold'), torch.nn.functional.softplus,
               aten.softplus_backward.default, _np_softplus,
               lambda x, beta, threshold: np.where(x * beta > threshold, 1.0,
                                                   _sigmoid(x * beta)),
               _softplus_curve),
    Activation('hardtanh', ('min_val', 'max_val'), torch.nn.functional.hardtanh,
               aten.hardtanh_backward.default, lambda x, min_val, max_val: np.clip(
                   x, min_val, max_val),
               lambda x, min_val, max_val: np.where((x <= min_val) | (x >= max_val), 0.0,
                                                    1.0), None),
]


def _checked_params(name: str, params: tuple[str, ...], values: dict) -> None:
    if set(values) != set(params):
        raise ValueError(f'{name}: expected attrs {list(params)}, got {sorted(values)}')
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise TypeError(f'{name}: {key} must be a finite number, got {value!r}')
    if name == 'hardtanh' and values['min_val'] > values['max_val']:
        raise ValueError('hardtanh: min_val cannot be greater than max_val')


def _rows(spec: Activation) -> list[OpDef]:
    name, params = spec.name, spec.params
    backward_name = f'{name}_backward'

    def infer(types, **values):
        _checked_params(name, params, values)
        require_floating(name, *types)
        return tuple(types)

    def infer_backward(types, **values):
        _checked_params(name, params, values)
        return beside_gradient(backward_name, 'input')(types)

    def numpy_forward(x, **values):
        return np_floating(lambda wide: spec.np_forward(wide, **values))(x)

    def numpy_backward(gradient, x, **values):
        slope = np_floating(lambda wide: spec.np_slope(wide, **values))(x)
        return np.asarray(gradient.astype(np.float64) * slope).astype(gradient.dtype)

    def grad(emit, inputs, grads, **values):
        (x,), (g,) = inputs, grads
        return [emit(backward_name, g, x, **values)]

    def grad_of_backward(emit, inputs, grads, **values):
        """d/dgradient is the slope again (the kernel, with g's cotangent); d/dx is
        g * gradient * the second derivative."""
        (gradient, x), (g,) = inputs, grads
        by_gradient = emit(backward_name, g, x, **values) if wanted(gradient) else None
        if spec.curve is None:  # piecewise linear
            return [by_gradient, zeros_like(emit, x)]
        return [by_gradient, spec.curve(emit, x, emit('mul', g, gradient), **values)]

    return [OpDef(name, infer, spec.forward, numpy_forward, grad=grad, shard=pointwise()),
            OpDef(backward_name, infer_backward, spec.backward, numpy_backward,
                  grad=grad_of_backward, shard=pointwise())]


ROWS = [row for spec in ACTIVATIONS for row in _rows(spec)]

