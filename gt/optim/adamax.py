"""Adamax (Adam with the infinity norm): torch's single-tensor update
(`torch.optim.Adamax(foreach=False)`), in its order of operations."""

from typing import Iterable

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_quotient,
    add_scaled,
    check_betas,
    check_hyperparameters,
    gradients,
    lerp,
    unsupported,
)


class Adamax(Optimizer):
    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_hyperparameters('Adamax', lr=lr, eps=eps, weight_decay=weight_decay)
        check_betas('Adamax', betas)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
        weight_decay = group['weight_decay']
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, exp_avg=zeros_like(param), exp_inf=zeros_like(param))
            state['step'] += 1
            if weight_decay != 0:
                grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            exp_avg = keep(state, 'exp_avg', lerp(state['exp_avg'], grad, 1 - beta1, numbers,
                                                  '1 - beta1'))
            exp_inf = keep(state, 'exp_inf', (state['exp_inf'] * numbers('beta2', beta2, param)
                                              ).maximum(grad.abs() + numbers('eps', eps, param)))
            clr = lr / (1 - beta1 ** state['step'])
            param._assign(add_quotient(param, exp_avg, exp_inf, numbers('-clr', -clr, param)))
