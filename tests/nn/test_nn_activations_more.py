"""PReLU, Threshold, CELU, SELU, Hardswish, Hardsigmoid, LogSigmoid, Softsign, Tanhshrink,
Hard/Softshrink, GLU, Softmin and Softmax2d against torch.nn: values, input and parameter
gradients, repr, the `inplace` flag, PReLU's parameter, and torch's errors."""

import pytest
import torch
from nn_check import assert_close, check_module, randn

import gt
import gt.nn as nn

# (name, positional arguments, keyword arguments, input shape)
ACTIVATIONS = [
    ('PReLU', (), {}, (4, 3, 5)),
    ('PReLU', (3,), {}, (4, 3, 5)),
    ('PReLU', (3, 0.1), {}, (2, 3, 2, 2)),
    ('Threshold', (0.5, -2.0), {}, (4, 5)),
    ('CELU', (), {}, (4, 5)),
    ('CELU', (0.5,), {}, (4, 5)),
    ('SELU', (), {}, (4, 5)),
    ('Hardswish', (), {}, (4, 5)),
    ('Hardsigmoid', (), {}, (4, 5)),
    ('LogSigmoid', (), {}, (4, 5)),
    ('Softsign', (), {}, (4, 5)),
    ('Tanhshrink', (), {}, (4, 5)),
    ('Hardshrink', (), {}, (4, 5)),
    ('Softshrink', (1.5,), {}, (4, 5)),
    ('GLU', (), {}, (3, 6)),
    ('GLU', (0,), {}, (4, 3)),
    ('Softmin', (1,), {}, (3, 4, 2)),
    ('Softmin', (), {'dim': -1}, (3, 4)),
    ('Softmax2d', (), {}, (2, 3, 4, 2)),
    ('Softmax2d', (), {}, (3, 4, 2)),
]


def case_id(case) -> str:
    name, args, kwargs, _ = case
    return '-'.join([name, *map(str, args), *(f'{k}={v}' for k, v in kwargs.items())])


@pytest.mark.parametrize('case', ACTIVATIONS, ids=case_id)
def test_activation(case):
    name, args, kwargs, shape = case
    mine, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    # Spread over the kinks (0, ±lambda, ±3) and the thresholds.
    check_module(mine, theirs, randn(*shape) * 4)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize('name', ['Threshold', 'CELU', 'SELU', 'Hardswish', 'Hardsigmoid'])
@pytest.mark.parametrize('inplace', [False, True])
def test_inplace_flag(name, inplace):
    args = (0.1, 20.0) if name == 'Threshold' else ()
    mine = getattr(nn, name)(*args, inplace=inplace)
    theirs = getattr(torch.nn, name)(*args, inplace=inplace)
    assert mine.inplace == inplace and repr(mine) == repr(theirs)
    x = randn(3, 4) * 4
    x_mine, x_theirs = gt.tensor(x), x.clone()
    with gt.no_grad():
        out = mine(x_mine)
    assert_close(out, theirs(x_theirs))
    assert_close(x_mine, x_theirs)


def test_prelu_parameter_is_torchs():
    mine, theirs = nn.PReLU(4, init=0.3), torch.nn.PReLU(4, init=0.3)
    assert torch.equal(mine.weight.data, theirs.weight.detach())
    assert mine.weight.requires_grad and mine.weight.is_leaf
    assert mine.num_parameters == 4 and mine.init == 0.3
    assert nn.PReLU(dtype=torch.float64).weight.dtype == torch.float64


@pytest.mark.parametrize('shape', [(2, 3), (3,), (2, 3, 4), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize('name', ['Softmin', 'Softmax', 'LogSoftmax', 'softmax', 'log_softmax'])
def test_softmaxes_without_dim_warn_and_pick_torchs_dim(name, shape):
    """Older tutorials' `nn.Softmax()` and `F.softmax(x)`."""
    x = randn(*shape)
    if name.islower():  # a function
        mine, theirs = getattr(gt.nn.functional, name), getattr(torch.nn.functional, name)
    else:
        mine, theirs = getattr(nn, name)(), getattr(torch.nn, name)()
    kind = {'Softmin': 'softmin', 'Softmax': 'softmax', 'LogSoftmax': 'log_softmax'}.get(
        name, name)
    with pytest.warns(UserWarning, match=f'Implicit dimension choice for {kind} has') as caught:
        out = mine(gt.tensor(x))
    assert caught[0].filename == __file__  # at the script's line
    with pytest.warns(UserWarning):
        assert_close(out, theirs(x))


@pytest.mark.parametrize('shape', [(3, 4), (1, 2, 3, 4, 5)], ids=['2d', '5d'])
def test_softmax2d_checks_dims_as_torch_does(shape):
    with pytest.raises(ValueError) as theirs:
        torch.nn.Softmax2d()(torch.zeros(shape))
    with pytest.raises(ValueError) as mine:
        nn.Softmax2d()(gt.zeros(*shape))
    assert str(mine.value) == str(theirs.value)
