"""`device=` and `dtype=` on every gt.nn module whose torch twin takes them, as ported GPU
code passes them (`nn.Linear(a, b, device=device)`, or a custom layer forwarding its
`factory_kwargs`): the dtype is torch's, drawn in that dtype, and the device is accepted
and left to GT, which places tensors itself. torch, built with the same seed and
arguments on the CPU, is the oracle, bit for bit."""

import inspect

import pytest
import torch

import gt
import gt.nn as nn

# Arguments for each module (the sweep below fails for a module missing here).
ARGUMENTS = {
    'BatchNorm1d': (4,), 'BatchNorm2d': (4,), 'BatchNorm3d': (4,), 'SyncBatchNorm': (4,),
    'Bilinear': (4, 3, 2), 'Conv1d': (2, 3, 3), 'Conv2d': (2, 3, 3), 'Conv3d': (2, 3, 2),
    'ConvTranspose1d': (2, 3, 3), 'ConvTranspose2d': (2, 3, 3), 'ConvTranspose3d': (2, 3, 2),
    'Embedding': (7, 3), 'EmbeddingBag': (7, 3), 'GroupNorm': (2, 4),
    'InstanceNorm1d': (4,), 'InstanceNorm2d': (4,), 'InstanceNorm3d': (4,),
    'GRUCell': (3, 4), 'LSTMCell': (3, 4), 'RNNCell': (3, 4),
    'GRU': (3, 4), 'LSTM': (3, 4), 'RNN': (3, 4),
    'LayerNorm': (6,), 'Linear': (5, 3), 'MultiheadAttention': (8, 2), 'PReLU': (),
    'RMSNorm': (6,), 'Transformer': (8, 2, 1, 1, 16),
    'TransformerDecoderLayer': (8, 2, 16), 'TransformerEncoderLayer': (8, 2, 16),
}
BASES = {'RNNBase', 'RNNCellBase'}  # abstract in use: made through their subclasses
# Their parameters are made at the first call (tests/api/test_ported_script_surface.py).
LAZY = {name for name in dir(nn) if name.startswith('Lazy')}


def modules_taking_factory_kwargs() -> list[str]:
    names = []
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if (inspect.isclass(cls) and issubclass(cls, torch.nn.Module) and hasattr(nn, name)
                and name not in BASES | LAZY
                and 'device' in inspect.signature(cls.__init__).parameters):
            names.append(name)
    return sorted(set(names) | {'GRU', 'LSTM', 'RNN'})  # these pass **kwargs to RNNBase


def test_every_such_module_is_swept():
    assert set(modules_taking_factory_kwargs()) <= set(ARGUMENTS)


@pytest.mark.parametrize('name', sorted(ARGUMENTS))
@pytest.mark.parametrize('dtype', [torch.float64, None], ids=['float64', 'default'])
def test_device_and_dtype_are_taken_as_torch_takes_them(name, dtype):
    def build(library, device):
        library.manual_seed(5)
        return getattr(library.nn, name)(*ARGUMENTS[name], device=device, dtype=dtype)

    mine, theirs = build(gt, 'cuda:0'), build(torch, 'cpu')
    want = theirs.state_dict()
    got = mine.state_dict()
    assert list(got) == list(want)
    for key, value in want.items():
        assert got[key].dtype == value.dtype, key
        assert torch.equal(got[key].data if isinstance(got[key], gt.Tensor) else got[key],
                           value), key
