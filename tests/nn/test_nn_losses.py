"""Each loss against torch.nn.functional, for every reduction: the value and the gradient
with respect to the input, and what a target of another shape does (torch's warning and
broadcast, or an error naming both shapes where torch raises)."""

import numpy as np
import pytest
import torch
from nn_check import assert_close, both, randn, seeded

import gt
import gt.nn as nn
import gt.nn.functional as F

REDUCTIONS = ['mean', 'sum', 'none']
functional = torch.nn.functional


def check_loss(name: str, input: torch.Tensor, target: torch.Tensor, rtol: float = 1e-5,
               atol: float = 1e-6, grad_atol: float = 1e-6, **kwargs) -> None:
    """`name` in GT and torch on the same input (which gets a gradient) and target."""
    x, x_t = both(input, requires_grad=True)
    gt_kwargs = {k: gt.tensor(v) if isinstance(v, torch.Tensor) else v
                 for k, v in kwargs.items()}
    loss = getattr(F, name)(x, gt.tensor(target), **gt_kwargs)
    expected = getattr(functional, name)(x_t, target, **kwargs)
    assert_close(loss, expected, rtol, atol)
    weights = randn(*expected.shape)
    (loss * gt.tensor(weights)).sum().backward()
    (expected * weights).sum().backward()
    assert_close(x.grad, x_t.grad, rtol, grad_atol)


def classes(shape: tuple[int, ...], count: int) -> torch.Tensor:
    return torch.randint(0, count, shape, generator=seeded())


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_mse_and_l1(reduction):
    check_loss('mse_loss', randn(4, 3), randn(4, 3), reduction=reduction)
    check_loss('l1_loss', randn(4, 3), randn(4, 3), reduction=reduction)


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_binary_cross_entropy(reduction):
    probabilities = torch.rand(5, 3, generator=seeded()) * 0.98 + 0.01
    target = torch.rand(5, 3, generator=seeded())
    check_loss('binary_cross_entropy', probabilities, target, reduction=reduction)
    check_loss('binary_cross_entropy', probabilities, target, reduction=reduction,
               weight=torch.rand(3, generator=seeded()))


@pytest.mark.parametrize('bad', [1.5, -0.25, float('nan')])
def test_binary_cross_entropy_refuses_probabilities_outside_0_1_as_torch_does(bad):
    """The usual slip, logits into BCELoss: torch raises at the line; GT at the next
    fetch, naming the line, and the session goes on."""
    probabilities = torch.tensor([[0.2], [bad]])
    target = torch.ones(2, 1)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.BCELoss()(probabilities, target)
    loss = nn.BCELoss()(gt.tensor(probabilities), gt.tensor(target))
    with pytest.raises(RuntimeError) as mine:
        loss.item()
    assert str(theirs.value) in str(mine.value) and 'test_nn_losses.py' in str(mine.value)
    fine = F.binary_cross_entropy(gt.tensor([0.2, 0.9]), gt.tensor([0.0, 1.0]))
    assert_close(fine, functional.binary_cross_entropy(torch.tensor([0.2, 0.9]),
                                                       torch.tensor([0.0, 1.0])))


def test_binary_cross_entropy_clamps_its_logs():
    x, x_t = both(torch.tensor([0.0, 1.0, 0.5]))
    target = torch.tensor([1.0, 0.0, 1.0])
    assert_close(F.binary_cross_entropy(x, gt.tensor(target), reduction='none'),
                 functional.binary_cross_entropy(x_t, target, reduction='none'))


def test_binary_cross_entropy_of_a_saturated_sigmoid_has_torchs_gradient():
    """sigmoid(20) is 1.0 in float32, and recommender scripts reach it: the gradient
    there is torch's 0, not NaN (from an audit), and nn.BCELoss's at 0 and 1 too."""
    x, x_t = both(torch.tensor([20.0, -20.0, 3.0]), requires_grad=True)
    target = torch.tensor([1.0, 0.0, 1.0])
    F.binary_cross_entropy(x.sigmoid(), gt.tensor(target)).backward()
    functional.binary_cross_entropy(x_t.sigmoid(), target).backward()
    assert_close(x.grad, x_t.grad)
    p, p_t = both(torch.tensor([1.0, 0.0, 0.5]), requires_grad=True)
    nn.BCELoss()(p, gt.tensor(target)).backward()
    torch.nn.BCELoss()(p_t, target).backward()
    assert_close(p.grad, p_t.grad)


