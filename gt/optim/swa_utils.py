"""torch.optim.swa_utils for GT: `AveragedModel` (stochastic weight averaging, and the
exponential moving average of weights that diffusion and self-supervised code keeps with
`get_ema_multi_avg_fn`), the `SWALR` schedule and `update_bn`.

Averages are recorded as the updates of an optimizer are, under no_grad and with torch's
kernels: a moving average is `lerp` (what torch's `_foreach_lerp_` runs per tensor), so
an averaged model follows torch's bit for bit. The count of averages taken is a buffer,
`n_averaged`, as in torch; the client also keeps it as a number while the buffer is the
value it last wrote, so an update per training step costs no round trip.
"""

import copy
import itertools
import math
from typing import Any, Callable, Iterable

import torch

from gt.autograd import no_grad
from gt.creation import tensor
from gt.nn.batch_norm import _BatchNorm
from gt.nn.module import Module
from gt.optim.lr_scheduler.scheduler import LRScheduler, per_group, warn_unless_in_step
from gt.optim.optimizer import Optimizer
from gt.tensor import Tensor, apply, as_tensor

ParamList = list[Tensor]


def _weight_for(start: Tensor, weight: Any) -> Tensor:
    """lerp's weight as torch's foreach kernel takes a Python number: a 0-d operand in the
    tensors' dtype (float32 beside half and bfloat16, as GT keeps numbers there)."""
    if isinstance(weight, Tensor):
        return weight.to(torch.float64 if start.dtype == torch.float64 else torch.float32)
    return as_tensor(float(weight), start)


def _lerp_into(averaged: ParamList, current: ParamList, weight: Any) -> None:
    for average, value in zip(averaged, current):
        average._assign(apply('lerp', [average, value, _weight_for(average, weight)]))


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """`ema = lerp(ema, current, 1 - decay)` over lists of tensors of one dtype."""
    def ema_update(ema_params: ParamList, current_params: ParamList, _: Any) -> None:
        with no_grad():
            if ema_params[0].dtype.is_floating_point:
                _lerp_into(ema_params, current_params, 1 - decay)
            else:
                for ema, current in zip(ema_params, current_params):
                    ema.copy_(ema * decay + current * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean `average += (current - average) / (n + 1)` over lists."""
    def swa_update(averaged_params: ParamList, current_params: ParamList,
                   num_averaged: Tensor | int) -> None:
        with no_grad():
            if averaged_params[0].dtype.is_floating_point:
                _lerp_into(averaged_params, current_params, 1 / (num_averaged + 1))
            else:
                for average, current in zip(averaged_params, current_params):
                    average.copy_(average + (current - average) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and, with `use_buffers`, buffers) are the
    average of the models given to `update_parameters`: the running mean by default,
    `avg_fn(average, current, n_averaged)` per tensor, or `multi_avg_fn(averages,
    currents, n_averaged)` per list of tensors of one dtype."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError('Only one of avg_fn and multi_avg_fn should be provided')
        self.module = copy.deepcopy(model)
        self.register_buffer('n_averaged', tensor(0, dtype=torch.long))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers
        self._count: tuple[int | None, int] = (self.n_averaged._id, 0)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _averages_taken(self) -> int:
        """n_averaged as a number: the one kept here while the buffer is the value this
        model last wrote, else (after load_state_dict, say) fetched once."""
        if self._count[0] != self.n_averaged._id:
            self._count = (self.n_averaged._id, int(self.n_averaged.item()))
        return self._count[1]

    def _tensors(self, model: Module) -> Iterable[Tensor]:
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    def update_parameters(self, model: Module) -> None:
        taken = self._averages_taken()
        averaged = list(self._tensors(self.module))
        current = [value.detach() for value in self._tensors(model)]
        with no_grad():
            if taken == 0:
                for average, value in zip(averaged, current):
                    average.copy_(value)
            elif self.avg_fn is not None:
                for average, value in zip(averaged, current):
                    average.copy_(self.avg_fn(average.detach(), value, self.n_averaged))
            else:
                self._update_by_dtype(averaged, current)
            if not self.use_buffers:  # the buffers follow the model's, unaveraged
                for mine, theirs in zip(self.module.buffers(), model.buffers()):
                    mine.copy_(theirs.detach())
            self.n_averaged += 1
        self._count = (self.n_averaged._id, taken + 1)

    def _update_by_dtype(self, averaged: ParamList, current: ParamList) -> None:
        groups: dict[torch.dtype, tuple[ParamList, ParamList]] = {}
        for average, value in zip(averaged, current):
            mine, theirs = groups.setdefault(average.dtype, ([], []))
            mine.append(average)
            theirs.append(value)
        for mine, theirs in groups.values():
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, self.n_averaged)
            else:  # torch on the CPU: the running mean tensor by tensor
                average_of = get_swa_avg_fn()
                for average, value in zip(mine, theirs):
                    average.copy_(average_of(average, value, self.n_averaged))


def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Recompute the BatchNorm running statistics of `model` as the plain average over
    one pass of `loader` (each batch, or its first element, is an input)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            model(batch[0] if isinstance(batch, (list, tuple)) else batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to its `swa_lr` over `anneal_epochs` steps, by a cosine or
    linearly, then hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = 'cos',
                 last_epoch: int = -1) -> None:
        for rate, group in zip(per_group('swa_lr', optimizer, swa_lr), optimizer.param_groups):
            group['swa_lr'] = rate
        if anneal_strategy not in ('cos', 'linear'):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f'{anneal_strategy}')
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f'anneal_epochs must be equal or greater than 0, got {anneal_epochs}')
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == 'cos' \
            else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """torch's: every attribute but the optimizer and the (unpicklable) function."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ('optimizer', 'anneal_func')}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        warn_unless_in_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        previous_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        previous = [self._get_initial_lr(group['lr'], group['swa_lr'], previous_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group['swa_lr'] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, previous)]


__all__ = ['AveragedModel', 'SWALR', 'update_bn', 'get_ema_multi_avg_fn',
           'get_swa_multi_avg_fn', 'get_ema_avg_fn', 'get_swa_avg_fn']
