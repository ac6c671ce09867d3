"""`ReduceLROnPlateau`: lowers the rates when a metric stops improving. The metric may
be a Python number or a 0-d tensor; a GT tensor is fetched (the schedule depends on its
value, so this is the one scheduler step that waits for the workers)."""

import math
import warnings
from typing import Any, SupportsFloat

from gt.optim.lr_scheduler.scheduler import EPOCH_DEPRECATION_WARNING, LRScheduler, group_values
from gt.optim.optimizer import Optimizer


class ReduceLROnPlateau(LRScheduler):
    def __init__(self, optimizer: Optimizer, mode: str = 'min', factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = 'rel',
                 cooldown: int = 0, min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError('Factor should be < 1.0.')
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f'{type(optimizer).__name__} is not an Optimizer')
        self.factor, self.optimizer = factor, optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f'expected {len(optimizer.param_groups)} min_lrs, got '
                                 f'{len(min_lr)}')
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = group_values(optimizer, 'lr')
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:
        current = float(metrics)  # a 0-d tensor (GT or torch) converts, as in torch
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = group_values(self.optimizer, 'lr')

    def _reduce_lr(self) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f'The number of param groups in the `optimizer` '
                    f'({len(self.optimizer.param_groups)}) differs from when '
                    f'`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due '
                    'to a new param group being added to the optimizer. Please modify the '
                    '`min_lrs` field to match the length of the `optimizer` param groups.')
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
            old_lr = float(group['lr'])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group['lr'] = new_lr

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, value: float, best: float) -> bool:
        if self.mode == 'min' and self.threshold_mode == 'rel':
            return value < best * (1.0 - self.threshold)
        if self.mode == 'min':
            return value < best - self.threshold
        if self.threshold_mode == 'rel':
            return value > best * (self.threshold + 1.0)
        return value > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ('min', 'max'):
            raise ValueError(f'mode {mode} is unknown!')
        if threshold_mode not in ('rel', 'abs'):
            raise ValueError(f'threshold mode {threshold_mode} is unknown!')
        self.mode_worse = math.inf if mode == 'min' else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
