"""Adam and AdamW: torch's single-tensor update (`foreach=False`), in its order of
operations. The bias corrections are computed in double from the step count, as torch
computes them, and travel as literals, so the step's plan is reused as they change."""

from typing import Iterable

from gt.creation import zeros_like
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


class Adam(Optimizer):
    """Adam; with `decoupled_weight_decay` (what AdamW sets) the decay shrinks the
    parameters, `p *= 1 - lr * weight_decay`, instead of adding to the gradient."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        name = type(self).__name__
        check_hyperparameters(name, lr=lr, eps=eps, weight_decay=weight_decay)
        check_betas(name, betas)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
        weight_decay, amsgrad = group['weight_decay'], group['amsgrad']
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, exp_avg=zeros_like(param), exp_avg_sq=zeros_like(param))
                if amsgrad:
                    state['max_exp_avg_sq'] = zeros_like(param)
            state['step'] += 1
            step = state['step']
            if weight_decay != 0:
                if group['decoupled_weight_decay']:
                    param *= numbers('1 - lr * weight_decay', 1 - lr * weight_decay, param)
                else:
                    grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            exp_avg = state['exp_avg'] = lerp(state['exp_avg'], grad, 1 - beta1, numbers,
                                              '1 - beta1')
            exp_avg_sq = state['exp_avg_sq'] = add_product(
                state['exp_avg_sq'] * numbers('beta2', beta2, param), grad, grad, 1 - beta2)
            negative_step_size = numbers('step size', -lr / (1 - beta1 ** step), param)
            bias_correction2_sqrt = numbers('bias correction 2', (1 - beta2 ** step) ** 0.5,
                                            param)
            if amsgrad:
                exp_avg_sq = state['max_exp_avg_sq'] = state['max_exp_avg_sq'].maximum(
                    exp_avg_sq)
            denominator = exp_avg_sq.sqrt() / bias_correction2_sqrt + numbers('eps', eps, param)
            param += negative_step_size * exp_avg / denominator


class AdamW(Adam):
    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
