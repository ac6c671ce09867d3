"""Adam and AdamW: torch's single-tensor update (`foreach=False`), in its order of
operations, one `adam_step` node a parameter. The bias corrections are computed in
double from the step count, as torch computes them, and travel as literals, so the
step's plan is reused as they change."""

from typing import Iterable

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    check_betas,
    check_hyperparameters,
    gradients,
    unsupported,
)
from gt.tensor import apply


class Adam(Optimizer):
    """Adam; with `decoupled_weight_decay` (what AdamW sets) the decay shrinks the
    parameters, `p *= 1 - lr * weight_decay`, instead of adding to the gradient."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
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
        """One `adam_step` node a parameter (gt/ir/ops/optimizer_steps.py): torch's
        kernels in torch's order, as ten nodes would run them."""
        lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
        weight_decay, amsgrad = group['weight_decay'], group['amsgrad']
        decay = None if weight_decay == 0 else (
            'decoupled' if group['decoupled_weight_decay'] else 'l2')
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, exp_avg=zeros_like(param), exp_avg_sq=zeros_like(param))
                if amsgrad:
                    state['max_exp_avg_sq'] = zeros_like(param)
            state['step'] += 1
            step = state['step']
            operands = [param, grad, state['exp_avg'], state['exp_avg_sq']]
            if amsgrad:
                operands.append(state['max_exp_avg_sq'])
            if decay == 'decoupled':
                operands.append(numbers('1 - lr * weight_decay', 1 - lr * weight_decay, param))
            elif decay == 'l2':
                operands.append(numbers('weight_decay', weight_decay, param))
            operands += [
                numbers('1 - beta1', 1 - beta1, state['exp_avg']),
                numbers('beta2', beta2, param),
                numbers('step size', -lr / (1 - beta1 ** step), param),
                numbers('bias correction 2', (1 - beta2 ** step) ** 0.5, param),
                numbers('eps', eps, param)]
            updated = apply('adam_step', operands, amsgrad=amsgrad, decay=decay,
                            one_minus_beta2=1 - beta2)
            param._assign(updated[0])
            keep(state, 'exp_avg', updated[1])
            keep(state, 'exp_avg_sq', updated[2])
            if amsgrad:
                keep(state, 'max_exp_avg_sq', updated[3])


class AdamW(Adam):
    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
