"""GroupNorm, InstanceNorm1d/2d/3d, RMSNorm and LocalResponseNorm against torch.nn: values
and gradients with torch's weights, repr, state_dict keys, the running statistics instance
norm tracks (rebound, not written in place), and torch's argument errors."""

import pytest
import torch
from nn_check import assert_close, check_module, randn, seeded

import gt
import gt.nn as nn


def pair(name: str, *args, **kwargs) -> tuple[nn.Module, torch.nn.Module]:
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def case_id(case) -> str:
    name, args, kwargs, shape = case
    return '-'.join([name, *map(str, args), *(f'{k}={v}' for k, v in kwargs.items()),
                     'x'.join(map(str, shape))])


# (name, positional arguments, keyword arguments, input shape)
CASES = [
    ('GroupNorm', (2, 4), {}, (3, 4, 5)),
    ('GroupNorm', (1, 6), {'affine': False}, (2, 6, 3, 3)),
    ('GroupNorm', (3, 6), {'bias': False, 'eps': 1e-3}, (2, 6, 4)),
    ('InstanceNorm1d', (3,), {}, (2, 3, 7)),
    ('InstanceNorm1d', (3,), {'affine': True}, (3, 7)),
    ('InstanceNorm2d', (4,), {'affine': True, 'bias': False}, (2, 4, 3, 5)),
    ('InstanceNorm2d', (4,), {'track_running_stats': True}, (2, 4, 3, 5)),
    ('InstanceNorm3d', (2,), {'affine': True}, (2, 2, 3, 2, 3)),
    ('RMSNorm', (5,), {}, (3, 4, 5)),
    ('RMSNorm', ([4, 5],), {'eps': 1e-3}, (3, 4, 5)),
    ('RMSNorm', (5,), {'elementwise_affine': False}, (2, 5)),
    ('LocalResponseNorm', (2,), {}, (2, 5, 4)),
    ('LocalResponseNorm', (3,), {'alpha': 0.1, 'beta': 0.5, 'k': 2.0}, (2, 5, 3, 3)),
]


@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_normalization(case):
    name, args, kwargs, shape = case
    mine, theirs = pair(name, *args, **kwargs)
    generator = seeded()
    with torch.no_grad():  # weights other than ones and zeros, so that they matter
        for parameter in theirs.parameters():
            parameter.copy_(randn(*parameter.shape, generator=generator))
    check_module(mine, theirs, randn(*shape) * 3 + 1, atol=1e-5)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize('options', [{'track_running_stats': True},
                                     {'track_running_stats': True, 'affine': True,
                                      'momentum': 0.3},
                                     {'track_running_stats': True, 'momentum': None}],
                         ids=['default', 'affine-momentum0.3', 'momentum-None'])
def test_instance_norm_running_statistics_follow_torch_then_evaluation_uses_them(options):
    mine, theirs = pair('InstanceNorm2d', 3, **options)
    for step in range(3):
        x = randn(4, 3, 3, 5) * (step + 1) + step
        mine(gt.tensor(x))  # the output is never used: the update must still happen
        theirs(x)
    for key, value in theirs.state_dict().items():
        assert_close(mine.state_dict()[key], value, atol=1e-6)
    mine.eval()
    theirs.eval()
    check_module(mine, theirs, randn(2, 3, 4, 4), atol=1e-5)
    check_module(mine, theirs, randn(3, 4, 4), atol=1e-5)  # unbatched


def test_instance_norm_update_reaches_only_its_running_tensors():
    """Equal constants may share storage on a worker: torch's in-place kernel would leak
    into them; the functional form updates exactly the tensors given."""
    other = gt.zeros(3)
    running_mean, running_var = gt.zeros(3), gt.ones(3)
    x = randn(2, 3, 6)
    nn.normalization.instance_norm(gt.tensor(x), running_mean, running_var, momentum=0.5)
    expected_mean, expected_var = torch.zeros(3), torch.ones(3)
    torch.nn.functional.instance_norm(x, expected_mean, expected_var, momentum=0.5)
    assert_close(running_mean, expected_mean)
    assert_close(running_var, expected_var)
    assert other.tolist() == [0.0, 0.0, 0.0]


def test_instance_norm_without_running_statistics_uses_the_input_in_evaluation():
    mine, theirs = pair('InstanceNorm1d', 3, affine=True)
    mine.eval()
    theirs.eval()
    assert mine.running_mean is None and 'running_mean' not in mine.state_dict()
    check_module(mine, theirs, randn(2, 3, 5), atol=1e-5)


@pytest.mark.parametrize('name,args,kwargs,error', [
    ('GroupNorm', (4, 6), {}, ValueError),
    ('GroupNorm', (0, 6), {}, ZeroDivisionError),
], ids=['groups-do-not-divide', 'zero-groups'])
def test_bad_arguments_raise_torchs_errors(name, args, kwargs, error):
    with pytest.raises(error) as theirs:
        getattr(torch.nn, name)(*args, **kwargs)
    with pytest.raises(error) as mine:
        getattr(nn, name)(*args, **kwargs)
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize('name,shape', [('InstanceNorm1d', (2, 3, 4, 5)),
                                        ('InstanceNorm2d', (3, 4)),
                                        ('InstanceNorm3d', (2, 3, 4))])
def test_instance_norm_input_dims_are_checked_as_torch_does(name, shape):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.nn, name)(3)(torch.zeros(shape))
    with pytest.raises(ValueError) as mine:
        getattr(nn, name)(3)(gt.zeros(*shape))
    assert str(mine.value) == str(theirs.value)


def test_instance_norm_channel_mismatch():
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match"):
        nn.InstanceNorm1d(4, affine=True)(gt.zeros(2, 3, 5))
    with pytest.warns(UserWarning, match='does not match num_features'):
        nn.InstanceNorm1d(4)(gt.randn(2, 3, 5))


def test_dtype_argument():
    layer = nn.GroupNorm(2, 4, dtype=torch.float64)
    assert layer.weight.dtype == layer.bias.dtype == torch.float64
    assert nn.RMSNorm(3, dtype=torch.float64).weight.dtype == torch.float64


@pytest.mark.parametrize('name,args', [('InstanceNorm1d', (3,)), ('BatchNorm1d', (3,)),
                                       ('GroupNorm', (1, 3)), ('RMSNorm', (4,))])
def test_reset_parameters_restores_torchs_initial_state(name, args):
    options = {'affine': True, 'track_running_stats': True} if name == 'InstanceNorm1d' else {}
    mine = getattr(nn, name)(*args, **options)
    mine(gt.randn(2, 3, 4))  # moves any running statistics
    with gt.no_grad():
        for parameter in mine.parameters():
            parameter.mul_(3.0).add_(1.0)
    mine.reset_parameters()
    theirs = getattr(torch.nn, name)(*args, **options)
    for key, value in theirs.state_dict().items():
        assert torch.equal(mine.state_dict()[key], value), key
    assert not isinstance(mine, gt.nn.batch_norm._BatchNorm) or name == 'BatchNorm1d'
