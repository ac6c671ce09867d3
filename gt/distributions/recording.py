"""How torch's distribution code records GT ops: a torch function mode, active while a
gt.distributions method runs.

torch's distributions compute with torch functions, which reach GT through Tensor's
`__torch_function__` whenever a GT tensor is an argument. The mode sees every torch call
first and sends to GT what would not reach it that way: factories (`torch.rand(shape,
device=loc.device)` has no tensor argument, and torch cannot parse the 'gt' device),
`torch.tensor` of numbers, and torch's private gamma samplers. It also fetches argument
checks together (one round trip per constructor) and keeps `broadcast_all`'s dtype rule.
Every other call goes on as it would.
"""

import functools
import numbers
import threading
import weakref
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from gt import fallback
from gt.creation import as_tensor, tensor
from gt.distributions import worker_draws
from gt.functional import stack
from gt.tensor import Tensor
from gt.tensor_device import GT_DEVICE

# torch's private samplers for the gamma family: GT runs them by name as random calls,
# without a gradient, so the gradient is attached here (gt/distributions/worker_draws.py).
GAMMA_DRAWS: dict[Callable, Callable] = {
    torch._standard_gamma: worker_draws.standard_gamma,
    torch._sample_dirichlet: worker_draws.dirichlet,
}
# torch.tensor and torch.as_tensor are GT's own forms (the fallback refuses both names).
DATA_FACTORIES: dict[Callable, Callable] = {torch.tensor: tensor, torch.as_tensor: as_tensor}


class _DistributionMode(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        kwargs = kwargs or {}
        device = kwargs.get('device')
        on_gt = device is not None and str(device) == GT_DEVICE
        if func in DATA_FACTORIES and (on_gt or device is None
                                       and isinstance(args[0], (numbers.Number, list, tuple))):
            kwargs.pop('device', None)
            return _from_data(func, args, kwargs)
        if on_gt:
            del kwargs['device']
            return fallback.torch_function(func, args, kwargs)
        if func is torch.broadcast_tensors:
            return _broadcast(args)
        gamma_draw = GAMMA_DRAWS.get(func)
        if gamma_draw is not None:
            return gamma_draw(*args, **kwargs)
        if func is torch._is_all_true and isinstance(args[0], Tensor):
            return _all_true(args[0])
        return func(*args, **kwargs)


# Tensors made from Python numbers by torch's `broadcast_all` (`Normal(loc, 1.0)`),
# by id, until broadcast_tensors meets them.
_from_numbers: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _from_data(func: Callable, args: tuple, kwargs: dict) -> Tensor:
    """`torch.tensor(numbers)` in a distribution's code: a GT tensor, where torch's is on
    the parameters' device (`Normal(0.0, 1.0)` has GT parameters and draws on the
    workers); one made from a single number is noted for `_broadcast`."""
    made = DATA_FACTORIES[func](*args, **kwargs)
    if isinstance(args[0], numbers.Number):
        _from_numbers[id(made)] = made
    return made


def _broadcast(values: tuple) -> Any:
    """torch's `broadcast_all` gives a number the dtype of the first tensor among the
    parameters, but asks `isinstance(value, torch.Tensor)` to find it, so beside GT
    tensors it takes the default dtype: `Normal(float64_loc, 0.1)` would get a float32
    scale. Such numbers take that dtype here."""
    def from_number(value: Any) -> bool:
        return _from_numbers.get(id(value)) is value

    first = next((value for value in values
                  if isinstance(value, Tensor) and not from_number(value)), None)
    if first is not None:
        values = tuple(value.to(first.dtype) if from_number(value) else value
                       for value in values)
    return torch.broadcast_tensors(*values)


_state = threading.local()


def _all_true(valid: Tensor) -> bool:
    """torch's argument check `torch._is_all_true(valid)`. Each answer is a round trip
    to the workers; a constructor's checks are put off and fetched together
    (`checks_deferred`), counted as passed meanwhile."""
    deferred = getattr(_state, 'deferred', None)
    if deferred is None:
        return bool(valid.all())
    deferred.append(valid.all())
    return True


class checks_deferred:
    """Within the block, argument checks are collected instead of fetched one by one;
    `passed()` fetches them all at once. A block inside another defers to the outer."""

    def __enter__(self) -> 'checks_deferred':
        self.owner = getattr(_state, 'deferred', None) is None
        if self.owner:
            _state.deferred = []
        return self

    def __exit__(self, *exception: Any) -> None:
        if self.owner:
            self.checks, _state.deferred = _state.deferred, None

    def passed(self) -> bool:
        """Whether every check collected passed: one round trip, none if there were none
        (or if an outer block collects them)."""
        if not self.owner or not self.checks:
            return True
        return bool(stack(self.checks).all())


def recorded(function: Callable) -> Callable:
    """`function`, run under the mode. Calls nest
    (a method calls another, a distribution calls its base's): only the outermost
    enters the mode."""
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        if getattr(_state, 'active', False):
            return function(*args, **kwargs)
        _state.active = True
        try:
            with _DistributionMode():
                return function(*args, **kwargs)
        finally:
            _state.active = False
    return run
