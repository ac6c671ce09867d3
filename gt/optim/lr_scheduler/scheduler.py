"""`LRScheduler`, with torch.optim.lr_scheduler's semantics: it records each group's
'initial_lr', steps `last_epoch`, writes the new rates into the optimizer's groups as
Python floats (GT sends them as literals, so a changing rate never changes a step's
structure), and saves its state as a dict of its attributes.
"""

import functools
import warnings
from typing import Any
from weakref import ref

from gt.optim.optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    'The epoch parameter in `scheduler.step()` was not necessary and is being deprecated '
    'where possible. Please use `scheduler.step()` to step the scheduler. During the '
    'deprecation, if epoch is different from None, the closed form is used instead of the '
    'new chainable form, where available.')


class LRScheduler:
    """Base class: subclasses define `get_lr()` (the rates for `last_epoch`, from the
    groups' current rates) and may define `_get_closed_form_lr()` (from `base_lrs`)."""

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f'{type(optimizer).__name__} is not an Optimizer')
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault('initial_lr', group['lr'])
        else:
            for index, group in enumerate(optimizer.param_groups):
                if 'initial_lr' not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{index}] when "
                        'resuming scheduler with last_epoch >= 0 (load the optimizer\'s '
                        'state first, or start with last_epoch=-1)')
        self.base_lrs: list[float] = group_values(optimizer, 'initial_lr')
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != 'optimizer'}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        return self._last_lr

    def get_lr(self) -> list[float]:
        raise NotImplementedError(f'{type(self).__name__} does not define get_lr()')

    def step(self, epoch: int | None = None) -> None:
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, '_wrapped_by_lr_sched'):
                warnings.warn('Seems like `optimizer.step()` has been overridden after learning '
                              'rate scheduler initialization. Please, make sure to call '
                              '`optimizer.step()` before `lr_scheduler.step()`.', UserWarning,
                              stacklevel=2)
            elif not getattr(self.optimizer, '_opt_called', False):
                warnings.warn('Detected call of `lr_scheduler.step()` before `optimizer.step()`. '
                              'You should call them in the opposite order: `optimizer.step()` '
                              'before `lr_scheduler.step()`. Failure to do this will result in '
                              'skipping the first value of the learning rate schedule.',
                              UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, '_get_closed_form_lr', None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group['lr'] = lr
        self._last_lr = group_values(self.optimizer, 'lr')


def group_values(optimizer: Optimizer, key: str) -> list[Any]:
    return [group[key] for group in optimizer.param_groups]


def warn_unless_in_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn('To get the last learning rate computed by the scheduler, please use '
                      '`get_last_lr()`.', UserWarning, stacklevel=3)


def per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """One value per parameter group: a list or tuple of them, or one value for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f'{name} must have the same length as optimizer.param_groups. '
                             f'{name} has {len(value)} values, param_groups has '
                             f'{len(optimizer.param_groups)}.')
        return list(value)
    return [value] * len(optimizer.param_groups)


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap the optimizer's `step` to note that it ran, as torch does, so that a schedule
    stepped before its optimizer warns."""
    if hasattr(optimizer.step, '_wrapped_by_lr_sched'):
        return
    optimizer_ref = ref(optimizer)
    function = optimizer.step.__func__

    @functools.wraps(function)
    def step(*args: Any, **kwargs: Any) -> Any:
        owner = optimizer_ref()
        owner._opt_called = True
        return function(owner, *args, **kwargs)

    step._wrapped_by_lr_sched = True
    optimizer.step = step
