"""torch.nn.utils' fusion of a batch norm into the layer before it, and skip_init,
against torch: the same seeds give the same layers and outputs."""

import pytest
import torch
from gt_test_support import assert_raises_as_torch

import gt


def fused_layers(lib):
    nn = lib.nn
    lib.manual_seed(0)
    seen = []
    for conv, bn, transpose, shape in [
            (nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), False, (2, 2, 5, 5)),
            (nn.ConvTranspose2d(2, 3, 3, bias=False), nn.BatchNorm2d(3, affine=False), True,
             (1, 2, 4, 4)),
            (nn.Conv1d(2, 4, 1), nn.BatchNorm1d(4), False, (3, 2, 6))]:
        for _ in range(3):  # running statistics of their own
            bn(conv(lib.randn(*shape)))
        conv.eval(), bn.eval()
        fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose)
        x = lib.randn(*shape)
        seen.append((type(fused).__name__, fused.weight.requires_grad, fused(x),
                     bn(conv(x)), fused.weight, fused.bias))
    linear, bn = nn.Linear(3, 2), nn.BatchNorm1d(2)
    for _ in range(3):
        bn(linear(lib.randn(5, 3)))
    linear.eval(), bn.eval()
    fused = nn.utils.fusion.fuse_linear_bn_eval(linear, bn)
    x = lib.randn(4, 3)
    seen.append((type(fused).__name__, fused.bias.requires_grad, fused(x), bn(linear(x)),
                 fused.weight, fused.bias))
    return seen


def test_a_batch_norm_folds_into_the_layer_before_it_as_torchs():
    for got, want in zip(fused_layers(gt), fused_layers(torch)):
        assert got[:2] == want[:2]
        for mine, theirs in zip(got[2:], want[2:]):
            torch.testing.assert_close(mine.data.detach(), theirs.detach(), rtol=1e-5,
                                       atol=1e-6)
        torch.testing.assert_close(got[2].data, got[3].data, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('mistake', [
    lambda lib: lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv2d(1, 2, 1), lib.nn.BatchNorm2d(2)),
    lambda lib: lib.nn.utils.fuse_linear_bn_eval(lib.nn.Linear(3, 2).eval(),
                                                 lib.nn.BatchNorm1d(3).eval()),
], ids=['training mode', 'sizes that differ'])
def test_what_torch_refuses_to_fold_gt_refuses_alike(mistake):
    assert_raises_as_torch(AssertionError, mistake)


def test_skip_init_leaves_the_random_stream_as_torchs():
    """torch draws nothing for a module made with skip_init; GT initializes it (it has
    no uninitialized values) without taking draws from the script's stream."""
    for lib in (gt, torch):
        lib.manual_seed(3)
        layer = lib.nn.utils.skip_init(lib.nn.Linear, 4, 2)
        assert tuple(layer.weight.shape) == (2, 4)
    gt.manual_seed(3), torch.manual_seed(3)
    assert gt.randn(3).tolist() == torch.randn(3).tolist()
    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        gt.nn.utils.skip_init(gt.nn.ReLU)
