"""`Optimizer`, with torch.optim.Optimizer's surface: parameter groups (dicts of 'params' and
hyperparameters, editable between steps), per-parameter `state` of GT tensors,
`state_dict()`/`load_state_dict()` in torch's layout, `zero_grad` and `add_param_group`.
Updates are recorded under no_grad as rebindings and `step()` ends by sending them, so a
training step reaches the dispatcher as one fragment of the same structure every step.
"""

import functools
from collections import defaultdict
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch

from gt.autograd import RemovableHandle, enable_grad, no_grad
from gt.nn.module import zero_grad_in_place
from gt.optim import failed_steps
from gt.runtime import client as connection
from gt.tensor import Tensor, apply, as_tensor


class _Required:
    def __repr__(self) -> str:
        return '<required parameter>'


required = _Required()  # a default that each parameter group must set, as in torch


# Hooks on every optimizer's step (torch.optim.optimizer's functions of these names).
_global_pre_hooks: list[Callable] = []
_global_post_hooks: list[Callable] = []


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    _global_pre_hooks.append(hook)
    return RemovableHandle(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    _global_post_hooks.append(hook)
    return RemovableHandle(_global_post_hooks, hook)


def _hook_steps_of(cls: type) -> None:
    """Wrap the `step` an optimizer class resolves to, once, so that the hooks run around
    it, as torch patches each optimizer class it makes an instance of."""
    step = cls.step
    if getattr(step, 'hooked', False):
        return

    @functools.wraps(step)
    def hooked_step(self: 'Optimizer', *args: Any, **kwargs: Any) -> Any:
        arguments = (self, *args)
        # getattr: an optimizer pickled whole before hooks existed has no lists of them
        for hook in (*_global_pre_hooks, *getattr(self, '_step_pre_hooks', ())):
            result = hook(self, arguments, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f'{hook} must return None or a tuple of (new_args, '
                                       f'new_kwargs), but got {result}.')
                arguments, kwargs = result
        out = step(*arguments, **kwargs)
        for hook in (*getattr(self, '_step_post_hooks', ()), *_global_post_hooks):
            hook(self, arguments, kwargs)
        return out

    hooked_step.hooked = True
    cls.step = hooked_step


class Optimizer:
    """Base class of optimizers. Subclasses define `_update(group, numbers)`, which records
    one group's updates (under no_grad), or override `step()` as torch optimizers do."""

    # State the update reads as numbers (torch's single-tensor updates `.item()` them):
    # kept on the client, a step count as a Python number and any other as a 0-d torch
    # tensor computed as torch computes it, in its dtype; saved as 0-d tensors.
    number_state: tuple[str, ...] = ('step',)

    def __init__(self, params: Iterable, defaults: dict) -> None:
        self.defaults = defaults
        self._step_pre_hooks: list[Callable] = []
        self._step_post_hooks: list[Callable] = []
        _hook_steps_of(type(self))
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)  # tensors hash by identity
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError('params argument given to the optimizer should be an iterable of '
                            'Tensors or dicts, but got a gt.Tensor')
        groups = list(params)
        if not groups:
            raise ValueError('optimizer got an empty parameter list')
        for group in groups if isinstance(groups[0], dict) else [{'params': groups}]:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (torch's rules: it becomes the dict given, missing hyperparameters
        filled from the defaults; `(name, parameter)` pairs give the group 'param_names')."""
        if not isinstance(param_group, dict):
            raise TypeError(f'param_group must be a dict, got {type(param_group).__name__}')
        params = param_group['params']
        if isinstance(params, set):
            raise TypeError('optimizer parameters need to be organized in ordered collections, '
                            'but the ordering of tensors in sets changes between runs; use a list')
        params = [params] if isinstance(params, Tensor) else list(params)
        named = [isinstance(param, tuple) for param in params]
        if any(named):
            if not all(named):
                raise ValueError('all optimizer params should be with/without names. Some param '
                                 'names are missing')
            param_group['param_names'] = [name for name, _ in params]
            params = [param for _, param in params]
        param_group['params'] = params
        known = {id(p) for existing in self.param_groups for p in existing['params']}
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(f'optimizers can only optimize gt Tensors, got '
                                f'{type(param).__name__}')
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if id(param) in known:
                raise ValueError('a parameter appears twice in the parameter groups (a tied '
                                 'weight collected from two modules?); torch warns and '
                                 'updates it twice a step: pass each parameter once, e.g. '
                                 'list(dict.fromkeys(params))')
            known.add(id(param))
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f'optimization parameter {name}')
            param_group.setdefault(name, default)
        for group in self.param_groups:
            if ('param_names' in group) != ('param_names' in param_group):
                raise ValueError('all optimizer param groups should be with/without names')
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for param in group['params']:
                if param._grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    zero_grad_in_place(param)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                before = {param: failed_steps.client_side(self.state.get(param))
                          for param in group['params'] if param._grad is not None}
                # Numbers per group: two groups' learning rates must not merge into one
                # constant on the steps where a schedule makes them equal.
                self._update(group, Numbers())
                failed_steps.watch(self, before)
        connection.current().flush()
        return loss

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` before each step; it may return new
        `(args, kwargs)` for the step, as torch's."""
        self._step_pre_hooks.append(hook)
        return RemovableHandle(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` after each step, as torch's."""
        self._step_post_hooks.append(hook)
        return RemovableHandle(self._step_post_hooks, hook)

    def _update(self, group: dict, numbers: 'Numbers') -> None:
        """Record the updates of one parameter group (called under no_grad)."""
        raise NotImplementedError(f'{type(self).__name__} defines neither _update nor step')

    # ---- saving and loading --------------------------------------------------------------
    def state_dict(self) -> dict:
        """torch's layout: {'state': {index: {...}}, 'param_groups': [{..., 'params':
        [indices]}]}, parameters numbered in group order. State tensors are the GT tensors
        themselves (`gt.save` fetches them); a step count is a 0-d float32 tensor, as torch
        keeps it, and the other numbers of `number_state` are 0-d tensors of their dtype."""
        indices: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != 'params'}
            for param in group['params']:
                indices.setdefault(id(param), len(indices))
            packed['params'] = [indices[id(param)] for param in group['params']]
            groups.append(packed)
        state = {}
        for param, entries in self.state.items():
            if not isinstance(param, Tensor):  # state of the optimizer's own, kept as it is
                state[param] = entries
                continue
            state[indices[id(param)]] = {
                key: _saved_number(value) if key in self.number_state else value
                for key, value in entries.items()}
        return {'state': state, 'param_groups': groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the state and hyperparameters of `state_dict` (from `state_dict()`, here
        or in torch, or `gt.load`): values may be GT tensors, torch tensors or arrays.
        Parameters are matched by position, as in torch; floating state is cast to its
        parameter's dtype."""
        saved_groups = [dict(group) for group in state_dict['param_groups']]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError('loaded state dict has a different number of parameter groups')
        if any(len(saved['params']) != len(group['params'])
               for saved, group in zip(saved_groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {index: param for saved, group in zip(saved_groups, self.param_groups)
                    for index, param in zip(saved['params'], group['params'])}
        # torch keeps state it cannot place; GT refuses it, as it could never be used.
        unknown = [index for index in state_dict['state']
                   if isinstance(index, int) and index not in by_index]
        if unknown:
            raise ValueError(f'loaded state dict has state for parameter(s) {unknown}, which '
                             f'no parameter group lists (groups list {sorted(by_index)})')
        numbers = _loaded_numbers(state_dict['state'], self.number_state)
        state: defaultdict[Tensor, dict] = defaultdict(dict)
        for index, entries in state_dict['state'].items():
            if index not in by_index:  # not a parameter's: the optimizer's own, kept
                state[index] = entries
                continue
            param = by_index[index]
            state[param] = {key: _number(key, numbers[index, key], param)
                            if (index, key) in numbers
                            else _cast(value, param) for key, value in entries.items()}
        for saved, group in zip(saved_groups, self.param_groups):
            saved['params'] = group['params']
            if 'param_names' in group and 'param_names' not in saved:
                saved['param_names'] = group['param_names']
        self.state, self.param_groups = state, saved_groups

    def __repr__(self) -> str:
        groups = [f'Parameter Group {index}\n' + ''.join(
            f'    {key}: {value}\n' for key, value in sorted(group.items()) if key != 'params')
            for index, group in enumerate(self.param_groups)]
        return f'{type(self).__name__} (\n' + '\n'.join(groups) + ')'


def _saved_number(value: Any) -> Tensor:
    """A number of the state as torch saves it: a 0-d tensor (of `scalar_dtype` for a
    Python number, as torch keeps step counts)."""
    from gt.creation import tensor

    if isinstance(value, Tensor):
        return value
    if isinstance(value, torch.Tensor):
        return tensor(value)
    return tensor(float(value), dtype=scalar_dtype())


def _cast(value: Any, param: Tensor) -> Any:
    """A state value as a GT tensor beside `param`: floating values in its dtype."""
    if isinstance(value, dict):
        return {key: _cast(item, param) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(item, param) for item in value)
    if isinstance(value, (torch.Tensor, np.ndarray)):
        from gt.creation import tensor

        value = tensor(value)
    if isinstance(value, Tensor) and value.dtype.is_floating_point \
            and param.dtype.is_floating_point:
        return value.to(param.dtype)
    return value


def _loaded_numbers(state: dict, keys: tuple[str, ...]) -> dict[tuple[Any, str], Any]:
    """The loaded state's numbers by (index, key); those loaded as GT tensors are fetched
    together, in one round trip."""
    numbers = {(index, key): entries[key] for index, entries in state.items()
               if isinstance(entries, dict) for key in keys if key in entries}
    tensors = {where: value for where, value in numbers.items() if isinstance(value, Tensor)}
    if tensors:
        fetched = connection.current().fetch([value._id for value in tensors.values()])
        numbers.update(zip(tensors, fetched))
    return numbers


def _number(key: str, value: Any, param: Tensor) -> Any:
    """A loaded number as the update keeps it: a step count as a Python number (GT sends
    numbers as literals), any other as a 0-d torch tensor, cast to a floating parameter's
    dtype as torch casts it."""
    if key == 'step':
        value = float(value.item() if isinstance(value, (torch.Tensor, np.ndarray)) else value)
        return int(value) if value.is_integer() else value
    value = torch.as_tensor(value).detach().clone()  # not the caller's tensor
    if value.is_floating_point() and param.dtype.is_floating_point:
        return value.to(param.dtype)
    return value


# ---- what the update rules share -----------------------------------------------------------
class Numbers:
    """The Python numbers of one group's step as 0-d tensors of the parameters' dtype,
    each made once and shared by the group's parameters: a number operand is otherwise one
    more op per parameter. Rounded once from double, as torch rounds its scalar arguments.
    Keyed by role as well as value, so that two roles whose values meet (a decaying
    learning rate passing the weight decay) stay two constants and the step's structure,
    hence its plan, does not change."""

    def __init__(self) -> None:
        self.made: dict[tuple, Tensor] = {}

    def __call__(self, role: str, value: float, like: Tensor) -> Tensor:
        key = (role, value, like.dtype)
        if key not in self.made:
            self.made[key] = as_tensor(value, like)
        return self.made[key]


def lerp(start: Tensor, end: Tensor, weight: float, numbers: Numbers, role: str) -> Tensor:
    """torch's `start.lerp(end, weight)`: its kernel (fused multiply-adds), the weight a
    0-d operand."""
    return apply('lerp', [start, end, numbers(role, weight, start)])


def add_scaled(x: Tensor, y: Tensor, scale: Tensor) -> Tensor:
    """torch's `x.add(y, alpha=scale)`, rounded once as its kernel rounds:
    `addcmul(x, y, scale)` with the scale a 0-d operand (a literal: it may change each step)."""
    return apply('addcmul', [x, y, scale], value=1)


def add_product(x: Tensor, a: Tensor, b: Tensor, value: float) -> Tensor:
    """torch's `x.addcmul(a, b, value=value)`."""
    return apply('addcmul', [x, a, b], value=value)


def add_quotient(x: Tensor, a: Tensor, b: Tensor, value: Tensor) -> Tensor:
    """torch's `x.addcdiv(a, b, value=value)`, one rounding (separate ops round each step,
    which half and bfloat16 show), the value a 0-d operand (a literal)."""
    return apply('addcdiv', [x, a, b, value])


def gradients(group: dict) -> Iterator[tuple[Tensor, Tensor]]:
    """The group's parameters that have a gradient, with it (negated to maximize)."""
    for param in group['params']:
        if param._grad is not None:
            yield param, -param._grad if group['maximize'] else param._grad


def check_hyperparameters(name: str, **values: float) -> None:
    """torch's checks: none of these may be negative."""
    for key, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f'invalid {name} hyperparameter: {key}={value} (must not be '
                             'negative)')


def check_betas(name: str, betas: tuple[float, float]) -> None:
    """torch's check of Adam-like coefficients: each in [0, 1)."""
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f'invalid {name} hyperparameter: betas={tuple(betas)} (beta '
                             f'{index} must be in [0, 1))')


def scalar_dtype() -> torch.dtype:
    """The dtype of torch's 0-d optimizer state (`torch.optim.optimizer._get_scalar_dtype`)."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


def unsupported(**flags: bool) -> None:
    """torch options GT cannot honour: refused when set rather than silently ignored."""
    for name, value in flags.items():
        if value:
            raise ValueError(f'{name}=True is not supported by GT optimizers')
