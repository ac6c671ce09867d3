"""Optimizers against torch.optim's single-tensor implementations: the same model, data
and hyperparameters give the same parameters after every step; and a step is sent as
one fragment whose structure repeats, so the dispatcher's plan cache hits."""

import pytest
import torch
from nn_check import assert_close, randn, seeded

import gt
import gt.nn as nn
import gt.nn.functional as F

CASES = [
    ('SGD', dict(lr=0.1)),
    ('SGD', dict(lr=0.1, momentum=0.9)),
    ('SGD', dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ('SGD', dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ('SGD', dict(lr=0.05, maximize=True)),
    ('Adam', dict(lr=0.01)),
    ('Adam', dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ('Adam', dict(lr=0.01, betas=(0.3, 0.99), eps=1e-6)),
    ('AdamW', dict(lr=0.01)),
    ('AdamW', dict(lr=0.02, weight_decay=0.5, amsgrad=True)),
]


def models() -> tuple[nn.Module, torch.nn.Module]:
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    mine = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


def torch_optimizer(name: str, params, **options) -> torch.optim.Optimizer:
    return getattr(torch.optim, name)(params, foreach=False, **options)


@pytest.mark.parametrize('name,options', CASES, ids=[f'{n}-{i}' for i, (n, _) in
                                                     enumerate(CASES)])
def test_steps_match_torch(name, options):
    mine, theirs = models()
    optimizer = getattr(nn, name)(mine.parameters(), **options)
    expected = torch_optimizer(name, theirs.parameters(), **options)
    generator = seeded()
    for _ in range(6):
        x, y = randn(5, 6, generator=generator), randn(5, 3, generator=generator)
        F.mse_loss(mine(gt.tensor(x)), gt.tensor(y)).backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(theirs(x), y).backward()
        expected.step()
        expected.zero_grad()
        for (_, got), (_, want) in zip(mine.state_dict().items(), theirs.state_dict().items()):
            assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_param_groups_skipped_parameters_and_closure():
    mine, theirs = models()
    groups = lambda model: [{'params': model[0].parameters(), 'lr': 0.5},  # noqa: E731
                            {'params': model[2].parameters()}]
    optimizer = nn.SGD(groups(mine), lr=0.1, momentum=0.5)
    expected = torch_optimizer('SGD', groups(theirs), lr=0.1, momentum=0.5)
    assert [group['lr'] for group in optimizer.param_groups] == [0.5, 0.1]
    x = randn(4, 6)
    for step in range(3):
        if step == 2:  # the learning rate may change between steps, as in torch
            optimizer.param_groups[1]['lr'] = expected.param_groups[1]['lr'] = 0.01
        # Only the last layer keeps a gradient: parameters without one are left alone.
        def closure():
            mine(gt.tensor(x)).sum().backward()
            mine[0].zero_grad()
            return 'ran'

        assert optimizer.step(closure) == 'ran'
        theirs(x).sum().backward()
        theirs[0].zero_grad()
        expected.step()
    for (_, got), (_, want) in zip(mine.state_dict().items(), theirs.state_dict().items()):
        assert_close(got, want)


def test_zero_grad_and_errors():
    layer = nn.Linear(3, 2)
    optimizer = nn.Adam(layer.parameters())
    layer(gt.randn(4, 3)).sum().backward()
    optimizer.zero_grad(set_to_none=False)
    assert layer.weight.grad.data.abs().sum() == 0
    optimizer.zero_grad()
    assert layer.weight.grad is None
    with pytest.raises(ValueError, match='empty parameter list'):
        nn.SGD([], lr=0.1)
    with pytest.raises(ValueError, match='non-leaf'):
        nn.SGD([layer.weight * 2], lr=0.1)
    with pytest.raises(ValueError, match='appears twice'):
        nn.SGD([{'params': [layer.weight]}, {'params': [layer.weight]}], lr=0.1)
    with pytest.raises(ValueError, match='lr=-1'):
        nn.Adam(layer.parameters(), lr=-1)


@pytest.mark.parametrize('name', ['SGD', 'Adam'])
def test_every_step_is_one_fragment_of_the_same_structure(name):
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = getattr(nn, name)(model.parameters(), lr=0.01)
    x, y = gt.randn(5, 6), gt.tensor(torch.randint(0, 3, (5,), generator=seeded()))
    client = gt.runtime.client.current()

    def step() -> int:
        before = client.next_request
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        return client.next_request - before

    for _ in range(3):
        step()
    misses = gt.debug.get_dispatcher_stats()['plan_misses']
    assert [step() for _ in range(5)] == [1] * 5  # one message per step
    assert gt.debug.get_dispatcher_stats()['plan_misses'] == misses
