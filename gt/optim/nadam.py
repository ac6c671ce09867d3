"""NAdam (Adam with Nesterov momentum): torch's single-tensor update
(`torch.optim.NAdam(foreach=False)`), in its order of operations. The momentum schedule's
running product `mu_product` is a 0-d float32 tensor in torch that each step multiplies
and reads back as a number; GT keeps it on the client as that tensor, so its roundings,
and the step sizes made from it, are torch's."""

from typing import Iterable

import torch

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_product,
    add_quotient,
    add_scaled,
    check_betas,
    check_hyperparameters,
    gradients,
    lerp,
    scalar_dtype,
    unsupported,
)


class NAdam(Optimizer):
    """NAdam; with `decoupled_weight_decay` (NAdamW) the decay shrinks the parameters,
    `p *= 1 - lr * weight_decay`, instead of adding to the gradient."""

    number_state = ('step', 'mu_product')

    def __init__(self, params: Iterable, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_hyperparameters('NAdam', lr=lr, eps=eps, weight_decay=weight_decay,
                              momentum_decay=momentum_decay)
        check_betas('NAdam', betas)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
        weight_decay, momentum_decay = group['weight_decay'], group['momentum_decay']
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, mu_product=torch.tensor(1.0, dtype=scalar_dtype()),
                             exp_avg=zeros_like(param), exp_avg_sq=zeros_like(param))
            state['step'] += 1
            step = state['step']
            bias_correction2 = 1 - beta2 ** step
            if weight_decay != 0:
                if group['decoupled_weight_decay']:
                    param *= numbers('1 - lr * weight_decay', 1 - lr * weight_decay, param)
                else:
                    grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            state['mu_product'].mul_(mu)
            mu_product = state['mu_product'].item()
            mu_product_next = mu_product * mu_next
            exp_avg = keep(state, 'exp_avg', lerp(state['exp_avg'], grad, 1 - beta1, numbers,
                                                  '1 - beta1'))
            exp_avg_sq = keep(state, 'exp_avg_sq', add_product(
                state['exp_avg_sq'] * numbers('beta2', beta2, param), grad, grad, 1 - beta2))
            denominator = ((exp_avg_sq / numbers('bias correction 2', bias_correction2, param))
                           .sqrt() + numbers('eps', eps, param))
            gradient_size = -lr * (1.0 - mu) / (1.0 - mu_product)
            param._assign(add_quotient(param, grad, denominator,
                                       numbers('gradient step', gradient_size, param)))
            momentum_size = (-lr * mu_next) / (1.0 - mu_product_next)
            param._assign(add_quotient(param, exp_avg, denominator,
                                       numbers('momentum step', momentum_size, param)))
