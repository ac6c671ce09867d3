"""Losses with kernels of their own in torch.

`nll_loss_forward`: torch's nll_loss kernel with reduction 'sum', which returns the
summed loss and the summed weights of the targets it counted (gt.nn's 'mean' divides
one by the other, as the kernel itself does). The kernel sums in its own cascade, so a
`sum` op over the picked losses is an ulp or two off. Inputs: log-probabilities of shape
(C,), (N, C) or (N, C, d1, ...), integer targets of the other dims, and the per-class
weight when the `weight` attr says so.

`binary_cross_entropy`: torch's elementwise kernel (each log clamped at -100), and its
`_backward` row, torch's backward kernel `g * (p - t) / max(p * (1 - p), 1e-12)`. That
gradient is not the clamped forward's: composed from ops, a probability of exactly 1
(a sigmoid of 17 or more, in float32) gave log's infinite slope times clamp's zero, NaN.
The backward row's own rule is torch's double backward.
"""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops import arrays
from gt.ir.ops.gradients import masked, wanted, zeros_of
from gt.ir.ops.opdef import OpDef
from gt.ir.sharding import pointwise
from gt.ir.type_rules import numel, require_floating

TARGET_DTYPES = ('int32', 'int64')
SUM = 2  # torch's Reduction::Sum


def _class_dim(ndim: int) -> int:
    return 0 if ndim == 1 else 1


def _nll_loss_forward_type(types, ignore_index, weight):
    if not isinstance(weight, bool):
        raise ValueError(f'nll_loss_forward: weight must be True or False, got {weight!r}')
    if len(types) != 2 + weight:
        raise ValueError(f'nll_loss_forward: expected {2 + weight} inputs (log-probabilities, '
                         f'targets{" and weights" if weight else ""}), got {len(types)}')
    if not isinstance(ignore_index, int) or isinstance(ignore_index, bool):
        raise ValueError(f'nll_loss_forward: ignore_index must be an int, got {ignore_index!r}')
    log_p, target = types[:2]
    require_floating('nll_loss_forward', log_p)
    if not log_p.shape:
        raise ValueError('nll_loss_forward: the log-probabilities need a class dimension, got '
                         'a 0-d tensor')
    class_dim = _class_dim(len(log_p.shape))
    expected = log_p.shape[:class_dim] + log_p.shape[class_dim + 1:]
    if target.shape != expected:
        raise ValueError(f'nll_loss_forward: input of shape {list(log_p.shape)} needs a target '
                         f'of shape {list(expected)}, got {list(target.shape)}')
    if target.dtype not in TARGET_DTYPES:
        raise InvalidOpError(f'nll_loss_forward: expected int64 (or int32) class indices, got '
                        f'{target.dtype}')
    if weight and types[2] != TensorType((log_p.shape[class_dim],), log_p.dtype):
        raise ValueError(f'nll_loss_forward: the weight {types[2]} needs one entry per class '
                         f'({log_p.shape[class_dim]}) and dtype {log_p.dtype}')
    total = TensorType((), log_p.dtype)
    return (total, total)


def _nll_loss_forward(log_p, target, *weights, ignore_index, weight):
    """Dispatched as torch's nll_loss_nd: 1-D and 2-D inputs to nll_loss, the rest to
    nll_loss2d (other than 4-D, viewed as (N, C, 1, -1))."""
    weights = weights[0] if weight else None
    target = target.long()  # torch's kernels take int64 targets only
    if log_p.ndim <= 2:
        return tuple(torch.ops.aten.nll_loss_forward(log_p, target, weights, SUM, ignore_index))
    if log_p.ndim != 4:
        batch, classes = log_p.shape[:2]
        whole = log_p.numel() > 0
        log_p = log_p.contiguous().view(batch, classes, *((1, -1) if whole else (0, 0)))
        target = target.contiguous().view(batch, *((1, -1) if target.numel() else (0, 0)))
    return tuple(torch.ops.aten.nll_loss2d_forward(log_p, target, weights, SUM, ignore_index))


@arrays.quiet
def _np_nll_loss_forward(log_p, target, *weights, ignore_index, weight):
    class_dim = _class_dim(log_p.ndim)
    kept = target != ignore_index
    index = np.where(kept, target, 0).astype(np.int64)
    picked = np.take_along_axis(arrays.wide(log_p), np.expand_dims(index, class_dim),
                                class_dim).squeeze(class_dim)
    counted = (arrays.wide(weights[0])[index] if weight else np.ones_like(picked)) * kept
    return (np.asarray(-(picked * counted).sum()).astype(log_p.dtype),
            np.asarray(counted.sum()).astype(log_p.dtype))


