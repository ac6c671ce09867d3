"""Gradients of 'layer_norm', 'layer_norm_backward', 'nll_loss_forward',
'binary_cross_entropy' and 'binary_cross_entropy_backward' against torch:
torch's own kernels, so float32 gradients are torch's bits; second derivatives as torch's
double backward gives them (float64)."""

import pytest
import torch
from check import assert_torchs_bits, check_vs_torch, lib, op

import gt
import gt.nn.functional as F

AFFINE = [(True, True), (True, False), (False, True), (False, False)]


def _layer_norm(normalized, affine):
    def fn(x, *parameters):
        weight = parameters[0] if affine[0] else None
        bias = parameters[-1] if affine[1] else None
        return lib(x).nn.functional.layer_norm(x, normalized, weight, bias, 1e-5)
    return fn


@pytest.mark.parametrize('affine', AFFINE, ids=str)
@pytest.mark.parametrize('shape, normalized', [((3, 5), (5,)), ((2, 3, 4), (3, 4)), ((4,), (4,)),
                                               ((0, 3), (3,))], ids=str)
def test_layer_norm(shape, normalized, affine):
    parameters = [normalized] * sum(affine)
    check_vs_torch(_layer_norm(normalized, affine), shape, *parameters)
    check_vs_torch(_layer_norm(normalized, affine), shape, *parameters, dtype=torch.float32)


def _random(*shapes, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator, dtype=dtype) for shape in shapes]


def test_layer_norm_gradients_are_torchs_bits():
    """native_layer_norm_backward, the kernel torch's autograd calls: the input's, weight's
    and bias's gradients equal torch's, not merely close."""
    data = _random((32, 16), (16,), (16,), (32, 16))
    mine = [gt.tensor(t, requires_grad=True) for t in data[:3]]
    (F.layer_norm(mine[0], 16, mine[1], mine[2]) * gt.tensor(data[3])).sum().backward()

    def expected():
        theirs = [t.clone().requires_grad_() for t in data[:3]]
        (torch.nn.functional.layer_norm(theirs[0], (16,), theirs[1], theirs[2]) * data[3]
         ).sum().backward()
        return [t.grad for t in theirs]
    assert_torchs_bits([t.grad.data for t in mine], expected)


# torch's own double backward fails for a bias without a weight, so that case is not here.
@pytest.mark.parametrize('affine', [(True, True), (True, False), (False, False)], ids=str)
@pytest.mark.parametrize('shape, normalized', [((3, 5), (5,)), ((2, 3, 4), (3, 4)),
                                               ((4,), (4,))], ids=str)
def test_layer_norm_backward_differentiates_again(shape, normalized, affine):
    """'layer_norm_backward' has gradients for the cotangent, the input and the weight:
    second derivatives of layer_norm as torch's, through every first derivative."""
    x, weight, bias, cotangent = _random(shape, normalized, normalized, shape,
                                         dtype=torch.float64)
    given = [x] + [weight] * affine[0] + [bias] * affine[1]
    mine = [gt.tensor(t, requires_grad=True) for t in given + [cotangent]]
    theirs = [t.clone().requires_grad_() for t in given + [cotangent]]
    results = []
    for tensors, library in ((mine, gt), (theirs, torch)):
        out = _layer_norm(normalized, affine)(*tensors[:-1])
        first = library.autograd.grad((out * tensors[-1]).sum(), tensors[:-1], create_graph=True)
        weights = _random(*[tuple(f.shape) for f in first], dtype=torch.float64, seed=1)
        total = sum((f * f * (gt.tensor(w) if library is gt else w)).sum()
                    for f, w in zip(first, weights))
        results.append(library.autograd.grad(total, tensors, allow_unused=True))
    for index, (got, want) in enumerate(zip(*results)):
        assert (got is None) == (want is None), f'input {index}'
        if want is not None:
            torch.testing.assert_close(got.data, want, msg=lambda m: f'input {index}: {m}')


def test_layer_norm_mean_and_rstd_have_gradients():
    """The row's statistics (which gt.nn never hands out) differentiate by their formulas,
    held against torch's ops computing them."""
    def fn(x, weight):
        if isinstance(x, gt.Tensor):
            return op('layer_norm', x, weight, normalized_shape=[4], eps=1e-5, weight=True,
                      bias=False)
        mean = x.mean(-1, keepdim=True)
        rstd = (x.var(-1, correction=0, keepdim=True) + 1e-5).rsqrt()
        return (x - mean) * rstd * weight, mean, rstd
    check_vs_torch(fn, (3, 4), (4,))


def _cross_entropy(**options):
    def fn(x, target):
        return lib(x).nn.functional.cross_entropy(x, target, **options)
    return fn


