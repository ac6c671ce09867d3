"""SGD with momentum, dampening, Nesterov momentum and weight decay: torch's single-tensor
update (`torch.optim.SGD(foreach=False)`), in its order of operations."""

from typing import Iterable

from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_scaled,
    check_hyperparameters,
    gradients,
    unsupported,
)


class SGD(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_hyperparameters('SGD', lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError('nesterov momentum requires a momentum and zero dampening')
        unsupported(differentiable=differentiable)
        # foreach and fused are accepted, and kept in the groups as torch keeps them, so
        # that torch scripts and state dicts carry over; GT decides how updates run.
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, momentum, weight_decay = group['lr'], group['momentum'], group['weight_decay']
        dampening = group['dampening']
        for param, grad in gradients(group):
            if weight_decay != 0:
                grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            if momentum != 0:
                state = self.state[param]
                buffer = state.get('momentum_buffer')
                if buffer is None:
                    buffer = grad.clone()
                else:
                    buffer = buffer * numbers('momentum', momentum, param)
                    # add_(grad, alpha=1 - dampening): alpha 1 adds exactly, a plain add.
                    buffer = (buffer + grad if dampening == 0 else add_scaled(
                        buffer, grad, numbers('1 - dampening', 1 - dampening, param)))
                buffer = keep(state, 'momentum_buffer', buffer)
                if group['nesterov']:
                    grad = add_scaled(grad, buffer, numbers('momentum', momentum, param))
                else:
                    grad = buffer
            param._assign(add_scaled(param, grad, numbers('-lr', -lr, param)))
