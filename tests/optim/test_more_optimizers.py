"""NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop against torch.optim's single-tensor updates: the
same weights, data and hyperparameters give the same parameters and the same state, bit
for bit, after every step, over two parameter groups; state dicts have torch's layout
(the numbers torch keeps as 0-d tensors, `mu_product`, `eta` and `mu`, included) and
load both ways, the resumed run equal to the uninterrupted one."""

import pytest
import torch
from optim_check import batches, models

import gt
import gt.nn as nn
import gt.nn.functional as F
import gt.optim as optim
from gt.serialization import load, save

CASES = [
    ('NAdam', dict()),
    ('NAdam', dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ('NAdam', dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ('RAdam', dict()),
    ('RAdam', dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1, eps=1e-6)),  # rectified early
    ('RAdam', dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ('Adamax', dict()),
    ('Adamax', dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, eps=1e-6, maximize=True)),
    ('Adadelta', dict()),
    ('Adadelta', dict(lr=0.5, rho=0.7, eps=1e-5, weight_decay=0.1, maximize=True)),
    ('ASGD', dict()),
    ('ASGD', dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1, maximize=True)),
    ('Rprop', dict()),
    ('Rprop', dict(lr=0.05, etas=(0.3, 1.7), step_sizes=(1e-3, 0.08), maximize=True)),
]
IDS = [f'{name}-{index}' for index, (name, _) in enumerate(CASES)]
NAMES = ['NAdam', 'RAdam', 'Adamax', 'Adadelta', 'ASGD', 'Rprop']
STEPS = 6


def two_groups(model) -> list[dict]:
    return [{'params': model[0].parameters(), 'lr': 0.05}, {'params': model[2].parameters()}]


def pair(name: str, options: dict, start: dict | None = None) -> tuple:
    """Models with the same weights (`start` if given), and the optimizer over two groups,
    in GT and torch."""
    mine, theirs = models()
    if start is not None:
        theirs.load_state_dict(start)
        mine.load_state_dict(start)
    optimizer = getattr(optim, name)(two_groups(mine), **options)
    expected = getattr(torch.optim, name)(two_groups(theirs), foreach=False, **options)
    return mine, theirs, optimizer, expected


def step(model, optimizer, batch) -> None:
    x, y = batch
    if isinstance(model, nn.Module):
        F.mse_loss(model(gt.tensor(x)), gt.tensor(y)).backward()
    else:
        torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()


def assert_equal_weights(mine: nn.Module, theirs: torch.nn.Module) -> None:
    want = theirs.state_dict()
    for key, value in mine.state_dict().items():
        assert torch.equal(value.data, want[key]), key


def as_torch(value):
    if isinstance(value, gt.Tensor):
        return value.data
    return torch.as_tensor(value, dtype=torch.float32)  # a step count GT keeps as a number


def assert_equal_state(optimizer, expected) -> None:
    """Every state entry equal to torch's, step counts and 0-d numbers included."""
    params = [p for group in expected.param_groups for p in group['params']]
    mine = [p for group in optimizer.param_groups for p in group['params']]
    for param, theirs in zip(mine, params):
        got, want = optimizer.state[param], expected.state[theirs]
        assert list(got) == list(want)
        for key, value in want.items():
            assert torch.equal(as_torch(got[key]), value), key


@pytest.mark.parametrize('name,options', CASES, ids=IDS)
def test_steps_and_state_equal_torchs_bit_for_bit(name, options):
    mine, theirs, optimizer, expected = pair(name, options)
    for batch in batches(STEPS):
        step(mine, optimizer, batch)
        step(theirs, expected, batch)
        assert_equal_weights(mine, theirs)
    assert_equal_state(optimizer, expected)


@pytest.mark.parametrize('name', NAMES)
def test_defaults_groups_and_state_dict_have_torchs_layout(name):
    mine, theirs, optimizer, expected = pair(name, {})
    assert optimizer.defaults == {**expected.defaults, 'foreach': None}
    for batch in batches(2):
        step(mine, optimizer, batch)
        step(theirs, expected, batch)
    got, want = optimizer.state_dict(), expected.state_dict()
    assert got['param_groups'] == [{**group, 'foreach': None} for group in want['param_groups']]
    assert list(got['state']) == list(want['state']) == [0, 1, 2, 3]
    for index, entries in want['state'].items():
        assert list(got['state'][index]) == list(entries)
        for key, value in entries.items():
            saved = got['state'][index][key]
            assert isinstance(saved, gt.Tensor) and saved.dtype == value.dtype, key
            assert torch.equal(saved.data, value), key


@pytest.mark.parametrize('name,options', [CASES[i] for i in (1, 4, 7, 9, 11, 13)],
                         ids=[IDS[i] for i in (1, 4, 7, 9, 11, 13)])
