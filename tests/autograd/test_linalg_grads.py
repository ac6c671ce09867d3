"""Gradients of 'matmul' against torch: vectors, matrices, batches and broadcast batches;
a matrix times a batch gets its gradient as torch does, by 'folded_mm' (one mm over every
row of the batch), bit for bit, and that differentiates again. And of 'addmm' (a linear
layer's product with its bias)."""

import numpy as np
import pytest
import torch
from check import assert_torchs_bits, check_vs_torch, op

import gt
import gt.nn.functional as F

SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (2, 1, 4, 5)),
]


@pytest.mark.parametrize('a, b', SHAPES, ids=str)
def test_matmul(a, b):
    check_vs_torch(lambda x, y: x @ y, a, b)


def test_matmul_float32_and_method_form():
    check_vs_torch(lambda x, y: x.matmul(y).tanh(), (3, 4), (4, 2), dtype=torch.float32)


def test_matmul_of_a_tensor_with_itself():
    check_vs_torch(lambda x: x @ x.T, (3, 4))
    check_vs_torch(lambda x: x @ x, (3, 3))


@pytest.mark.parametrize('a, w', [((4, 8, 16), (64, 16)), ((4, 8, 64), (11, 64)),
                                  ((2, 3, 5, 7), (9, 7)), ((0, 3, 4), (5, 4))], ids=str)
def test_a_batched_linear_weight_gradient_is_torchs_bits(a, w):
    """torch's linear (and matmul) fold a batch into one mm, whose weight gradient is one
    mm over all its rows: the same sum per batch, then over batches, ends an ulp off."""
    generator = torch.Generator().manual_seed(3)
    x, weight, bias, cotangent = (torch.randn(shape, generator=generator) for shape in
                                  (a, w, w[:1], a[:-1] + w[:1]))
    mine = gt.tensor(weight, requires_grad=True)
    F.linear(gt.tensor(x), mine, gt.tensor(bias)).backward(gt.tensor(cotangent))

    def expected():
        theirs = weight.clone().requires_grad_()
        torch.nn.functional.linear(x, theirs, bias).backward(cotangent)
        return [theirs.grad]
    assert_torchs_bits([mine.grad.data], expected)


@pytest.mark.parametrize('bias', [(5,), (3, 5), (1, 5)], ids=str)
def test_addmm(bias):
    """'addmm' (a linear layer on one worker): the bias's gradient summed over the rows
    it was broadcast to, the matrices' torch's mm backward; and again (second order)."""
    check_vs_torch(lambda b, x, y: op('addmm', b, x, y).tanh(), bias, (3, 4), (4, 5))
    check_vs_torch(lambda b, x, w: op('addmm', b, x, w.t()), bias, (3, 4), (5, 4))


def test_folded_mm_differentiates_again():
    """'folded_mm' is linear in each operand: its gradients are matmuls, second
    derivatives included."""
    def fn(x, y):
        if isinstance(x, torch.Tensor):
            return torch.mm(x.reshape(-1, 4).t(), y.reshape(-1, 5))
        return op('folded_mm', x, y)
    check_vs_torch(fn, (2, 3, 4), (2, 3, 5))
    generator = torch.Generator().manual_seed(4)
    a, b = (torch.randn(shape, generator=generator, dtype=torch.float64)
            for shape in ((2, 3, 4), (4, 5)))
    x, w = gt.tensor(a, requires_grad=True), gt.tensor(b, requires_grad=True)
    tx, tw = a.clone().requires_grad_(), b.clone().requires_grad_()
    first = gt.autograd.grad((x @ w).tanh().sum(), [x, w], create_graph=True)
    t_first = torch.autograd.grad((tx @ tw).tanh().sum(), [tx, tw], create_graph=True)
    second = gt.autograd.grad(sum((f * f).sum() for f in first), [x, w])
    t_second = torch.autograd.grad(sum((f * f).sum() for f in t_first), [tx, tw])
    for got, want in zip(second, t_second):
        torch.testing.assert_close(got.data, want)


def test_batched_layout_passes_its_gradient_through_and_differentiates_again():
    """'batched_layout' keeps its operand's values (a layout for bmm's bits): its
    gradient is the incoming one, and a batched product's second derivatives, which
    differentiate through it, are torch's."""
    def fn(x):
        if isinstance(x, torch.Tensor):
            return x * 3
        return op('batched_layout', x) * 3
    check_vs_torch(fn, (2, 3, 4, 5))
    generator = torch.Generator().manual_seed(5)
    a, b = (torch.randn(shape, generator=generator, dtype=torch.float64)
            for shape in ((2, 4, 3, 5), (2, 3, 5, 4)))
    x = gt.tensor(a, requires_grad=True)
    y = gt.tensor(b, requires_grad=True)
    tx, ty = a.clone().requires_grad_(), b.clone().requires_grad_()
    first = gt.autograd.grad((x.transpose(1, 2) @ y).tanh().sum(), [x, y], create_graph=True)
    t_first = torch.autograd.grad((tx.transpose(1, 2) @ ty).tanh().sum(), [tx, ty],
                                  create_graph=True)
    second = gt.autograd.grad(sum((f * f).sum() for f in first), [x, y])
    t_second = torch.autograd.grad(sum((f * f).sum() for f in t_first), [tx, ty])
    for got, want in zip(second, t_second):
        torch.testing.assert_close(got.data, want)


