"""`OneCycleLR`: the 1cycle policy, rising from initial_lr to max_lr and annealing to
min_lr (in two or three phases), cycling the momentum (or Adam's beta1) the other way."""

import math
from typing import Any

from gt.optim.lr_scheduler.scheduler import LRScheduler, per_group, warn_unless_in_step
from gt.optim.optimizer import Optimizer


class OneCycleLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = 'cos', cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f'{type(optimizer).__name__} is not an Optimizer')
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f'Expected float between 0 and 1 pct_start, but got {pct_start}')
        if anneal_strategy not in ('cos', 'linear'):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f'{anneal_strategy}')
        self._anneal_func_type = anneal_strategy
        max_lrs = per_group('max_lr', optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group['initial_lr'] = top / div_factor
                group['max_lr'] = top
                group['min_lr'] = group['initial_lr'] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if 'momentum' not in optimizer.defaults and 'betas' not in optimizer.defaults:
                raise ValueError('optimizer must support momentum or beta1 with '
                                 '`cycle_momentum` option enabled')
            self.use_beta1 = 'betas' in optimizer.defaults
            highs = per_group('max_momentum', optimizer, max_momentum)
            lows = per_group('base_momentum', optimizer, base_momentum)
            if last_epoch == -1:
                for high, low, group in zip(highs, lows, optimizer.param_groups):
                    if self.use_beta1:
                        group['betas'] = (high, *group['betas'][1:])
                    else:
                        group['momentum'] = high
                    group['max_momentum'], group['base_momentum'] = high, low
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, fraction: float) -> float:
        if self._anneal_func_type == 'cos':
            return end + (start - end) / 2.0 * (math.cos(math.pi * fraction) + 1)
        return (end - start) * fraction + start

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f'Tried to step {step} times. The specified number of total steps '
                             f'is {self.total_steps}')
        rates = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for index, phase in enumerate(self._schedule_phases):
                end_step = phase['end_step']
                if step <= end_step or index == len(self._schedule_phases) - 1:
                    fraction = (step - start_step) / (end_step - start_step)
                    rate = self._anneal(group[phase['start_lr']], group[phase['end_lr']],
                                        fraction)
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase['start_momentum']],
                                                group[phase['end_momentum']], fraction)
                    break
                start_step = phase['end_step']
            rates.append(rate)
            if self.cycle_momentum:
                if self.use_beta1:
                    group['betas'] = (momentum, *group['betas'][1:])
                else:
                    group['momentum'] = momentum
        return rates


def _total_steps(total_steps: int | None, epochs: int | None,
                 steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f'Expected positive integer total_steps, but got {total_steps}')
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f'Expected positive integer epochs, but got {epochs}')
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(f'Expected positive integer steps_per_epoch, but got '
                             f'{steps_per_epoch}')
        return epochs * steps_per_epoch
    raise ValueError('You must define either total_steps OR (epochs AND steps_per_epoch)')


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
    """torch's phases: where each ends, and the group keys its rate and momentum go between."""
    def phase(end_step: float, lrs: tuple[str, str], momenta: tuple[str, str]) -> dict:
        return dict(end_step=end_step, start_lr=lrs[0], end_lr=lrs[1],
                    start_momentum=momenta[0], end_momentum=momenta[1])

    rise = float(pct_start * total_steps) - 1
    if three_phase:
        return [phase(rise, ('initial_lr', 'max_lr'), ('max_momentum', 'base_momentum')),
                phase(float(2 * pct_start * total_steps) - 2, ('max_lr', 'initial_lr'),
                      ('base_momentum', 'max_momentum')),
                phase(total_steps - 1, ('initial_lr', 'min_lr'),
                      ('max_momentum', 'max_momentum'))]
    return [phase(rise, ('initial_lr', 'max_lr'), ('max_momentum', 'base_momentum')),
            phase(total_steps - 1, ('max_lr', 'min_lr'), ('base_momentum', 'max_momentum'))]
