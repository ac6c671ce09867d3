"""gt.nn.init against torch.nn.init: after the same seed each function draws torch's
values bit for bit, fills the tensor in place (the same object, still a leaf Parameter)
and returns it; fans, gains and errors are torch's."""

import math

import pytest
import torch

import gt
import gt.nn as nn
from gt.nn import init

# (function, keyword arguments), each one visible as a case.
DRAWS = [
    ('uniform_', {}),
    ('uniform_', {'a': -3.0, 'b': 0.5}),
    ('normal_', {}),
    ('normal_', {'mean': 1.0, 'std': 0.02}),
    ('xavier_uniform_', {}),
    ('xavier_uniform_', {'gain': init.calculate_gain('relu')}),
    ('xavier_normal_', {'gain': 2.0}),
    ('kaiming_uniform_', {}),
    ('kaiming_uniform_', {'a': math.sqrt(5)}),
    ('kaiming_uniform_', {'mode': 'fan_out', 'nonlinearity': 'relu'}),
    ('kaiming_normal_', {}),
    ('kaiming_normal_', {'mode': 'fan_out', 'nonlinearity': 'tanh'}),
    ('trunc_normal_', {}),
    ('trunc_normal_', {'std': 0.02}),
    ('trunc_normal_', {'mean': 0.0, 'std': 1.0, 'a': 0.5, 'b': 1.0}),  # rejection sampling
    ('trunc_normal_', {'mean': 1.0, 'std': 0.5, 'a': -1.0, 'b': 0.0}),
]


def case_id(case) -> str:
    name, kwargs = case
    return '-'.join([name, *(f'{k}={v:g}' if isinstance(v, float) else f'{k}={v}'
                             for k, v in kwargs.items())])


@pytest.mark.parametrize('shape', [(16, 12), (6, 4, 3, 3)])
@pytest.mark.parametrize('case', DRAWS, ids=case_id)
def test_draws_are_torchs_after_the_same_seed(case, shape):
    name, kwargs = case
    parameter = nn.Parameter(gt.zeros(*shape))
    gt.manual_seed(11)
    result = getattr(init, name)(parameter, **kwargs)  # outside no_grad, as scripts call it
    theirs = torch.empty(shape)
    torch.manual_seed(11)
    getattr(torch.nn.init, name)(theirs, **kwargs)
    assert result is parameter
    assert parameter.is_leaf and parameter.requires_grad and parameter.grad_fn is None
    assert torch.equal(parameter.data, theirs)


def test_trunc_normal_stays_within_its_bounds():
    tensor = init.trunc_normal_(gt.zeros(200, 100), mean=0.3, std=1.0, a=-0.5, b=0.8).data
    assert -0.5 <= tensor.min() and tensor.max() <= 0.8
    assert tensor.std() > 0.3  # not collapsed onto a bound


def test_double_tensors_draw_torchs_values():
    tensor, theirs = gt.zeros(5, 7, dtype=torch.float64), torch.empty(5, 7, dtype=torch.float64)
    gt.manual_seed(3)
    init.kaiming_normal_(tensor)
    torch.manual_seed(3)
    torch.nn.init.kaiming_normal_(theirs)
    assert tensor.dtype == torch.float64 and torch.equal(tensor.data, theirs)


@pytest.mark.parametrize('name,args,value', [('constant_', (0.25,), 0.25), ('ones_', (), 1.0),
                                             ('zeros_', (), 0.0)])
def test_fills(name, args, value):
    parameter = nn.Parameter(gt.randn(3, 4))
    assert getattr(init, name)(parameter, *args) is parameter
    assert torch.equal(parameter.data, torch.full((3, 4), value))
    assert parameter.is_leaf and parameter.requires_grad


def test_a_parameter_filled_in_place_still_trains():
    layer = nn.Linear(3, 2)
    init.zeros_(layer.bias)
    init.ones_(layer.weight)
    layer(gt.ones(4, 3)).sum().backward()
    assert torch.equal(layer.weight.grad.data, torch.full((2, 3), 4.0))
    assert torch.equal(layer.bias.grad.data, torch.full((2,), 4.0))


@pytest.mark.parametrize('shape', [(5, 3), (8, 4, 3), (6, 2, 3, 5), (1, 1, 1, 1, 7)])
def test_fans_are_torchs(shape):
    assert init._calculate_fan_in_and_fan_out(gt.zeros(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


@pytest.mark.parametrize('nonlinearity,param', [
    ('linear', None), ('conv2d', None), ('sigmoid', None), ('tanh', None), ('relu', None),
    ('leaky_relu', None), ('leaky_relu', 0.2), ('leaky_relu', 3), ('selu', None)])
def test_gains_are_torchs(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == \
        torch.nn.init.calculate_gain(nonlinearity, param)


@pytest.mark.parametrize('call', [
    lambda nn_init, t: nn_init._calculate_fan_in_and_fan_out(t[0]),  # fewer than 2 dims
    lambda nn_init, t: nn_init.kaiming_uniform_(t, mode='fan_avg'),
    lambda nn_init, t: nn_init.kaiming_normal_(t, nonlinearity='softsign'),
    lambda nn_init, t: nn_init.calculate_gain('leaky_relu', True),
], ids=['one-dim-fan', 'bad-mode', 'bad-nonlinearity', 'bool-slope'])
def test_errors_are_torchs(call):
    with pytest.raises(ValueError) as theirs:
        call(torch.nn.init, torch.empty(3, 4))
    with pytest.raises(ValueError, match=str(theirs.value).replace('[', r'\[')):
        call(init, gt.zeros(3, 4))


@pytest.mark.parametrize('name, args', [
    ('uniform_', (-1.0, 2.0)), ('normal_', (0.5, 2.0)), ('xavier_uniform_', ()),
    ('kaiming_normal_', ()), ('trunc_normal_', (0.0, 1.0, -0.5, 0.5)), ('orthogonal_', ()),
    ('sparse_', (0.5,)),
])
def test_a_generator_draws_torchs_values_and_advances_as_torchs(name, args):
    """A torch.Generator lives in the script's process: the values are those torch draws
    from it, and it is left where torch leaves it. (torch's sparse_ draws its permutations
    from the default generator whatever it is given: so does GT's, here.)"""
    mine, theirs = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    tensor = gt.zeros(4, 6)
    torch.manual_seed(3)
    assert getattr(init, name)(tensor, *args, generator=mine) is tensor
    torch.manual_seed(3)
    expected = getattr(torch.nn.init, name)(torch.empty(4, 6), *args, generator=theirs)
    assert torch.equal(tensor.data, expected)
    assert torch.equal(torch.rand(3, generator=mine), torch.rand(3, generator=theirs))


def test_an_empty_tensor_warns_and_stays_as_it_is():
    tensor = gt.zeros(0, 3)
    with pytest.warns(UserWarning, match='zero-element'):
        assert init.kaiming_uniform_(tensor) is tensor
