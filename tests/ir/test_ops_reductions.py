"""Reduction rows against torch: every dim form (None, int, negative, list, []), keepdim,
and the dtypes each reduction accepts."""

import pytest
import torch
from op_check import check_op, tensor

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, u8, b8 = torch.int64, torch.int32, torch.uint8, torch.bool

DIMS = [None, 0, 1, -1, [0, 2], [-1, 0], [], [1]]
FLOATS = [f32, f64, f16, bf16]


def _torch_dim(dim):
    """torch.amax/amin take () rather than None for all dims."""
    return () if dim is None else dim


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', DIMS, ids=str)
@pytest.mark.parametrize('dtype', [f32, f64, f16, i64, i32, u8, b8], ids=str)
def test_sum(dtype, dim, keepdim):
    x = tensor((2, 3, 4), dtype, low=0)
    check_op('sum', [x], {'dim': dim, 'keepdim': keepdim}, torch.sum(x, dim=dim, keepdim=keepdim))


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', DIMS, ids=str)
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
def test_mean(dtype, dim, keepdim):
    x = tensor((2, 3, 4), dtype)
    check_op('mean', [x], {'dim': dim, 'keepdim': keepdim},
             torch.mean(x, dim=dim, keepdim=keepdim))


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', DIMS, ids=str)
@pytest.mark.parametrize('dtype', [f32, f16, i64, b8], ids=str)
@pytest.mark.parametrize('op', ['amax', 'amin'])
def test_amax_amin(op, dtype, dim, keepdim):
    x = tensor((2, 3, 4), dtype)
    expected = getattr(torch, op)(x, dim=_torch_dim(dim), keepdim=keepdim)
    check_op(op, [x], {'dim': dim, 'keepdim': keepdim}, expected)


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', [0, 1, -1, 2], ids=str)
@pytest.mark.parametrize('dtype', [f32, f64, i64, b8], ids=str)
@pytest.mark.parametrize('op, torch_op', [('max_dim', torch.max), ('min_dim', torch.min)])
def test_max_min_dim(op, torch_op, dtype, dim, keepdim):
    # Floats so that there are no ties (torch and numpy agree on the first, but say so).
    x = tensor((2, 3, 4), dtype)
    values, indices = torch_op(x, dim, keepdim=keepdim)
    check_op(op, [x], {'dim': dim, 'keepdim': keepdim}, (values, indices))


def test_max_dim_of_a_0d_tensor():
    x = torch.tensor(2.5)
    check_op('max_dim', [x], {'dim': 0, 'keepdim': False}, tuple(torch.max(x, 0)))


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('dim', [None, 0, -1, 2], ids=str)
@pytest.mark.parametrize('dtype', [f32, f16, i64], ids=str)
@pytest.mark.parametrize('op', ['argmax', 'argmin'])
def test_argmax_argmin(op, dtype, dim, keepdim):
    x = tensor((2, 3, 4), dtype)
    check_op(op, [x], {'dim': dim, 'keepdim': keepdim},
             getattr(torch, op)(x, dim=dim, keepdim=keepdim))


@pytest.mark.parametrize('keepdim', [False, True])
@pytest.mark.parametrize('correction', [None, 0, 1, 2.5])
@pytest.mark.parametrize('dim', [None, 1, -1, [0, 2], []], ids=str)
@pytest.mark.parametrize('dtype', [f32, f64, f16], ids=str)
@pytest.mark.parametrize('op', ['var', 'std'])
def test_var_std(op, dtype, dim, correction, keepdim):
    x = tensor((2, 3, 4), dtype)
    attrs = {'dim': dim, 'correction': correction, 'keepdim': keepdim}
    check_op(op, [x], attrs, getattr(torch, op)(x, **attrs))


@pytest.mark.parametrize('shape, dim', [((2, 3, 4), 0), ((2, 3, 4), -1), ((5,), 0), ((), 0),
                                        ((3, 0), 1)])
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
def test_softmax(op, dtype, shape, dim):
    x = tensor(shape, dtype) * 4
    check_op(op, [x], {'dim': dim}, getattr(torch, op)(x, dim))


@pytest.mark.parametrize('op', ['sum', 'mean', 'amax', 'var'])
def test_reductions_of_a_0d_tensor(op):
    x = torch.tensor(1.5)
    attrs = {'dim': 0, 'keepdim': True}
    if op == 'var':
        attrs['correction'] = 0
    expected = getattr(torch, op)(x, **attrs)
    check_op(op, [x], attrs, expected)
    attrs['dim'] = None
    check_op(op, [x], attrs, getattr(torch, op)(x, **{**attrs, 'dim': _torch_dim(None)}))


def test_sum_of_an_empty_dim_is_zero():
    x = torch.zeros(0, 3)
    check_op('sum', [x], {'dim': 0, 'keepdim': False}, torch.zeros(3))
    check_op('amax', [x], {'dim': 1, 'keepdim': True}, torch.amax(x, dim=1, keepdim=True))


@pytest.mark.parametrize('shape, dim', [((2, 3, 4), 0), ((2, 3, 4), -1), ((5,), 0), ((), 0),
                                        ((3, 0), 1), ((0, 3), 1)])
@pytest.mark.parametrize('dtype', FLOATS, ids=str)
def test_softmax_gradients_are_torchs_kernels(dtype, shape, dim):
    """'softmax_backward' and 'log_softmax_backward' are torch's _softmax_backward_data
    and _log_softmax_backward_data: the same formulas from separate ops sum in another
    order and end an ulp off."""
    x, gradient = tensor(shape, dtype) * 4, tensor(shape, dtype)
    y, log_y = torch.softmax(x, dim), torch.log_softmax(x, dim)
    check_op('softmax_backward', [gradient, y], {'dim': dim},
             torch.ops.aten._softmax_backward_data(gradient, y, dim, dtype))
    check_op('log_softmax_backward', [gradient, log_y], {'dim': dim},
             torch.ops.aten._log_softmax_backward_data(gradient, log_y, dim, dtype))
