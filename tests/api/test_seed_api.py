"""The seeds' API where it is wider than torch, beside torch's meaning: `transpose()` of
a 2-D tensor, dtypes named by strings, numpy's `axis`/`keepdims`."""

import pytest
import torch
from api_check import array, assert_same, pair

import gt


def test_transpose_without_dims_swaps_a_matrix():
    x, tx = pair(array((3, 5)))
    assert_same(x.transpose(), tx.T)
    assert_same(x.transpose(0, 1), tx.transpose(0, 1))
    with pytest.raises(TypeError, match='2-D tensors only'):
        gt.zeros(2, 3, 4).transpose()
    with pytest.raises(TypeError, match='two dims'):
        x.transpose(0)


@pytest.mark.parametrize('name, dtype', [
    ('float32', torch.float32), ('torch.float64', torch.float64), ('float', torch.float32),
    ('long', torch.int64), ('int', torch.int32), ('half', torch.float16), ('bool', torch.bool),
])
def test_dtypes_named_by_strings(name, dtype):
    assert gt.tensor([1, 0, 2], dtype=name).dtype == dtype
    assert gt.zeros(2, dtype=name).dtype == dtype
    assert gt.ones(2).to(name).dtype == dtype


def test_axis_and_keepdims_wherever_dim_and_keepdim_go():
    x, tx = pair(array((3, 4)))
    assert_same(x.sum(axis=1, keepdims=True), tx.sum(dim=1, keepdim=True))
    assert_same(gt.mean(x, axis=0), tx.mean(dim=0))
    assert_same(x.argmax(axis=1, keepdims=True), tx.argmax(dim=1, keepdim=True))
    assert_same(x.amax(axis=0), tx.amax(dim=0))
    assert_same((x > 0).any(axis=1), (tx > 0).any(dim=1))
    assert_same(x.softmax(axis=1), tx.softmax(dim=1))
    assert_same(gt.cat([x, x], axis=1), torch.cat([tx, tx], dim=1))
    assert_same(gt.stack([x, x], axis=2), torch.stack([tx, tx], dim=2))
    assert_same(x.unsqueeze(axis=0), tx.unsqueeze(0))
    assert_same(x.cumsum(axis=1), tx.cumsum(dim=1))  # the fallback: torch takes axis too
    with pytest.raises(TypeError, match='both dim and axis'):
        x.argmax(dim=0, axis=1)


def test_the_seeds_loss_and_activation_names():
    (x, tx), (y, ty) = pair(array((4, 3))), pair(array((4, 3)))
    labels = torch.tensor([0, 2, 1, 2])
    assert_same(gt.nn.cross_entropy_loss(x, gt.tensor(labels)),
                torch.nn.functional.cross_entropy(tx, labels))
    assert_same(gt.nn.mse_loss(x, y), torch.nn.functional.mse_loss(tx, ty))
    assert_same(gt.nn.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
                torch.nn.functional.binary_cross_entropy(tx.sigmoid(), ty.sigmoid()))
    for name in ('relu', 'sigmoid', 'tanh'):
        assert_same(getattr(gt.nn, name)(x), getattr(torch, name)(tx))


def test_the_seeds_import_path_of_nn():
    """The seeds' docs import `nn` from `gt.client`: it is gt.nn itself, and their
    example model gives torch's outputs and loss."""
    import gt.client.nn as imported

    from gt.client import nn
    assert nn is gt.nn and imported is gt.nn and gt.client.nn is gt.nn

    def model_class(library_nn):
        class MyModel(library_nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = library_nn.Linear(10, 20)
                self.fc2 = library_nn.Linear(20, 1)

            def forward(self, x):
                return self.fc2(self.fc1(x).relu())
        return MyModel

    want_model = model_class(torch.nn)()
    model = model_class(nn)()
    model.load_state_dict(want_model.state_dict())
    (x, tx), (target, ttarget) = pair(array((4, 10))), pair(array((4, 1)))
    assert_same(model(x), want_model(tx).detach())
    assert_same(nn.mse_loss(model(x), target),
                torch.nn.functional.mse_loss(want_model(tx), ttarget).detach())


def test_the_contributor_guides_autograd_example_as_written(capsys):
    """Seed 002: integers that require grad (torch refuses them) make floats."""
    a = gt.tensor([1, 2, 3], requires_grad=True)
    b = a.relu()
    loss = b.sum()
    loss.backward()  # Computes gradients
    print(a.grad.data.numpy())  # Access gradients
    assert capsys.readouterr().out == '[1. 1. 1.]\n'
    assert a.dtype == torch.float32 and gt.tensor([1, 2]).dtype == torch.int64
    with pytest.raises(RuntimeError, match='only floating point'):
        gt.tensor([1, 2], dtype=torch.int64, requires_grad=True)


def test_the_contributor_guides_module_declaring_its_parameters():
    """Seed 002's MyModel lists its children's parameters in `self._parameters`, as the
    seeds' modules did: GT finds them through the children already."""
    from gt.client import nn

    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(10, 20)
            self.fc2 = nn.Linear(20, 1)
            self._parameters = self.fc1.parameters() + self.fc2.parameters()

        def forward(self, x):
            x = self.fc1(x).relu()
            x = self.fc2(x)
            return x

    model = MyModel()
    assert list(model.state_dict()) == ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    assert [p for p in model.parameters()] == [*model.fc1.parameters(), *model.fc2.parameters()]
    loss = nn.mse_loss(model(gt.randn(10)), gt.randn(1))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.raises(TypeError, match='registers its own entries'):
        model._parameters = [nn.Parameter(gt.zeros(1))]  # not the model's: refused as before
