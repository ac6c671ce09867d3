"""Gradients of 'torch_call' (torch functions GT runs by name, differentiated by
'torch_vjp') against torch's autograd: one output, several outputs of which some are
integer, list results, data-dependent shapes, index inputs that take no gradient, and
chains mixing fallback calls with GT's own ops."""

import pytest
import torch
from check import check_vs_torch, lib, like

CASES = {
    'sin': (lambda x: lib(x).sin(x), [(3, 4)]),
    'einsum': (lambda x, y: lib(x).einsum('bij,bjk->bik', x, y), [(2, 3, 4), (2, 4, 5)]),
    'topk values': (lambda x: x.topk(2, dim=1).values * 3, [(4, 5)]),
    'sort both outputs': (lambda x: x.sort(dim=0)[0] + x.sort(dim=0)[1].float(), [(5, 3)]),
    'cummax': (lambda x: lib(x).cummax(x, dim=1).values, [(3, 6)]),
    'split': (lambda x: lib(x).split(x, [1, 2], dim=0)[1].exp(), [(3, 4)]),
    'pad reflect': (lambda x: lib(x).nn.functional.pad(x, (2, 1), mode='reflect'), [(2, 3, 5)]),
    'cumprod': (lambda x: x.cumprod(dim=1), [(3, 4)]),
    'tril then matmul': (lambda x, y: lib(x).tril(x) @ y, [(4, 4), (4, 2)]),
    'index_select': (lambda x: lib(x).index_select(x, 0, like(x, [2, 0, 2])), [(3, 4)]),
    'take_along_dim': (lambda x: lib(x).take_along_dim(x, like(x, [[0, 2], [1, 1]]), dim=1),
                       [(2, 3)]),
    'mask index': (lambda x: x[x > 0] * 2, [(4, 5)]),
    'tensor index': (lambda x: x[like(x, [3, 0])], [(4, 5)]),
    'masked_fill': (lambda x: x.masked_fill(x < 0, 0.5), [(3, 4)]),
    'norm': (lambda x: lib(x).linalg.norm(x, dim=1), [(3, 4)]),
    'logsumexp': (lambda x: x.logsumexp(dim=1), [(3, 4)]),
}


@pytest.mark.parametrize('name', CASES)
def test_torch_call(name):
    function, shapes = CASES[name]
    check_vs_torch(function, *shapes)


def test_torch_call_in_float32_beside_gt_ops():
    check_vs_torch(lambda x, y: (x.relu().cumsum(dim=0) * y).sigmoid(), (3, 4), (3, 4),
                   dtype=torch.float32)


def _penalty(library, make_inputs, function):
    """A gradient penalty (WGAN-GP's): the input gradient's norm, differentiated again
    with `create_graph=True`; returns the penalty and every leaf's gradient."""
    leaves = make_inputs(library)
    x = leaves[0]
    (gradient,) = library.autograd.grad(function(library, *leaves).sum(), x, create_graph=True)
    penalty = ((gradient.reshape(gradient.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()
    penalty.backward()
    return [penalty] + [leaf.grad for leaf in leaves]


def _conv(library, x, weight, bias):
    return library.nn.functional.conv2d(x, weight, bias, padding=1).tanh()


def _lstm(library, x, *weights):
    h0 = library.zeros(1, 3, 5, dtype=torch.float64)
    output, _, _ = library.lstm(x, (h0, h0), list(weights), True, 1, 0.0, True, False, False)
    return output * output


def _packed_lstm(library, x, *weights):
    """torch's packed kernel: 3 sequences of lengths 3, 2 and 1, their sizes per step
    host indices in GT (gt.nn's packed LSTM calls it so)."""
    from gt.ir.torch_arguments import HostIndices
    sizes = torch.tensor([3, 2, 1]) if library is torch else HostIndices([3, 2, 1])
    h0 = library.zeros(1, 3, 5, dtype=torch.float64)
    output, _, _ = library.lstm(x, sizes, (h0, h0), list(weights), True, 1, 0.0, True, False)
    return output * output


def _softsign(library, x):
    return library.nn.functional.softsign(x) * x


def _leaves(*shapes):
    def make(library):
        generator = torch.Generator().manual_seed(9)
        data = [torch.randn(shape, generator=generator, dtype=torch.float64) for shape in shapes]
        make_tensor = (lambda t: t.clone()) if library is torch else (
            lambda t: library.tensor(t.numpy()))
        return [make_tensor(t).requires_grad_() for t in data]
    return make


@pytest.mark.parametrize('name, make_inputs, function', [
    ('conv2d', _leaves((2, 3, 5, 5), (4, 3, 3, 3), (4,)), _conv),
    ('lstm', _leaves((4, 3, 2), (20, 2), (20, 5), (20,), (20,)), _lstm),
    ('packed lstm', _leaves((6, 2), (20, 2), (20, 5), (20,), (20,)), _packed_lstm),
    ('softsign', _leaves((3, 4)), _softsign),
], ids=lambda value: value if isinstance(value, str) else '')
def test_a_gradient_penalty_through_a_call_by_name_is_torchs(name, make_inputs, function):
    """'torch_vjp' differentiates again: its gradient is 'torch_vjp_grad'."""
    import gt
    got = _penalty(gt, make_inputs, function)
    want = _penalty(torch, make_inputs, function)
    for index, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a.data, b.detach(), msg=lambda m: f'{name} {index}: {m}')


def _several_outputs(library, a, b):
    return [library.broadcast_tensors(a, b), library.broadcast_tensors(b, a, b),
            library.meshgrid(a.flatten(), b, indexing='ij'), library.atleast_2d(b, a),
            [a.new_zeros(3)], library.split(a * b, 1)]


def test_outputs_require_grad_only_where_torch_s_do():
    """torch marks a call's output as requiring grad only where it depends on an input
    that does; the gradient through those is torch's."""
    import gt
    data = torch.randn(3, 1, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    a, b = gt.tensor(data[0].numpy(), requires_grad=True), gt.tensor(data[1].numpy())
    ta, tb = data[0].clone().requires_grad_(), data[1].clone()
    for got, want in zip(_several_outputs(gt, a, b), _several_outputs(torch, ta, tb),
                         strict=True):
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
        assert all(t.grad_fn is None for t in got if not t.requires_grad)
    x, y = gt.broadcast_tensors(a, b)
    tx, ty = torch.broadcast_tensors(ta, tb)
    (x * y.exp()).sum().backward()
    (tx * ty.exp()).sum().backward()
    torch.testing.assert_close(a.grad.data, ta.grad)


def _hessian_vector_products(library):
    """torch.autograd.functional's hvp differentiates a second derivative again (its
    double-backward trick): through calls GT runs by name, a third order."""
    functional, F = library.autograd.functional, library.nn.functional
    library.manual_seed(0)
    weight, x = library.randn(2, 1, 3, 3), library.randn(1, 1, 5, 5)
    z = library.tensor([0.5, -1.0, 2.0])
    smooth = lambda t: library.logsumexp(t * t, 0) + t.flip(0).norm()  # noqa: E731
    return [*functional.hvp(lambda t: F.conv2d(t, weight, padding=1).tanh().sum(), x,
                            library.ones_like(x)),
            *functional.hvp(smooth, z, library.ones(3)), functional.hessian(smooth, z),
            *functional.vhp(smooth, z, library.ones(3))]


def test_hessian_vector_products_through_calls_by_name_are_torchs():
    import gt
    for got, want in zip(_hessian_vector_products(gt), _hessian_vector_products(torch)):
        torch.testing.assert_close(got.data, want, rtol=1e-4, atol=1e-5)
