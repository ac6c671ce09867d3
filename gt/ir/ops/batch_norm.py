"""Batch normalization in training as torch's own kernels, for a cluster of one worker.

`batch_norm_train(x, weight, bias, running_mean, running_var)` is torch's
`native_batch_norm`: the output, the batch's mean and inverse standard deviation, and the
running statistics moved toward the batch's (on copies: GT values are immutable);
`batch_norm_train_counted` takes the module's count of batches for `momentum=None`.
`batch_normed(x, weight, bias, output, mean, invstd)` is `output`; it exists for its
gradient rule, which reads the forward's statistics (the tape keeps an op's inputs, not
its outputs): `batch_norm_backward`, torch's `native_batch_norm_backward`. Its own
gradient, `batch_norm_backward_grad`, is torch's double backward (autograd over the
kernel on the worker). Composed of GT ops (gt/nn/batch_norm.py, what several workers
run, since its reductions shard), a step of a small CNN with two BatchNorm2d took 1.6-1.7x
torch's time; these rows make one pass for the statistics and one to normalize, and two
for the gradient.

Attrs: `momentum` and `eps` (numbers); `wants` (of the gradients of x, weight and bias,
which to make) and `second` (of the gradient, x and weight, which the double backward
differentiates).
"""

import torch

from gt.ir.dtypes import DTYPE_NAMES, TORCH_DTYPES
from gt.ir.graph import TensorType
from gt.ir.ops.gradients import zeros_like
from gt.ir.ops.opdef import OpDef
from gt.ir.ops.torch_calls import numpy_row, scattered
from gt.ir.type_rules import require_floating

aten = torch.ops.aten


def _meta(t: TensorType) -> torch.Tensor:
    return torch.empty(t.shape, dtype=TORCH_DTYPES[t.dtype], device='meta')


def _type(t: torch.Tensor) -> TensorType:
    return TensorType(tuple(t.shape), DTYPE_NAMES[t.dtype])


def _check_channels(name: str, x: TensorType, *per_channel: TensorType) -> None:
    require_floating(name, x)
    if len(x.shape) < 2:
        raise ValueError(f'{name}: expected an input of at least 2 dims (N, C, ...), not {x}')
    for t in per_channel:
        if t.shape != (x.shape[1],):
            raise ValueError(f'{name}: {t} is not one value per channel of {x}')


def _train_type(types, momentum, eps):
    x, weight, bias, running_mean, running_var = types
    _check_channels('batch_norm_train', x, weight, bias, running_mean, running_var)
    try:
        found = aten.native_batch_norm(*map(_meta, types), True, float(momentum), float(eps))
    except (RuntimeError, ZeroDivisionError) as error:
        raise ValueError(f'batch_norm_train: {error}') from None
    return (*map(_type, found), running_mean, running_var)


def _batch_norm_train(x, weight, bias, running_mean, running_var, momentum, eps):
    mean, var = running_mean.clone(), running_var.clone()
    return (*aten.native_batch_norm(x, weight, bias, mean, var, True, momentum, eps), mean, var)


def _counted_type(types, eps):
    *statistics, batches = types
    if batches.shape or batches.dtype != 'int64':
        raise ValueError(f'batch_norm_train_counted: batches must be a 0-d int64 count, '
                         f'not {batches}')
    return _train_type(statistics, 0.1, eps)


def _batch_norm_train_counted(x, weight, bias, running_mean, running_var, batches, eps):
    """A cumulative average (`momentum=None`): the momentum is 1 / the batches counted,
    worked out in double from the count, as torch's module works it out."""
    return _batch_norm_train(x, weight, bias, running_mean, running_var,
                             1.0 / float(batches), eps)


def _normed_type(types, eps):
    x, weight, bias, output, mean, invstd = types
    _check_channels('batch_normed', x, weight, bias, mean, invstd)
    if output != x:
        raise ValueError(f'batch_normed: the output {output} must be like the input {x}')
    return (output,)


def _normed_grad(emit, inputs, grads, eps):
    x, weight, bias, _, mean, invstd = inputs
    wants = [i for i, t in enumerate((x, weight, bias)) if getattr(t, 'requires_grad', True)]
    if not wants:
        return [None] * 6
    return scattered(emit('batch_norm_backward', grads[0], x, weight, mean, invstd, eps=eps,
                          wants=wants), wants, 6)


