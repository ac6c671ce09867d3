"""The batch norm rows (gt/ir/ops/batch_norm.py) against torch's kernels, to the bit:
'batch_norm_train' is `native_batch_norm` (with the running statistics it moves, on
copies), 'batch_normed' is the output it is given, 'batch_norm_backward' is
`native_batch_norm_backward` for any subset of the gradients, and
'batch_norm_backward_grad' is torch's double backward; their type rules refuse tensors
that are not one per channel and gradients that do not match."""

import pytest
import torch
from op_check import check_op, tensor

from gt.ir import OPS, TensorType

aten = torch.ops.aten
f32, f64 = torch.float32, torch.float64
SHAPES = [(4, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)]


def channels(shape, dtype):
    """A weight, a bias, a running mean and a running variance for the input's channels."""
    count = shape[1]
    return (tensor((count,), dtype) + 1, tensor((count,), dtype), tensor((count,), dtype),
            tensor((count,), dtype).abs() + 0.5)


def trained(x, weight, bias, running_mean, running_var, momentum=0.2, eps=1e-4):
    mean, var = running_mean.clone(), running_var.clone()
    output, save_mean, save_invstd = aten.native_batch_norm(x, weight, bias, mean, var, True,
                                                            momentum, eps)
    return output, save_mean, save_invstd, mean, var


@pytest.mark.parametrize('dtype', [f32, f64], ids=str)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_batch_norm_train_is_torchs_kernel(shape, dtype):
    x = tensor(shape, dtype) * 3 + 1
    tensors = channels(shape, dtype)
    check_op('batch_norm_train', [x, *tensors], {'momentum': 0.2, 'eps': 1e-4},
             trained(x, *tensors))


@pytest.mark.parametrize('batches', [1, 3, 7])
def test_batch_norm_train_counted_moves_by_one_over_the_count(batches):
    """'batch_norm_train_counted' (momentum=None): the kernel with 1 / the count, as
    torch's module works it out in double."""
    x = tensor((6, 3), f32) * 3 + 1
    tensors = channels((6, 3), f32)
    check_op('batch_norm_train_counted', [x, *tensors, torch.tensor(batches)], {'eps': 1e-4},
             trained(x, *tensors, momentum=1.0 / batches))


@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_batch_normed_is_the_output(shape):
    x = tensor(shape, f32)
    weight, bias, running_mean, running_var = channels(shape, f32)
    output, mean, invstd, _, _ = trained(x, weight, bias, running_mean, running_var)
    check_op('batch_normed', [x, weight, bias, output, mean, invstd], {'eps': 1e-4}, output)


@pytest.mark.parametrize('wants', [[0, 1, 2], [0], [1, 2], [2]], ids=str)
@pytest.mark.parametrize('dtype', [f32, f64], ids=str)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_batch_norm_backward_is_torchs_kernel(shape, dtype, wants):
    x, gradient = tensor(shape, dtype) * 2, tensor(shape, dtype)
    weight, bias, running_mean, running_var = channels(shape, dtype)
    _, mean, invstd, _, _ = trained(x, weight, bias, running_mean, running_var)
    mask = [i in wants for i in range(3)]
    found = aten.native_batch_norm_backward(gradient, x, weight, None, None, mean, invstd,
                                            True, 1e-4, mask)
    check_op('batch_norm_backward', [gradient, x, weight, mean, invstd],
             {'eps': 1e-4, 'wants': wants}, tuple(found[i] for i in wants))


@pytest.mark.parametrize('wants, second', [([0, 1, 2], [0, 1, 2]), ([0], [1]),
                                           ([1, 2], [0, 2])], ids=str)
def test_batch_norm_backward_grad_is_torchs_double_backward(wants, second):
    shape = (3, 2, 4)
    x, gradient = tensor(shape, f64) * 2, tensor(shape, f64)
    weight, bias, running_mean, running_var = channels(shape, f64)
    _, mean, invstd, _, _ = trained(x, weight, bias, running_mean, running_var)
    likes = (x, weight, weight)
    cotangents = [tensor(tuple(likes[w].shape), f64) for w in wants]
    primals = [t.clone().requires_grad_(i in second)
               for i, t in enumerate((gradient, x, weight))]
    mask = [i in wants for i in range(3)]
    found = aten.native_batch_norm_backward(*primals, None, None, mean, invstd, True, 1e-4,
                                            mask)
    expected = torch.autograd.grad([found[w] for w in wants], [primals[i] for i in second],
                                   cotangents, allow_unused=True)
    expected = tuple(torch.zeros_like(primals[i]) if e is None else e
                     for e, i in zip(expected, second))
    check_op('batch_norm_backward_grad', [gradient, x, weight, mean, invstd, *cotangents],
             {'eps': 1e-4, 'wants': wants, 'second': second}, expected)


def _types(*shapes, dtype='float32'):
    return tuple(TensorType(shape, dtype) for shape in shapes)


C = (3,)


@pytest.mark.parametrize('op, types, attrs, message', [
    ('batch_norm_train', _types((4, 3), (2,), C, C, C), {'momentum': 0.1, 'eps': 1e-5},
     'not one value per channel'),
    ('batch_norm_train', _types((4,), (4,), (4,), (4,), (4,)), {'momentum': 0.1, 'eps': 1e-5},
     'at least 2 dims'),
    ('batch_norm_train', _types((4, 3), C, C, C, C, dtype='int64'),
     {'momentum': 0.1, 'eps': 1e-5}, 'floating'),
    ('batch_normed', _types((4, 3), C, C, (4, 2), C, C), {'eps': 1e-5}, 'must be like'),
    ('batch_norm_backward', _types((4, 2), (4, 3), C, C, C), {'eps': 1e-5, 'wants': [0]},
     'must be like'),
    ('batch_norm_backward', _types((4, 3), (4, 3), C, C, C), {'eps': 1e-5, 'wants': [3]},
     'must name some of 3'),
    ('batch_norm_backward', _types((4, 3), (4, 3), C, C, C), {'eps': 1e-5, 'wants': [1, 0]},
     'in order'),
    ('batch_norm_backward_grad', _types((4, 3), (4, 3), C, C, C, C), {
        'eps': 1e-5, 'wants': [0], 'second': [1]}, 'cotangents do not match'),
])
def test_type_rules_refuse(op, types, attrs, message):
    with pytest.raises(ValueError, match=message):
        OPS[op].infer(types, **attrs)