def _nll_loss_forward_grad(emit, inputs, grads, ignore_index, weight):
    """torch's nll_loss_backward as ops: each counted target's class gets weight * -g (so a
    'mean' gets weight * -(g / total weight), torch's very product). Unlike torch, which
    refuses, the weight gets a gradient too: -g * log-probability plus the total weight's
    cotangent, summed per class."""
    log_p, target = inputs[:2]
    weights = inputs[2] if weight else None
    grad_total, grad_weight = grads
    class_dim = _class_dim(log_p.ndim)
    kept = emit('ne', target, ignore_index)
    index = emit('mul', target, kept)  # an ignored target reads class 0, then counts nothing
    picked_weights = None
    if weights is not None:
        picked_weights = emit('reshape', emit('embedding', emit('reshape', weights, shape=[-1, 1]),
                                              index), shape=list(target.shape))
    grad_log_p = grad_weights = None
    if grad_total is not None and wanted(log_p):
        share = emit('neg', grad_total)
        if picked_weights is not None:
            share = emit('mul', picked_weights, share)
        share = masked(emit, kept, share)  # of the target's shape
        grad_log_p = emit('scatter_add', zeros_of(emit, log_p.shape, log_p),
                          emit('unsqueeze', index, dim=class_dim),
                          emit('unsqueeze', share, dim=class_dim), dim=class_dim)
    if weights is not None and wanted(weights):
        per_target = []
        if grad_total is not None:
            picked = emit('squeeze', emit('gather', log_p, emit('unsqueeze', index, dim=class_dim),
                                          dim=class_dim), dim=class_dim)
            per_target.append(emit('mul', emit('neg', picked), grad_total))
        if grad_weight is not None:
            per_target.append(grad_weight)
        if per_target:
            total = per_target[0] if len(per_target) == 1 else emit('add', *per_target)
            total = masked(emit, kept, total)
            count = numel(target.shape)
            grad_weights = emit('index_add', zeros_of(emit, weights.shape, weights),
                                emit('reshape', index, shape=[count]),
                                emit('reshape', total, shape=[count]), dim=0)
    return [grad_log_p, None] + [grad_weights] * weight


def _nll_loss_forward_shard(kinds, inputs, outputs, **attrs):
    """Rows sharded alike (an axis other than the classes') give partial sums of the loss
    and of the weights."""
    log_p, target = kinds[:2]
    if not isinstance(log_p, int) or log_p == _class_dim(len(inputs[0].shape)):
        return None
    axis = log_p if log_p == 0 else log_p - 1  # the target has no class axis
    return (log_p, axis) + ('R',) * (len(inputs) - 2), ('P', 'P')


EPSILON = 1e-12  # torch's, in its BCE kernels


def _bce_type(types):
    probabilities, target = types
    if probabilities != target:
        raise ValueError(f'binary_cross_entropy: the input {probabilities} and the target '
                         f'{target} must have one shape and dtype')
    require_floating('binary_cross_entropy', probabilities)
    return (probabilities,)


def _bce_backward_type(types):
    gradient = types[0]
    if len(types) != 3 or any(other != gradient for other in types[1:]):
        raise ValueError(f'binary_cross_entropy_backward: the gradient, input and target '
                         f'must have one shape and dtype, got {", ".join(map(str, types))}')
    require_floating('binary_cross_entropy_backward', gradient)
    return (gradient,)


@arrays.quiet
def _np_bce(p, t):
    wide_p, wide_t = arrays.wide(p).astype(np.float64), arrays.wide(t).astype(np.float64)
    loss = -(wide_t * np.maximum(np.log(wide_p), -100)
             + (1 - wide_t) * np.maximum(np.log1p(-wide_p), -100))
    return np.asarray(loss).astype(p.dtype)


@arrays.quiet
def _np_bce_backward(gradient, p, t):
    wide_p = arrays.wide(p).astype(np.float64)
    slope = (wide_p - t) / np.maximum(wide_p * (1 - wide_p), EPSILON)
    return np.asarray(gradient.astype(np.float64) * slope).astype(gradient.dtype)


def _bce_grad(emit, inputs, grads):
    """The input's gradient is the backward kernel; the target's is torch's
    `-logit(p) * g`."""
    (p, t), (g,) = inputs, grads
    by_p = emit('binary_cross_entropy_backward', g, p, t) if wanted(p) else None
    by_t = None
    if wanted(t):
        logit = emit('log', emit('div', p, emit('sub', 1, p)))
        by_t = emit('mul', emit('neg', logit), g)
    return [by_p, by_t]


def _bce_backward_grad(emit, inputs, grads):
    """torch's binary_cross_entropy_double_backward (and its target and gradient parts),
    for `c`, the cotangent of the backward's result `gradient * slope(p, t)`."""
    (gradient, p, t), (c,) = inputs, grads
    by_gradient = emit('binary_cross_entropy_backward', c, p, t) if wanted(gradient) else None
    scaled = emit('mul', gradient, c)
    by_p = by_t = None
    if wanted(p):
        numerator = emit('add', emit('sub', emit('mul', p, p), emit('mul', emit('mul', p, 2), t)),
                         t)
        near_0 = emit('add', p, EPSILON)
        near_1 = emit('add', emit('sub', 1, p), EPSILON)
        denominator = emit('mul', emit('mul', near_0, near_0), emit('mul', near_1, near_1))
        by_p = emit('mul', emit('div', numerator, denominator), scaled)
    if wanted(t):
        spread = emit('clamp', emit('mul', emit('sub', 1, p), p), min=EPSILON, max=None)
        by_t = emit('div', emit('neg', scaled), spread)
    return [by_gradient, by_p, by_t]


ROWS = [
    OpDef('binary_cross_entropy', _bce_type,
          lambda p, t: torch.ops.aten.binary_cross_entropy(p, t, None, 0), _np_bce,
          grad=_bce_grad, shard=pointwise()),
    OpDef('binary_cross_entropy_backward', _bce_backward_type,
          lambda g, p, t: torch.ops.aten.binary_cross_entropy_backward(g, p, t, None, 0),
          _np_bce_backward, grad=_bce_backward_grad, shard=pointwise()),
    OpDef('nll_loss_forward', _nll_loss_forward_type, _nll_loss_forward, _np_nll_loss_forward,
          grad=_nll_loss_forward_grad, shard=_nll_loss_forward_shard),
]
