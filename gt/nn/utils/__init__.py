"""torch.nn.utils for GT: gradient clipping."""

from gt.nn.utils import clip_grad
from gt.nn.utils.clip_grad import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)

__all__ = ['clip_grad', 'clip_grad_norm_', 'clip_grad_value_', 'clip_grads_with_norm_',
           'get_total_norm']
