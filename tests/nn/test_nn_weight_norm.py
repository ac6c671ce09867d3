"""gt.nn.utils.weight_norm against torch.nn.utils.weight_norm: the same parameters
(`weight_g`, `weight_v`, in torch's order), outputs and gradients for each `dim`, training
that follows torch's, and `remove_weight_norm` giving back one weight. Within a few ulps,
not bit for bit: torch's CPU kernel for dim 0 and the last dim sums the norm in its own
order."""

import warnings

import pytest
import torch
from nn_check import check_module, randn

import gt
import gt.nn as nn
import gt.nn.functional as F
from gt.nn.utils import remove_weight_norm, weight_norm

TOLERANCE = dict(rtol=1e-5, atol=1e-6)


def normed(mine: nn.Module, theirs: torch.nn.Module, dim: int | None) -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', FutureWarning)
        return weight_norm(mine, dim=dim), torch.nn.utils.weight_norm(theirs, dim=dim)


@pytest.mark.parametrize('dim', [0, 1, -1, None], ids=['dim0', 'dim1', 'dim-1', 'whole'])
def test_linear_matches_torch(dim):
    mine, theirs = normed(nn.Linear(5, 4), torch.nn.Linear(5, 4), dim)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == ['bias', 'weight_g',
                                                                   'weight_v']
    assert mine.weight_g.shape == theirs.weight_g.shape
    check_module(mine, theirs, randn(3, 5), **TOLERANCE)


@pytest.mark.parametrize('dim', [0, 2], ids=['dim0', 'dim2'])
def test_conv_matches_torch(dim):
    mine, theirs = normed(nn.Conv1d(3, 4, 3), torch.nn.Conv1d(3, 4, 3), dim)
    check_module(mine, theirs, randn(2, 3, 7), **TOLERANCE)


def test_training_follows_torch_and_remove_gives_one_weight():
    mine, theirs = normed(nn.Linear(6, 3), torch.nn.Linear(6, 3), 0)
    mine.load_state_dict(theirs.state_dict())
    optimizer = gt.optim.SGD(mine.parameters(), lr=0.1)
    expected = torch.optim.SGD(theirs.parameters(), lr=0.1)
    x, y = randn(8, 6), randn(8, 3)
    for _ in range(4):
        F.mse_loss(mine(gt.tensor(x)), gt.tensor(y)).backward()
        torch.nn.functional.mse_loss(theirs(x), y).backward()
        for each in (optimizer, expected):
            each.step()
            each.zero_grad()
    remove_weight_norm(mine)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == ['bias', 'weight']
    assert isinstance(mine.weight, nn.Parameter)
    torch.testing.assert_close(mine.weight.data, theirs.weight.detach(), **TOLERANCE)
    assert not mine._forward_pre_hooks


def test_errors_as_in_torch():
    mine, _ = normed(nn.Linear(2, 2), torch.nn.Linear(2, 2), 0)
    with pytest.raises(RuntimeError, match='two weight_norm hooks'):
        normed(mine, torch.nn.Linear(2, 2), 0)
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found"):
        remove_weight_norm(mine, 'bias')
    with pytest.warns(FutureWarning, match='deprecated'):
        weight_norm(nn.Linear(2, 2))
