"""Adadelta: torch's single-tensor update (`torch.optim.Adadelta(foreach=False)`), in its
order of operations."""

from typing import Iterable

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_product,
    add_scaled,
    check_hyperparameters,
    gradients,
    unsupported,
)


class Adadelta(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_hyperparameters('Adadelta', lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f'invalid Adadelta hyperparameter: rho={rho} (must be in [0, 1])')
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, rho, eps, weight_decay = (group['lr'], group['rho'], group['eps'],
                                      group['weight_decay'])
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, square_avg=zeros_like(param),
                             acc_delta=zeros_like(param))
            state['step'] += 1
            if weight_decay != 0:
                grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            square_avg = keep(state, 'square_avg', add_product(
                state['square_avg'] * numbers('rho', rho, param), grad, grad, 1 - rho))
            std = (square_avg + numbers('eps', eps, param)).sqrt()
            delta = (state['acc_delta'] + numbers('eps', eps, param)).sqrt() / std * grad
            keep(state, 'acc_delta', add_product(
                state['acc_delta'] * numbers('rho', rho, param), delta, delta, 1 - rho))
            param._assign(add_scaled(param, delta, numbers('-lr', -lr, param)))
