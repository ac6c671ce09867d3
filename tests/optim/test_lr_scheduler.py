"""gt.optim.lr_scheduler against torch.optim.lr_scheduler: the same schedule over the same
groups gives the same rates (bit for bit: both are Python floats by the same formulas),
the same state dicts, the same errors; rates that change every step change no step's
structure, so the dispatcher's plan is reused."""

import math
import warnings

import pytest
import torch
from optim_check import assert_same_weights, backward_both, batches, models

import gt
import gt.nn as nn
import gt.nn.functional as F
import gt.optim as optim

STEPS = 24

SCHEDULES = {
    'StepLR': lambda lib, o: lib.StepLR(o, step_size=3, gamma=0.5),
    'MultiStepLR': lambda lib, o: lib.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    'ExponentialLR': lambda lib, o: lib.ExponentialLR(o, gamma=0.9),
    'CosineAnnealingLR': lambda lib, o: lib.CosineAnnealingLR(o, T_max=7, eta_min=1e-3),
    'LambdaLR': lambda lib, o: lib.LambdaLR(o, [lambda e: 0.95 ** e, lambda e: 1 / (e + 1)]),
    'MultiplicativeLR': lambda lib, o: lib.MultiplicativeLR(o, lambda e: 0.97),
    'LinearLR': lambda lib, o: lib.LinearLR(o, start_factor=0.25, total_iters=6),
    'ConstantLR': lambda lib, o: lib.ConstantLR(o, factor=0.5, total_iters=4),
    'PolynomialLR': lambda lib, o: lib.PolynomialLR(o, total_iters=10, power=2.0),
    'OneCycleLR': lambda lib, o: lib.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=STEPS + 1),
    'OneCycleLR-3': lambda lib, o: lib.OneCycleLR(o, max_lr=0.3, total_steps=STEPS + 1,
                                                  anneal_strategy='linear', three_phase=True,
                                                  pct_start=0.25),
    'SequentialLR': lambda lib, o: lib.SequentialLR(
        o, [lib.LinearLR(o, start_factor=0.1, total_iters=5),
            lib.CosineAnnealingLR(o, T_max=STEPS - 5)], milestones=[5]),
    'ChainedScheduler': lambda lib, o: lib.ChainedScheduler(
        [lib.ConstantLR(o, factor=0.5, total_iters=3), lib.ExponentialLR(o, gamma=0.8)]),
}


def groups(model) -> list[dict]:
    return [{'params': model[0].parameters(), 'lr': 0.05}, {'params': model[2].parameters()}]


def pair(make, momentum: float = 0.9) -> tuple:
    """The same schedule on SGD over the same two groups, in GT and in torch."""
    mine, theirs = models()
    optimizer = optim.SGD(groups(mine), lr=0.1, momentum=momentum, foreach=False)
    expected = torch.optim.SGD(groups(theirs), lr=0.1, momentum=momentum, foreach=False)
    return (optimizer, make(optim.lr_scheduler, optimizer),
            expected, make(torch.optim.lr_scheduler, expected))


def hyperparameters(optimizer) -> list[tuple]:
    return [(group['lr'], group['momentum']) for group in optimizer.param_groups]


def without_functions(state: dict) -> dict:
    """A scheduler's state dict with the parts that hold functions left out."""
    return {key: without_functions(value) if isinstance(value, dict) else value
            for key, value in state.items() if key not in ('lr_lambdas', '_schedulers')}


@pytest.mark.parametrize('name', SCHEDULES)
def test_rates_match_torch(name):
    optimizer, scheduler, expected, reference = pair(SCHEDULES[name])
    assert hyperparameters(optimizer) == hyperparameters(expected)
    for _ in range(STEPS):
        optimizer.step()
        expected.step()
        scheduler.step()
        reference.step()
        assert scheduler.get_last_lr() == reference.get_last_lr()
        assert hyperparameters(optimizer) == hyperparameters(expected)  # momentum: OneCycleLR
    assert without_functions(scheduler.state_dict()) == without_functions(reference.state_dict())
    assert [group['initial_lr'] for group in optimizer.param_groups] == [
        group['initial_lr'] for group in expected.param_groups]


@pytest.mark.parametrize('name', ['OneCycleLR', 'CosineAnnealingLR', 'SequentialLR'])
def test_scheduled_training_matches_torch(name):
    mine, theirs = models()
    optimizer = optim.AdamW(groups(mine), lr=0.01, foreach=False)
    expected = torch.optim.AdamW(groups(theirs), lr=0.01, foreach=False)
    scheduler = SCHEDULES[name](optim.lr_scheduler, optimizer)
    reference = SCHEDULES[name](torch.optim.lr_scheduler, expected)
    for batch in batches(6):
        backward_both(mine, theirs, batch)
        for step in (optimizer.step, expected.step, optimizer.zero_grad, expected.zero_grad,
                     scheduler.step, reference.step):
            step()
        assert_same_weights(mine, theirs)
    assert optimizer.param_groups[0]['betas'] == expected.param_groups[0]['betas']


@pytest.mark.parametrize('name', ['CosineAnnealingLR', 'OneCycleLR', 'SequentialLR',
                                  'LambdaLR'])
