"""The normalization and loss rows are torch's kernels: 'layer_norm' (native_layer_norm),
'layer_norm_backward' (native_layer_norm_backward), 'nll_loss_forward' (nll_loss's
with reduction 'sum') and 'binary_cross_entropy' with its '_backward', bit for bit, in
every floating dtype, with and without their optional inputs, on 0-size and (N, C, d1,
...) shapes."""

import pytest
import torch
from op_check import check_op, tensor

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
FLOATS = [f32, f64, f16, bf16]
SHAPES = [((3, 5), [5]), ((2, 3, 4), [3, 4]), ((2, 3, 4), [4]), ((4,), [4]), ((0, 5), [5]),
          ((3, 0), [0])]
AFFINE = [(True, True), (True, False), (False, True), (False, False)]


def _layer_norm_inputs(shape, normalized, dtype, weight, bias):
    x = tensor(shape, dtype) * 3 + 1
    parameters = {'weight': tensor(tuple(normalized), dtype) + 1 if weight else None,
                  'bias': tensor(tuple(normalized), dtype) if bias else None}
    return x, parameters


@pytest.mark.parametrize('weight, bias', AFFINE, ids=str)
@pytest.mark.parametrize('shape, normalized', SHAPES, ids=str)
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
def test_layer_norm_is_torchs_kernel(dtype, shape, normalized, weight, bias):
    x, parameters = _layer_norm_inputs(shape, normalized, dtype, weight, bias)
    attrs = {'normalized_shape': normalized, 'eps': 1e-5, 'weight': weight, 'bias': bias}
    given = [p for p in parameters.values() if p is not None]
    check_op('layer_norm', [x, *given], attrs,
             torch.native_layer_norm(x, normalized, parameters['weight'], parameters['bias'],
                                     1e-5))


MASKS = [[True, True, True], [True, False, False], [False, True, False], [False, False, True],
         [True, False, True]]


@pytest.mark.parametrize('mask', MASKS, ids=str)
@pytest.mark.parametrize('shape, normalized', SHAPES, ids=str)
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
def test_layer_norm_backward_is_torchs_kernel(dtype, shape, normalized, mask):
    """The bias is no input: the kernel reads only its shape, to make its gradient."""
    weight = mask[1] or mask == [True, False, True]
    x, parameters = _layer_norm_inputs(shape, normalized, dtype, weight, True)
    _, mean, rstd = torch.native_layer_norm(x, normalized, parameters['weight'],
                                            parameters['bias'], 1e-5)
    gradient = tensor(shape, dtype)
    expected = torch.ops.aten.native_layer_norm_backward(
        gradient, x, normalized, mean, rstd, parameters['weight'], parameters['bias'], mask)
    check_op('layer_norm_backward', [gradient, x, mean, rstd] + [parameters['weight']] * weight,
             {'normalized_shape': normalized, 'weight': weight, 'output_mask': mask},
             tuple(result for result, flag in zip(expected, mask) if flag))


def _nll(log_p, target, weight, ignore_index):
    return torch.ops.aten.nll_loss_nd(log_p, target, weight, 2, ignore_index)


@pytest.mark.parametrize('weighted', [False, True])
@pytest.mark.parametrize('shape', [(6, 5), (5,), (3, 5, 4), (2, 5, 3, 2), (2, 5, 1, 2, 3),
                                   (0, 5), (2, 5, 0)], ids=str)
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
def test_nll_loss_forward_is_torchs_kernel(dtype, shape, weighted):
    """The summed loss is torch's nll_loss with reduction 'sum', summed in its cascade;
    the total weight is what its 'mean' divides by."""
    log_p = torch.log_softmax(tensor(shape, f32), dim=0 if len(shape) == 1 else 1).to(dtype)
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    target = tensor(target_shape, torch.int64, low=0, high=5)
    if target.numel() > 2:
        target.view(-1)[1] = -100  # ignored
    weight = tensor((5,), f32).abs().to(dtype) if weighted else None
    inputs = [log_p, target] + ([weight] if weighted else [])
    total_weight = _nll_total_weight(log_p, target, weight)
    counted = target != -100
    plain = (weight[target * counted] * counted).sum() if weighted else counted.sum()
    torch.testing.assert_close(total_weight, plain.to(dtype), rtol=1e-2, atol=0)
    check_op('nll_loss_forward', inputs, {'ignore_index': -100, 'weight': weighted},
             (_nll(log_p, target, weight, -100), total_weight))


def _nll_total_weight(log_p, target, weight):
    """The kernel's own total weight, from nll_loss_forward on the rows as torch lays
    them out (1-D and 2-D inputs directly, the rest through nll_loss2d)."""
    if log_p.ndim <= 2:
        return torch.ops.aten.nll_loss_forward(log_p, target, weight, 2, -100)[1]
    batch, classes = log_p.shape[:2]
    shape = (1, -1) if log_p.numel() else (0, 0)
    return torch.ops.aten.nll_loss2d_forward(
        log_p.contiguous().view(batch, classes, *shape),
        target.contiguous().view(batch, *((1, -1) if target.numel() else (0, 0))), weight, 2,
        -100)[1]


def test_nll_loss_forward_takes_int32_targets_and_an_ignore_index():
    log_p = torch.log_softmax(tensor((7, 4)), dim=1)
    target = tensor((7,), torch.int64, low=0, high=4)
    expected = torch.ops.aten.nll_loss_forward(log_p, target, None, 2, 2)
    check_op('nll_loss_forward', [log_p, target.int()], {'ignore_index': 2, 'weight': False},
             tuple(expected))


@pytest.mark.parametrize('shape', [(3, 5), (4,), (), (0, 3)], ids=str)
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
def test_binary_cross_entropy_rows_are_torchs_kernels(dtype, shape):
    """With probabilities of exactly 0 and 1 among them: a loss of 100 (the clamped log),
    a finite gradient."""
    p = (tensor(shape, f32).abs() / 6).clamp(max=1)
    if p.numel() >= 2:
        p.view(-1)[:2] = torch.tensor([0.0, 1.0])
    p, target = p.to(dtype), (tensor(shape, f32).abs() / 6).clamp(max=1).to(dtype)
    gradient = tensor(shape, dtype)
    check_op('binary_cross_entropy', [p, target], {},
             torch.nn.functional.binary_cross_entropy(p, target, reduction='none'))
    check_op('binary_cross_entropy_backward', [gradient, p, target], {},
             torch.ops.aten.binary_cross_entropy_backward(gradient, p, target, None, 0))
