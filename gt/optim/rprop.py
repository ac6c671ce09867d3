"""Rprop: torch's single-tensor update (`torch.optim.Rprop(foreach=False)`), in its order
of operations. Only the sign of each gradient counts: a parameter's own step size grows
by `etas[1]` while its gradient keeps its sign, shrinks by `etas[0]` when the sign flips
(and that step is skipped), within `step_sizes`. State is made at a parameter's first
step, as in torch: a step count, the previous gradient, and the step sizes."""

from typing import Iterable

from gt.creation import full_like, zeros_like
from gt.functional import where
from gt.optim.failed_steps import keep
from gt.optim.optimizer import Numbers, Optimizer, add_product, gradients, unsupported


class Rprop(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f'invalid Rprop hyperparameter: lr={lr} (must not be negative)')
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f'invalid Rprop hyperparameter: etas={tuple(etas)} (need '
                             '0 < etas[0] < 1 < etas[1])')
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        (shrink, grow), (smallest, largest) = group['etas'], group['step_sizes']
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, prev=zeros_like(param),
                             step_size=full_like(grad, group['lr']))
            state['step'] += 1
            # torch overwrites the signs in turn: positive, then negative, then zero (a NaN
            # stays NaN), so the factors are exactly its numbers in the parameter's dtype.
            factor = (grad * state['prev']).sign()
            flipped = factor < 0
            factor = where(factor > 0, numbers('etaplus', grow, param), factor)
            factor = where(flipped, numbers('etaminus', shrink, param), factor)
            factor = where(factor == 0, numbers('one', 1.0, param), factor)
            step_size = keep(state, 'step_size', (state['step_size'] * factor).clamp(
                smallest, largest))
            grad = where(flipped, numbers('zero', 0.0, param), grad)  # no step after a flip
            param._assign(add_product(param, grad.sign(), step_size, -1))
            keep(state, 'prev', grad)
