"""Upsample, PixelShuffle/Unshuffle, the padding modules, Unflatten, Fold and Unfold against
torch.nn: values and input gradients, repr, attributes, and torch's argument errors."""

import pytest
import torch
from nn_check import check_module, randn

import gt
import gt.nn as nn


def case_id(case) -> str:
    name, args, kwargs, shape = case
    return '-'.join([name, *map(str, args), *(f'{k}={v}' for k, v in kwargs.items()),
                     'x'.join(map(str, shape))])


# (name, positional arguments, keyword arguments, input shape)
CASES = [
    ('Upsample', (), {'scale_factor': 2}, (2, 3, 4)),
    ('Upsample', (), {'size': (5, 7)}, (2, 3, 3, 4)),
    ('Upsample', (), {'scale_factor': (2, 1.5), 'mode': 'bilinear'}, (2, 2, 3, 4)),
    ('Upsample', (), {'scale_factor': 2, 'mode': 'bilinear', 'align_corners': True},
     (2, 2, 3, 4)),
    ('Upsample', (), {'size': 7, 'mode': 'linear', 'align_corners': False}, (2, 3, 4)),
    ('Upsample', (), {'scale_factor': 1.7, 'mode': 'nearest',
                      'recompute_scale_factor': True}, (1, 2, 3, 5)),
    ('UpsamplingNearest2d', (), {'scale_factor': 3}, (1, 2, 3, 2)),
    ('UpsamplingBilinear2d', ((6, 5),), {}, (1, 2, 3, 2)),
    ('PixelShuffle', (2,), {}, (2, 8, 3, 4)),
    ('PixelShuffle', (3,), {}, (9, 2, 2)),
    ('PixelUnshuffle', (2,), {}, (2, 3, 4, 6)),
    ('ZeroPad1d', (2,), {}, (2, 3, 4)),
    ('ZeroPad2d', ((1, 0, 2, 3),), {}, (2, 3, 4, 5)),
    ('ZeroPad2d', ((-1, 1, 0, 2),), {}, (3, 4, 5)),
    ('ConstantPad1d', ((2, 1), 3.5), {}, (2, 3, 4)),
    ('ConstantPad2d', (1, -2.0), {}, (2, 3, 4, 5)),
    ('ConstantPad3d', ((1, 0, 0, 1, 2, 0), 1.0), {}, (1, 2, 3, 2, 2)),
    ('ReflectionPad1d', (2,), {}, (2, 3, 5)),
    ('ReflectionPad2d', ((1, 2, 0, 3),), {}, (2, 3, 4, 5)),
    ('ReflectionPad3d', (1,), {}, (1, 2, 3, 3, 3)),
    ('ReplicationPad1d', ((3, 1),), {}, (3, 4)),
    ('ReplicationPad2d', (2,), {}, (2, 3, 4, 5)),
    ('ReplicationPad3d', ((1, 0, 2, 0, 0, 1),), {}, (1, 2, 3, 3, 3)),
    ('CircularPad1d', (2,), {}, (2, 3, 4)),
    ('CircularPad2d', ((1, 0, 2, 1),), {}, (1, 2, 3, 4)),
    ('Unflatten', (1, (2, 3)), {}, (4, 6, 5)),
    ('Unflatten', (-1, [5, -1]), {}, (4, 10)),
    ('Unflatten', (0, torch.Size([2, 2])), {}, (4, 3)),
    ('Unfold', (2,), {}, (2, 3, 4, 5)),
    ('Unfold', ((2, 3),), {'dilation': (1, 2), 'padding': 1, 'stride': 2}, (2, 2, 5, 6)),
    ('Fold', ((4, 5), 2), {}, (2, 12, 12)),
    ('Fold', ((5, 6), (2, 3)), {'dilation': 1, 'padding': 1, 'stride': 2}, (2, 12, 9)),
]


@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_module(case):
    name, args, kwargs, shape = case
    mine, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    check_module(mine, theirs, randn(*shape))
    assert repr(mine) == repr(theirs)
    assert mine.state_dict() == theirs.state_dict() == {}
    for attribute in ('padding', 'value', 'scale_factor', 'size', 'mode', 'align_corners',
                      'upscale_factor', 'downscale_factor', 'unflattened_size', 'kernel_size'):
        if hasattr(theirs, attribute):
            assert getattr(mine, attribute) == getattr(theirs, attribute), attribute


def test_zero_pad_is_a_constant_pad_as_in_torch():
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d)
    assert nn.ZeroPad2d(1).value == 0.0


@pytest.mark.parametrize('size,error', [(3, TypeError), ((2, 'a'), TypeError),
                                        ([2, 2.0], TypeError)],
                         ids=['an-int', 'a-string-element', 'a-float-element'])
def test_unflatten_arguments_raise_torchs_errors(size, error):
    with pytest.raises(error) as theirs:
        torch.nn.Unflatten(1, size)
    with pytest.raises(error) as mine:
        nn.Unflatten(1, size)
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize('dim,size,error', [(1, (2, 5), RuntimeError),
                                            (1, (-1, -1), RuntimeError),
                                            (3, (2, 2), IndexError)],
                         ids=['sizes-do-not-multiply', 'two-inferred', 'dim-out-of-range'])
def test_unflatten_of_a_wrong_shape_raises_torchs_error(dim, size, error):
    with pytest.raises(error):
        torch.nn.Unflatten(dim, size)(torch.zeros(2, 12))
    with pytest.raises(error):
        nn.Unflatten(dim, size)(gt.zeros(2, 12))


@pytest.mark.parametrize('shape', [(3, 4), (1, 2, 3, 4, 5, 6)], ids=['2d', '6d'])
def test_circular_pad_checks_the_input_dims_as_torch_does(shape):
    with pytest.raises(ValueError) as theirs:
        torch.nn.CircularPad2d(1)(torch.zeros(shape))
    with pytest.raises(ValueError) as mine:
        nn.CircularPad2d(1)(gt.zeros(*shape))
    assert str(mine.value) == str(theirs.value)
