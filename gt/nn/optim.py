"""Optimizers with torch's single-tensor update formulas, in torch's order of operations,
so GT and torch take the same steps. Updates rebind the parameters under no_grad and
`step()` ends with `gt.sync()`: a training step reaches the dispatcher as one fragment,
of the same structure every step, whose compiled plan the dispatcher reuses.
"""

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable, Iterator

import gt
from gt.autograd import enable_grad, no_grad
from gt.creation import zeros_like
from gt.tensor import Tensor, as_tensor


class Optimizer(ABC):
    """Parameter groups (dicts holding 'params' and their hyperparameters, editable
    between steps as in torch) and per-parameter `state` of gt tensors."""

    def __init__(self, params: Iterable, defaults: dict) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict] = {}  # tensors hash by identity
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError('optimizer got an empty parameter list')
        for group in groups if isinstance(groups[0], dict) else [{'params': groups}]:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        params = group['params']
        params = [params] if isinstance(params, Tensor) else list(params)
        known = {id(p) for existing in self.param_groups for p in existing['params']}
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(f'optimizers can only optimize gt Tensors, got '
                                f'{type(param).__name__}')
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if id(param) in known:
                raise ValueError('a parameter appears twice in the parameter groups')
            known.add(id(param))
        self.param_groups.append({**self.defaults, **group, 'params': params})

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for param in group['params']:
                if param._grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    with no_grad():
                        param._grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            numbers = Numbers()
            for group in self.param_groups:
                self._update(group, numbers)
        gt.sync()
        return loss

    @abstractmethod
    def _update(self, group: dict, numbers: 'Numbers') -> None:
        """Record the updates of one parameter group (called under no_grad)."""

    def __repr__(self) -> str:
        lines = [f'{type(self).__name__} (']
        for index, group in enumerate(self.param_groups):
            lines.append(f'Parameter Group {index}')
            lines += [f'    {key}: {value}' for key, value in sorted(group.items())
                      if key != 'params']
        return '\n'.join(lines) + '\n)'


class SGD(Optimizer):
    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f'invalid SGD hyperparameters: lr={lr}, momentum={momentum}, '
                             f'weight_decay={weight_decay} (none may be negative)')
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError('nesterov momentum requires a momentum and zero dampening')
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, group: dict, numbers: 'Numbers') -> None:
        lr, momentum, weight_decay = group['lr'], group['momentum'], group['weight_decay']
        dampening = group['dampening']
        for param, grad in _gradients(group):
            if weight_decay != 0:
                grad = grad + numbers(weight_decay, param) * param
            if momentum != 0:
                state = self.state.setdefault(param, {})
                buffer = state.get('momentum_buffer')
                if buffer is None:
                    buffer = grad.clone()
                else:
                    # torch's add_(grad, alpha=1 - dampening) skips the product for alpha 1.
                    scaled = grad if dampening == 0 else numbers(1 - dampening, param) * grad
                    buffer = buffer * numbers(momentum, param) + scaled
                state['momentum_buffer'] = buffer
                grad = grad + numbers(momentum, param) * buffer if group['nesterov'] else buffer
            param -= numbers(lr, param) * grad


class Adam(Optimizer):
    """Adam; with `decoupled_weight_decay` (what AdamW sets) the decay shrinks the
    parameters, `p *= 1 - lr * weight_decay`, instead of adding to the gradient."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f'invalid {type(self).__name__} hyperparameters: lr={lr}, '
                             f'betas={betas}, eps={eps}, weight_decay={weight_decay}')
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, group: dict, numbers: 'Numbers') -> None:
        lr, (beta1, beta2), eps = group['lr'], group['betas'], group['eps']
        weight_decay, amsgrad = group['weight_decay'], group['amsgrad']
        for param, grad in _gradients(group):
            state = self.state.setdefault(param, {})
            if not state:
                state.update(step=0, exp_avg=zeros_like(param), exp_avg_sq=zeros_like(param))
                if amsgrad:
                    state['max_exp_avg_sq'] = zeros_like(param)
            state['step'] += 1
            step = state['step']
            if weight_decay != 0:
                if group['decoupled_weight_decay']:
                    param *= numbers(1 - lr * weight_decay, param)
                else:
                    grad = grad + numbers(weight_decay, param) * param
            exp_avg = state['exp_avg'] = _lerp(state['exp_avg'], grad, 1 - beta1, numbers)
            exp_avg_sq = state['exp_avg_sq'] = (state['exp_avg_sq'] * numbers(beta2, param)
                                                + numbers(1 - beta2, param) * grad * grad)
            # Computed in double, as torch computes them. They change every step, but numbers
            # travel as literals beside the structure, so the step's plan is reused.
            negative_step_size = numbers(-lr / (1 - beta1 ** step), param)
            bias_correction2_sqrt = numbers((1 - beta2 ** step) ** 0.5, param)
            if amsgrad:
                exp_avg_sq = state['max_exp_avg_sq'] = state['max_exp_avg_sq'].maximum(
                    exp_avg_sq)
            denominator = exp_avg_sq.sqrt() / bias_correction2_sqrt + numbers(eps, param)
            param += negative_step_size * exp_avg / denominator


class AdamW(Adam):
    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)


class Numbers:
    """The Python numbers of one optimizer step as 0-d tensors of the parameters' dtype,
    each made once and shared by all parameters: a number operand is otherwise one more
    op per parameter. Rounded once from double, as torch rounds its scalar arguments."""

    def __init__(self) -> None:
        self.made: dict[tuple, Tensor] = {}

    def __call__(self, value: float, like: Tensor) -> Tensor:
        key = (value, like.dtype)
        if key not in self.made:
            self.made[key] = as_tensor(value, like)
        return self.made[key]


def _lerp(start: Tensor, end: Tensor, weight: float, numbers: Numbers) -> Tensor:
    """torch.lerp's two formulas, each exact at its own end."""
    if abs(weight) < 0.5:
        return start + numbers(weight, start) * (end - start)
    return end - (end - start) * numbers(1 - weight, start)


def _gradients(group: dict) -> Iterator[tuple]:
    """The group's parameters that have a gradient, with it (negated to maximize)."""
    for param in group['params']:
        if param._grad is not None:
            yield param, -param._grad if group['maximize'] else param._grad
