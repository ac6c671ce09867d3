"""`tensor.data` as torch scripts use it: a torch.Tensor to read, whose in-place changes
(initialization, moving averages) reach the GT tensor too, and `p.data = value`; each
against the same lines run in torch."""

import io

import pytest
import torch

import gt
import gt.nn as nn


def twins():
    mine, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


def same(mine, theirs) -> None:
    assert torch.equal(mine.data, theirs.data), (mine, theirs)


@pytest.mark.parametrize('update', [
    lambda lib, p, q: p.data.zero_(),
    lambda lib, p, q: p.data.fill_(0.5),
    lambda lib, p, q: p.data.copy_(q.data),
    lambda lib, p, q: p.data.mul_(0.9).add_(q.data, alpha=0.1),
    lambda lib, p, q: p.data.normal_(0.0, 0.02),
    lambda lib, p, q: p.data.uniform_(-0.1, 0.1),
    lambda lib, p, q: p.data.clamp_(-0.1, 0.1),
    lambda lib, p, q: p.data.__setitem__(0, 2.0),
], ids=['zero_', 'fill_', 'copy_', 'moving_average', 'normal_', 'uniform_', 'clamp_',
        'setitem'])
def test_an_in_place_change_of_data_reaches_the_tensor(update):
    mine, theirs = twins()
    gt.manual_seed(1)
    torch.manual_seed(1)
    update(gt, mine.weight, mine.bias.reshape(3, 1).expand(3, 4))
    update(torch, theirs.weight, theirs.bias.reshape(3, 1).expand(3, 4))
    same(mine.weight, theirs.weight)
    assert mine.weight.requires_grad and mine.weight.is_leaf and mine.weight.grad_fn is None


def test_the_changed_copy_holds_the_new_value_too():
    """Each `.data` is a copy of its own; the one changed is brought up to date."""
    x = gt.tensor([1.0, -2.0])
    data = x.data
    assert data.clamp_(min=0) is data and data.tolist() == [1.0, 0.0] == x.tolist()


def test_assigning_data_keeps_the_parameter_and_its_gradient_flow():
    mine, theirs = twins()
    mine.weight.data = gt.ones(3, 4) * 2
    theirs.weight.data = torch.ones(3, 4) * 2
    mine.bias.data = torch.zeros(3)  # a torch tensor joins GT as data
    theirs.bias.data = torch.zeros(3)
    x = torch.randn(5, 4)
    mine(gt.tensor(x)).sum().backward()
    theirs(x).sum().backward()
    assert isinstance(mine.weight, nn.Parameter) and mine.weight.requires_grad
    for a, b in ((mine.weight, theirs.weight), (mine.bias, theirs.bias)):
        same(a, b)
        same(a.grad, b.grad)


def test_data_reads_as_a_plain_torch_tensor():
    x = gt.tensor([[1.0, 2.0], [3.0, 4.0]])
    data = x.data
    assert isinstance(data, torch.Tensor) and repr(data) == repr(torch.tensor([[1.0, 2.0],
                                                                              [3.0, 4.0]]))
    assert type(data + 1) is torch.Tensor and (data + 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert data.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    buffer = io.BytesIO()
    torch.save({'x': data}, buffer)
    buffer.seek(0)
    assert type(torch.load(buffer, weights_only=True)['x']) is torch.Tensor
    with pytest.raises(RuntimeError, match='out= cannot be the .data'):
        torch.add(data, 1, out=data)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_data_copy_outliving_its_tensor_says_so():
    data = gt.ones(2).data
    with pytest.raises(RuntimeError, match='is gone'):
        data.zero_()
