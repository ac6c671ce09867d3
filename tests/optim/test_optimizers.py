"""gt.optim's optimizers against torch.optim's single-tensor implementations: the same
weights, data and hyperparameters give the same parameters after every step; parameter
groups and state dicts have torch's keys and layout, and load both ways."""

import pytest
import torch
from optim_check import assert_close, assert_same_weights, backward_both, batches, models

import gt
import gt.nn as nn
import gt.optim as optim

CASES = [
    ('RMSprop', dict()),
    ('RMSprop', dict(lr=0.01, alpha=0.9, momentum=0.5, weight_decay=0.1)),
    ('RMSprop', dict(lr=0.005, centered=True, momentum=0.3, eps=1e-6)),
    ('RMSprop', dict(lr=0.01, centered=True, maximize=True)),
    ('Adagrad', dict()),
    ('Adagrad', dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2,
                     eps=1e-8)),
    ('Adagrad', dict(lr=0.05, maximize=True)),
    ('SGD', dict(lr=0.1, momentum=0.9, nesterov=True)),
    ('AdamW', dict(lr=0.01, amsgrad=True)),
]
NAMES = ['SGD', 'Adam', 'AdamW', 'RMSprop', 'Adagrad']


def torch_optimizer(name: str, params, **options) -> torch.optim.Optimizer:
    return getattr(torch.optim, name)(params, foreach=False, **options)


def train(mine, theirs, optimizer, expected, steps: int, check: bool = True) -> None:
    for batch in batches(steps):
        backward_both(mine, theirs, batch)
        optimizer.step()
        optimizer.zero_grad()
        expected.step()
        expected.zero_grad()
        if check:
            assert_same_weights(mine, theirs)


@pytest.mark.parametrize('name,options', CASES, ids=[f'{n}-{i}' for i, (n, _) in
                                                     enumerate(CASES)])
def test_steps_match_torch(name, options):
    mine, theirs = models()
    train(mine, theirs, getattr(optim, name)(mine.parameters(), **options),
          torch_optimizer(name, theirs.parameters(), **options), steps=5)


@pytest.mark.parametrize('name', NAMES)
def test_groups_and_defaults_have_torchs_keys(name):
    mine, theirs = models()
    optimizer = getattr(optim, name)(mine.parameters())
    expected = getattr(torch.optim, name)(theirs.parameters())
    assert optimizer.defaults == expected.defaults
    assert [{k: v for k, v in group.items() if k != 'params'}
            for group in optimizer.param_groups] == [
        {k: v for k, v in group.items() if k != 'params'} for group in expected.param_groups]


STATEFUL = [('SGD', dict(lr=0.1, momentum=0.9)), ('Adam', dict(lr=0.01, amsgrad=True)),
            ('RMSprop', dict(lr=0.01, momentum=0.5, centered=True)), ('Adagrad', dict(lr=0.1)),
            ('Adafactor', dict(lr=0.01))]


def two_groups(model):
    return [{'params': model[0].parameters(), 'lr': 0.05}, {'params': model[2].parameters()}]


@pytest.mark.parametrize('name,options', STATEFUL, ids=[name for name, _ in STATEFUL])
def test_state_dict_has_torchs_layout(name, options):
    mine, theirs = models()
    optimizer = getattr(optim, name)(two_groups(mine), foreach=False, **options)
    expected = torch_optimizer(name, two_groups(theirs), **options)
    train(mine, theirs, optimizer, expected, steps=3, check=False)
    got, want = optimizer.state_dict(), expected.state_dict()
    assert got['param_groups'] == want['param_groups']
    assert list(got['state']) == list(want['state']) == [0, 1, 2, 3]
    for index, entries in want['state'].items():
        assert list(got['state'][index]) == list(entries)
        for key, value in entries.items():
            assert isinstance(got['state'][index][key], gt.Tensor)
            assert_close(got['state'][index][key], value)


@pytest.mark.parametrize('name,options', STATEFUL, ids=[name for name, _ in STATEFUL])
def test_a_torch_state_dict_loads_and_training_goes_on(name, options):
    mine, theirs = models()
    expected = torch_optimizer(name, two_groups(theirs), **options)
    for batch in batches(2):
        torch.nn.functional.mse_loss(theirs(batch[0]), batch[1]).backward()
        expected.step()
        expected.zero_grad()
    expected.param_groups[0]['lr'] = 0.02  # hyperparameters come from the state dict
    mine.load_state_dict(theirs.state_dict())
    optimizer = getattr(optim, name)(two_groups(mine), lr=0.5)
    optimizer.load_state_dict(expected.state_dict())
    assert [group['lr'] for group in optimizer.param_groups] == [0.02, options['lr']]
    assert optimizer.param_groups[0]['params'] == list(mine[0].parameters())
    train(mine, theirs, optimizer, expected, steps=3)


def test_load_state_dict_errors():
    mine, _ = models()
    optimizer = optim.Adam(two_groups(mine))
    other = optim.Adam(mine.parameters())
    with pytest.raises(ValueError, match='different number of parameter groups'):
        optimizer.load_state_dict(other.state_dict())
    state = optim.Adam(two_groups(mine)).state_dict()
    state['param_groups'][1]['params'] = [2]
    with pytest.raises(ValueError, match="doesn't match the size"):
        optimizer.load_state_dict(state)
    state = optim.SGD(two_groups(mine), momentum=0.9).state_dict()
    state['state'][7] = {'momentum_buffer': torch.zeros(3)}
    with pytest.raises(ValueError, match=r'parameter\(s\) \[7\], which no parameter group'):
        optimizer.load_state_dict(state)


