"""Pointwise ops that torch computes with one rounding where separate ops take two:
`addcmul` (`x + value * a * b`), `addcdiv` (`x + value * a / b`) and `lerp`
(`start + weight * (end - start)`). torch's optimizers update with them (`add_(g,
alpha=-lr)` is `addcmul(p, g, -lr)` to the bit), so GT's optimizers do too, and train as
torch does bit for bit. A scalar that changes from step to step (a learning rate) is a 0-d
tensor operand, not an attribute, so the step's program stays the same.
"""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops.gradients import wanted
from gt.ir.ops.opdef import OpDef
from gt.ir.sharding import pointwise
from gt.ir.type_rules import broadcast_shapes, require_floating


def _fused_type(name: str):
    """Floating operands of one dtype; the last may be a 0-d number of a wider floating
    dtype (GT keeps a number beside half and bfloat16 tensors in float32, as torch does)."""
    def infer(types):
        require_floating(name, *types)
        *tensors, last = types
        dtype = tensors[0].dtype
        if any(t.dtype != dtype for t in tensors) or (last.dtype != dtype and last.shape):
            raise InvalidOpError(f'{name}: expected operands of one dtype, got '
                            f'{", ".join(t.dtype for t in types)}')
        return (TensorType(broadcast_shapes(name, *(t.shape for t in types)), dtype),)
    return infer


def _addcmul_type(types, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f'addcmul: value must be a number, got {value!r}')
    return _fused_type('addcmul')(types)


def torch_addcmul(x, a, b, value):
    """A float32 number `b` beside half tensors is torch's half `x.add(a, alpha=b)`. On CPU
    that is torch's kernel itself, from the number: its vectorized body rounds alpha to the
    tensors' dtype but its scalar loop over the last elements (past the last full vector)
    keeps it in float32, so no one formula fits every element. Elsewhere (a CUDA kernel
    computes `x + alpha * a` in float32 with one fused multiply-add, alpha unrounded) it is
    float32's addcmul, the same fused multiply-add, rounded once to the tensors' dtype."""
    if b.dtype == x.dtype or b.dim() != 0:
        return torch.addcmul(x, a, b, value=value)
    if x.device.type == 'cpu':
        return torch.add(x, a, alpha=b.item() * value)
    return torch.addcmul(x.to(b.dtype), a.to(b.dtype), b, value=value).to(x.dtype)


def torch_addcdiv(x, a, b, value):
    """torch's `x.addcdiv(a, b, value=number)`, the number a 0-d `value`. On CPU: beside
    half tensors torch's kernel from the number; else (and while a region compiles, which
    cannot trace `.item()`) `addcdiv_composed`, the same bits. Elsewhere torch's kernels
    compute `x + value * (a / b)` in float32 with one fused multiply-add: float32's
    addcmul of the quotient, rounded once."""
    if x.device.type != 'cpu':
        dtype = x.dtype
        x, a, b = (t.to(value.dtype) for t in (x, a, b))
        return torch.addcmul(x, torch.div(a, b), value).to(dtype)
    if value.dtype != x.dtype and not torch.compiler.is_compiling():
        return torch.addcdiv(x, a, b, value=value.item())
    return addcdiv_composed(x, a, b, value)


def addcdiv_composed(x, a, b, value):
    """`x + value * a / b` computed in the number's dtype (float32 beside half tensors, as
    torch's half kernels compute) and rounded once: torch's CPU addcdiv to the bit."""
    dtype = x.dtype
    x, a, b = (t.to(value.dtype) for t in (x, a, b))
    return torch.add(x, torch.div(torch.mul(value, a), b)).to(dtype)


def torch_lerp(start, end, weight):
    """A float32 weight beside half tensors stays float32: torch's half lerp computes in
    float32 from the Python number, rounding once."""
    if weight.dtype == start.dtype:
        return torch.lerp(start, end, weight)
    return torch.lerp(start.to(weight.dtype), end.to(weight.dtype), weight).to(start.dtype)


def _np_addcmul(x, a, b, value):
    return np.asarray(x + value * a * b).astype(x.dtype)


def _addcmul_grad(emit, inputs, grads, value):
    x, a, b = inputs
    (g,) = grads
    scaled = emit('mul', g, value) if value != 1 else g
    return [g if wanted(x) else None,
            emit('mul', scaled, b) if wanted(a) else None,
            emit('mul', scaled, a) if wanted(b) else None]


def _np_addcdiv(x, a, b, value):
    return np.asarray(x + value * a / b).astype(x.dtype)


def _addcdiv_grad(emit, inputs, grads):
    x, a, b, value = inputs
    (g,) = grads
    scaled = emit('mul', g, value)
    return [g if wanted(x) else None,
            emit('div', scaled, b) if wanted(a) else None,
            emit('mul', emit('neg', scaled), emit('div', emit('div', a, b), b))
            if wanted(b) else None,
            emit('div', emit('mul', g, a), b) if wanted(value) else None]


def _np_lerp(start, end, weight):
    return np.asarray(start + weight * (end - start)).astype(start.dtype)


def _lerp_grad(emit, inputs, grads):
    start, end, weight = inputs
    (g,) = grads
    return [emit('mul', g, emit('sub', 1, weight)) if wanted(start) else None,
            emit('mul', g, weight) if wanted(end) else None,
            emit('mul', g, emit('sub', end, start)) if wanted(weight) else None]


ROWS = [
    OpDef('addcmul', _addcmul_type, torch_addcmul, _np_addcmul,
          grad=_addcmul_grad, shard=pointwise()),
    OpDef('addcdiv', _fused_type('addcdiv'), torch_addcdiv, _np_addcdiv,
          grad=_addcdiv_grad, shard=pointwise()),
    OpDef('lerp', _fused_type('lerp'), torch_lerp, _np_lerp,
          grad=_lerp_grad, shard=pointwise()),
]
