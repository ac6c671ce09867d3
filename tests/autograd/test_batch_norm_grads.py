"""Batch norm in training on one worker is torch's kernels ('batch_norm_train', and
'batch_normed', whose gradient is 'batch_norm_backward'): outputs, gradients and running
statistics equal torch's to the bit over several steps, and the gradient's own gradient
('batch_norm_backward_grad') is torch's double backward. On several workers (the suite's
sharded re-run) it is composed of ops that shard, equal to torch's within rounding."""

import pytest
import torch

import gt
import gt.nn as nn

# (module name, input shape)
LAYERS = [('BatchNorm1d', (6, 3)), ('BatchNorm1d', (4, 3, 7)), ('BatchNorm2d', (4, 3, 5, 5)),
          ('BatchNorm3d', (2, 3, 2, 3, 4))]


def one_worker() -> bool:
    """Whether this session's cluster trains batch norm with torch's kernels."""
    return len(gt.runtime.client.current().workers) == 1


def pair(name: str, dtype: torch.dtype):
    """torch's layer with a weight and bias off their defaults, and GT's loaded from it."""
    theirs = getattr(torch.nn, name)(3, momentum=0.2).to(dtype)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(1))
        theirs.bias.uniform_(-1, 1, generator=torch.Generator().manual_seed(2))
    mine = getattr(nn, name)(3, momentum=0.2).to(dtype)
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize('name, shape', LAYERS, ids=lambda v: v if isinstance(v, str) else '')
def test_training_steps_are_torchs_to_the_bit(name, shape, dtype):
    mine, theirs = pair(name, dtype)
    generator = torch.Generator().manual_seed(3)
    for step in range(3):
        x = torch.randn(shape, dtype=dtype, generator=generator) * 3 + step
        weights = torch.randn(shape, dtype=dtype, generator=generator)
        tx, gx = x.clone().requires_grad_(), gt.tensor(x.numpy(), requires_grad=True)
        t_out, g_out = theirs(tx), mine(gx)
        (t_out * weights).sum().backward()
        (g_out * gt.tensor(weights.numpy())).sum().backward()
        got = [g_out, gx.grad, mine.weight.grad, mine.bias.grad, mine.running_mean,
               mine.running_var]
        want = [t_out, tx.grad, theirs.weight.grad, theirs.bias.grad, theirs.running_mean,
                theirs.running_var]
        for index, (a, b) in enumerate(zip(got, want)):
            if one_worker():
                assert torch.equal(a.data, b.detach()), (step, index)
            else:
                torch.testing.assert_close(a.data, b.detach(), rtol=1e-4, atol=1e-5)
        mine.zero_grad()
        theirs.zero_grad()
    assert mine.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 3


def test_one_node_each_way():
    layer = nn.BatchNorm2d(3)
    x = gt.randn(4, 3, 5, 5, requires_grad=True)
    output = layer(x)
    output.sum().backward()
    ir = gt.debug.dump_ir(show=False)
    if not one_worker():
        assert 'batch_norm' not in ir and '= rsqrt(' in ir, ir
        return
    for row in ('batch_norm_train', 'batch_normed', 'batch_norm_backward'):
        assert ir.count(f'= {row}(') == 1, (row, ir)
    assert 'rsqrt' not in ir and 'var(' not in ir, ir


def test_the_gradient_differentiates_again_as_torchs():
    """A gradient penalty through batch norm (as MAML differentiates through its
    convolutional blocks' batch norm): first and second derivatives equal torch's."""
    x = torch.randn(4, 3, 5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    weights = torch.randn(4, 3, 5, 5, dtype=torch.float64,
                          generator=torch.Generator().manual_seed(5))
    results = []
    for library, make in ((gt, gt.tensor), (torch, torch.tensor)):
        layer = pair('BatchNorm2d', torch.float64)[0 if library is gt else 1]
        inputs = make(x.numpy(), requires_grad=True)
        (first,) = library.autograd.grad((layer(inputs) * make(weights.numpy())).sum(), inputs,
                                         create_graph=True)
        (first * first).sum().backward()
        if library is gt and one_worker():
            assert 'batch_norm_backward_grad' in gt.debug.dump_ir(show=False)
        results.append([t.data if library is gt else t.detach() for t in (
            first, inputs.grad, layer.weight.grad)])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_a_third_derivative_is_refused_naming_the_row():
    """A second derivative recorded for differentiating again (create_graph) is refused
    (composed of ops, on several workers, it is not); the session goes on."""
    layer = nn.BatchNorm1d(3)
    x = gt.randn(5, 3, requires_grad=True)
    (first,) = gt.autograd.grad((layer(x) ** 3).sum(), x, create_graph=True)
    if one_worker():
        with pytest.raises(NotImplementedError,
                           match='second derivative of batch_norm_backward'):
            gt.autograd.grad((first ** 2).sum(), x, create_graph=True)
    else:
        gt.autograd.grad((first ** 2).sum(), x, create_graph=True)
    (second,) = gt.autograd.grad((first ** 2).sum(), x)
    assert second.shape == (5, 3) and bool(second.isfinite().all())
