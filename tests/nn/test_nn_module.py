"""Module bookkeeping as torch.nn has it: registration by attribute assignment, dotted
names, traversal, modes, zero_grad, and state_dict / load_state_dict both ways with torch."""

import numpy as np
import pytest
import torch
from nn_check import assert_close, randn

import gt
import gt.nn as nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.layers = nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(),
                                    nn.Linear(2 * width, width))
        self.scale = nn.Parameter(gt.ones(width))
        self.register_buffer('steps', gt.zeros(1))

    def forward(self, x):
        return self.layers(self.norm(x)) * self.scale


class TorchBlock(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.layers = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.ReLU(),
                                          torch.nn.Linear(2 * width, width))
        self.scale = torch.nn.Parameter(torch.ones(width))
        self.register_buffer('steps', torch.zeros(1))

    def forward(self, x):
        return self.layers(self.norm(x)) * self.scale


def test_public_names():
    from gt.nn import SGD, Linear, Module

    assert gt.nn.Module is Module and gt.nn.Linear is Linear and gt.nn.SGD is SGD
    assert gt.nn.optim.Adam is gt.nn.Adam and gt.nn.functional.mse_loss is gt.nn.mse_loss
    assert 'nn' in gt.__all__


def test_registration_names_and_traversal():
    block = Block(4)
    names = [name for name, _ in block.named_parameters()]
    assert names == [name for name, _ in TorchBlock(4).named_parameters()]
    assert names == ['scale', 'norm.weight', 'norm.bias', 'layers.0.weight', 'layers.0.bias',
                     'layers.2.weight', 'layers.2.bias']
    assert [type(m).__name__ for m in block.children()] == ['LayerNorm', 'Sequential']
    assert [name for name, _ in block.named_modules()] == [
        '', 'norm', 'layers', 'layers.0', 'layers.1', 'layers.2']
    assert len(list(block.parameters())) == 7
    assert block.layers[0] is block.layers._modules['0'] and len(block.layers) == 3
    assert [name for name, _ in block.named_buffers()] == ['steps']
    assert [n for n, _ in block.named_parameters(prefix='model', recurse=False)] == ['model.scale']


def test_shared_parameters_are_listed_once():
    first = nn.Linear(3, 3)
    model = nn.Sequential(first, nn.ReLU(), first)
    assert len(list(model.parameters())) == 2
    assert [name for name, _ in model.named_parameters()] == ['0.weight', '0.bias']


def test_assignment_rules():
    layer = nn.Linear(2, 3)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        layer.weight = gt.zeros(3, 2)
    layer.bias = None
    assert [name for name, _ in layer.named_parameters()] == ['weight']
    layer.extra = nn.Parameter(gt.zeros(2))
    assert 'extra' in dict(layer.named_parameters())
    del layer.extra
    assert 'extra' not in dict(layer.named_parameters())
    layer.note = 'plain attribute'
    assert layer.note == 'plain attribute'
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        layer.missing  # noqa: B018

    class Forgetful(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match='super\\(\\).__init__'):
        Forgetful()


def test_parameter():
    source = gt.tensor([1.0, 2.0])
    parameter = nn.Parameter(source)
    assert isinstance(parameter, gt.Tensor) and parameter.is_leaf and parameter.requires_grad
    source += 1  # shared, as torch's Parameter shares its source's storage
    assert parameter.tolist() == [2.0, 3.0]
    with gt.no_grad():
        parameter.mul_(2)
    assert source.tolist() == [4.0, 6.0] and parameter.is_leaf
    assert nn.Parameter(np.ones(3, np.float32)).tolist() == [1.0, 1.0, 1.0]
    assert not nn.Parameter(torch.ones(2), requires_grad=False).requires_grad
    assert 'Parameter containing' in repr(parameter)
    with pytest.raises(RuntimeError, match='floating point'):
        nn.Parameter(gt.tensor([1, 2]))


def test_train_eval_and_zero_grad():
    block = Block(4)
    assert all(m.training for m in block.modules())
    assert block.eval() is block and not any(m.training for m in block.modules())
    block.train()
    assert all(m.training for m in block.modules())
    block(gt.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in block.parameters())
    block.zero_grad(set_to_none=False)
    assert all(p.grad.data.abs().sum() == 0 for p in block.parameters())
    block.zero_grad()
    assert all(p.grad is None for p in block.parameters())


