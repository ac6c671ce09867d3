"""Matrix products, with torch.matmul's 1-D, 2-D and batched (broadcast) cases,
`folded_mm`, the product torch's matmul backward computes for a matrix operand, and
`addmm`, a product with a bias added inside it (torch's linear).

Unlike elementwise ops, torch.matmul does not promote: both operands must share a dtype.
"""

import functools
import math
from typing import Any

import numpy as np
import torch

from gt.ir import sharding
from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops.gradients import passed_through, wanted
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import broadcast_shapes


def _matmul_type(types):
    a, b = types
    shapes = f'{list(a.shape)} and {list(b.shape)}'
    if not a.shape or not b.shape:
        raise ValueError(f'matmul: both arguments need at least 1 dimension, got shapes {shapes}')
    if a.dtype != b.dtype:
        raise InvalidOpError(f'matmul: expected both arguments to have the same dtype, got '
                        f'{a.dtype} and {b.dtype}')
    if a.dtype == 'bool':
        raise InvalidOpError('matmul: not supported for bool tensors')
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


def _batched_layout_type(types):
    (x,) = types
    if len(x.shape) < 3:
        raise ValueError(f'batched_layout: expected a batched operand of 3 or more dims, got '
                         f'shape {list(x.shape)}')
    return (x,)


def _folded_mm_type(types):
    a, b = types
    if len(a.shape) < 2 or a.shape[:-1] != b.shape[:-1]:
        raise ValueError(f'folded_mm: expected operands of 2 or more dims with the same leading '
                         f'dims, got shapes {list(a.shape)} and {list(b.shape)}')
    if a.dtype != b.dtype:
        raise InvalidOpError(f'folded_mm: expected both arguments to have the same dtype, got '
                        f'{a.dtype} and {b.dtype}')
    if a.dtype == 'bool':
        raise InvalidOpError('folded_mm: not supported for bool tensors')
    return (TensorType((a.shape[-1], b.shape[-1]), a.dtype),)