def test_state_dicts_load_both_ways_and_runs_resume_identically(name, options, tmp_path):
    data = batches(2 * STEPS)
    mine, theirs, optimizer, expected = pair(name, options)
    start = {key: value.clone() for key, value in theirs.state_dict().items()}
    for batch in data:
        step(theirs, expected, batch)  # torch, uninterrupted: the oracle

    # GT trains, saves with gt.save; torch loads the file and goes on.
    for batch in data[:STEPS]:
        step(mine, optimizer, batch)
    save({'model': mine.state_dict(), 'optimizer': optimizer.state_dict()}, tmp_path / 'gt.pt')
    checkpoint = torch.load(tmp_path / 'gt.pt')
    _, resumed, _, resumed_optimizer = pair(name, options)
    resumed.load_state_dict(checkpoint['model'])
    resumed_optimizer.load_state_dict(checkpoint['optimizer'])
    for batch in data[STEPS:]:
        step(resumed, resumed_optimizer, batch)
    for key, value in resumed.state_dict().items():
        assert torch.equal(value, theirs.state_dict()[key]), key

    # torch trains, its state dict loads into GT (directly, and from torch.save's file).
    _, torch_run, _, torch_optimizer = pair(name, options, start)
    for batch in data[:STEPS]:
        step(torch_run, torch_optimizer, batch)
    torch.save(torch_optimizer.state_dict(), tmp_path / 'torch.pt')
    for state in (torch_optimizer.state_dict(), load(tmp_path / 'torch.pt')):
        gt_run, _, gt_optimizer, _ = pair(name, dict(options, lr=0.5))  # lr comes from state
        gt_run.load_state_dict(torch_run.state_dict())
        gt_optimizer.load_state_dict(state)
        for batch in data[STEPS:]:
            step(gt_run, gt_optimizer, batch)
        assert_equal_weights(gt_run, theirs)
        assert_equal_state(gt_optimizer, expected)


def test_loaded_numbers_are_kept_as_torch_keeps_them():
    """Step counts become Python numbers; NAdam's `mu_product` and ASGD's `eta` and `mu`
    stay 0-d tensors on the client, cast to the parameter's dtype as torch casts them."""
    layer = nn.Linear(3, 2).double()
    optimizer = optim.ASGD(layer.parameters())
    numbers = {'step': gt.tensor(3.0), 'eta': torch.tensor(0.25), 'mu': gt.tensor(0.5),
               'ax': torch.zeros(2, 3)}
    state = {'state': {0: numbers, 1: dict(numbers, ax=torch.zeros(2))},
             'param_groups': optimizer.state_dict()['param_groups']}
    optimizer.load_state_dict(state)
    loaded = optimizer.state[layer.weight]
    assert loaded['step'] == 3 and isinstance(loaded['step'], int)
    for key, value in (('eta', 0.25), ('mu', 0.5)):
        assert isinstance(loaded[key], torch.Tensor) and loaded[key].dtype == torch.float64
        assert loaded[key].item() == value
    assert loaded['ax'].dtype == torch.float64
    loaded['eta'].mul_(2)
    assert state['state'][0]['eta'].item() == 0.25  # the caller's tensor is not the state's


@pytest.mark.parametrize('name', NAMES)
def test_scheduled_steps_reuse_one_plan(name):
    """The numbers made from the step count and the schedule are literals: after its first
    steps (RAdam's rectification starts at step 6 with torch's default betas), every step
    is one message of the same structure, so the dispatcher plans once."""
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    decay = {} if name == 'Rprop' else {'weight_decay': 0.05}  # Rprop has none
    optimizer = getattr(optim, name)(model.parameters(), **decay)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    x, y = gt.randn(5, 6), gt.randn(5, 3)
    client = gt.runtime.client.current()

    def train_step() -> int:
        before = client.next_request
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
        return client.next_request - before

    for _ in range(7):
        train_step()
    misses = gt.debug.get_dispatcher_stats()['plan_misses']
    assert [train_step() for _ in range(4)] == [1] * 4
    assert gt.debug.get_dispatcher_stats()['plan_misses'] == misses


@pytest.mark.parametrize('make, problem', [
    (lambda p: optim.NAdam(p, lr=-1), 'lr=-1'),
    (lambda p: optim.NAdam(p, momentum_decay=-1), 'momentum_decay=-1'),
    (lambda p: optim.RAdam(p, betas=(0.9, 1.0)), 'beta 1'),
    (lambda p: optim.Adamax(p, eps=-1), 'eps=-1'),
    (lambda p: optim.Adadelta(p, rho=1.5), 'rho=1.5'),
    (lambda p: optim.ASGD(p, weight_decay=-1), 'weight_decay=-1'),
    (lambda p: optim.ASGD(p, differentiable=True), 'differentiable'),
    (lambda p: optim.Rprop(p, lr=-1), 'lr=-1'),
    (lambda p: optim.Rprop(p, etas=(1.5, 2.0)), r'etas=\(1.5, 2.0\)'),
], ids=['nadam-lr', 'nadam-momentum-decay', 'radam-betas', 'adamax-eps', 'adadelta-rho',
        'asgd-weight-decay', 'asgd-differentiable', 'rprop-lr', 'rprop-etas'])
def test_hyperparameters_are_checked_as_in_torch(make, problem):
    with pytest.raises(ValueError, match=problem):
        make(nn.Linear(3, 2).parameters())