def _positions(name: str, what: str, positions, count: int) -> list:
    if (not isinstance(positions, (list, tuple)) or not positions
            or any(type(i) is not int or not 0 <= i < count for i in positions)
            or list(positions) != sorted(set(positions))):
        raise ValueError(f'{name}: {what} {positions!r} must name some of {count} in order')
    return list(positions)


def _backward_type(types, eps, wants):
    gradient, x, weight, mean, invstd = types
    _check_channels('batch_norm_backward', x, weight, mean, invstd)
    if gradient != x:
        raise ValueError(f'batch_norm_backward: the gradient {gradient} must be like the '
                         f'input {x}')
    return tuple((x, weight, weight)[i] for i in _positions('batch_norm_backward', 'wants',
                                                             wants, 3))


def _gradients(gradient, x, weight, mean, invstd, eps, wants):
    mask = [i in wants for i in range(3)]
    found = aten.native_batch_norm_backward(gradient, x, weight, None, None, mean, invstd,
                                            True, eps, mask)
    return [found[i] for i in wants]


def _batch_norm_backward(gradient, x, weight, mean, invstd, eps, wants):
    found = _gradients(gradient, x, weight, mean, invstd, eps, wants)
    return found[0] if len(found) == 1 else tuple(found)


def _backward_grad(emit, inputs, grads, eps, wants):
    """The gradient of the gradient: torch's double backward, for the gradient, x and
    weight, whichever want one."""
    second = [i for i in range(3) if getattr(inputs[i], 'requires_grad', True)]
    if not second:
        return [None] * 5
    likes = (inputs[1], inputs[2], inputs[2])  # what the gradients of x, weight, bias are
    cotangents = [g if g is not None else zeros_like(emit, likes[w])
                  for g, w in zip(grads, wants)]
    return scattered(emit('batch_norm_backward_grad', *inputs, *cotangents, eps=eps,
                          wants=wants, second=second), second, 5)


def _backward_grad_type(types, eps, wants, second):
    made = _backward_type(types[:5], eps, wants)
    if tuple(types[5:]) != made:
        raise ValueError('batch_norm_backward_grad: the cotangents do not match the '
                         'gradients')
    return tuple(types[i] for i in _positions('batch_norm_backward_grad', 'second', second, 3))


def _batch_norm_backward_grad(gradient, x, weight, mean, invstd, *cotangents, eps, wants,
                              second):
    with torch.inference_mode(False), torch.enable_grad():
        primals = [t.clone() for t in (gradient, x, weight)]
        for index in second:
            primals[index].requires_grad_()
        found = _gradients(*primals, mean.clone(), invstd.clone(), eps, wants)
        pairs = [(g, c) for g, c in zip(found, cotangents) if g.requires_grad]
        targets = [primals[i] for i in second]
        made = torch.autograd.grad([g for g, _ in pairs], targets,
                                   [c.clone() for _, c in pairs], allow_unused=True
                                   ) if pairs else [None] * len(targets)
    made = tuple(torch.zeros_like(t) if g is None else g.detach()
                 for g, t in zip(made, targets))
    return made[0] if len(made) == 1 else made


ROWS = [
    OpDef('batch_norm_train', _train_type, _batch_norm_train, numpy_row(_batch_norm_train)),
    # Reads its count's value, which a compiled region cannot: it runs between them.
    OpDef('batch_norm_train_counted', _counted_type, _batch_norm_train_counted,
          numpy_row(_batch_norm_train_counted), traced=False),
    OpDef('batch_normed', _normed_type, lambda x, weight, bias, output, mean, invstd, eps:
          output, lambda x, weight, bias, output, mean, invstd, eps: output,
          grad=_normed_grad),
    OpDef('batch_norm_backward', _backward_type, _batch_norm_backward,
          numpy_row(_batch_norm_backward), grad=_backward_grad, grad_of_grad=False),
    OpDef('batch_norm_backward_grad', _backward_grad_type, _batch_norm_backward_grad,
          numpy_row(_batch_norm_backward_grad), traced=False),
]
