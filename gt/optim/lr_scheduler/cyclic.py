"""Schedules that cycle: `CyclicLR` goes between a base and a maximum rate (and the momentum,
or Adam's beta1, the other way) in triangles, and `CosineAnnealingWarmRestarts` anneals by
a cosine and restarts, each period `T_mult` times the last. Both follow torch's code, so
the rates are torch's floats bit for bit."""

import math
import types
from functools import partial
from typing import Any, Callable

from gt.optim.lr_scheduler.scheduler import (
    LRScheduler,
    group_values,
    per_group,
    warn_unless_in_step,
)
from gt.optim.optimizer import Optimizer


class CyclicLR(LRScheduler):
    """Cycles each group's rate between `base_lr` and `max_lr`, `step_size_up` steps up and
    `step_size_down` down; 'triangular2' halves the height each cycle, 'exp_range' scales
    it by gamma ** step, and `scale_fn` may replace either."""

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = 'triangular',
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = 'cycle', cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.8,
                 max_momentum: float | list[float] = 0.9, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f'{type(optimizer).__name__} is not an Optimizer')
        self.optimizer = optimizer
        base_lrs = per_group('base_lr', optimizer, base_lr)
        if last_epoch == -1:
            for rate, group in zip(base_lrs, optimizer.param_groups):
                group['lr'] = rate
        self.max_lrs = per_group('max_lr', optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ('triangular', 'triangular2', 'exp_range') and scale_fn is None:
            raise ValueError('mode is invalid and scale_fn is None')
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if 'momentum' not in optimizer.defaults and 'betas' not in optimizer.defaults:
                raise ValueError('optimizer must support momentum or beta1 with '
                                 '`cycle_momentum` option enabled')
            self.use_beta1 = 'betas' in optimizer.defaults
            self.base_momentums = per_group('base_momentum', optimizer, base_momentum)
            self.max_momentums = per_group('max_momentum', optimizer, max_momentum)
            if last_epoch == -1:
                for high, low, group in zip(self.max_momentums, self.base_momentums,
                                            optimizer.param_groups):
                    _set_momentum(group, high, self.use_beta1)
                    group['max_momentum'], group['base_momentum'] = high, low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == 'triangular':
            self._scale_fn_ref, self.scale_mode = _triangular_scale, 'cycle'
        elif self.mode == 'triangular2':
            self._scale_fn_ref, self.scale_mode = _triangular2_scale, 'cycle'
        elif self.mode == 'exp_range':
            self._scale_fn_ref = partial(_exp_range_scale, self.gamma)
            self.scale_mode = 'iterations'

    def scale_fn(self, x: float) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        where = cycle if self.scale_mode == 'cycle' else self.last_epoch
        # scale_fn is called once per value, as torch calls it (a custom one may count).
        rates = [base_lr + (max_lr - base_lr) * scale_factor * self.scale_fn(where)
                 for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            momenta = [high - (high - low) * scale_factor * self.scale_fn(where)
                       for low, high in zip(self.base_momentums, self.max_momentums)]
            for group, momentum in zip(self.optimizer.param_groups, momenta):
                _set_momentum(group, momentum, self.use_beta1)
        return rates

    def state_dict(self) -> dict[str, Any]:
        """torch's: the scale function is left out; a callable object's `__dict__` is kept."""
        state = super().state_dict()
        state.pop('_scale_fn_ref', None)
        function = state.pop('_scale_fn_custom')
        state['_scale_fn_custom'] = None
        if function is not None and not isinstance(function, types.FunctionType):
            state['_scale_fn_custom'] = function.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        function = state.pop('_scale_fn_custom')
        super().load_state_dict(state)
        if function is not None:
            self._scale_fn_custom.__dict__.update(function)
        self._init_scale_fn()


def _set_momentum(group: dict, momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group['betas'] = (momentum, *group['betas'][1:])
    else:
        group['momentum'] = momentum


def _triangular_scale(x: float) -> float:
    return 1.0


def _triangular2_scale(x: float) -> float:
    return 1 / (2.0 ** (x - 1))


def _exp_range_scale(gamma: float, x: float) -> float:
    return gamma ** x


class CosineAnnealingWarmRestarts(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2, where T_cur
    counts the steps since the last restart and the i-th period T_i is T_0 * T_mult ** i.
    `step(epoch)` may be given a fractional epoch (a step within an epoch)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f'Expected positive integer T_0, but got {T_0}')
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f'Expected integer T_mult >= 1, but got {T_mult}')
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f'Expected float or int eta_min, but got {eta_min} of type '
                             f'{type(eta_min)}')
        self.T_0, self.T_i, self.T_mult = T_0, T_0, T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """torch's own step: it neither counts steps nor warns about their order."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f'Expected non-negative epoch, but got {epoch}')
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            for group, rate in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
                group['lr'] = rate
        finally:
            self._get_lr_called_within_step = False
        self._last_lr = group_values(self.optimizer, 'lr')