def test_state_dict_matches_torch_and_round_trips():
    theirs, mine = TorchBlock(4), Block(4)
    with torch.no_grad():
        theirs.scale.copy_(randn(4))
    state = mine.state_dict()
    assert list(state) == list(theirs.state_dict())
    assert all(isinstance(value, torch.Tensor) for value in state.values())
    result = mine.load_state_dict(theirs.state_dict())
    assert repr(result) == repr(theirs.load_state_dict(theirs.state_dict()))
    assert result == ([], [])
    x = randn(3, 4)
    assert_close(mine(gt.tensor(x)), theirs(x))
    partial = {'scale': theirs.scale.detach()}
    assert repr(mine.load_state_dict(partial, strict=False)) == repr(
        theirs.load_state_dict(partial, strict=False))
    # And back: torch loads what GT saved.
    again = TorchBlock(4)
    again.load_state_dict(mine.state_dict())
    assert_close(again(x), theirs(x), rtol=0, atol=0)
    # numpy arrays load too; values are copies, not views of the dict.
    arrays = {name: value.numpy() * 2 for name, value in theirs.state_dict().items()}
    mine.load_state_dict(arrays)
    assert_close(mine.scale, theirs.scale * 2)
    assert isinstance(mine.state_dict(keep_vars=True)['scale'], nn.Parameter)


def test_load_state_dict_errors_name_the_keys_and_shapes():
    mine = Block(4)
    state = TorchBlock(4).state_dict()
    state.pop('norm.bias')
    state['head.weight'] = torch.zeros(2)
    state['layers.0.weight'] = torch.zeros(5, 4)
    with pytest.raises(RuntimeError) as error:
        mine.load_state_dict(state)
    with pytest.raises(RuntimeError) as torch_error:
        TorchBlock(4).load_state_dict(state)
    assert str(error.value) == str(torch_error.value).replace('TorchBlock', 'Block')
    # Not strict: names may differ, shapes may not; nothing is loaded on error.
    with pytest.raises(RuntimeError, match='size mismatch'):
        mine.load_state_dict(state, strict=False)
    state['layers.0.weight'] = torch.full((8, 4), 3.0)
    result = mine.load_state_dict(state, strict=False)
    assert result.missing_keys == ['norm.bias'] and result.unexpected_keys == ['head.weight']
    assert torch.all(mine.layers[0].weight.data == 3.0)


def test_load_casts_to_the_parameter_dtype():
    layer = nn.Linear(2, 2)
    layer.load_state_dict({'weight': np.eye(2), 'bias': torch.zeros(2, dtype=torch.float64)})
    assert layer.weight.dtype == torch.float32 and layer.weight.tolist() == [[1, 0], [0, 1]]
    assert layer.double().weight.dtype == torch.float64


def test_repr_like_torch():
    def model(lib):
        return lib.Sequential(lib.Flatten(), lib.Linear(3, 2), lib.LayerNorm(2, bias=False),
                              lib.ReLU(), lib.Dropout(0.1), lib.Softmax(dim=1),
                              lib.LogSoftmax(1), lib.LayerNorm(2, elementwise_affine=False))
    assert repr(model(nn)) == repr(model(torch.nn))


def test_updating_a_parameter_in_place_keeps_its_place():
    layer = nn.Linear(2, 2)
    with gt.no_grad():
        layer.weight -= 1.0  # Module.__setattr__ sees the same Parameter again
    assert [name for name, _ in layer.named_parameters()] == ['weight', 'bias']
    assert list(layer.state_dict()) == ['weight', 'bias']


def test_deepcopy_copies_values_gradients_and_buffers_as_torch():
    """An EMA or target network: the copy has the same values, its own storage, and
    trains on its own."""
    import copy

    mine = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    mine.load_state_dict(theirs.state_dict())
    x = torch.randn(4, 3)
    mine(gt.tensor(x)).sum().backward()
    theirs(x).sum().backward()
    mine_copy, theirs_copy = copy.deepcopy(mine), copy.deepcopy(theirs)
    assert repr(mine_copy) == repr(theirs_copy)
    for (name, got), (_, want) in zip(mine_copy.state_dict().items(),
                                      theirs_copy.state_dict().items()):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)  # running stats: ulps
    for got, want in zip(mine_copy.parameters(), theirs_copy.parameters()):
        assert type(got) is nn.Parameter and got.requires_grad
        assert got.grad is None and want.grad is None  # torch's Parameter leaves it behind
    leaf = gt.ones(2, requires_grad=True)
    (leaf * 3).sum().backward()
    assert copy.deepcopy(leaf).grad.tolist() == [3.0, 3.0]  # a plain tensor's comes along
    with gt.no_grad():
        mine_copy[0].weight.mul_(0.0)
    assert torch.equal(mine[0].weight.data, theirs[0].weight.data)
    with pytest.raises(RuntimeError, match='graph leaves'):
        copy.deepcopy(mine[0].weight * 2)


def test_torch_save_and_pickle_write_values_torch_reads_anywhere(tmp_path):
    """torch.save of a GT state dict (a script that kept `import torch` for saving) and
    pickling write plain torch tensors and Parameters: GT values live on this session's
    workers, out of reach of whoever loads the file."""
    import pickle

    model = nn.Linear(3, 2)
    torch.save({'state': model.state_dict(), 'weight': model.weight}, tmp_path / 'm.pt')
    loaded = torch.load(tmp_path / 'm.pt', weights_only=True)
    twin = torch.nn.Linear(3, 2)
    twin.load_state_dict(loaded['state'])
    assert torch.equal(twin.weight, model.weight.data)
    assert type(loaded['weight']) is torch.nn.Parameter and loaded['weight'].requires_grad
    value = pickle.loads(pickle.dumps(gt.arange(3)))
    assert type(value) is torch.Tensor and value.tolist() == [0, 1, 2]


class TiedWithBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(4, 4), nn.Linear(4, 4)
        self.second.weight = self.first.weight
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.second(self.first(x)).relu())


@pytest.mark.parametrize('route', ['pickle', 'torch.save'])
def test_a_pickled_module_trains_as_the_original(route):
    """A GT module pickled whole (pickle, torch.save and torch.load, multiprocessing) comes
    back with GT tensors, tied weights still one: it kept torch's, and trained on nothing
    (its output required no grad)."""
    import io
    import pickle

    gt.manual_seed(0)
    model = TiedWithBatchNorm()
    if route == 'pickle':
        twin = pickle.loads(pickle.dumps(model))
    else:
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        twin = torch.load(buffer, weights_only=False)
    assert type(twin.first.weight) is nn.Parameter and twin.first.weight is twin.second.weight
    assert isinstance(twin.norm.running_mean, gt.Tensor)
    x = gt.randn(6, 4)
    for trained in (model, twin):
        optimizer = gt.optim.SGD(trained.parameters(), lr=0.1)
        trained(x).pow(2).sum().backward()
        optimizer.step()
    for (name, want), got in zip(model.state_dict().items(), twin.state_dict().values()):
        assert torch.equal(got, want), name


def test_assigning_a_registry_names_the_mistake():
    class Declares(nn.Module):
        def __init__(self, parameters):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self._parameters = parameters(self.fc)

    # The seeds' spelling, its children's own parameters: nothing to assign, and accepted.
    assert list(Declares(lambda fc: list(fc.parameters())).state_dict()) == [
        'fc.weight', 'fc.bias']
    for foreign in (lambda fc: [nn.Parameter(gt.zeros(2))], lambda fc: {}):
        with pytest.raises(TypeError, match='_parameters is where the module registers'):
            Declares(foreign)


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_train_calls_each_childs_own_train(library):
    """A backbone that keeps its batch norm in eval whatever its parent's mode: `train()`
    must call the child's override, as torch's does (GT set every module's flag itself)."""
    class Backbone(library.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.bn = library.nn.Linear(3, 3), library.nn.BatchNorm1d(3)

        def train(self, mode=True):
            super().train(mode)
            self.bn.eval()
            return self

    class Net(library.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone, self.head = Backbone(), library.nn.Linear(3, 1)

    model = Net()
    assert model.train() is model
    assert model.training and model.head.training and model.backbone.fc.training
    assert not model.backbone.bn.training
    model.backbone.bn(library.randn(8, 3))
    assert model.backbone.bn.running_mean.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match='training mode is expected to be boolean'):
        model.train('eval')


def test_keyword_arguments_from_torch_join_gt_as_positional_ones_do():
    """`model(**batch)` with a batch a DataLoader collated as torch tensors."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(3, 2)

        def forward(self, x, *, scale=None):
            return gt.nn.functional.linear(x, self.layer.weight, self.layer.bias) * scale

    model, x, scale = Model(), torch.randn(4, 3), torch.tensor(2.0)
    expected = torch.nn.functional.linear(
        x, torch.as_tensor(model.layer.weight.tolist()), torch.as_tensor(model.layer.bias.tolist()))
    assert_close(model(x=x, scale=scale), expected * 2)


def test_a_torch_layer_with_weights_left_in_a_gt_model_is_refused_by_name():
    """A half-ported model's torch.nn.Linear ran, but its weights were never in
    parameters() or state_dict, and never trained. A torch module without tensors
    (torchvision's Normalize, say) stays a plain attribute."""
    class HalfPorted(nn.Module):
        def __init__(self, head):
            super().__init__()
            self.act = torch.nn.ReLU()
            self.head = head

    with pytest.raises(TypeError, match="torch.nn.Linear 'head'.*use gt.nn.Linear"):
        HalfPorted(torch.nn.Linear(3, 2))
    with pytest.raises(TypeError, match="torch.nn.Parameter 'head'.*use gt.nn.Parameter"):
        HalfPorted(torch.nn.Parameter(torch.ones(2)))
    with pytest.raises(TypeError, match="torch.nn.ReLU is torch's module, not GT's"):
        nn.Sequential(torch.nn.ReLU())
    assert HalfPorted(None).act(gt.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


@pytest.mark.parametrize('name', ['a.b', '', 'training', 'forward', 3])
def test_register_parameter_checks_the_name_as_torch(name):
    """A dotted name broke the state_dict round trip, and 'training' replaced the flag."""
    errors = []
    for library in (gt, torch):
        with pytest.raises((KeyError, TypeError)) as raised:
            library.nn.Linear(2, 2).register_parameter(
                name, library.nn.Parameter(library.ones(1)))
        errors.append((raised.type, str(raised.value)))
    assert errors[0] == errors[1]