def test_binary_cross_entropy_refuses_a_target_of_another_dtype_as_torch_does():
    with pytest.raises(RuntimeError) as theirs:
        functional.binary_cross_entropy(torch.tensor([0.3]), torch.tensor([1.0]).double())
    with pytest.raises(RuntimeError) as mine:
        F.binary_cross_entropy(gt.tensor([0.3]), gt.tensor([1.0]).double())
    assert str(mine.value) == str(theirs.value) == 'Found dtype Double but expected Float'


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    logits, target = randn(6, 4) * 4, torch.rand(6, 4, generator=seeded())
    check_loss('binary_cross_entropy_with_logits', logits, target, reduction=reduction)
    check_loss('binary_cross_entropy_with_logits', logits, target, reduction=reduction,
               weight=torch.rand(4, generator=seeded()),
               pos_weight=torch.rand(4, generator=seeded()) * 3)


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits():
    # exp(100) overflows float32; torch's form gives finite, exact-to-rounding losses,
    # including the ~1e-13 losses of confident, correct predictions.
    logits = torch.tensor([-100.0, -30.0, -1.0, 0.0, 1.0, 30.0, 100.0])
    for target in [(logits > 0).float(), (logits < 0).float()]:
        # The losses of +-100 are subnormal, a few units apart. Gradients of +-30 are
        # ~1e-13, which torch's sigmoid(x) - target rounds to 0 and GT does not.
        check_loss('binary_cross_entropy_with_logits', logits, target, reduction='none',
                   atol=1e-40, grad_atol=1e-12)


@pytest.mark.parametrize('reduction', REDUCTIONS)
@pytest.mark.parametrize('shape', [(6, 5), (5,), (3, 5, 4)], ids=['batch', 'single', 'k-dim'])
def test_cross_entropy_and_nll(reduction, shape):
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    logits, target = randn(*shape) * 2, classes(target_shape, 5)
    check_loss('cross_entropy', logits, target, reduction=reduction)
    check_loss('nll_loss', logits.log_softmax(0 if len(shape) == 1 else 1), target,
               reduction=reduction)


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_byte_class_labels_as_mnists_raw_ones(reduction):
    logits, target = randn(6, 5), classes((6,), 5).to(torch.uint8)
    check_loss('cross_entropy', logits, target, reduction=reduction)
    check_loss('cross_entropy', logits, target, reduction=reduction, label_smoothing=0.1)
    check_loss('nll_loss', logits.log_softmax(1), target, reduction=reduction)


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_cross_entropy_weights_ignore_index_and_smoothing(reduction):
    logits, target = randn(8, 4), classes((8,), 4)
    target[2] = target[5] = -100
    weight = torch.rand(4, generator=seeded()) + 0.5
    check_loss('cross_entropy', logits, target, reduction=reduction, weight=weight)
    check_loss('cross_entropy', logits, target, reduction=reduction, label_smoothing=0.2)
    check_loss('cross_entropy', logits, target, reduction=reduction, weight=weight,
               label_smoothing=0.1)
    target[2], target[5] = 1, 3
    check_loss('cross_entropy', logits, target, reduction=reduction, ignore_index=3)
    check_loss('nll_loss', logits.log_softmax(1), target, reduction=reduction, weight=weight,
               ignore_index=3)


@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_smoothed_cross_entropy_with_every_target_ignored_has_torchs_zero_gradient(
        reduction, weighted):
    """The mean is 0/0 (NaN in both); its gradient reached the ignored rows as NaN, where
    torch's is 0 (found by an audit)."""
    logits, target = randn(3, 2), torch.zeros(3, dtype=torch.int64)
    weight = torch.tensor([1.0, 2.0]) if weighted else None
    x, x_t = both(logits, requires_grad=True)
    loss = F.cross_entropy(x, gt.tensor(target), weight=None if weight is None else
                           gt.tensor(weight), ignore_index=0, label_smoothing=0.1,
                           reduction=reduction)
    expected = functional.cross_entropy(x_t, target, weight=weight, ignore_index=0,
                                        label_smoothing=0.1, reduction=reduction)
    torch.testing.assert_close(loss.numpy(), expected.detach().numpy(), equal_nan=True)
    loss.sum().backward()
    expected.sum().backward()
    assert torch.equal(x.grad.data, x_t.grad), (x.grad, x_t.grad)


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_cross_entropy_with_probability_targets(reduction):
    logits, target = randn(6, 4), torch.softmax(randn(6, 4), dim=1)
    check_loss('cross_entropy', logits, target, reduction=reduction)
    check_loss('cross_entropy', logits, target, reduction=reduction, label_smoothing=0.1,
               weight=torch.rand(4, generator=seeded()))


