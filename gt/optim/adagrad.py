"""Adagrad: torch's single-tensor update (`torch.optim.Adagrad(foreach=False)`), in its
order of operations. As in torch, the state (a step count and the sum of squared
gradients) is made when the optimizer is, for every parameter it starts with."""

from typing import Iterable

from gt.creation import full_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_product,
    add_quotient,
    add_scaled,
    check_hyperparameters,
    gradients,
    unsupported,
)


class Adagrad(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_hyperparameters('Adagrad', lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                              initial_accumulator_value=initial_accumulator_value, eps=eps)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for param in group['params']:
                self._start(param)

    def _start(self, param) -> dict:
        # torch fills from the defaults, not the group, for parameters added later too.
        state = self.state[param]
        state.update(step=0, sum=full_like(param, self.defaults['initial_accumulator_value']))
        return state

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, lr_decay, eps, weight_decay = (group['lr'], group['lr_decay'], group['eps'],
                                           group['weight_decay'])
        for param, grad in gradients(group):
            state = self.state[param] or self._start(param)
            state['step'] += 1
            if weight_decay != 0:
                grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            clr = lr / (1 + (state['step'] - 1) * lr_decay)
            total = keep(state, 'sum', add_product(state['sum'], grad, grad, 1))
            deviation = total.sqrt() + numbers('eps', eps, param)
            param._assign(add_quotient(param, grad, deviation, numbers('-clr', -clr, param)))
