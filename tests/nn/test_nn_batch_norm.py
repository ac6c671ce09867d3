"""F.batch_norm and BatchNorm1d/2d/3d against torch: outputs, gradients, and the running
statistics they update in place, which must reach exactly the tensors given (and no
others) even when the output is never used."""

import numpy as np
import pytest
import torch
from nn_check import assert_close, both, check_module, randn

import gt
import gt.nn as nn
import gt.nn.functional as F

MODULES = [(nn.BatchNorm1d, torch.nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, torch.nn.BatchNorm1d,
                                                           (4, 3, 5)),
           (nn.BatchNorm2d, torch.nn.BatchNorm2d, (4, 3, 5, 2)),
           (nn.BatchNorm3d, torch.nn.BatchNorm3d, (2, 3, 2, 3, 2))]


@pytest.mark.parametrize('affine', [True, False])
@pytest.mark.parametrize('mine, theirs, shape', MODULES, ids=['1d', '1d-seq', '2d', '3d'])
def test_training_matches_torch(mine, theirs, shape, affine):
    check_module(mine(3, affine=affine), theirs(3, affine=affine), randn(*shape), atol=1e-5)


@pytest.mark.parametrize('momentum', [0.1, 0.5, None])
@pytest.mark.parametrize('mine, theirs, shape', MODULES[2:3], ids=['2d'])
def test_running_statistics_follow_torch_over_steps_then_evaluation_uses_them(
        mine, theirs, shape, momentum):
    gt_layer, torch_layer = mine(3, momentum=momentum), theirs(3, momentum=momentum)
    for step in range(4):
        x = randn(*shape) * (step + 1) + step
        gt_layer(gt.tensor(x))  # the output is never used: the update must still happen
        torch_layer(x)
    for name, value in torch_layer.state_dict().items():
        assert_close(gt_layer.state_dict()[name], value, atol=1e-5)
    gt_layer.eval()
    torch_layer.eval()
    check_module(gt_layer, torch_layer, randn(*shape), atol=1e-5)


def test_without_running_statistics_evaluation_uses_the_batch():
    gt_layer = nn.BatchNorm1d(3, track_running_stats=False).eval()
    torch_layer = torch.nn.BatchNorm1d(3, track_running_stats=False).eval()
    assert gt_layer.running_mean is None and 'running_mean' not in gt_layer.state_dict()
    check_module(gt_layer, torch_layer, randn(5, 3), atol=1e-5)


@pytest.mark.parametrize('options', [{}, {'bias': False}, {'affine': False},
                                     {'track_running_stats': False, 'momentum': None}])
def test_state_dict_and_repr_are_torch_s(options):
    mine, theirs = nn.BatchNorm2d(4, 1e-3, **options), torch.nn.BatchNorm2d(4, 1e-3, **options)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert repr(mine) == repr(theirs)


def test_batches_are_counted():
    gt_layer, torch_layer = nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
    assert gt_layer.num_batches_tracked.dtype == torch.long
    gt_layer.load_state_dict(torch_layer.state_dict())
    gt_layer(gt.randn(2, 4, 3, 3))
    assert gt_layer.num_batches_tracked.item() == 1


@pytest.mark.parametrize('training', [True, False])
@pytest.mark.parametrize('shape', [(5, 3), (4, 3, 6), (2, 3, 4, 4)])
def test_functional_matches_torch(shape, training):
    x_mine, x_theirs = both(randn(*shape), requires_grad=True)
    w_mine, w_theirs = both(randn(3), requires_grad=True)
    b_mine, b_theirs = both(randn(3), requires_grad=True)
    stats = randn(3), randn(3).abs() + 0.5
    mean_mine, var_mine = gt.tensor(stats[0]), gt.tensor(stats[1])
    mean_theirs, var_theirs = stats[0].clone(), stats[1].clone()
    out_mine = F.batch_norm(x_mine, mean_mine, var_mine, w_mine, b_mine, training, 0.3, 1e-4)
    out_theirs = torch.nn.functional.batch_norm(x_theirs, mean_theirs, var_theirs, w_theirs,
                                                b_theirs, training, 0.3, 1e-4)
    assert_close(out_mine, out_theirs, atol=1e-5)
    weights = randn(*shape)
    (out_mine * gt.tensor(weights)).sum().backward()
    (out_theirs * weights).sum().backward()
    for mine, theirs in ((x_mine, x_theirs), (w_mine, w_theirs), (b_mine, b_theirs)):
        assert_close(mine.grad, theirs.grad, atol=1e-5)
    assert_close(mean_mine, mean_theirs, atol=1e-6)
    assert_close(var_mine, var_theirs, atol=1e-6)