def test_folded_matmul_gradients_are_torchs():
    """'folded_matmul' (a batch times a weight that requires grad) differentiates as
    matmul, to the bit against torch on a transposed batch, as a Linear over
    `x.transpose(0, 1)` in batch-first attention computes it."""
    generator = torch.Generator().manual_seed(6)
    batch = torch.randn(3, 7, 16, generator=generator)
    weight = torch.randn(5, 16, generator=generator)

    def run(library, make):
        x, w = make(batch).requires_grad_(), make(weight).requires_grad_()
        out = x.transpose(0, 1) @ w.t()
        (out * library.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return [out.detach().numpy(), x.grad.numpy(), w.grad.numpy()]
    got, expected = run(gt, gt.tensor), run(torch, lambda t: t.clone())
    assert 'folded_matmul' in gt.debug.dump_ir(show=False)
    exact = len(gt.runtime.client.current().workers) == 1
    for mine, theirs in zip(got, expected):
        assert (mine == theirs).all() if exact else np.allclose(mine, theirs, atol=1e-5)


PRODUCTS = {
    'q @ k^T, batched': ((2, 16, 8), (2, 16, 8), lambda q, k: q @ k.transpose(1, 2)),
    'q @ k^T, 4-d': ((2, 3, 16, 8), (2, 3, 16, 8), lambda q, k: q @ k.transpose(-1, -2)),
    'x^T bmm x': ((2, 16, 8), (2, 16, 8), lambda x, y: x.transpose(1, 2).bmm(y)),
    'x @ w.T': ((12, 8), (10, 8), lambda x, w: x @ w.T),
    'x @ w.t()': ((12, 8), (10, 8), lambda x, w: x @ w.t()),
    'batch @ w.T': ((3, 12, 8), (20, 8), lambda x, w: x @ w.T),
}


@pytest.mark.parametrize('case', PRODUCTS)
def test_products_with_a_transposed_operand_give_torchs_gradient_bits(case):
    """torch folds a transposed product's gradient only for matrices (its mm backward
    computes a column-major operand's gradient transposed), where `.T` is a permute;
    its bmm backward never does. GT folded batched products too (every hand-written
    attention's key gradient differed) and missed `.T`."""
    left, right, product = PRODUCTS[case]

    def run(library):
        library.manual_seed(0)
        a = library.randn(*left, requires_grad=True)
        b = library.randn(*right, requires_grad=True)
        out = product(a, b)
        out.backward(library.randn(*out.shape))
        return [a.grad, b.grad]
    got = [torch.from_numpy(t.numpy()) for t in run(gt)]
    exact = len(gt.runtime.client.current().workers) == 1
    if exact:
        assert_torchs_bits(got, lambda: [t.detach() for t in run(torch)])
    else:
        for mine, theirs in zip(got, run(torch)):
            torch.testing.assert_close(mine, theirs.detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('left, right', [((3, 20, 8), (8,)), ((2, 3, 20, 8), (8,)),
                                         ((8,), (3, 8, 12)), ((8,), (2, 3, 8, 12)),
                                         ((3, 20, 8), (1, 8, 12)),
                                         ((2, 3, 20, 8), (1, 1, 8, 12))], ids=str)
def test_products_torch_folds_into_one_give_torchs_gradient_bits(left, right):
    """torch folds a batch into rows for one mm or mv (a batch times a vector, a vector
    times a batch, a 3-d batch times an operand of one batch): the gradient is one
    product over every row, where per-batch products summed rounded otherwise (5 of 8
    elements differed). A 4-d operand of one batch is torch's batched product, as GT's."""
    def run(library):
        library.manual_seed(0)
        a = library.randn(*left, requires_grad=True)
        v = library.randn(*right, requires_grad=True)
        out = a @ v
        out.backward(library.randn(*out.shape))
        return [a.grad, v.grad]
    got = [torch.from_numpy(t.numpy()) for t in run(gt)]
    if len(gt.runtime.client.current().workers) == 1:
        assert_torchs_bits(got, lambda: [t.detach() for t in run(torch)])
    else:
        for mine, theirs in zip(got, run(torch)):
            torch.testing.assert_close(mine, theirs.detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('expression', [lambda x, w: (x @ w.T).T, lambda x, w: (x @ w.t()).t(),
                                        lambda x, w: (x @ w.T).transpose(0, 1)],
                         ids=['.T', '.t()', 'transpose'])
def test_a_scripts_transposed_product_is_computed_as_written(expression):
    """An optimizing pass computed `(a @ b)^T` as `b^T @ a^T`, which rounds otherwise."""
    x, w = torch.randn(12, 8), torch.randn(6, 8)
    got = expression(gt.tensor(x), gt.tensor(w)).numpy()
    assert (torch.from_numpy(got) == expression(x, w)).all()
