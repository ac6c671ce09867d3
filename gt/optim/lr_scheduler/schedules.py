"""The schedules that follow a formula of the step count, each as torch writes it: the
chainable form (from the groups' current rates) that `step()` uses and, where torch has
one, the closed form (from the base rates) that `step(epoch)` uses. Keeping torch's
forms, not only its values, keeps the rates equal to torch's to the last bit."""

import math
import types
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Iterable

from gt.optim.lr_scheduler.scheduler import LRScheduler, group_values, warn_unless_in_step
from gt.optim.optimizer import Optimizer


class _Lambdas(LRScheduler):
    """A function of the epoch per group; saved as torch saves them (a callable object's
    `__dict__`, nothing for a plain function)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f'Expected {len(optimizer.param_groups)} lr_lambdas, but got '
                                 f'{len(lr_lambda)}')
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for function in self.lr_lambdas:
            if not callable(function):
                raise TypeError(f'lr_lambda should be a function, but got '
                                f'{type(function).__name__}')
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ('optimizer', 'lr_lambdas')}
        state['lr_lambdas'] = [None if isinstance(function, types.FunctionType)
                               else function.__dict__.copy() for function in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop('lr_lambdas')
        self.__dict__.update(state)
        for function, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                function.__dict__.update(saved)


class LambdaLR(_Lambdas):
    """lr = initial_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list,
                 last_epoch: int = -1) -> None:
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        return [base_lr * function(self.last_epoch)
                for function, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_Lambdas):
    """lr *= lr_lambda(epoch) at each step."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list,
                 last_epoch: int = -1) -> None:
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self._is_initial:
            return group_values(self.optimizer, 'lr')
        return [group['lr'] * function(self.last_epoch)
                for function, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """lr *= gamma every `step_size` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return group_values(self.optimizer, 'lr')
        return [group['lr'] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone (twice at a milestone given twice)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self.last_epoch not in self.milestones:
            return group_values(self.optimizer, 'lr')
        return [group['lr'] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor for the first `total_iters` epochs, then initial_lr."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError('Constant multiplicative factor expected to be between 0 and 1.')
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self.last_epoch == 0:
            return [group['lr'] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return group_values(self.optimizer, 'lr')
        return [group['lr'] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters)
                           * (1 - self.factor)) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor goes linearly from `start_factor` to `end_factor` over `total_iters`."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError('Starting multiplicative factor expected to be greater than 0 and '
                             'less or equal to 1.')
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError('Ending multiplicative factor expected to be between 0 and 1.')
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self.last_epoch == 0:
            return [group['lr'] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return group_values(self.optimizer, 'lr')
        change = self.end_factor - self.start_factor
        factor = 1.0 + change / (self.total_iters * self.start_factor
                                 + (self.last_epoch - 1) * change)
        return [group['lr'] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr *= gamma every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self._is_initial:
            return group_values(self.optimizer, 'lr')
        return [group['lr'] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - epoch / total_iters) ** power, then 0."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return group_values(self.optimizer, 'lr')
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group['lr'] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, by
    torch's recurrence (so a rate changed by hand between steps is followed)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        if self._is_initial:
            return group_values(self.optimizer, 'lr')
        epoch, period, floor = self.last_epoch, self.T_max, self.eta_min
        if self._step_count == 1 and epoch > 0:
            return [floor + (base_lr - floor) * (1 + math.cos(epoch * math.pi / period)) / 2
                    for base_lr in self.base_lrs]
        if (epoch - 1 - period) % (2 * period) == 0:
            return [group['lr'] + (base_lr - floor) * (1 - math.cos(math.pi / period)) / 2
                    for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
        return [(1 + math.cos(math.pi * epoch / period))
                / (1 + math.cos(math.pi * (epoch - 1) / period)) * (group['lr'] - floor) + floor
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]
