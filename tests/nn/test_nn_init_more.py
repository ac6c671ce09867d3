"""nn.init.orthogonal_, sparse_, eye_ and dirac_ against torch.nn.init: after the same seed
the values are torch's bit for bit, and the draws after them too (the same number made in
the same order); a filled Parameter stays a trainable leaf; torch's errors."""

import pytest
import torch

import gt
import gt.nn as nn
from gt.nn import init


@pytest.mark.parametrize('gain', [1, 2.5])
@pytest.mark.parametrize('shape', [(5, 3), (3, 7), (4, 2, 3), (6, 6)])
def test_orthogonal_is_torchs_after_the_same_seed(shape, gain):
    gt.manual_seed(5)
    mine = init.orthogonal_(gt.zeros(*shape), gain)
    after_mine = gt.randn(3)
    torch.manual_seed(5)
    theirs = torch.nn.init.orthogonal_(torch.empty(shape), gain)
    after_theirs = torch.randn(3)
    assert torch.equal(mine.data, theirs)
    assert torch.equal(after_mine.data, after_theirs)


def test_orthogonal_rows_are_orthonormal():
    weight = init.orthogonal_(gt.zeros(4, 9), gain=2.0).data
    torch.testing.assert_close(weight @ weight.T, 4 * torch.eye(4), atol=1e-5, rtol=0)


@pytest.mark.parametrize('sparsity', [0.0, 0.1, 0.5])
@pytest.mark.parametrize('shape', [(6, 4), (10, 3)])
def test_sparse_is_torchs_after_the_same_seed(shape, sparsity):
    gt.manual_seed(9)
    mine = init.sparse_(gt.zeros(*shape), sparsity, std=0.5)
    after_mine = gt.randn(3)
    torch.manual_seed(9)
    theirs = torch.nn.init.sparse_(torch.empty(shape), sparsity, std=0.5)
    after_theirs = torch.randn(3)
    assert torch.equal(mine.data, theirs)
    assert torch.equal(after_mine.data, after_theirs)


@pytest.mark.parametrize('shape,groups', [((4, 4, 3), 1), ((6, 2, 3, 3), 2),
                                          ((3, 5, 2, 3, 4), 1), ((8, 3, 3), 2),
                                          ((4, 6, 2, 2), 4)])
def test_dirac_is_torchs(shape, groups):
    mine = init.dirac_(gt.randn(*shape), groups)
    theirs = torch.nn.init.dirac_(torch.randn(shape), groups)
    assert torch.equal(mine.data, theirs)


@pytest.mark.parametrize('shape', [(3, 5), (4, 4), (5, 2)])
def test_eye_is_torchs(shape):
    mine = init.eye_(gt.randn(*shape))
    assert torch.equal(mine.data, torch.nn.init.eye_(torch.randn(shape)))


def test_a_parameter_filled_in_place_stays_a_trainable_leaf():
    layer = nn.Conv1d(3, 3, 3)
    init.dirac_(layer.weight)
    init.orthogonal_(nn.Linear(4, 4).weight)
    assert layer.weight.is_leaf and layer.weight.requires_grad
    x = gt.randn(2, 3, 5)
    out = layer(x)
    out.sum().backward()
    assert layer.weight.grad is not None
    # The Dirac kernel passes the input through (plus the bias).
    torch.testing.assert_close(out.data - layer.bias.data[:, None], x.data[..., 1:-1])


@pytest.mark.parametrize('call', [
    lambda init, t: init.orthogonal_(t(3)),
    lambda init, t: init.sparse_(t(3, 2, 2), 0.1),
    lambda init, t: init.eye_(t(3, 2, 2)),
    lambda init, t: init.dirac_(t(3, 3)),
    lambda init, t: init.dirac_(t(3, 3, 3), groups=2),
], ids=['orthogonal-1d', 'sparse-3d', 'eye-3d', 'dirac-2d', 'dirac-groups'])
def test_errors_are_torchs(call):
    with pytest.raises(ValueError) as theirs:
        call(torch.nn.init, lambda *shape: torch.zeros(shape))
    with pytest.raises(ValueError) as mine:
        call(init, lambda *shape: gt.zeros(*shape))
    assert str(mine.value) == str(theirs.value)