@pytest.mark.parametrize('reduction', ['mean', 'sum'])
@pytest.mark.parametrize('shape', [(16, 11), (11,), (4, 11, 3)], ids=str)
def test_cross_entropy_is_torchs_bits(shape, reduction):
    """nll_loss's kernel sums in its own cascade ('nll_loss_forward'), and its gradient
    is weight * -(g / total weight), torch's very product: the loss and the logits'
    gradient equal torch's, then through log_softmax's kernel."""
    (logits,) = _random(shape)
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    target = torch.randint(0, 11, target_shape, generator=torch.Generator().manual_seed(2))
    weight = torch.rand(11, generator=torch.Generator().manual_seed(3)) + 0.5
    for options in ({}, {'weight': weight}, {'ignore_index': 3}):
        mine = gt.tensor(logits, requires_grad=True)
        theirs = logits.clone().requires_grad_()
        given = {k: gt.tensor(v) if isinstance(v, torch.Tensor) else v
                 for k, v in options.items()}
        loss = F.cross_entropy(mine, gt.tensor(target), reduction=reduction, **given)
        expected = torch.nn.functional.cross_entropy(theirs, target, reduction=reduction,
                                                     **options)
        loss.backward()
        expected.backward()
        _same(loss.data, expected.detach())
        _same(mine.grad.data, theirs.grad)


def _same(got: torch.Tensor, want: torch.Tensor) -> None:
    """Bit for bit (a mean over no counted target is NaN in both)."""
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def test_nll_loss_forward_differentiates_again():
    """Its gradient is ops (a scatter of weight * -g), so cross_entropy's second
    derivatives are torch's."""
    (logits,) = _random((6, 5), dtype=torch.float64)
    target = torch.tensor([0, 4, 2, 2, 1, 3])
    weight = torch.rand(5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    results = []
    for x, library, wrap in ((gt.tensor(logits, requires_grad=True), gt, gt.tensor),
                             (logits.clone().requires_grad_(), torch, lambda t: t)):
        loss = library.nn.functional.cross_entropy(x * x, wrap(target), weight=wrap(weight))
        (first,) = library.autograd.grad(loss, x, create_graph=True)
        results.append(library.autograd.grad((first * first).sum(), x)[0])
    torch.testing.assert_close(results[0].data, results[1])


def test_nll_loss_forward_gives_the_weight_a_gradient():
    """torch refuses a weight that requires grad; GT differentiates the summed loss and the
    total weight in it, held against the same sums from torch's ops."""
    def fn(log_p, weight):
        target = [0, 2, 2, -100, 1]
        if isinstance(log_p, gt.Tensor):
            return op('nll_loss_forward', log_p, gt.tensor(target), weight, ignore_index=-100,
                      weight=True)
        index = torch.tensor(target).clamp(min=0)
        kept = torch.tensor(target) != -100
        picked = log_p.gather(1, index[:, None])[:, 0]
        counted = weight[index] * kept
        return -(picked * counted).sum(), counted.sum()
    check_vs_torch(fn, (5, 3), (3,))


def _bce_inputs(dtype):
    """Probabilities with the saturated ends a sigmoid reaches (0 and 1 exactly), and
    soft targets."""
    generator = torch.Generator().manual_seed(5)
    p = torch.rand(4, 5, generator=generator, dtype=dtype) * 0.98 + 0.01
    p[0, :2] = torch.tensor([0.0, 1.0], dtype=dtype)
    return p, torch.rand(4, 5, generator=generator, dtype=dtype)


@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
def test_binary_cross_entropy_gradients_are_torchs_bits(reduction):
    """torch's backward kernel, including at 0 and 1, where a gradient composed from
    clamped logs had been NaN."""
    p, target = _bce_inputs(torch.float32)
    cotangent = _random((4, 5), seed=6)[0]
    mine = gt.tensor(p, requires_grad=True)
    loss = F.binary_cross_entropy(mine, gt.tensor(target), reduction=reduction)
    (loss * gt.tensor(cotangent) if reduction == 'none' else loss).sum().backward()
    theirs = p.clone().requires_grad_()
    expected = torch.nn.functional.binary_cross_entropy(theirs, target, reduction=reduction)
    (expected * cotangent if reduction == 'none' else expected).sum().backward()
    torch.testing.assert_close(loss.data, expected.detach(), rtol=0, atol=0)
    assert torch.equal(mine.grad.data, theirs.grad) if reduction != 'mean' else \
        torch.allclose(mine.grad.data, theirs.grad, rtol=1e-6, atol=0)
    assert not mine.grad.data.isnan().any()


def test_binary_cross_entropy_differentiates_again():
    """Through the input and the target (torch refuses a weight that requires grad), by
    the backward row's rule for second derivatives: torch's double backward, in float64."""
    p, target = _bce_inputs(torch.float64)
    weight = torch.rand(5, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    given = [p[1:], target[1:]]  # torch's double backward is inf at 0 and 1
    results = []
    for tensors, library, wrap in (
            ([gt.tensor(t, requires_grad=True) for t in given], gt, gt.tensor),
            ([t.clone().requires_grad_() for t in given], torch, lambda t: t)):
        loss = library.nn.functional.binary_cross_entropy(*tensors, weight=wrap(weight))
        first = library.autograd.grad(loss, tensors, create_graph=True)
        results.append((first, library.autograd.grad(sum((f * f).sum() for f in first),
                                                     tensors)))
    for got, want in zip(*results):
        for index, (mine, theirs) in enumerate(zip(got, want)):
            torch.testing.assert_close(mine.data, theirs, msg=lambda m: f'input {index}: {m}')
