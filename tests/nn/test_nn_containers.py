"""ModuleDict, ParameterList and ParameterDict against torch.nn: state_dict keys and
order, repr, the dict and list operations, and a model built from them that loads torch's
weights and gives torch's values and gradients."""

from collections import OrderedDict

import pytest
import torch
from nn_check import check_module, randn

import gt
import gt.nn as nn


def build(nn_module, make_tensor) -> tuple:
    """The same three containers made with GT's or torch's classes."""
    modules = nn_module.ModuleDict({'encode': nn_module.Linear(4, 3),
                                    'act': nn_module.Tanh()})
    modules['decode'] = nn_module.Linear(3, 2)
    parameters = nn_module.ParameterList([make_tensor(2, 3), make_tensor(3)])
    parameters.append(nn_module.Parameter(make_tensor(2)))
    named = nn_module.ParameterDict({'scale': make_tensor(2), 'offset': make_tensor(1, 2)})
    return modules, parameters, named


def make_model(nn_module, make_tensor):
    class Model(nn_module.Module):
        def __init__(self):
            super().__init__()
            self.blocks, self.extra, self.named = build(nn_module, make_tensor)

        def forward(self, x):
            h = self.blocks['act'](self.blocks['encode'](x)) + self.extra[1]
            out = self.blocks['decode'](h) + h @ self.extra[0].transpose(0, 1)
            return out * self.named['scale'] + self.named['offset'] + self.extra[-1]
    return Model()


def models():
    return make_model(nn, gt.randn), make_model(torch.nn, torch.randn)


def test_state_dict_keys_and_order_are_torchs():
    mine, theirs = models()
    assert list(mine.state_dict()) == list(theirs.state_dict())
    # A plain dict's keys are sorted, as torch sorts them: 'offset' before 'scale'.
    assert list(mine.named.keys()) == ['offset', 'scale']


def test_repr_is_torchs():
    mine, theirs = models()
    assert repr(mine) == repr(theirs)
    for size in (0, 1):
        assert repr(nn.ParameterList([gt.zeros(2, 3)] * size)) == \
            repr(torch.nn.ParameterList([torch.zeros(2, 3)] * size))
    assert repr(nn.ParameterDict({'a': gt.zeros(3)})) == \
        repr(torch.nn.ParameterDict({'a': torch.zeros(3)}))


def test_values_and_gradients_are_torchs():
    check_module(*models(), randn(5, 4))


def test_module_dict_operations():
    blocks = nn.ModuleDict([('a', nn.ReLU()), ('b', nn.Linear(2, 2))])
    assert list(blocks) == list(blocks.keys()) == ['a', 'b'] and len(blocks) == 2
    assert 'a' in blocks and isinstance(blocks['b'], nn.Linear)
    blocks.update(OrderedDict(c=nn.Tanh()))
    assert isinstance(blocks.pop('a'), nn.ReLU) and list(blocks) == ['b', 'c']
    del blocks['b']
    assert [type(m) for m in blocks.values()] == [nn.Tanh]
    assert len(list(blocks.parameters())) == 0
    blocks.clear()
    assert len(blocks) == 0
    with pytest.raises(ValueError, match='has length 3; 2 is required'):
        blocks.update([('a', nn.ReLU(), 1)])
    with pytest.raises(TypeError, match='iterable of key/value pairs'):
        blocks.update(3)


def test_parameter_list_operations():
    parameters = nn.ParameterList([gt.zeros(2), torch.ones(3)])
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in parameters)
    assert torch.equal(parameters[1].data, torch.ones(3)) and parameters[-2] is parameters[0]
    parameters += [gt.zeros(4)]
    parameters.extend([nn.Parameter(gt.zeros(5))])
    assert [p.shape[0] for p in parameters] == [2, 3, 4, 5]
    part = parameters[1:3]
    assert isinstance(part, nn.ParameterList) and part[0] is parameters[1] and len(part) == 2
    parameters[0] = gt.ones(6)
    assert parameters[0].shape == (6,) and isinstance(parameters[0], nn.Parameter)
    assert [name for name, _ in parameters.named_parameters()] == ['0', '1', '2', '3']
    with pytest.raises(IndexError, match='index 4 is out of range'):
        parameters[4]
    with pytest.raises(TypeError, match='iterable'):
        parameters.extend(gt.zeros(2))
    with pytest.raises(RuntimeError, match='should not be called'):
        parameters(gt.zeros(2))


def test_parameter_dict_operations():
    named = nn.ParameterDict(OrderedDict([('b', gt.zeros(1)), ('a', gt.ones(2))]))
    assert list(named) == ['b', 'a'] and list(reversed(named)) == ['a', 'b']
    assert isinstance(named['a'], nn.Parameter) and named.get('c') is None
    assert named.setdefault('c', gt.zeros(3)).shape == (3,)
    key, value = named.popitem()
    assert key == 'c' and value.shape == (3,) and 'c' not in named
    merged = named | nn.ParameterDict({'z': gt.zeros(1)})
    assert list(merged) == ['b', 'a', 'z'] and list(named) == ['b', 'a']
    assert named.pop('b').shape == (1,) and list(named.state_dict()) == ['a']
    assert list(named.fromkeys(['x', 'y'])) == ['x', 'y']
    named.clear()
    assert len(named) == 0 and list(named.parameters()) == []
    with pytest.raises(TypeError, match='not a string'):
        named[3] = gt.zeros(1)
    with pytest.raises(RuntimeError, match='should not be called'):
        named(gt.zeros(2))


def test_containers_load_torchs_weights():
    mine = nn.ParameterDict({'w': gt.zeros(2, 2)})
    theirs = torch.nn.ParameterDict({'w': torch.randn(2, 2)})
    mine.load_state_dict(theirs.state_dict())
    assert torch.equal(mine['w'].data, theirs['w'].detach())


def test_data_parallel_runs_its_module_as_torch_does_without_gpus():
    """A ported `model = nn.DataParallel(model)`: torch's repr, `module.` state dict keys
    (checkpoints load both ways), values and gradients; on a machine without CUDA torch
    replicates nothing either, and says so with empty device_ids."""
    def build(library):
        return library.nn.DataParallel(library.nn.Sequential(
            library.nn.Linear(4, 3), library.nn.Tanh(), library.nn.Linear(3, 2)))

    mine, theirs = build(gt), build(torch)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == [
        'module.0.weight', 'module.0.bias', 'module.2.weight', 'module.2.bias']
    if not torch.cuda.is_available():
        assert mine.device_ids == theirs.device_ids == []
    check_module(mine, theirs, randn(5, 4))
    theirs.module.load_state_dict(mine.module.state_dict())
    assert isinstance(mine.module, nn.Sequential)