def test_the_update_reaches_only_the_running_tensors():
    """Equal constants and clones may share storage on a worker: torch's in-place update,
    run there by name, once leaked into them."""
    x = gt.tensor([[1.0], [3.0]])
    other, running_mean = gt.zeros(1), gt.zeros(1)
    weight, bias = gt.ones(1), gt.zeros(1)
    original = gt.randn(1) * 0
    copy = original.clone()
    F.batch_norm(x, running_mean, gt.ones(1), weight, bias, training=True)
    F.batch_norm(x, copy, gt.ones(1), training=True)
    assert other.tolist() == [0.0] and original.tolist() == [0.0]
    assert weight.tolist() == [1.0] and bias.tolist() == [0.0]
    assert running_mean.tolist() == pytest.approx([0.2]) and copy.tolist() == pytest.approx([0.2])


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match='more than 1 value per channel'):
        nn.BatchNorm1d(3)(gt.randn(1, 3))
    with pytest.raises(ValueError, match=r'expected 4D input \(got 3D input\)'):
        nn.BatchNorm2d(3)(gt.randn(2, 3, 4))
    with pytest.raises(ValueError, match='running_mean should have shape'):
        F.batch_norm(gt.randn(4, 3), gt.zeros(2), gt.ones(3), training=True)
    with pytest.raises(ValueError, match='must be given when not training'):
        F.batch_norm(gt.randn(4, 3), None, None)


@pytest.mark.parametrize('affine', [True, False])
@pytest.mark.parametrize('shape', [(6, 4), (3, 4, 7), (2, 4, 5, 5)], ids=['1d', 'sequence', '2d'])
def test_evaluation_is_torchs_kernel_bit_for_bit_and_differentiates(shape, affine):
    """Eval mode's output is torch's kernel's, with gradients or without (GT's ops
    rounded otherwise: a DCGAN generator's eval output differed in 784 of 1024 elements);
    its gradients are GT's ops, close to torch's, and differentiate again. On several
    workers (the sharded re-run) it is composed of GT ops: close."""
    def run(library, grad: bool):
        library.manual_seed(0)
        layer = {2: library.nn.BatchNorm1d, 3: library.nn.BatchNorm1d,
                 4: library.nn.BatchNorm2d}[len(shape)](4, affine=affine)
        with library.no_grad():  # running statistics of their own
            layer.running_mean.copy_(library.randn(4))
            layer.running_var.copy_(library.rand(4) + 0.5)
        layer.eval()
        x = library.randn(*shape, requires_grad=grad)
        if not grad:
            with library.no_grad():
                return [layer(x).numpy()]
        out = layer(x)
        (out * library.linspace(-1, 1, out.numel()).reshape(shape)).sum().backward()
        grads = [x.grad] + ([layer.weight.grad, layer.bias.grad] if affine else [])
        return [out.detach().numpy()] + [g.numpy() for g in grads]
    exact = len(gt.runtime.client.current().workers) == 1  # else composed (sharded re-run)
    for grad in (False, True):
        got, expected = run(gt, grad), run(torch, grad)
        assert (got[0] == expected[0]).all() if exact else np.allclose(got[0], expected[0],
                                                                      atol=1e-5)
        for mine, theirs in zip(got[1:], expected[1:]):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    layer = gt.nn.BatchNorm1d(4).eval()
    x = gt.randn(6, 4, requires_grad=True)
    (first,) = gt.autograd.grad((layer(x) ** 2).sum(), [x], create_graph=True)
    (second,) = gt.autograd.grad(first.sum(), [x])
    np.testing.assert_allclose(second.numpy(), np.full((6, 4), 2.0 / (1 + 1e-5)), rtol=1e-5)


@pytest.mark.parametrize('affine, track', [(False, True), (True, False), (False, False)])
def test_training_without_weights_or_running_statistics_is_torchs_kernel(affine, track):
    """`affine=False` (SimCLR's heads) and `track_running_stats=False` (MAML) train with
    torch's kernel too, its weight ones and bias zeros, its statistics made and dropped:
    composed of GT ops, they rounded otherwise."""
    def run(library):
        library.manual_seed(0)
        layer = library.nn.BatchNorm2d(3, affine=affine, track_running_stats=track)
        x = library.randn(8, 3, 4, 4, requires_grad=True)
        out = layer(x)
        (out * library.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        kept = [layer.running_mean.numpy(), layer.running_var.numpy()] if track else []
        return [out.detach().numpy(), x.grad.numpy(), *kept]
    exact = len(gt.runtime.client.current().workers) == 1  # else composed (sharded re-run)
    for got, expected in zip(run(gt), run(torch)):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)


def test_a_cumulative_average_is_torchs_kernel():
    """`momentum=None` (what swa_utils.update_bn sets) averages over the batches counted:
    torch's kernel with 1 / the count, worked out in double as torch's module does. GT's
    own ops, with the count in float32, rounded otherwise."""
    def run(library):
        library.manual_seed(0)
        layer = library.nn.BatchNorm1d(6, momentum=None)
        outputs = [layer(library.randn(8, 6)).detach().numpy() for _ in range(3)]
        return [*outputs, layer.running_mean.numpy(), layer.running_var.numpy(),
                layer.num_batches_tracked.numpy()]
    exact = len(gt.runtime.client.current().workers) == 1  # else composed (sharded re-run)
    for got, expected in zip(run(gt), run(torch)):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)