def _rows(x):
    """The leading dims folded into rows; explicit sizes, as `-1` is ambiguous when the
    last dim is empty (a worker's empty shard)."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _folded_mm(a, b):
    return torch.mm(_rows(a).t(), _rows(b))


def _np_folded_mm(a, b):
    return np.asarray(_rows(a).T @ _rows(b))


def _matmul_grad(emit, inputs, grads, folded: bool = False):
    """1-D operands are made matrices (a row on the left, a column on the right) and back;
    gradients keep the broadcast batch dims, which the engine sums away. A matrix on the
    right of a batch gets torch's gradient: torch.matmul folds the batch into the rows of
    one mm, whose backward is one mm over all of them (`folded_mm`), not a sum of
    per-batch products. Where the forward folded the batch (`folded`), the batch's
    gradient is that mm's too: the output's gradient folded into rows times the matrix
    (a batched product of a transposed gradient rounded otherwise)."""
    a, b = inputs
    (g,) = grads
    original_g = g
    if a.ndim == 1 and b.ndim == 1:
        return [emit('mul', g, b) if wanted(a) else None, emit('mul', g, a) if wanted(b) else None]
    left = a if a.ndim > 1 else emit('unsqueeze', a, dim=0)
    right = b if b.ndim > 1 else emit('unsqueeze', b, dim=-1)
    if a.ndim == 1:
        g = emit('unsqueeze', g, dim=-2)
    if b.ndim == 1:
        g = emit('unsqueeze', g, dim=-1)
    grad_a = grad_b = None
    if a.ndim > 2 and b.ndim > 2 and a.shape[:-2] == b.shape[:-2]:
        # torch's bmm backward multiplies by its forward's folded operands, transposed:
        # the same layouts give the same bits (a copy where torch's fold made one).
        left, right = emit('batched_layout', left), emit('batched_layout', right)
    if a.ndim == 2 and b.ndim == 2:
        return _mm_grad(emit, a, b, g)
    if wanted(a) and folded and a.ndim > 2 and b.ndim == 2:
        grad_a = emit('folded_matmul', g, emit('transpose', b, dim0=0, dim1=1))
    elif wanted(a):
        grad_a = emit('matmul', g, emit('transpose', right, dim0=-1, dim1=-2))
        if a.ndim == 1:
            grad_a = emit('squeeze', grad_a, dim=-2)
    if wanted(b) and a.ndim > 2 and b.ndim <= 2:  # a vector's too: torch folds for mv
        grad_b = emit('folded_mm', a, g)
        if b.ndim == 1:
            grad_b = emit('squeeze', grad_b, dim=-1)
    elif wanted(b):
        grad_b = emit('matmul', emit('transpose', left, dim0=-1, dim1=-2), g)
        if b.ndim == 1:
            grad_b = emit('squeeze', grad_b, dim=-1)
    return _folded_by_torch(emit, a, b, original_g, [grad_a, grad_b])


def _folded_by_torch(emit, a, b, g, grads: list) -> list:
    """`grads`, with torch's where torch.matmul folds a batch into one mm or mv and GT's
    batched product does not: a vector times a batch (folded as the batch's transpose),
    whose vector's gradient is one product over every row; and a 3-d batch times a 3-d
    operand of one batch that requires grad (`(3, 20, 8) @ (1, 8, 12)`), which torch
    multiplies as a matrix, its gradient likewise. Per-batch products summed rounded
    otherwise."""
    grad_a, grad_b = grads
    if a.ndim == 1 and b.ndim > 2 and wanted(a):
        rows = emit('transpose', b, dim0=-1, dim1=-2)
        grad_a = emit('squeeze', emit('folded_mm', rows, emit('unsqueeze', g, dim=-1)),
                      dim=-1)
    if a.ndim == 3 and b.ndim == 3 and b.shape[0] == 1 != a.shape[0] and wanted(b):
        # torch.matmul takes such a pair as the batch times the matrix `b[0]`
        grad_b = emit('reshape', emit('folded_mm', a, g), shape=list(b.shape))
    return [grad_a, grad_b]


def _mm_grad(emit, a, b, g) -> list:
    """torch's mm backward: an operand laid out column-major (`w.t()`, `w.T`, a Linear's
    weight as it multiplies) gets its gradient as a transposed product, `(g^T a)^T` for
    the right one, which its transpose's own gradient turns back into `g^T a`, contiguous
    (the product torch's linear backward computes); others `g b^T` and `a^T g`."""
    def t(x):
        return emit('transpose', x, dim0=0, dim1=1)
    grad_a = grad_b = None
    if wanted(a):
        grad_a = t(emit('matmul', b, t(g))) if _column_major(a) else emit('matmul', g, t(b))
    if wanted(b):
        grad_b = t(emit('matmul', t(g), a)) if _column_major(b) else emit('matmul', t(a), g)
    return [grad_a, grad_b]


def _column_major(x: Any) -> bool:
    """torch's test in its mm backward, on the strides the client knows (a view's)."""
    stride = getattr(x, 'stride', None)
    if stride is None:
        return False
    strides = stride()
    return strides[0] == 1 and strides[1] == x.shape[0]


def _folded_matmul(a, b):
    """torch.matmul of a batch and a matrix (or vector) as torch runs it when the smaller
    operand requires grad (a Linear's weight): the batch folded into the rows of one mm,
    copied where its leading dims do not fold (a transposed input), where the worker,
    whose tensors require nothing, took bmm and rounded otherwise."""
    transpose = b.dim() > a.dim()
    larger = b.mT if transpose else a
    smaller = (a.t() if a.dim() == 2 else a) if transpose else b
    leading = larger.shape[:-1]
    folded = larger.reshape(math.prod(leading), larger.shape[-1])
    if smaller.dim() == 1:
        return folded.mv(smaller).view(leading)
    product = folded.mm(smaller).view(*leading, smaller.shape[1])
    return product.mT.contiguous() if transpose else product


def _batched_layout(x):
    """`x` laid out as torch.matmul lays out a batched operand for bmm: its batch dims
    folded by `reshape`, a view where they fold and a contiguous copy where they do not
    (a transposed view of a split, as attention's `q`), viewed back to `x`'s shape."""
    rows = math.prod(x.shape[:-2])
    return x.reshape(rows, *x.shape[-2:]).view(x.shape)


def _addmm_type(types):
    bias, a, b = types
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError(f'addmm: expected 2-D matrices, got shapes {list(a.shape)} and '
                         f'{list(b.shape)}')
    (product,) = _matmul_type([a, b])
    if bias.dtype != a.dtype:
        raise InvalidOpError(f'addmm: expected the bias in {a.dtype}, got {bias.dtype}')
    if broadcast_shapes('addmm', bias.shape, product.shape) != product.shape:
        raise ValueError(f'addmm: a bias of shape {list(bias.shape)} does not broadcast to '
                         f'the product\'s {list(product.shape)}')
    return (product,)


def _addmm_grad(emit, inputs, grads):
    """The bias's gradient is the output's (summed over the rows it was broadcast to, as
    torch's engine sums it); the matrices' torch's mm backward."""
    bias, a, b = inputs
    (g,) = grads
    return [g if wanted(bias) else None, *_mm_grad(emit, a, b, g)]


def _folded_mm_grad(emit, inputs, grads):
    (a, b), (g,) = inputs, grads
    return [emit('matmul', b, emit('transpose', g, dim0=0, dim1=1)) if wanted(a) else None,
            emit('matmul', a, g) if wanted(b) else None]


ROWS = [
    OpDef('matmul', _matmul_type, torch.matmul, lambda a, b: np.asarray(np.matmul(a, b)),
          grad=_matmul_grad, shard=sharding.matmul),
    OpDef('folded_matmul', _matmul_type, _folded_matmul,
          lambda a, b: np.asarray(np.matmul(a, b)),
          grad=functools.partial(_matmul_grad, folded=True), shard=sharding.matmul),
    OpDef('folded_mm', _folded_mm_type, _folded_mm, _np_folded_mm, grad=_folded_mm_grad,
          shard=sharding.folded_mm),
    # `bias + a @ b` as torch's linear computes it (one rounding: the BLAS adds the bias
    # inside the product), for a cluster of one worker (gt.nn.functional.linear).
    OpDef('addmm', _addmm_type, torch.addmm, lambda bias, a, b: np.asarray(bias + a @ b),
          grad=_addmm_grad),
    OpDef('batched_layout', _batched_layout_type, _batched_layout, lambda x: x,
          grad=passed_through, shard=sharding.pointwise('all')),
]
