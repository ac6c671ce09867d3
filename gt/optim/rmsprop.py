"""RMSprop (optionally centered, with momentum): torch's single-tensor update
(`torch.optim.RMSprop(foreach=False)`), in its order of operations."""

from typing import Iterable

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_product,
    add_quotient,
    add_scaled,
    check_hyperparameters,
    gradients,
    lerp,
    unsupported,
)


class RMSprop(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_hyperparameters('RMSprop', lr=lr, eps=eps, momentum=momentum,
                              weight_decay=weight_decay, alpha=alpha)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, alpha, eps = group['lr'], group['alpha'], group['eps']
        weight_decay, momentum, centered = (group['weight_decay'], group['momentum'],
                                            group['centered'])
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, square_avg=zeros_like(param))
                if momentum > 0:
                    state['momentum_buffer'] = zeros_like(param)
                if centered:
                    state['grad_avg'] = zeros_like(param)
            state['step'] += 1
            if weight_decay != 0:
                grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            square_avg = keep(state, 'square_avg', add_product(
                state['square_avg'] * numbers('alpha', alpha, param), grad, grad, 1 - alpha))
            if centered:
                grad_avg = keep(state, 'grad_avg', lerp(state['grad_avg'], grad, 1 - alpha,
                                                        numbers, '1 - alpha'))
                average = add_product(square_avg, grad_avg, grad_avg, -1).sqrt()
            else:
                average = square_avg.sqrt()
            average = average + numbers('eps', eps, param)
            if momentum > 0:
                buffer = keep(state, 'momentum_buffer', add_quotient(
                    state['momentum_buffer'] * numbers('momentum', momentum, param), grad,
                    average, numbers('one', 1.0, param)))
                param._assign(add_scaled(param, buffer, numbers('-lr', -lr, param)))
            else:
                param._assign(add_quotient(param, grad, average, numbers('-lr', -lr, param)))
