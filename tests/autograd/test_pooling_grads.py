"""Max pooling through gt.nn.functional against torch: values, indices and gradients
('max_pooled', whose gradient is 'max_pool_backward', torch's kernel on the forward's
indices), and the gradient's own gradient against torch's double backward. The forward
runs once: its gradient reads the indices instead of running the pooling again."""

import pytest
import torch
from check import check_vs_torch

import gt
import gt.nn.functional as F

# (torch.nn.functional's function, input shape, keyword arguments)
POOLINGS = [
    ('max_pool1d', (2, 3, 9), {'kernel_size': 3, 'stride': 2, 'padding': 1}),
    ('max_pool2d', (2, 3, 8, 8), {'kernel_size': 2}),
    ('max_pool2d', (3, 7, 9), {'kernel_size': (2, 3), 'dilation': 2, 'ceil_mode': True}),
    ('max_pool3d', (1, 2, 4, 5, 6), {'kernel_size': 2, 'stride': (1, 2, 2), 'padding': 1}),
]


def case_id(case) -> str:
    name, shape, options = case
    return name + '-' + 'x'.join(map(str, shape)) + ''.join(
        f',{k}={v}' for k, v in options.items())


def pooling(name: str, options: dict, return_indices: bool = False):
    def fn(x):
        functional = F if isinstance(x, gt.Tensor) else torch.nn.functional
        return getattr(functional, name)(x.relu(), return_indices=return_indices, **options)
    return fn


@pytest.mark.parametrize('dtype', [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize('case', POOLINGS, ids=case_id)
def test_values_and_gradients_are_torchs(case, dtype):
    name, shape, options = case
    check_vs_torch(pooling(name, options), shape, dtype=dtype)


@pytest.mark.parametrize('case', POOLINGS, ids=case_id)
def test_the_indices_are_torchs_too(case):
    name, shape, options = case
    check_vs_torch(pooling(name, options, return_indices=True), shape)


@pytest.mark.parametrize('case', POOLINGS, ids=case_id)
def test_the_gradient_differentiates_again_as_torchs(case):
    name, shape, options = case
    data = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    results = []
    for library, make in ((gt, gt.tensor), (torch, torch.tensor)):
        x = make(data.numpy(), requires_grad=True)
        y = pooling(name, options)(x)
        weight = make(torch.linspace(-1, 1, y.numel(), dtype=torch.float64).reshape(
            y.shape).numpy(), requires_grad=True)
        (first,) = library.autograd.grad((y * weight).sum(), x, create_graph=True)
        (second,) = library.autograd.grad((first * first).sum(), weight)
        results.append((first.data if library is gt else first.detach(),
                        second.data if library is gt else second))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_the_forward_runs_once_and_its_gradient_reads_the_indices():
    x = gt.randn(2, 3, 8, 8, requires_grad=True)
    y = F.max_pool2d(x, 2)
    y.sum().backward()
    ir = gt.debug.dump_ir(show=False)
    assert ir.count('fn=torch.nn.functional.max_pool2d_with_indices') == 1, ir
    assert ir.count('= max_pooled(') == 1 and ir.count('= max_pool_backward(') == 1, ir
    assert 'torch_vjp' not in ir, ir
    with gt.no_grad():
        z = F.max_pool2d(x, 2)
    assert z.grad_fn is None
    ir = gt.debug.dump_ir(show=False)
    assert 'max_pooled' not in ir and 'fn=torch.nn.functional.max_pool2d,' in ir, ir
