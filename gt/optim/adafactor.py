"""Adafactor: torch's single-tensor update (`torch.optim.Adafactor`, as it runs on the
CPU), in its order of operations. A matrix's second moment is kept factored, as a row
and a column mean of the squared gradient; a vector's whole.

torch reads two norms a step back as Python numbers (`.item()`: the step's scale, from
the parameter's norm, and its clipping, from the update's). GT keeps them on the
workers as float64 0-d tensors, where torch's Python arithmetic is double too, so the
step costs no round trip and its bits are torch's.
"""

import math
from typing import Iterable

import torch

from gt.creation import zeros, zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import Numbers, Optimizer, add_scaled, gradients, lerp


class Adafactor(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f'Learning rate should be >= 0 but is: {lr}')
        if not 0.0 >= beta2_decay:
            raise ValueError(f'beta2_decay should be <= 0 but is: {beta2_decay}')
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f'epsilon1 should be >= 0 but is: {eps[0]}')
        if not 0.0 <= eps[1]:
            raise ValueError(f'epsilon2 should be >= 0 but is: {eps[1]}')
        if not 1.0 <= d:
            raise ValueError(f'Clipping threshold d should be >= 1 but is: {d}')
        if not 0.0 <= weight_decay:
            raise ValueError(f'weight_decay should be >= 0 but is: {weight_decay}')
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, (eps1, eps2), d = group['lr'], group['eps'], group['d']
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state['step'] = 0
                if grad.ndim > 1:
                    state['row_var'] = zeros(*grad.shape[:-1], 1, dtype=grad.dtype)
                    state['col_var'] = zeros(*grad.shape[:-2], 1, grad.shape[-1],
                                             dtype=grad.dtype)
                else:
                    state['variance'] = zeros_like(grad)
            state['step'] += 1
            step = float(state['step'])
            one_minus_beta2 = step ** group['beta2_decay']
            rho = min(lr, 1 / step ** 0.5)
            smallest = torch.finfo(param.dtype).eps if eps1 is None else eps1
            scale = (_double(param.norm(2)) / math.sqrt(param.numel())).clamp(min=eps2) * rho
            if group['weight_decay'] != 0:
                param._assign(param * numbers('1 - lr * weight_decay',
                                              1 - lr * group['weight_decay'], param))
            if grad.ndim > 1:
                row_mean = grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1]
                row_var = keep(state, 'row_var', lerp(state['row_var'], row_mean,
                                                      one_minus_beta2, numbers, 'beta2 t'))
                col_mean = grad.norm(dim=-2, keepdim=True).square() / grad.shape[-2]
                col_var = keep(state, 'col_var', lerp(state['col_var'], col_mean,
                                                      one_minus_beta2, numbers, 'beta2 t'))
                estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(
                    min=smallest)
            else:
                estimate = keep(state, 'variance', lerp(state['variance'], grad * grad,
                                                        one_minus_beta2, numbers, 'beta2 t'))
            update = estimate.clamp(min=smallest * smallest).rsqrt() * grad
            clipping = (_double(update.norm(2)) / (math.sqrt(update.numel()) * d)).clamp(
                min=1.0)
            param._assign(add_scaled(param, update, -scale / clipping))


def _double(norm):
    """A norm as torch's `.item()` gives it to Python: its float32 value, in double."""
    return norm.to(torch.float64)