def test_a_schedule_resumes_from_state_dicts(name):
    optimizer, scheduler, expected, reference = pair(SCHEDULES[name])
    for step in range(STEPS):
        if step == 10:  # a checkpoint: new optimizer and scheduler, states loaded
            saved = optimizer.state_dict(), scheduler.state_dict()
            optimizer, _, _, _ = pair(SCHEDULES[name])
            scheduler = SCHEDULES[name](optim.lr_scheduler, optimizer)
            optimizer.load_state_dict(saved[0])
            scheduler.load_state_dict(saved[1])
        optimizer.step()
        expected.step()
        scheduler.step()
        reference.step()
        assert scheduler.get_last_lr() == reference.get_last_lr()
        assert hyperparameters(optimizer) == hyperparameters(expected)


def test_last_epoch_resumes_and_needs_initial_lr_as_in_torch():
    for lib, make in [(optim, optim.SGD), (torch.optim, torch.optim.SGD)]:
        model = models()[0 if lib is optim else 1]
        with pytest.raises(KeyError, match="'initial_lr' is not specified in param_groups"):
            lib.lr_scheduler.StepLR(make(model.parameters(), lr=0.1), step_size=2, last_epoch=3)
    optimizer, _, expected, _ = pair(SCHEDULES['ExponentialLR'])
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5, last_epoch=4)
    reference = torch.optim.lr_scheduler.ExponentialLR(expected, gamma=0.5, last_epoch=4)
    assert scheduler.last_epoch == reference.last_epoch == 5
    assert scheduler.get_last_lr() == reference.get_last_lr()


def test_closed_forms_for_an_explicit_epoch():
    optimizer, scheduler, expected, reference = pair(SCHEDULES['CosineAnnealingLR'])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # both deprecate the epoch argument
        for epoch in (3, 11, 4):
            optimizer.step()
            expected.step()
            scheduler.step(epoch)
            reference.step(epoch)
            assert scheduler.get_last_lr() == reference.get_last_lr()


def test_reduce_lr_on_plateau_takes_floats_and_gt_tensors():
    metrics = [1.0, 0.9, 0.95, 0.91, 0.92, 0.93, 0.5, 0.6, 0.61, 0.7, 0.8, 0.9, 1.0]
    options = dict(mode='min', factor=0.5, patience=1, cooldown=1, min_lr=[0.01, 0.02])
    optimizer, _, expected, _ = pair(lambda lib, o: None)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, **options)
    reference = torch.optim.lr_scheduler.ReduceLROnPlateau(expected, **options)
    for index, metric in enumerate(metrics):
        scheduler.step(gt.tensor(metric) if index % 2 else metric)
        reference.step(metric)
        assert scheduler.get_last_lr() == reference.get_last_lr()
        assert scheduler.num_bad_epochs == reference.num_bad_epochs
    assert scheduler.state_dict() == reference.state_dict()
    maximizing = optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='max',
                                                     threshold_mode='abs', patience=0)
    maximizing.load_state_dict(scheduler.state_dict())
    assert maximizing.mode == 'min' and maximizing.mode_worse == math.inf
    with pytest.raises(ValueError, match='Factor should be < 1.0'):
        optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=1.0)
    with pytest.raises(ValueError, match='mode sideways is unknown'):
        optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='sideways')


def test_warnings_and_errors_as_in_torch():
    optimizer, scheduler, _, _ = pair(SCHEDULES['StepLR'])
    with pytest.warns(UserWarning, match='before `optimizer.step\\(\\)`'):
        scheduler.step()
    with pytest.warns(UserWarning, match='get_last_lr'):
        scheduler.get_lr()
    with pytest.raises(TypeError, match='is not an Optimizer'):
        optim.lr_scheduler.StepLR(torch.optim.SGD([torch.zeros(1)]), step_size=1)
    with pytest.raises(ValueError, match='Expected 2 lr_lambdas, but got 1'):
        optim.lr_scheduler.LambdaLR(optimizer, [lambda epoch: 1.0])
    with pytest.raises(ValueError, match='Tried to step 3 times'):
        schedule = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=2)
        for _ in range(3):
            optimizer.step()
            schedule.step()


@pytest.mark.parametrize('name', ['SGD', 'Adam'])
def test_scheduled_steps_reuse_one_plan(name):
    """Rates change every step, and pass the weight decay on the way (two numbers equal on
    one step must not merge into one constant); every step is still one message of the
    same structure, so the dispatcher plans once."""
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = getattr(optim, name)(model.parameters(), lr=0.4, weight_decay=0.05)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    x, y = gt.randn(5, 6), gt.randn(5, 3)
    client = gt.runtime.client.current()

    def step() -> int:
        before = client.next_request
        F.mse_loss(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
        return client.next_request - before

    for _ in range(2):
        step()
    misses = gt.debug.get_dispatcher_stats()['plan_misses']
    assert [step() for _ in range(5)] == [1] * 5  # lr: 0.1, 0.05 (the decay), 0.025, ...
    assert gt.debug.get_dispatcher_stats()['plan_misses'] == misses
