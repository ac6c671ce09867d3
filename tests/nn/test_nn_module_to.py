"""Module.to and its shorthands: devices change nothing (GT places tensors itself), dtypes
cast the floating parameters, buffers and gradients in place, as torch's do."""

import pytest
import torch
from nn_check import assert_close, randn

import gt
import gt.nn as nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 3)
        self.register_buffer('scale', gt.tensor(torch.full((3,), 0.5)))
        self.register_buffer('count', gt.tensor(torch.tensor([2, 3], dtype=torch.int64)))

    def forward(self, x):
        return self.layer(x) * self.scale


def state(module: nn.Module) -> list[tuple]:
    return [(name, tensor._id, tensor.dtype)
            for name, tensor in module.state_dict(keep_vars=True).items()]


@pytest.mark.parametrize('device', ['cuda', 'cpu', 'gt', 'cuda:1', torch.device('cuda', 0), 0])
def test_a_device_changes_nothing(device):
    module = Scaled()
    before = state(module)
    assert module.to(device) is module
    assert module.to(device=device) is module
    assert module.cuda() is module and module.cpu() is module and module.cuda(1) is module
    assert state(module) == before  # not even a copy was recorded


def test_dtypes_cast_floating_parameters_buffers_and_gradients():
    module = Scaled()
    reference = torch.nn.Linear(4, 3)
    module.layer.load_state_dict(reference.state_dict())
    weight = module.layer.weight
    module(gt.randn(2, 4)).sum().backward()
    assert module.to('cuda', torch.float64) is module
    assert module.layer.weight is weight  # the same Parameter, as torch keeps it
    assert weight.dtype == weight.grad.dtype == module.scale.dtype == torch.float64
    assert module.count.dtype == torch.int64  # only floating tensors are cast
    for cast, dtype in [(nn.Module.half, torch.float16), (nn.Module.bfloat16, torch.bfloat16),
                        (nn.Module.float, torch.float32), (nn.Module.double, torch.float64)]:
        assert cast(module) is module
        assert weight.dtype == module.scale.dtype == dtype
    module.to(dtype=torch.float16)
    x = randn(2, 4)
    expected = reference.half()(x.half()) * 0.5
    assert_close(module(gt.tensor(x).half()), expected, rtol=1e-2, atol=1e-3)
    module.to(gt.zeros(1, dtype=torch.bfloat16))  # a tensor's dtype
    assert weight.dtype == torch.bfloat16


def test_bad_arguments_raise_as_in_torch():
    module = Scaled()
    with pytest.raises(TypeError, match='only accepts floating point dtypes'):
        module.to(torch.int64)
    with pytest.raises(RuntimeError):
        module.to('banana')
