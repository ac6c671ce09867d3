"""`gt.amp.GradScaler`, torch's loss scaling for mixed precision.

For `'cuda'` a GT client has no CUDA (gt/cuda.py), so the scaler disables itself with
torch's warning, as torch's does on a machine without CUDA. For `'cpu'` it works as
torch's CPU scaler: the loss is multiplied by the scale, `unscale_` divides the
gradients and notes any inf or NaN, `step` skips the optimizer's step when there was
one, and `update` backs the scale off or grows it. Scale, growth tracker and checks are
GT tensors updated on the workers; `step` reads the check, one round trip, as torch's
`.item()` there waits for the device.
"""

import enum
import warnings
from collections import defaultdict
from typing import Any

import torch

from gt.creation import full
from gt.functional import where
from gt.grad_mode import no_grad
from gt.tensor import Tensor


class _Stage(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict:
    return {'stage': _Stage.READY, 'found_inf': None}


class GradScaler:
    def __init__(self, device: str = 'cuda', init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device == 'cuda':
            warnings.warn('gt.amp.GradScaler is enabled, but GT has no CUDA here (see '
                          'gt.cuda): disabling, as torch does without CUDA', stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError('The growth factor must be > 1.0.')
            if backoff_factor >= 1.0:
                raise AssertionError('The backoff factor must be < 1.0.')
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval
        self._init_growth_tracker = 0
        self._scale: Tensor | None = None
        self._growth_tracker: Tensor | None = None
        self._per_optimizer_states: defaultdict = defaultdict(_fresh_optimizer_state)

    def _made(self) -> tuple[Tensor, Tensor]:
        if self._scale is None:
            self._scale = full((), self._init_scale, dtype=torch.float32)
            self._growth_tracker = full((), self._init_growth_tracker, dtype=torch.int32)
        return self._scale, self._growth_tracker

    def scale(self, outputs: Any) -> Any:
        """`outputs` (a tensor, or tensors in lists and tuples) times the scale."""
        if not self._enabled:
            return outputs
        scale, _ = self._made()

        def scaled(value: Any) -> Any:
            if isinstance(value, Tensor):
                return value * scale
            if isinstance(value, (list, tuple)):
                return type(value)(scaled(item) for item in value)
            raise ValueError('outputs must be a Tensor or an iterable of Tensors')
        return scaled(outputs)

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale, noting any inf or NaN in them."""
        if not self._enabled:
            return
        state = self._per_optimizer_states[id(optimizer)]
        if state['stage'] is _Stage.UNSCALED:
            raise RuntimeError('unscale_() has already been called on this optimizer since '
                               'the last update().')
        if state['stage'] is _Stage.STEPPED:
            raise RuntimeError('unscale_() is being called after step().')
        scale, _ = self._made()
        with no_grad():
            inverse = scale.double().reciprocal().float()
            found_inf = full((), 0.0, dtype=torch.float32)
            for group in optimizer.param_groups:
                for parameter in group['params']:
                    grad = parameter.grad
                    if grad is None:
                        continue
                    if grad.dtype == torch.float16:
                        raise ValueError('Attempting to unscale FP16 gradients.')
                    found_inf = found_inf.maximum((~grad.isfinite()).any().float())
                    grad.mul_(inverse)
        state['found_inf'] = found_inf
        state['stage'] = _Stage.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """The optimizer's step, unless the gradients had an inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if 'closure' in kwargs:
            raise RuntimeError('Closure use is not currently supported if GradScaler is '
                               'enabled.')
        state = self._per_optimizer_states[id(optimizer)]
        if state['stage'] is _Stage.STEPPED:
            raise RuntimeError('step() has already been called since the last update().')
        if state['stage'] is _Stage.READY:
            self.unscale_(optimizer)
        result = None
        try:
            skip = state['found_inf'].item()
        except Exception:
            # The step's work failed (its loss did): as in torch, which raised before
            # the scaler saw the step, this optimizer's next step starts afresh.
            del self._per_optimizer_states[id(optimizer)]
            raise
        if not skip:
            result = optimizer.step(*args, **kwargs)
        state['stage'] = _Stage.STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off after an inf or NaN; grow it after `growth_interval`
        clean steps in a row; or set it to `new_scale`."""
        if not self._enabled:
            return
        scale, tracker = self._made()
        with no_grad():
            if new_scale is not None:
                if isinstance(new_scale, float):
                    scale.fill_(new_scale)
                else:
                    if new_scale.numel() != 1 or new_scale.requires_grad:
                        raise AssertionError('new_scale should be a float or a 1-element '
                                             'tensor with requires_grad=False.')
                    scale.copy_(new_scale.reshape(()))
            else:
                found = [state['found_inf'] for state in self._per_optimizer_states.values()
                         if state['found_inf'] is not None]
                if not found:
                    raise AssertionError('No inf checks were recorded prior to update.')
                inf = sum(found[1:], found[0]) != 0
                clean_steps = where(inf, 0, tracker + 1).int()
                grown = scale * self._growth_factor
                grows = (clean_steps == self._growth_interval) & grown.isfinite()
                scale.copy_(where(inf, scale * self._backoff_factor,
                                  where(grows, grown, scale)))
                tracker.copy_(where(clean_steps == self._growth_interval, 0, clean_steps))
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        tracker = self._growth_tracker
        return self._init_growth_tracker if tracker is None else int(tracker.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {'scale': self.get_scale(), 'growth_factor': self._growth_factor,
                'backoff_factor': self._backoff_factor,
                'growth_interval': self._growth_interval,
                '_growth_tracker': self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError('The source state dict is empty, possibly because it was saved '
                               'from a disabled instance of GradScaler.')
        self._init_scale = state_dict['scale']
        self._growth_factor = state_dict['growth_factor']
        self._backoff_factor = state_dict['backoff_factor']
        self._growth_interval = state_dict['growth_interval']
        self._init_growth_tracker = state_dict['_growth_tracker']
        if self._scale is not None:
            with no_grad():
                self._scale.fill_(state_dict['scale'])
                self._growth_tracker.fill_(state_dict['_growth_tracker'])
