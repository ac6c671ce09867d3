"""The loss modules for sequences and rankings that torch.nn has beside the common ones:
`CTCLoss` (speech and handwriting recognition), `MultiLabelMarginLoss` and
`TripletMarginWithDistanceLoss` (metric learning). The first two run their
torch.nn.functional form by name; the third takes a Python distance function, which no
call by name can carry to a worker, so its functional form is composed of GT ops here,
as torch composes it."""

from typing import Callable

from gt.nn import functional as F
from gt.nn.distance import PairwiseDistance
from gt.nn.loss_modules import _Loss
from gt.tensor import Tensor


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = 'mean') -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0), d the given distance (pairwise_distance by
    default); with `swap`, d(a, n) is min(d(a, n), d(p, n))."""
    if reduction not in ('mean', 'sum', 'none'):
        raise ValueError(f'{reduction} is not a valid value for reduction')
    if margin <= 0:
        raise ValueError(f'margin must be greater than 0, got {margin}')
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError('The anchor, positive, and negative tensors are expected to have '
                           'the same number of dimensions, but got: anchor '
                           f'{anchor.ndim}D, positive {positive.ndim}D, and negative '
                           f'{negative.ndim}D inputs')
    distance = distance_function if distance_function is not None else F.pairwise_distance
    positive_distance = distance(anchor, positive)
    negative_distance = distance(anchor, negative)
    if swap:
        negative_distance = negative_distance.minimum(distance(positive, negative))
    loss = (margin + positive_distance - negative_distance).clamp(min=0)
    if reduction == 'sum':
        return loss.sum()
    return loss.mean() if reduction == 'mean' else loss


class CTCLoss(_Loss):
    """Connectionist temporal classification of (T, N, C) log-probabilities against
    unaligned targets."""

    def __init__(self, blank: int = 0, reduction: str = 'mean',
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
                target_lengths: Tensor) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function: Callable | None = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = 'mean') -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError('TripletMarginWithDistanceLoss: expected margin to be greater '
                             f'than 0, got {margin} instead')
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
