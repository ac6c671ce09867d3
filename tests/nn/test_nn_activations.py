"""The activation modules against torch.nn: values and input gradients, repr, the
`inplace` flag passed through, and torch's argument errors."""

import pytest
import torch
from nn_check import assert_close, check_module, randn

import gt
import gt.nn as nn

# (name, positional arguments, keyword arguments), each one visible as a case.
ACTIVATIONS = [
    ('LeakyReLU', (), {}),
    ('LeakyReLU', (0.2,), {}),
    ('SiLU', (), {}),
    ('ELU', (), {}),
    ('ELU', (0.5,), {}),
    ('Mish', (), {}),
    ('Hardtanh', (), {}),
    ('Hardtanh', (-0.5, 2.0), {}),
    ('ReLU6', (), {}),
    ('Softplus', (), {}),
    ('Softplus', (2.0, 1.0), {}),
]


def case_id(case) -> str:
    name, args, kwargs = case
    return '-'.join([name, *map(str, args), *(f'{k}={v}' for k, v in kwargs.items())])


@pytest.mark.parametrize('case', ACTIVATIONS, ids=case_id)
def test_activation(case):
    name, args, kwargs = case
    mine, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    # Spread over the kinks (0, ±1, 6) and Softplus's threshold.
    check_module(mine, theirs, randn(4, 3, 5) * 4)
    assert repr(mine) == repr(theirs)


@pytest.mark.parametrize('name', ['LeakyReLU', 'SiLU', 'ELU', 'Mish', 'Hardtanh', 'ReLU6'])
@pytest.mark.parametrize('inplace', [False, True])
def test_inplace_flag(name, inplace):
    mine, theirs = getattr(nn, name)(inplace=inplace), getattr(torch.nn, name)(inplace=inplace)
    assert mine.inplace == inplace and repr(mine) == repr(theirs)
    x = randn(3, 4) * 4
    with gt.no_grad():
        out = mine(gt.tensor(x))
    assert_close(out, theirs(x.clone()))


def test_relu6_is_a_hardtanh_as_in_torch():
    assert isinstance(nn.ReLU6(), nn.Hardtanh)
    layer = nn.ReLU6()
    assert (layer.min_val, layer.max_val) == (0.0, 6.0)


def test_hardtanh_arguments():
    with pytest.raises(AssertionError, match=r'max_val \(1\) must be greater than min_val'):
        nn.Hardtanh(1, 1)
    with pytest.warns(FutureWarning, match='min_value'):
        layer = nn.Hardtanh(min_value=-2.0)
    assert layer.min_val == -2.0
