"""RAdam (rectified Adam): torch's single-tensor update (`torch.optim.RAdam(foreach=False)`),
in its order of operations. Until the variance's rectification term is defined
(rho_t > 5, a function of the step count alone) the step is momentum only, so the step's
program changes once, after the first few steps, and then stays."""

from typing import Iterable

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_product,
    add_scaled,
    check_betas,
    check_hyperparameters,
    gradients,
    lerp,
    unsupported,
)


class RAdam(Optimizer):
    """RAdam; with `decoupled_weight_decay` the decay shrinks the parameters,
    `p *= 1 - lr * weight_decay`, instead of adding to the gradient."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_hyperparameters('RAdam', lr=lr, eps=eps, weight_decay=weight_decay)
        check_betas('RAdam', betas)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
        weight_decay = group['weight_decay']
        rho_inf = 2 / (1 - beta2) - 1
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, exp_avg=zeros_like(param), exp_avg_sq=zeros_like(param))
            state['step'] += 1
            step = state['step']
            if weight_decay != 0:
                if group['decoupled_weight_decay']:
                    param *= numbers('1 - lr * weight_decay', 1 - lr * weight_decay, param)
                else:
                    grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            exp_avg = keep(state, 'exp_avg', lerp(state['exp_avg'], grad, 1 - beta1, numbers,
                                                  '1 - beta1'))
            exp_avg_sq = keep(state, 'exp_avg_sq', add_product(
                state['exp_avg_sq'] * numbers('beta2', beta2, param), grad, grad, 1 - beta2))
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            update = (exp_avg / numbers('bias correction 1', bias_correction1, param)
                      * numbers('lr', lr, param))
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rectification = ((rho_t - 4) * (rho_t - 2) * rho_inf
                                 / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                # torch's `number / tensor` is `tensor.reciprocal() * number`.
                adaptive_lr = ((exp_avg_sq.sqrt() + numbers('eps', eps, param)).reciprocal()
                               * numbers('bias correction 2 sqrt', bias_correction2 ** 0.5,
                                         param))
                update = update * adaptive_lr * numbers('rectification', rectification, param)
            param -= update
