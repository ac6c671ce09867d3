"""Conv1d, Conv2d and the pooling modules against torch.nn: values and gradients with
torch's weights, repr, state_dict keys, default initialization (torch's draws after the
same seed) and argument errors; and a small CNN trained a few steps."""

import math

import pytest
import torch
from nn_check import check_module, randn

import gt
import gt.nn as nn

# torch's own warning, raised on the worker for an even kernel with padding='same'.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


def pair(name: str, *args, **kwargs) -> tuple[nn.Module, torch.nn.Module]:
    """GT's and torch's module of the same name, made with the same arguments."""
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


# (in_channels, out_channels, kernel_size, keyword arguments), each one visible as a case.
CONV1D = [
    (3, 4, 3, {}),
    (3, 4, 1, {'bias': False}),
    (2, 6, 5, {'stride': 2, 'padding': 2}),
    (4, 4, 3, {'dilation': 2, 'padding': 1}),
    (4, 6, 3, {'groups': 2}),
    (4, 8, 3, {'groups': 4, 'bias': False}),
    (3, 4, 4, {'padding': 'same'}),
    (3, 4, 4, {'padding': 'same', 'dilation': 3}),
    (3, 4, 3, {'padding': 'valid', 'stride': 3}),
]
CONV2D = [
    (3, 4, 3, {}),
    (3, 5, (3, 2), {'bias': False}),
    (2, 4, 3, {'stride': 2, 'padding': 1}),
    (2, 4, 3, {'stride': (2, 1), 'padding': (0, 2)}),
    (4, 4, 3, {'dilation': 2}),
    (4, 4, (2, 3), {'dilation': (1, 2), 'padding': (1, 0)}),
    (4, 6, 3, {'groups': 2, 'padding': 1}),
    (4, 4, 3, {'groups': 4, 'stride': 2}),
    (3, 4, 3, {'padding': 'same'}),
    (3, 4, (2, 4), {'padding': 'same', 'dilation': (2, 1)}),
    (3, 4, 2, {'padding': 'valid'}),
]


def case_id(case) -> str:
    in_channels, out_channels, kernel_size, options = case
    text = ','.join(f'{key}={value}' for key, value in options.items())
    return f'{in_channels}-{out_channels}-k{kernel_size}' + (f'-{text}' if text else '')


@pytest.mark.parametrize('case', CONV1D, ids=case_id)
def test_conv1d(case):
    in_channels, out_channels, kernel_size, options = case
    mine, theirs = pair('Conv1d', in_channels, out_channels, kernel_size, **options)
    check_module(mine, theirs, randn(2, in_channels, 11), rtol=1e-4, atol=1e-5)
    assert repr(mine) == repr(theirs)


@pytest.mark.parametrize('case', CONV2D, ids=case_id)
def test_conv2d(case):
    in_channels, out_channels, kernel_size, options = case
    mine, theirs = pair('Conv2d', in_channels, out_channels, kernel_size, **options)
    check_module(mine, theirs, randn(2, in_channels, 9, 8), rtol=1e-4, atol=1e-5)
    assert repr(mine) == repr(theirs)


