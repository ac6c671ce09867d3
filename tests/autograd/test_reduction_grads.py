"""Gradients of the reductions ('sum', 'mean', 'amax', 'amin', 'max_dim', 'min_dim', 'var',
'std', 'softmax', 'log_softmax') against torch: dims None, int, negative and lists, keepdim,
ties, and 0-d inputs; softmax's gradients ('softmax_backward', 'log_softmax_backward')
are torch's kernels, bit for bit, and differentiate again as torch's do."""

import numpy as np
import pytest
import torch
from check import check_vs_torch

import gt

DIMS = [None, 0, -1, 1, [0, 2], [-1, 0], [1]]


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', DIMS, ids=str)
@pytest.mark.parametrize('name', ['sum', 'mean', 'amax', 'amin'])
def test_reductions(name, dim, keepdim):
    check_vs_torch(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), (2, 3, 4))


@pytest.mark.parametrize('name', ['sum', 'mean', 'amax', 'amin'])
def test_reductions_of_0d_and_1d(name):
    check_vs_torch(lambda x: getattr(x, name)(), ())
    check_vs_torch(lambda x: getattr(x, name)(dim=0), ())
    check_vs_torch(lambda x: getattr(x, name)(dim=0, keepdim=True), (5,))


def test_amax_and_amin_share_the_gradient_among_ties():
    data = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, -1.0, 0.0]])
    check_vs_torch(lambda x: x.amax(dim=1), data=[data])
    check_vs_torch(lambda x: x.amin(dim=1, keepdim=True), data=[data])
    check_vs_torch(lambda x: x.amax() + x.amin(), data=[data])
    check_vs_torch(lambda x: x.max() * 2 + x.min(), data=[data])


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', [0, 1, -1])
def test_max_and_min_along_a_dim(dim, keepdim):
    check_vs_torch(lambda x: x.max(dim, keepdim=keepdim), (3, 4))
    check_vs_torch(lambda x: x.min(dim=dim, keepdim=keepdim).values, (3, 4))


def test_max_along_a_dim_gives_ties_to_the_index_only():
    data = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    check_vs_torch(lambda x: x.max(1), data=[data])
    check_vs_torch(lambda x: x.min(0).values, data=[data])


def test_max_along_a_dim_of_0d_and_1d():
    check_vs_torch(lambda x: x.max(0), ())
    check_vs_torch(lambda x: x.min(0, keepdim=True), (5,))


def test_indices_of_max_take_no_gradient():
    check_vs_torch(lambda x: x.max(1).indices, (3, 4))
    check_vs_torch(lambda x: (x.argmax(1), x.argmin()), (3, 4))


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', [None, 0, -1, [0, 2]], ids=str)
@pytest.mark.parametrize('name', ['var', 'std'])
def test_var_and_std(name, dim, keepdim):
    check_vs_torch(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), (3, 4, 2))


@pytest.mark.parametrize('name', ['var', 'std'])
def test_var_and_std_corrections(name):
    check_vs_torch(lambda x: getattr(x, name)(1, correction=0), (3, 4))
    check_vs_torch(lambda x: getattr(x, name)(correction=2), (3, 4))
    check_vs_torch(lambda x: getattr(x, name)(0, unbiased=False), (3, 4))
    check_vs_torch(lambda x: getattr(x, name)(), (7,))


@pytest.mark.filterwarnings('ignore:.*degrees of freedom')
@pytest.mark.parametrize('name', ['var', 'std'])
def test_var_and_std_degenerate(name):
    """One element (n - correction = 0) and constant rows (std = 0): torch's NaN, inf and
    zeros, exactly."""
    check_vs_torch(lambda x: getattr(x, name)(), (1,))
    check_vs_torch(lambda x: getattr(x, name)(0), (1, 3))
    check_vs_torch(lambda x: getattr(x, name)(1), data=[np.array([[2.0, 2.0, 2.0],
                                                                  [1.0, 2.0, 4.0]])])


@pytest.mark.parametrize('dim', [0, 1, -1])
@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
def test_softmax(name, dim):
    check_vs_torch(lambda x: getattr(x, name)(dim), (3, 4))
    check_vs_torch(lambda x: getattr(x, name)(dim), (3, 4), dtype=torch.float32)


@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
def test_softmax_of_0d_and_large_values(name):
    check_vs_torch(lambda x: getattr(x, name)(0), ())
    check_vs_torch(lambda x: getattr(x, name)(-1) * 3, data=[np.array([[100.0, 0.0, -100.0],
                                                                       [1e3, 1e3, 0.0]])])


def test_sum_of_all_with_gradient_sum():
    check_vs_torch(lambda x: x.sum(), (2, 3), gradient='sum')
    check_vs_torch(lambda x: x.mean((0, 1)), (2, 3), gradient='sum')


@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
def test_softmax_gradients_are_torchs_bits(name):
    """Through torch's own _softmax_backward_data / _log_softmax_backward_data: equal,
    not merely close, in float32. Torch's CPU kernel gives other bits with other thread
    counts, so the worker's must equal torch's with one thread or with this process's."""
    data = torch.randn(16, 11, generator=torch.Generator().manual_seed(0))
    cotangent = torch.randn(16, 11, generator=torch.Generator().manual_seed(1))
    x = gt.tensor(data, requires_grad=True)
    getattr(x, name)(1).backward(gt.tensor(cotangent))
    threads = torch.get_num_threads()
    references = []
    try:
        for count in sorted({1, threads}):
            torch.set_num_threads(count)
            tx = data.clone().requires_grad_()
            getattr(tx, name)(1).backward(cotangent)
            references.append(tx.grad)
    finally:
        torch.set_num_threads(threads)
    assert any(torch.equal(x.grad.data, reference) for reference in references)


@pytest.mark.parametrize('shape, dim', [((3, 5), 1), ((3, 5), 0), ((), 0), ((2, 3, 4), -1)])
@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
def test_softmax_backward_differentiates_again(name, shape, dim):
    """'softmax_backward' and 'log_softmax_backward' have gradients for the cotangent and
    the forward's output: second derivatives through both, as torch's, in float64."""
    generator = torch.Generator().manual_seed(2)
    data, cotangent = (torch.randn(shape, generator=generator, dtype=torch.float64)
                       for _ in range(2))
    x, tx = gt.tensor(data, requires_grad=True), data.clone().requires_grad_()
    g, tg = gt.tensor(cotangent, requires_grad=True), cotangent.clone().requires_grad_()
    (first,) = gt.autograd.grad((getattr(x, name)(dim) * g).sum(), x, create_graph=True)
    (t_first,) = torch.autograd.grad((getattr(tx, name)(dim) * tg).sum(), tx, create_graph=True)
    torch.testing.assert_close(first.data, t_first.detach())
    second = gt.autograd.grad((first * first * x).sum(), [x, g])
    t_second = torch.autograd.grad((t_first * t_first * tx).sum(), [tx, tg])
    for got, want in zip(second, t_second):
        torch.testing.assert_close(got.data, want)
