"""Conv3d, ConvTranspose1d/2d/3d, the 3-d and adaptive max pooling modules against torch.nn:
values and gradients with torch's weights, repr, state_dict keys, parameter shapes,
torch's draws after the same seed, `output_size`, and torch's argument errors; and a small
encoder-decoder of the new layers trained a few steps as torch trains it."""

import pytest
import torch
from nn_check import check_module, randn

import gt
import gt.nn as nn


def pair(name: str, *args, **kwargs) -> tuple[nn.Module, torch.nn.Module]:
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def case_id(case) -> str:
    name, args, kwargs = case[:3]
    return '-'.join([name, *map(str, args), *(f'{k}={v}' for k, v in kwargs.items())])


# (name, positional arguments, keyword arguments, input shape)
CONVOLUTIONS = [
    ('Conv3d', (2, 4, 3), {}, (2, 2, 5, 4, 5)),
    ('Conv3d', (4, 4, (1, 2, 3)), {'groups': 2, 'padding': 1, 'bias': False}, (1, 4, 3, 4, 5)),
    ('Conv3d', (2, 3, 2), {'stride': 2, 'dilation': (1, 2, 1)}, (2, 5, 6, 5)),
    ('ConvTranspose1d', (3, 4, 3), {}, (2, 3, 6)),
    ('ConvTranspose1d', (4, 6, 4), {'stride': 3, 'padding': 1, 'output_padding': 2,
                                    'groups': 2}, (2, 4, 5)),
    ('ConvTranspose1d', (2, 2, 3), {'dilation': 2, 'bias': False}, (2, 7)),
    ('ConvTranspose2d', (3, 4, 3), {}, (2, 3, 4, 5)),
    ('ConvTranspose2d', (4, 2, (3, 2)), {'stride': (2, 3), 'padding': (1, 0),
                                         'output_padding': (1, 2), 'groups': 2},
     (2, 4, 3, 4)),
    ('ConvTranspose2d', (2, 3, 3), {'stride': 2, 'dilation': 2, 'output_padding': 1,
                                    'bias': False}, (2, 4, 3)),
    ('ConvTranspose3d', (2, 2, 2), {'stride': 2}, (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize('case', CONVOLUTIONS, ids=case_id)
def test_convolution(case):
    name, args, kwargs, shape = case
    mine, theirs = pair(name, *args, **kwargs)
    check_module(mine, theirs, randn(*shape), rtol=1e-4, atol=1e-5)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    for (name_mine, mine_parameter), (name_theirs, theirs_parameter) in zip(
            mine.named_parameters(), theirs.named_parameters(), strict=True):
        assert name_mine == name_theirs
        assert tuple(mine_parameter.shape) == tuple(theirs_parameter.shape)
    for attribute in ('kernel_size', 'stride', 'padding', 'dilation', 'groups', 'transposed',
                      'output_padding', 'padding_mode'):
        assert getattr(mine, attribute) == getattr(theirs, attribute), attribute


@pytest.mark.parametrize('name,args', [('Conv3d', (2, 4, 3)), ('ConvTranspose1d', (3, 8, 5)),
                                       ('ConvTranspose2d', (4, 6, (3, 2), 1, 0, 0, 2))])
def test_initialization_is_torchs_after_the_same_seed(name, args):
    gt.manual_seed(11)
    mine = getattr(nn, name)(*args)
    torch.manual_seed(11)
    theirs = getattr(torch.nn, name)(*args)
    for key, value in theirs.state_dict().items():
        assert torch.equal(mine.state_dict()[key], value), key


@pytest.mark.parametrize('output_size', [[9, 11], [2, 4, 10, 12], [10, 11]],
                         ids=['spatial', 'with-batch-and-channels', 'mixed'])
def test_transposed_output_size(output_size):
    mine, theirs = pair('ConvTranspose2d', 4, 2, 3, stride=2, padding=1)
    mine.load_state_dict(theirs.state_dict())
    x = randn(2, 4, 5, 6)
    expected = theirs(x, output_size=output_size)
    assert torch.allclose(mine(gt.tensor(x), output_size=output_size).data, expected.detach(),
                          atol=1e-5)


@pytest.mark.parametrize('output_size', [[8, 11], [12, 11], [3]],
                         ids=['too-small', 'too-large', 'wrong-length'])
def test_transposed_output_size_out_of_range_raises_torchs_error(output_size):
    mine, theirs = pair('ConvTranspose2d', 4, 2, 3, stride=2, padding=1)
    with pytest.raises(ValueError) as expected:
        theirs(torch.zeros(2, 4, 5, 6), output_size=output_size)
    with pytest.raises(ValueError) as got:
        mine(gt.zeros(2, 4, 5, 6), output_size=output_size)
    assert str(got.value) == str(expected.value)


BAD_ARGUMENTS = [
    ('Conv3d', {'groups': 0}), ('Conv3d', {'groups': 2, 'in_channels': 3}),
    ('ConvTranspose1d', {'groups': 2, 'out_channels': 3}),
    ('ConvTranspose1d', {'padding_mode': 'reflect'}),
    ('ConvTranspose2d', {'groups': -1}), ('ConvTranspose2d', {'padding_mode': 'circular'}),
]


@pytest.mark.parametrize('name,kwargs', BAD_ARGUMENTS, ids=[
    '-'.join([name, *(f'{key}={value}' for key, value in kwargs.items())])
    for name, kwargs in BAD_ARGUMENTS])
def test_bad_arguments_raise_torchs_errors(name, kwargs):
    arguments = {'in_channels': 4, 'out_channels': 4, 'kernel_size': 3, **kwargs}
    with pytest.raises(ValueError) as theirs:
        getattr(torch.nn, name)(**arguments)
    with pytest.raises(ValueError) as mine:
        getattr(nn, name)(**arguments)
    assert str(mine.value) == str(theirs.value)


# ---- pooling ---------------------------------------------------------------------------
POOLS = [
    ('MaxPool3d', (2,), {}, (2, 3, 4, 5, 4)),
    ('MaxPool3d', ((2, 3, 2),), {'stride': 1, 'padding': 1, 'ceil_mode': True},
     (2, 4, 5, 4)),
    ('AvgPool3d', (2,), {}, (2, 3, 4, 5, 4)),
    ('AvgPool3d', (3,), {'stride': 2, 'padding': 1, 'count_include_pad': False,
                         'ceil_mode': True}, (1, 2, 5, 5, 6)),
    ('AvgPool3d', (2,), {'divisor_override': 3}, (2, 4, 4, 4)),
    ('AdaptiveAvgPool3d', ((2, None, 3),), {}, (2, 3, 5, 4, 6)),
    ('AdaptiveMaxPool1d', (4,), {}, (2, 3, 11)),
    ('AdaptiveMaxPool2d', ((3, 2),), {}, (2, 3, 7, 5)),
    ('AdaptiveMaxPool2d', ((None, 2),), {}, (3, 7, 5)),
    ('AdaptiveMaxPool3d', (2,), {}, (1, 2, 4, 5, 3)),
]


@pytest.mark.parametrize('case', POOLS, ids=case_id)
def test_pooling(case):
    name, args, kwargs, shape = case
    mine, theirs = pair(name, *args, **kwargs)
    check_module(mine, theirs, randn(*shape))
    assert repr(mine) == repr(theirs)
    assert mine.state_dict() == theirs.state_dict() == {}


@pytest.mark.parametrize('name,shape', [('AdaptiveMaxPool1d', (2, 3, 9)),
                                        ('AdaptiveMaxPool2d', (2, 3, 7, 6)),
                                        ('MaxPool3d', (1, 2, 4, 4, 4))])
def test_return_indices(name, shape):
    mine, theirs = pair(name, 3 if name.startswith('Adaptive') else 2, return_indices=True)
    x = randn(*shape)
    (out_mine, indices_mine), (out_theirs, indices_theirs) = mine(gt.tensor(x)), theirs(x)
    assert torch.equal(out_mine.data, out_theirs)
    assert torch.equal(indices_mine.data, indices_theirs)


# ---- a small encoder-decoder ------------------------------------------------------------
def encoder_decoder(nn_module) -> object:
    return nn_module.Sequential(
        nn_module.ReflectionPad2d(1), nn_module.Conv2d(2, 4, 3, stride=2),
        nn_module.GroupNorm(2, 4), nn_module.PReLU(4), nn_module.Dropout2d(0.25),
        nn_module.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1),
        nn_module.InstanceNorm2d(4, affine=True), nn_module.Hardswish(),
        nn_module.Upsample(scale_factor=2, mode='bilinear', align_corners=False),
        nn_module.Conv2d(4, 1, 1))


def test_small_encoder_decoder_trains_as_torch_does():
    """Seeded draws, dropout masks, values, gradients and SGD steps all torch's."""
    gt.manual_seed(3)
    mine = encoder_decoder(nn)
    torch.manual_seed(3)
    theirs = encoder_decoder(torch.nn)
    for key, value in theirs.state_dict().items():
        assert torch.equal(mine.state_dict()[key], value), key
    images, targets = randn(4, 2, 8, 8), randn(4, 1, 16, 16)
    optimizer_mine = gt.optim.SGD(mine.parameters(), lr=0.05)
    optimizer_theirs = torch.optim.SGD(theirs.parameters(), lr=0.05)
    x, y = gt.tensor(images), gt.tensor(targets)
    for step in range(3):
        gt.manual_seed(step)
        optimizer_mine.zero_grad()
        loss_mine = nn.functional.mse_loss(mine(x), y)
        loss_mine.backward()
        optimizer_mine.step()
        torch.manual_seed(step)
        optimizer_theirs.zero_grad()
        loss_theirs = torch.nn.functional.mse_loss(theirs(images), targets)
        loss_theirs.backward()
        optimizer_theirs.step()
        assert loss_mine.item() == pytest.approx(loss_theirs.item(), rel=1e-5)
    for key, value in theirs.state_dict().items():
        torch.testing.assert_close(mine.state_dict()[key], value, rtol=1e-4, atol=1e-5)
