"""Schedules made of schedules: `SequentialLR` hands over from one to the next at
milestones (warmup, then decay), `ChainedScheduler` steps several at once."""

from bisect import bisect_right
from typing import Any, Sequence

from gt.optim.lr_scheduler.plateau import ReduceLROnPlateau
from gt.optim.lr_scheduler.scheduler import LRScheduler, group_values
from gt.optim.optimizer import Optimizer


def _check_parts(kind: str, schedulers: Sequence[LRScheduler], optimizer: Optimizer) -> None:
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, 'optimizer'):
            raise TypeError(f'{kind} at index {index} should have `optimizer` as its attribute.')
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f'{kind} does not support `ReduceLROnPlateau` scheduler as it '
                             'requires additional kwargs to be specified when calling `step`, '
                             f'but got one at index {index} in the given schedulers sequence.')
        if scheduler.optimizer is not optimizer:
            raise ValueError(f'{kind} expects all schedulers to belong to the same optimizer, '
                             f'but got scheduler {type(scheduler).__name__} at index {index} '
                             'with another one.')


class _Combined(LRScheduler):
    """State: the combination's own attributes plus each part's state."""

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ('optimizer', '_schedulers')}
        state['_schedulers'] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        parts = state.pop('_schedulers')
        self.__dict__.update(state)
        for scheduler, saved in zip(self._schedulers, parts):
            scheduler.load_state_dict(saved)


class SequentialLR(_Combined):
    """`schedulers[i]` runs from `milestones[i - 1]` on; each starts from its own
    initial rates when its turn comes."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError('SequentialLR expects at least one scheduler, but got no scheduler.')
        _check_parts('SequentialLR', schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError('Sequential Schedulers expects number of schedulers provided to be '
                             'one more than the number of milestone points, but got number of '
                             f'schedulers {len(schedulers)} and the number of milestones to be '
                             f'equal to {len(milestones)}')
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo what the parts' first steps did
            group['lr'] = group['initial_lr']
        self._undo_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_steps(self, scheduler: Any) -> None:
        if hasattr(scheduler, '_schedulers'):
            for part in scheduler._schedulers:
                self._undo_steps(part)
        elif hasattr(scheduler, 'last_epoch'):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Combined):
    """Steps every scheduler in turn, at each step."""

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError('ChainedScheduler expects at least one scheduler to be chained, but '
                             'got no scheduler.')
        optimizer = optimizer or schedulers[0].optimizer
        _check_parts('ChainedScheduler', schedulers, optimizer)
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = group_values(optimizer, 'lr')

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = group_values(self.optimizer, 'lr')
