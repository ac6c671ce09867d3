"""Loss functions with torch's formulas, reductions and defaults (`gt.nn.functional`
re-exports them). An input and a target of different shapes broadcast with torch's
warning where torch's do (`mse_loss`, `l1_loss`) and raise a ValueError naming both
shapes where torch's raise.
"""

import warnings
from typing import Any

import torch

from gt.autograd_function import Function
from gt.functional import where
from gt.grad_fn_names import name_loss
from gt.ir.invalid_op import InvalidOpError
from gt.tensor import Tensor, emit

REDUCTIONS = ('mean', 'sum', 'none')


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == 'mean':
        return loss.mean()
    if reduction == 'sum':
        return loss.sum()
    return loss


def _legacy(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """torch's deprecated `size_average`/`reduce` pair, mapped (and warned about) as
    torch does; torch's own functions hand it on as None when a GT tensor reaches them."""
    if size_average is None and reduce is None:
        return reduction
    return torch.nn._reduction.legacy_get_string(size_average, reduce)


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    """mse_loss's and l1_loss's optional elementwise weight: 'mean' divides by its sum."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError('Weights and input must have the same size.')
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == 'mean' else _reduce(loss, reduction)


def _check(name: str, input: Tensor, target: Tensor, reduction: str,
           broadcasts: bool = False) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if tuple(input.shape) != tuple(target.shape) and broadcasts:
        warnings.warn(f'Using a target size ({target.shape}) that is different to the input '
                      f'size ({input.shape}). This will likely lead to incorrect results due '
                      'to broadcasting. Please ensure they have the same size.', stacklevel=3)
    elif tuple(input.shape) != tuple(target.shape):
        raise ValueError(f'{name}: input of shape {list(input.shape)} and target of shape '
                         f'{list(target.shape)} differ; they must have the same shape')


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = 'mean',
             weight: Tensor | None = None) -> Tensor:
    reduction = _legacy(size_average, reduce, reduction)
    _check('mse_loss', input, target, reduction, broadcasts=True)
    difference = input - target
    loss = _weighted(difference * difference, weight, reduction)
    return loss if weight is not None else name_loss(loss, 'MseLoss')


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = 'mean',
            weight: Tensor | None = None) -> Tensor:
    reduction = _legacy(size_average, reduce, reduction)
    _check('l1_loss', input, target, reduction, broadcasts=True)
    return _weighted((input - target).abs(), weight, reduction)


def _scalar_type(dtype: torch.dtype) -> str:
    """How torch's messages name a dtype: 'Double' for float64."""
    return torch.empty(0, dtype=dtype).type().removeprefix('torch.').removesuffix('Tensor')


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = 'mean') -> Tensor:
    """On probabilities, by torch's kernel (gt/ir/ops/losses.py): each log clamped at
    -100, so that 0 and 1 give a finite loss, and a finite gradient there too."""
    reduction = _legacy(size_average, reduce, reduction)
    _check('binary_cross_entropy', input, target, reduction)
    if target.dtype != input.dtype:
        raise RuntimeError(f'Found dtype {_scalar_type(target.dtype)} but expected '
                           f'{_scalar_type(input.dtype)}')
    emit('check_between', input, low=0.0, high=1.0,
         message='all elements of input should be between 0 and 1')
    if reduction == 'mean' and weight is None:
        return name_loss(_MeanBinaryCrossEntropy.apply(input, target), 'BinaryCrossEntropy')
    loss = emit('binary_cross_entropy', input, target)
    return name_loss(_reduce(loss if weight is None else loss * weight, reduction),
                     'BinaryCrossEntropy')


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = 'mean',
                                     pos_weight: Tensor | None = None) -> Tensor:
    """On logits, in torch's stable form `(1 - target) * x - log_sigmoid(x)`, which neither
    overflows nor loses the tiny losses of confident, correct predictions."""
    reduction = _legacy(size_average, reduce, reduction)
    _check('binary_cross_entropy_with_logits', input, target, reduction)
    if not target.dtype.is_floating_point:
        raise InvalidOpError(f"result type {_scalar_type(input.dtype)} can't be cast to the "
                             f'desired output type {_scalar_type(target.dtype)}')
    if reduction == 'mean' and weight is None and pos_weight is None:
        return name_loss(_MeanBinaryCrossEntropyWithLogits.apply(input, target),
                         'BinaryCrossEntropyWithLogits')
    loss = _logits_loss(input, target, pos_weight)
    return name_loss(_reduce(loss if weight is None else loss * weight, reduction),
                     'BinaryCrossEntropyWithLogits')