@pytest.mark.parametrize('name,shape', [('Conv1d', (3, 10)), ('Conv2d', (3, 7, 6))])
def test_conv_of_an_unbatched_input(name, shape):
    check_module(*pair(name, 3, 2, 3, padding=1), randn(*shape), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('name', ['Conv1d', 'Conv2d'])
@pytest.mark.parametrize('bias', [True, False])
def test_conv_parameters_and_state_dict_are_torchs(name, bias):
    mine, theirs = pair(name, 6, 4, 3, groups=2, bias=bias)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    for (name_mine, mine_parameter), (name_theirs, theirs_parameter) in zip(
            mine.named_parameters(), theirs.named_parameters(), strict=True):
        assert name_mine == name_theirs
        assert tuple(mine_parameter.shape) == tuple(theirs_parameter.shape)
        assert mine_parameter.is_leaf and mine_parameter.requires_grad
    for attribute in ('in_channels', 'out_channels', 'kernel_size', 'stride', 'padding',
                      'dilation', 'groups', 'padding_mode', 'transposed', 'output_padding'):
        assert getattr(mine, attribute) == getattr(theirs, attribute), attribute


@pytest.mark.parametrize('name,args', [('Conv1d', (3, 8, 5)), ('Conv2d', (4, 6, (3, 2))),
                                       ('Conv2d', (4, 6, 3, 1, 0, 1, 2))])
def test_conv_initialization_is_torchs_after_the_same_seed(name, args):
    gt.manual_seed(7)
    mine = getattr(nn, name)(*args)
    torch.manual_seed(7)
    theirs = getattr(torch.nn, name)(*args)
    for key, value in theirs.state_dict().items():
        assert torch.equal(mine.state_dict()[key], value), key


def test_conv_initialization_bounds():
    layer = nn.Conv2d(16, 64, 5)  # fan_in 400, 25,600 weights
    bound = 1 / math.sqrt(16 * 25)
    weight, bias = layer.weight.data, layer.bias.data
    assert weight.abs().max() <= bound and bias.abs().max() <= bound
    assert abs(weight.mean().item()) < 0.02 * bound
    assert abs(weight.std().item() - bound / math.sqrt(3)) < 0.02 * bound


def test_conv_initialization_sends_no_data(monkeypatch):
    client = gt.runtime.client.current()
    sent = []
    monkeypatch.setattr(client, 'add_data', lambda array: sent.append(array) or 0)
    nn.Sequential(nn.Conv1d(3, 8, 3), nn.Conv2d(8, 16, 3, groups=2), nn.MaxPool2d(2))
    assert sent == []


def test_conv_dtype_argument():
    layer = nn.Conv1d(2, 3, 3, dtype=torch.float64)
    assert layer.weight.dtype == layer.bias.dtype == torch.float64
    check_module(layer, torch.nn.Conv1d(2, 3, 3, dtype=torch.float64),
                 randn(2, 2, 6).double())


@pytest.mark.parametrize('kwargs', [
    {'groups': 0}, {'groups': 2, 'in_channels': 3}, {'groups': 2, 'out_channels': 3},
    {'padding': 'full'}, {'padding': 'same', 'stride': 2}, {'padding_mode': 'mirror'},
], ids=lambda kwargs: ','.join(f'{key}={value}' for key, value in kwargs.items()))
@pytest.mark.parametrize('name', ['Conv1d', 'Conv2d'])
def test_conv_bad_arguments_raise_torchs_errors(name, kwargs):
    arguments = {'in_channels': 4, 'out_channels': 4, 'kernel_size': 3, **kwargs}
    with pytest.raises(ValueError) as theirs:
        getattr(torch.nn, name)(**arguments)
    with pytest.raises(ValueError) as mine:
        getattr(nn, name)(**arguments)
    if 'padding_mode' not in kwargs and 'padding' not in kwargs:  # sets print in any order
        assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize('padding', [1, (1, 2), 'same'], ids=str)
@pytest.mark.parametrize('padding_mode', ['reflect', 'replicate', 'circular'])
def test_conv_padding_modes_pad_then_convolve_as_torch(padding_mode, padding):
    mine = nn.Conv2d(2, 3, 3, padding=padding, padding_mode=padding_mode)
    theirs = torch.nn.Conv2d(2, 3, 3, padding=padding, padding_mode=padding_mode)
    assert repr(mine) == repr(theirs)
    assert mine._reversed_padding_repeated_twice == theirs._reversed_padding_repeated_twice
    check_module(mine, theirs, randn(2, 2, 5, 6))
    check_module(nn.Conv1d(2, 2, 3, padding=2, padding_mode=padding_mode),
                 torch.nn.Conv1d(2, 2, 3, padding=2, padding_mode=padding_mode), randn(1, 2, 7))


# ---- pooling ---------------------------------------------------------------------------
POOLS = [
    ('MaxPool1d', (2,), {}),
    ('MaxPool1d', (3,), {'stride': 2, 'padding': 1}),
    ('MaxPool1d', (3,), {'dilation': 2, 'ceil_mode': True}),
    ('MaxPool2d', (2,), {}),
    ('MaxPool2d', ((3, 2),), {'stride': (2, 1), 'padding': (1, 0)}),
    ('MaxPool2d', (3,), {'stride': 2, 'dilation': 2, 'ceil_mode': True}),
    ('AvgPool1d', (2,), {}),
    ('AvgPool1d', (3,), {'stride': 2, 'padding': 1, 'count_include_pad': False}),
    ('AvgPool1d', (4,), {'stride': 3, 'ceil_mode': True}),
    ('AvgPool2d', (2,), {}),
    ('AvgPool2d', ((3, 2),), {'stride': (1, 2), 'padding': (1, 1)}),
    ('AvgPool2d', (3,), {'stride': 2, 'padding': 1, 'count_include_pad': False,
                         'ceil_mode': True}),
    ('AvgPool2d', (2,), {'divisor_override': 3}),
    ('AdaptiveAvgPool1d', (4,), {}),
    ('AdaptiveAvgPool1d', (1,), {}),
    ('AdaptiveAvgPool2d', ((1, 1),), {}),
    ('AdaptiveAvgPool2d', (3,), {}),
    ('AdaptiveAvgPool2d', ((None, 2),), {}),
]


def pool_id(case) -> str:
    name, args, options = case
    return '-'.join([name, *map(str, args), *(f'{k}={v}' for k, v in options.items())])


@pytest.mark.parametrize('case', POOLS, ids=pool_id)
def test_pooling(case):
    name, args, options = case
    mine, theirs = pair(name, *args, **options)
    shape = (2, 3, 11) if name.endswith('1d') else (2, 3, 9, 7)
    check_module(mine, theirs, randn(*shape))
    assert repr(mine) == repr(theirs)
    assert mine.state_dict() == theirs.state_dict() == {}


@pytest.mark.parametrize('name,shape', [('MaxPool1d', (2, 3, 8)), ('MaxPool2d', (2, 3, 6, 5))])
def test_max_pool_return_indices(name, shape):
    mine, theirs = pair(name, 2, return_indices=True, ceil_mode=True)
    x_theirs = randn(*shape).requires_grad_()
    x_mine = gt.tensor(x_theirs.detach(), requires_grad=True)
    (out_mine, indices_mine), (out_theirs, indices_theirs) = mine(x_mine), theirs(x_theirs)
    assert torch.equal(out_mine.data, out_theirs.detach())
    assert torch.equal(indices_mine.data, indices_theirs)
    (out_mine * 2).sum().backward()
    (out_theirs * 2).sum().backward()
    assert torch.equal(x_mine.grad.data, x_theirs.grad)


# ---- a small CNN ---------------------------------------------------------------------
def small_cnn(nn_module) -> object:
    return nn_module.Sequential(
        nn_module.Conv2d(1, 4, 3, padding=1), nn_module.ReLU(), nn_module.MaxPool2d(2),
        nn_module.Conv2d(4, 6, 3, stride=2, groups=2), nn_module.LeakyReLU(0.1),
        nn_module.AdaptiveAvgPool2d((2, 2)), nn_module.Flatten(), nn_module.Linear(24, 5))


def test_small_cnn_trains_as_torch_does():
    mine, theirs = small_cnn(nn), small_cnn(torch.nn)
    mine.load_state_dict(theirs.state_dict())
    images, labels = randn(8, 1, 12, 12), torch.arange(8) % 5
    optimizer_mine = gt.optim.SGD(mine.parameters(), lr=0.1, momentum=0.9)
    optimizer_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    x, y = gt.tensor(images), gt.tensor(labels)
    losses_mine, losses_theirs = [], []
    for _ in range(3):
        optimizer_mine.zero_grad()
        loss = nn.functional.cross_entropy(mine(x), y)
        loss.backward()
        optimizer_mine.step()
        losses_mine.append(loss.item())
        optimizer_theirs.zero_grad()
        loss = torch.nn.functional.cross_entropy(theirs(images), labels)
        loss.backward()
        optimizer_theirs.step()
        losses_theirs.append(loss.item())
    assert losses_theirs[2] < losses_theirs[0]
    assert losses_mine == pytest.approx(losses_theirs, abs=1e-5)
    for key, value in theirs.state_dict().items():
        torch.testing.assert_close(mine.state_dict()[key], value, rtol=1e-5, atol=1e-6)