def test_loss_modules_and_package_level_functions():
    logits, target = randn(4, 3), classes((4,), 3)
    expected = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, target)
    assert_close(nn.CrossEntropyLoss(label_smoothing=0.1)(gt.tensor(logits), gt.tensor(target)),
                 expected)
    assert_close(gt.nn.cross_entropy(gt.tensor(logits), gt.tensor(target)),
                 functional.cross_entropy(logits, target))
    x, y = randn(4, 3), randn(4, 3)
    pairs = [(nn.MSELoss, torch.nn.MSELoss), (nn.L1Loss, torch.nn.L1Loss),
             (nn.BCEWithLogitsLoss, torch.nn.BCEWithLogitsLoss)]
    for mine, theirs in pairs:
        assert_close(mine(reduction='sum')(gt.tensor(x), gt.tensor(y.sigmoid())),
                     theirs(reduction='sum')(x, y.sigmoid()))
    assert_close(nn.BCELoss()(gt.tensor(x.sigmoid()), gt.tensor(y.sigmoid())),
                 torch.nn.BCELoss()(x.sigmoid(), y.sigmoid()))
    assert_close(nn.NLLLoss()(gt.tensor(logits), gt.tensor(target)),
                 torch.nn.NLLLoss()(logits, target))
    assert_close(gt.nn.mse_loss(gt.tensor(x), gt.tensor(y)), functional.mse_loss(x, y))


@pytest.mark.parametrize('name', ['binary_cross_entropy', 'binary_cross_entropy_with_logits'])
def test_mismatched_shapes_raise_naming_both(name):
    with pytest.raises(ValueError, match=r'\[4, 1\].*\[4\]'):
        getattr(F, name)(gt.rand(4, 1), gt.rand(4))


@pytest.mark.parametrize('name', ['mse_loss', 'l1_loss'])
@pytest.mark.parametrize('shapes', [((4, 1), (4,)), ((2, 3), (1, 3))], ids=str)
def test_mismatched_shapes_broadcast_with_torchs_warning(name, shapes):
    x, y = randn(*shapes[0]), randn(*shapes[1])
    with pytest.warns(UserWarning, match='different to the input size') as mine:
        got = getattr(F, name)(gt.tensor(x), gt.tensor(y))
    with pytest.warns(UserWarning, match='different to the input size') as theirs:
        want = getattr(functional, name)(x, y)
    assert str(mine[0].message) == str(theirs[0].message)
    assert mine[0].filename == __file__
    assert_close(got, want)


def test_class_target_errors():
    logits = gt.randn(4, 3)
    with pytest.raises(ValueError, match=r'\[4, 3\].*\[4\].*\[3\]'):
        F.cross_entropy(logits, gt.tensor([0, 1, 2]))
    for function in (F.nll_loss, F.cross_entropy, functional.nll_loss, functional.cross_entropy):
        on = gt if function.__module__.startswith('gt') else torch
        for target, name in ((on.tensor([0, 1, 2, 1], dtype=torch.int16), 'Short'),
                             (on.tensor([0.0, 1, 2, 1]), 'Float')):  # torch's own words
            with pytest.raises(RuntimeError, match=f'expected target dtype to be Long or Byte, '
                                                   f'but got {name}'):
                function(logits if on is gt else logits.data, target)
    with pytest.raises(ValueError, match='reduction'):
        F.cross_entropy(logits, gt.tensor([0, 1, 2, 1]), reduction='average')
    with pytest.raises(ValueError, match='one entry per class'):
        F.cross_entropy(logits, gt.tensor([0, 1, 2, 1]), weight=gt.ones(4))


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize('reduction', ['mean', 'sum'])
def test_half_precision_cross_entropy_gradient_is_torchs(dtype, reduction):
    """A half loss's 0-d gradient, masked where targets are ignored, stays half: the
    gradient has the logits' dtype and torch's bits."""
    logits = torch.randn(6, 5).to(dtype)
    targets = torch.tensor([0, 4, -100, 2, 2, 1])
    mine, theirs = both(logits, requires_grad=True)
    F.cross_entropy(mine, gt.tensor(targets), reduction=reduction).backward()
    torch.nn.functional.cross_entropy(theirs, targets, reduction=reduction).backward()
    assert mine.grad.dtype == dtype
    assert torch.equal(mine.grad.data, theirs.grad)


@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_weighted_mse_and_l1(reduction):
    weight = randn(3, 4).abs()
    for name in ('mse_loss', 'l1_loss'):
        check_loss(name, randn(3, 4), randn(3, 4), reduction=reduction, weight=weight)
    with pytest.raises(ValueError, match='Weights and input must have the same size'):
        F.mse_loss(gt.ones(3), gt.ones(3), weight=gt.ones(2))


LEGACY = [(None, False), (False, None), (False, True), (True, False), (None, True)]