def _logits_loss(input: Tensor, target: Tensor, pos_weight: Tensor | None) -> Tensor:
    # Recorded first, so that backward (latest op first) adds its tiny gradient last, after
    # the gradients of the other terms have cancelled exactly, as in torch's sigmoid - t.
    softplus = _log1p((-input.abs()).exp())
    log_sigmoid = emit('minimum', input, 0.0) - softplus
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    return (1 - target) * input - log_sigmoid


class _MeanBinaryCrossEntropy(Function):
    """The mean of binary cross-entropies with torch's gradients, in torch's order: each
    element's from the incoming gradient, then divided by the count (the mean's gradient
    divided first, and a GAN's step rounded otherwise). They differentiate again."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, target: Tensor) -> Tensor:
        ctx.save_for_backward(input, target)
        return emit('binary_cross_entropy', input, target).mean()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        input, target = ctx.saved_tensors
        count = input.numel()
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_input = emit('binary_cross_entropy_backward', grad.expand(input.shape), input,
                              target) / count
        if ctx.needs_input_grad[1]:
            grad_target = -(input / (1 - input)).log() * grad / count
        return grad_input, grad_target


class _MeanBinaryCrossEntropyWithLogits(Function):
    """`_MeanBinaryCrossEntropy` on logits: torch's `(sigmoid(x) - t) * g / n`."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, target: Tensor) -> Tensor:
        ctx.save_for_backward(input, target)
        return _logits_loss(input, target, None).mean()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        input, target = ctx.saved_tensors
        count = input.numel()
        grad_input = (input.sigmoid() - target) * grad / count if ctx.needs_input_grad[0] \
            else None
        grad_target = -input * grad / count if ctx.needs_input_grad[1] else None
        return grad_input, grad_target


def _log1p(z: Tensor) -> Tensor:
    """log(1 + z), accurate for tiny z (there is no log1p op): Goldberg's correction
    log(u) * z / (u - 1) with u = 1 + z, and z itself where u rounds to 1."""
    u = z + 1
    rounded = u - 1
    exact = rounded == 0
    safe = where(exact, 1.0, rounded)  # no 0/0 in the branch that is not taken
    return where(exact, z, u.log() * (z / safe))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = 'mean') -> Tensor:
    """Negative log-likelihood of integer class targets, from log-probabilities of shape
    (C,), (N, C) or (N, C, d1, ...); 'mean' divides by the summed weights of the
    targets that are not `ignore_index`, as torch does."""
    return _nll(input, target, weight, ignore_index, _legacy(size_average, reduce, reduction),
                'nll_loss')


