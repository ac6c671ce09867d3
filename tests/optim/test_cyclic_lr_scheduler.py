"""CyclicLR and CosineAnnealingWarmRestarts against torch.optim.lr_scheduler: the same
schedule gives the same rates (and, for CyclicLR, the same momenta or Adam betas) at every
one of 30 steps, bit for bit, the same state dicts, and the same rates after resuming
from a state dict, alone and inside SequentialLR and ChainedScheduler."""

import warnings

import pytest
import torch
from optim_check import models

import gt.optim as optim

STEPS = 30


class Halving:
    """A callable object as scale_fn: saved by its `__dict__`, as torch saves it."""

    def __init__(self) -> None:
        self.base = 2.0

    def __call__(self, cycle: float) -> float:
        return 1 / self.base ** (cycle - 1)


SCHEDULES = {
    'triangular': lambda lib, o: lib.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    'triangular2': lambda lib, o: lib.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3],
                                               step_size_up=3, step_size_down=5,
                                               mode='triangular2'),
    'exp_range': lambda lib, o: lib.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                             mode='exp_range', gamma=0.9,
                                             base_momentum=[0.7, 0.75], max_momentum=0.95),
    'scale_fn': lambda lib, o: lib.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                            scale_fn=lambda x: 0.5 ** x,
                                            scale_mode='iterations'),
    'scale_object': lambda lib, o: lib.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                scale_fn=Halving(), cycle_momentum=False),
    'warm_restarts': lambda lib, o: lib.CosineAnnealingWarmRestarts(o, T_0=5),
    'warm_restarts_mult': lambda lib, o: lib.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                         eta_min=1e-3),
    'sequential': lambda lib, o: lib.SequentialLR(
        o, [lib.LinearLR(o, start_factor=0.1, total_iters=4),
            lib.CosineAnnealingWarmRestarts(o, T_0=6, T_mult=2)], milestones=[4]),
    'chained': lambda lib, o: lib.ChainedScheduler(
        [lib.CosineAnnealingWarmRestarts(o, T_0=7), lib.ExponentialLR(o, gamma=0.95)]),
}
OPTIMIZERS = ['SGD', 'Adam']


def groups(model) -> list[dict]:
    return [{'params': model[0].parameters(), 'lr': 0.05}, {'params': model[2].parameters()}]


def make_optimizer(lib, model, name: str):
    if name == 'SGD':
        return lib.SGD(groups(model), lr=0.1, momentum=0.9)
    return lib.Adam(groups(model), lr=0.1)


def pair(schedule: str, name: str) -> tuple:
    mine, theirs = models()
    optimizer = make_optimizer(optim, mine, name)
    expected = make_optimizer(torch.optim, theirs, name)
    make = SCHEDULES[schedule]
    return optimizer, make(optim.lr_scheduler, optimizer), expected, make(
        torch.optim.lr_scheduler, expected)


def hyperparameters(optimizer) -> list[tuple]:
    return [(group['lr'], group.get('momentum'), group.get('betas'))
            for group in optimizer.param_groups]


def comparable(state: dict) -> dict:
    """A state dict without the parts that hold functions."""
    return {key: comparable(value) if isinstance(value, dict) else value
            for key, value in state.items() if key not in ('_schedulers', 'lr_lambdas')}


def advance(*stepping) -> None:
    for thing in stepping:
        thing.step()


@pytest.mark.parametrize('name', OPTIMIZERS)
@pytest.mark.parametrize('schedule', SCHEDULES)
def test_rates_and_momenta_match_torch(schedule, name):
    optimizer, scheduler, expected, reference = pair(schedule, name)
    assert hyperparameters(optimizer) == hyperparameters(expected)
    for _ in range(STEPS):
        advance(optimizer, expected, scheduler, reference)
        assert scheduler.get_last_lr() == reference.get_last_lr()
        assert hyperparameters(optimizer) == hyperparameters(expected)
    assert comparable(scheduler.state_dict()) == comparable(reference.state_dict())


@pytest.mark.parametrize('schedule', ['exp_range', 'scale_object', 'warm_restarts_mult',
                                      'sequential'])
def test_a_schedule_resumes_from_a_state_dict(schedule):
    optimizer, scheduler, expected, reference = pair(schedule, 'SGD')
    for index in range(STEPS):
        if index == 11:  # new optimizer and scheduler, then the saved states
            saved = optimizer.state_dict(), scheduler.state_dict()
            optimizer, scheduler, _, _ = pair(schedule, 'SGD')
            optimizer.load_state_dict(saved[0])
            scheduler.load_state_dict(saved[1])
        advance(optimizer, expected, scheduler, reference)
        assert scheduler.get_last_lr() == reference.get_last_lr()
        assert hyperparameters(optimizer) == hyperparameters(expected)


def test_a_torch_state_dict_resumes_in_gt():
    """torch's CyclicLR state dict (a callable scale_fn's `__dict__` in it) loads into GT."""
    optimizer, scheduler, expected, reference = pair('scale_object', 'SGD')
    for _ in range(5):
        advance(expected, reference)
    reference._scale_fn_custom.base = 3.0
    optimizer.load_state_dict(expected.state_dict())
    scheduler.load_state_dict(reference.state_dict())
    assert scheduler._scale_fn_custom.base == 3.0
    for _ in range(10):
        advance(optimizer, expected, scheduler, reference)
        assert scheduler.get_last_lr() == reference.get_last_lr()


def test_warm_restarts_take_fractional_epochs_as_torch_does():
    optimizer, scheduler, expected, reference = pair('warm_restarts_mult', 'SGD')
    for epoch in (0.5, 1.25, 2.0, 3.0, 4.7, 9.0, 10.5, 22.0, 1.0):
        advance(optimizer, expected)
        scheduler.step(epoch)
        reference.step(epoch)
        assert scheduler.get_last_lr() == reference.get_last_lr()
        assert (scheduler.T_cur, scheduler.T_i) == (reference.T_cur, reference.T_i)
    with pytest.raises(ValueError, match='Expected non-negative epoch'):
        scheduler.step(-1)


def test_errors_and_warnings_as_in_torch():
    optimizer, scheduler, _, _ = pair('triangular', 'SGD')
    with pytest.warns(UserWarning, match='get_last_lr'):
        scheduler.get_lr()
    lib = optim.lr_scheduler
    for make, error, problem in [
        (lambda: lib.CyclicLR(optimizer, 0.01, 0.1, mode='sine'), ValueError, 'mode is invalid'),
        (lambda: lib.CyclicLR(optim.Adagrad(models()[0].parameters()), 0.01, 0.1),
         ValueError, 'must support momentum or beta1'),
        (lambda: lib.CyclicLR(optimizer, [0.01], 0.1), ValueError, 'base_lr must have the same'),
        (lambda: lib.CosineAnnealingWarmRestarts(optimizer, T_0=0), ValueError, 'positive integer'),
        (lambda: lib.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=1.5), ValueError,
         'T_mult >= 1'),
    ]:
        with pytest.raises(error, match=problem):
            make()
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # warm restarts step without the order check, as torch
        lib.CosineAnnealingWarmRestarts(optimizer, T_0=3).step()
