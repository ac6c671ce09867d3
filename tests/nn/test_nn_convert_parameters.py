"""gt.nn.utils.parameters_to_vector and vector_to_parameters against torch.nn.utils': the
same parameters give the same vector, gradients flow through it, and a vector written back
gives the same parameters (still leaves that require grad, as in torch)."""

import pytest
import torch
from nn_check import assert_close, randn

import gt
import gt.nn as nn


def layers() -> tuple[nn.Module, torch.nn.Module]:
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Conv1d(3, 2, 2))
    mine = nn.Sequential(nn.Linear(4, 3), nn.Conv1d(3, 2, 2))
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


def test_parameters_to_vector_matches_torch_and_differentiates():
    mine, theirs = layers()
    vector = nn.utils.parameters_to_vector(mine.parameters())
    expected = torch.nn.utils.parameters_to_vector(theirs.parameters())
    assert torch.equal(vector.data, expected)
    weights = randn(*expected.shape)
    (vector * gt.tensor(weights)).sum().backward()
    (expected * weights).sum().backward()
    for parameter, reference in zip(mine.parameters(), theirs.parameters()):
        assert_close(parameter.grad, reference.grad)
    single = nn.utils.parameters_to_vector(mine[0].weight)
    assert single.shape == (12,)


@pytest.mark.parametrize('source', ['gt', 'computed'])
def test_vector_to_parameters_matches_torch(source):
    mine, theirs = layers()
    values = randn(sum(p.numel() for p in theirs.parameters()))
    vector = gt.tensor(values) if source == 'gt' else gt.tensor(values) * 2 - 1
    nn.utils.vector_to_parameters(vector, mine.parameters())
    torch.nn.utils.vector_to_parameters(values * 2 - 1 if source == 'computed' else values,
                                        theirs.parameters())
    for (name, parameter), reference in zip(mine.named_parameters(), theirs.parameters()):
        assert torch.equal(parameter.data, reference.detach()), name
        assert parameter.is_leaf and parameter.requires_grad and parameter.grad_fn is None
    with pytest.raises(TypeError, match='expected gt.Tensor'):
        nn.utils.vector_to_parameters(values.tolist(), mine.parameters())