def _nll(log_p: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
         reduction: str, name: str) -> Tensor:
    """The sums are torch's kernel (the `nll_loss_forward` row), which sums in its own
    order; 'none' needs no sum, and picks each target's loss with a gather."""
    _check_classes(log_p, target, weight, reduction, name)
    target = _as_class_indices(target)
    if reduction == 'none':
        return name_loss(_picked(log_p, target, weight, ignore_index), 'NllLoss')
    inputs = [log_p, target] + ([] if weight is None else [weight])
    total, total_weight = emit('nll_loss_forward', *inputs, ignore_index=ignore_index,
                               weight=weight is not None)
    return name_loss(total / total_weight if reduction == 'mean' else total, 'NllLoss')


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = 'mean',
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim (1, or 0 for an unbatched input) then nll_loss; a
    floating target of the input's shape holds class probabilities instead."""
    reduction = _legacy(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise InvalidOpError(f'label_smoothing must be between 0.0 and 1.0. Got: '
                             f'{label_smoothing}')
    class_dim = 0 if input.ndim == 1 else 1
    log_p = input.log_softmax(class_dim)
    n_classes = input.shape[class_dim]
    if target.dtype.is_floating_point and tuple(target.shape) != tuple(input.shape):
        # Not class probabilities: class indices held as floats, which torch refuses so.
        raise InvalidOpError('cross_entropy: expected target dtype to be Long or Byte, but got '
                             f'{_scalar_type(target.dtype)}')
    if target.dtype.is_floating_point:
        return _soft_cross_entropy(log_p, target, weight, reduction, label_smoothing)
    target = _as_class_indices(target)
    loss = _nll(log_p, target, weight, ignore_index, reduction, 'cross_entropy')
    if not label_smoothing:
        return loss
    # torch's formula: the smoothing term's mean divides by the summed target weights.
    every = log_p if weight is None else log_p * _class_shaped(weight, log_p, class_dim)
    # Ignored targets' terms are put to 0, not multiplied by 0: when every target is
    # ignored, the mean divides by 0, and 0 * inf would make the gradient NaN (torch's 0).
    smooth = where(target != ignore_index, -every.sum(class_dim), 0.0)
    if reduction == 'mean':
        smooth = smooth.sum() / _target_weights(target, weight, ignore_index).sum()
    elif reduction == 'sum':
        smooth = smooth.sum()
    return (1 - label_smoothing) * loss + smooth * (label_smoothing / n_classes)


def _soft_cross_entropy(log_p: Tensor, target: Tensor, weight: Tensor | None,
                        reduction: str, label_smoothing: float) -> Tensor:
    _check('cross_entropy', log_p, target, reduction)
    class_dim = 0 if log_p.ndim == 1 else 1
    n_classes = log_p.shape[class_dim]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    product = log_p * target
    if weight is not None:
        product = product * _class_shaped(weight, log_p, class_dim)
    if reduction == 'none':
        return -product.sum(class_dim)
    total = -product.sum()  # one flat sum, as torch's: per row first rounded otherwise
    return total if reduction == 'sum' else total / (log_p.numel() // n_classes)


def _class_shaped(weight: Tensor, like: Tensor, class_dim: int) -> Tensor:
    """Per-class `weight` shaped to broadcast along `like`'s class dim."""
    return weight.reshape(-1, *[1] * (like.ndim - class_dim - 1))


def _check_classes(log_p: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                   name: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    class_dim = 0 if log_p.ndim == 1 else 1
    expected = tuple(log_p.shape[:class_dim]) + tuple(log_p.shape[class_dim + 1:])
    if tuple(target.shape) != expected:
        raise InvalidOpError(f'{name}: input of shape {list(log_p.shape)} needs a target of shape '
                         f'{list(expected)} (one class index per row), got '
                         f'{list(target.shape)}')
    if target.dtype not in (torch.int64, torch.int32, torch.uint8):
        raise InvalidOpError(f'{name}: expected target dtype to be Long or Byte, but got '
                             f'{_scalar_type(target.dtype)}')
    if weight is not None and tuple(weight.shape) != (log_p.shape[class_dim],):
        raise InvalidOpError(f'{name}: weight of shape {list(weight.shape)} needs one entry per '
                         f'class ({log_p.shape[class_dim]})')


def _as_class_indices(target: Tensor) -> Tensor:
    """Byte class labels (MNIST's raw labels), which torch takes, as the int64 that
    gathers index with."""
    return target.long() if target.dtype == torch.uint8 else target


def _picked(log_p: Tensor, target: Tensor, weight: Tensor | None,
            ignore_index: int) -> Tensor:
    """Each target's negated, weighted log-probability (0 where ignored)."""
    class_dim = 0 if log_p.ndim == 1 else 1
    index = target * (target != ignore_index)  # an ignored target gathers class 0, weight 0
    picked = emit('gather', log_p, index.unsqueeze(class_dim), dim=class_dim).squeeze(class_dim)
    return -picked * _target_weights(target, weight, ignore_index)


def _target_weights(target: Tensor, weight: Tensor | None, ignore_index: int) -> Tensor:
    """Each target's class weight, 0 where ignored; without class weights they stay bool
    (products and sums promote them)."""
    kept = target != ignore_index
    return kept if weight is None else kept * embedding_rows(weight, target * kept)


def embedding_rows(weight: Tensor, index: Tensor) -> Tensor:
    """`weight[index]` for a 1-D weight and an integer tensor of any shape."""
    return emit('embedding', weight.reshape(-1, 1), index).squeeze(-1)