def test_state_that_is_not_a_parameters_round_trips_as_in_torch():
    mine, theirs = models()
    for optimizer in (optim.SGD(mine.parameters(), momentum=0.9),
                      torch.optim.SGD(theirs.parameters(), momentum=0.9)):
        optimizer.state['restarts'] = 3
        state = optimizer.state_dict()
        assert state['state'] == {'restarts': 3}
        optimizer.state.clear()
        optimizer.load_state_dict(state)
        assert optimizer.state['restarts'] == 3


def test_loaded_state_takes_the_parameters_dtype_and_step_counts_are_numbers():
    mine, _ = models()
    optimizer = optim.Adam(mine.parameters())
    state = {'state': {0: {'step': torch.tensor(4.0), 'exp_avg': torch.ones(8, 6).double(),
                           'exp_avg_sq': gt.ones(8, 6, dtype=torch.float64)},
                       1: {'step': gt.tensor(2.0), 'exp_avg': torch.zeros(8),
                           'exp_avg_sq': torch.zeros(8)}},
             'param_groups': [dict(optimizer.state_dict()['param_groups'][0], lr=0.5)]}
    optimizer.load_state_dict(state)
    loaded = optimizer.state[mine[0].weight]
    assert loaded['step'] == 4 and isinstance(loaded['step'], int)
    assert optimizer.state[mine[0].bias]['step'] == 2
    assert loaded['exp_avg'].dtype == loaded['exp_avg_sq'].dtype == torch.float32
    assert optimizer.param_groups[0]['lr'] == 0.5
    assert state['param_groups'][0]['params'] == [0, 1, 2, 3]  # the caller's dict is unchanged


def test_named_parameters_and_added_groups_as_in_torch():
    mine, theirs = models()
    optimizer = optim.SGD(mine[0].named_parameters(), lr=0.1, momentum=0.9, foreach=False)
    expected = torch_optimizer('SGD', theirs[0].named_parameters(), lr=0.1, momentum=0.9)
    assert optimizer.param_groups[0]['param_names'] == ['weight', 'bias']
    train(mine, theirs, optimizer, expected, steps=2)
    # Fine-tuning: a frozen layer joins later, with its own learning rate.
    optimizer.add_param_group({'params': mine[2].named_parameters(), 'lr': 0.01})
    expected.add_param_group({'params': theirs[2].named_parameters(), 'lr': 0.01})
    train(mine, theirs, optimizer, expected, steps=2)
    assert optimizer.state_dict()['param_groups'] == expected.state_dict()['param_groups']
    with pytest.raises(ValueError, match='with/without names'):
        optimizer.add_param_group({'params': [nn.Parameter(torch.zeros(2))]})
    with pytest.raises(TypeError, match='ordered collections'):
        optim.SGD([{'params': set(mine.parameters())}])
    with pytest.raises(TypeError, match='iterable of Tensors'):
        optim.SGD(mine[0].weight)


def test_zero_grad_and_hyperparameter_errors():
    layer = nn.Linear(3, 2)
    optimizer = optim.RMSprop(layer.parameters())
    layer(gt.randn(4, 3)).sum().backward()
    optimizer.zero_grad(set_to_none=False)
    assert layer.weight.grad.data.abs().sum() == 0
    optimizer.zero_grad()
    assert layer.weight.grad is None
    for make, problem in [(lambda: optim.RMSprop(layer.parameters(), alpha=-1), 'alpha=-1'),
                          (lambda: optim.Adagrad(layer.parameters(), lr_decay=-1), 'lr_decay'),
                          (lambda: optim.Adam(layer.parameters(), betas=(1.0, 0.9)), 'beta 0'),
                          (lambda: optim.SGD(layer.parameters(), differentiable=True),
                           'differentiable')]:
        with pytest.raises(ValueError, match=problem):
            make()


def test_the_old_names_are_the_new_classes():
    import gt.nn.optim

    for name in NAMES:
        assert getattr(gt.nn.optim, name) is getattr(optim, name)
    assert nn.SGD is optim.SGD and nn.Optimizer is optim.Optimizer
    assert gt.optim.lr_scheduler.StepLR is optim.lr_scheduler.StepLR


HELD = [('SGD', dict(lr=0.1, momentum=0.9)), ('Adam', dict(amsgrad=True)), ('RMSprop', dict(
    momentum=0.5, centered=True)), ('Adagrad', dict()), ('NAdam', dict()), ('RAdam', dict()),
    ('Adamax', dict()), ('Adadelta', dict()), ('ASGD', dict(t0=1)), ('Rprop', dict()),
    ('Adafactor', dict())]


@pytest.mark.parametrize('name,options', HELD, ids=[name for name, _ in HELD])
def test_state_tensors_are_updated_in_place_as_torchs(name, options):
    """A reference held to a state tensor (`state['exp_avg']`) sees every later step, as
    torch's in-place updates let it: GT's optimizers rebind their state tensors."""
    mine, theirs = models()
    optimizer = getattr(optim, name)(mine.parameters(), **options)
    expected = torch_optimizer(name, theirs.parameters(), **options)
    train(mine, theirs, optimizer, expected, steps=1)
    held = [(key, value, expected.state[theirs_param][key])
            for mine_param, theirs_param in zip(mine.parameters(), theirs.parameters())
            for key, value in optimizer.state[mine_param].items()
            if isinstance(value, gt.Tensor)]
    assert held, 'no state tensors to hold'
    train(mine, theirs, optimizer, expected, steps=3, check=False)
    for _, value, want in held:
        assert_close(value, want)


def test_an_optimizer_of_several_groups_prints_as_torchs():
    printed = []
    for library in (torch, gt):
        first, second = (library.nn.Parameter(library.ones(1)) for _ in range(2))
        printed.append(repr(library.optim.SGD([{'params': [first]},
                                               {'params': [second], 'lr': 0.5}], lr=0.1)))
    assert printed[0] == printed[1]