@pytest.mark.parametrize('size_average, reduce', LEGACY, ids=str)
def test_the_legacy_reduction_pair_means_what_it_means_in_torch(size_average, reduce):
    target = torch.tensor([0, 2, 1])
    check_loss('cross_entropy', randn(3, 4), target, size_average=size_average, reduce=reduce)
    check_loss('nll_loss', randn(3, 4), target, size_average=size_average, reduce=reduce)
    check_loss('mse_loss', randn(3, 4), randn(3, 4), size_average=size_average, reduce=reduce)
    module, expected = nn.MSELoss(size_average, reduce), torch.nn.MSELoss(size_average, reduce)
    x, x_t = both(randn(2, 3))
    assert_close(module(x, gt.zeros(2, 3)), expected(x_t, torch.zeros(2, 3)))


def test_arguments_go_where_torchs_positions_put_them():
    """torch's order is (input, target, weight, size_average, ignore_index, reduce,
    reduction): a positional ignore_index lands where torch takes it."""
    logits, target = randn(4, 3), torch.tensor([0, 2, 1, 2])
    weight = torch.tensor([1.0, 2.0, 0.5])
    for name in ('cross_entropy', 'nll_loss'):
        x, x_t = both(logits)
        got = getattr(F, name)(x, gt.tensor(target), gt.tensor(weight), None, 2)
        assert_close(got, getattr(functional, name)(x_t, target, weight, None, 2))


@pytest.mark.parametrize('name, target', [
    ('mse_loss', randn(3, 4)), ('l1_loss', randn(3, 4)),
    ('binary_cross_entropy_with_logits', torch.rand(3, 4)),
    ('cross_entropy', torch.tensor([0, 3, 1])), ('nll_loss', torch.tensor([0, 3, 1])),
])
def test_torchs_own_functional_losses_take_gt_tensors(name, target):
    """A script that keeps `import torch.nn.functional as F`: torch hands its legacy pair
    on to GT as None, which GT must take."""
    x, x_t = both(randn(3, 4))
    assert_close(getattr(functional, name)(x, gt.tensor(target)),
                 getattr(functional, name)(x_t, target))


@pytest.mark.parametrize('name', ['binary_cross_entropy', 'binary_cross_entropy_with_logits'])
def test_mean_binary_cross_entropy_gradients_are_torchs_bits(name):
    """torch computes each element's gradient from the incoming one, then divides by the
    count; GT's mean divided first (a GAN's and a VAE's steps rounded otherwise, found
    porting tutorials). Both gradients, and a second derivative close to torch's."""
    logits, target = randn(8, 6), torch.rand(8, 6, generator=seeded())
    inputs = logits if name.endswith('logits') else logits.sigmoid()

    def run(library, tensor):
        x = tensor(inputs).requires_grad_()
        t = tensor(target).requires_grad_()
        loss = getattr(library.nn.functional, name)(x, t)
        grads = library.autograd.grad(loss, [x, t], create_graph=True)
        second = library.autograd.grad(grads[0].pow(2).sum(), [x])[0]
        return [loss.detach().numpy(), *(g.detach().numpy() for g in grads), second.numpy()]
    got = run(gt, gt.tensor)
    expected = run(torch, lambda a: a.clone())
    exact = len(gt.runtime.client.current().workers) == 1  # the sharded re-run sums in parts
    for mine, theirs in zip(got[:3], expected[:3]):
        assert (mine == theirs).all() if exact else np.allclose(mine, theirs, atol=1e-6)
    np.testing.assert_allclose(got[3], expected[3], rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize('shape', [(4, 3), (3,), (2, 3, 5)], ids=['batch', 'one', 'spatial'])
@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('smoothing', [0.0, 0.1])
@pytest.mark.parametrize('reduction', REDUCTIONS)
def test_cross_entropy_of_probabilities_is_torchs_bits(reduction, smoothing, weighted, shape):
    """Mixup's and distillation's soft targets: torch sums `log_p * target` flat, where
    GT summed each row first (the loss differed in the last bits)."""
    class_dim = 0 if len(shape) == 1 else 1
    logits = randn(*shape)
    target = torch.softmax(randn(*shape), dim=class_dim)
    weight = torch.rand(shape[class_dim], generator=seeded()) if weighted else None
    theirs = logits.clone().requires_grad_()
    expected = functional.cross_entropy(theirs, target, weight=weight, reduction=reduction,
                                        label_smoothing=smoothing)
    expected.sum().backward()
    mine = gt.tensor(logits).requires_grad_()
    got = F.cross_entropy(mine, gt.tensor(target), reduction=reduction,
                          weight=None if weight is None else gt.tensor(weight),
                          label_smoothing=smoothing)
    got.sum().backward()
    exact = len(gt.runtime.client.current().workers) == 1  # the sharded re-run sums in parts
    for a, b in ((got.detach().numpy(), expected.detach().numpy()),
                 (mine.grad.numpy(), theirs.grad.numpy())):
        assert np.array_equal(a, b) if exact else np.allclose(a, b, atol=1e-6)
