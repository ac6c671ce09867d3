"""Shape rows against torch: reshape, transpose, permute, (un)squeeze, expand, cat, stack,
split, and matmul's 1-D, 2-D, batched and broadcast cases."""

import pytest
import torch
from op_check import check_op, tensor

from gt.ir import OPS

f32, f16, i64, b8 = torch.float32, torch.float16, torch.int64, torch.bool


@pytest.mark.parametrize('dtype', [f32, i64, b8], ids=str)
@pytest.mark.parametrize('shape, target', [
    ((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)), ((6,), (1, 6, 1)),
    ((), (1, 1)), ((1,), ()), ((0, 3), (-1, 3)), ((0, 3), (3, 0, 5)),
])
def test_reshape(shape, target, dtype):
    x = tensor(shape, dtype)
    check_op('reshape', [x], {'shape': target}, torch.reshape(x, target))


@pytest.mark.parametrize('shape, dim0, dim1', [
    ((2, 3), 0, 1), ((2, 3, 4), -1, 0), ((2, 3, 4), 1, 1), ((), 0, -1),
])
def test_transpose(shape, dim0, dim1):
    x = tensor(shape)
    check_op('transpose', [x], {'dim0': dim0, 'dim1': dim1}, torch.transpose(x, dim0, dim1))


@pytest.mark.parametrize('shape, dims', [
    ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1)), ((2, 3), (0, 1)), ((), ()),
])
def test_permute(shape, dims):
    x = tensor(shape, i64)
    check_op('permute', [x], {'dims': dims}, torch.permute(x, dims))


@pytest.mark.parametrize('shape, dim', [((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((2, 3), -3),
                                        ((), 0), ((), -1)])
def test_unsqueeze(shape, dim):
    x = tensor(shape)
    check_op('unsqueeze', [x], {'dim': dim}, torch.unsqueeze(x, dim))


@pytest.mark.parametrize('shape, dim', [
    ((1, 2, 1), None), ((1, 2, 1), 0), ((1, 2, 1), 1), ((1, 2, 1), -1), ((1, 2, 1), [0, 2]),
    ((1, 2, 1), [0, 1]), ((1, 2, 1), []), ((), None), ((), 0), ((1, 1), None),
])
def test_squeeze(shape, dim):
    x = tensor(shape)
    expected = torch.squeeze(x) if dim is None else torch.squeeze(x, dim)
    check_op('squeeze', [x], {'dim': dim}, expected)


@pytest.mark.parametrize('shape, sizes', [
    ((2, 1), (2, 3)), ((2, 1), (4, 2, 5)), ((1, 3), (-1, 3)), ((1, 3), (2, -1, -1)),
    ((), (2, 3)), ((), ()), ((1, 3), (0, 3)), ((2, 3), (2, 3)),
])
def test_expand(shape, sizes):
    x = tensor(shape, i64)
    check_op('expand', [x], {'shape': sizes}, x.expand(sizes))


@pytest.mark.parametrize('shapes, dtypes, dim', [
    ([(2, 3), (4, 3)], [f32, f32], 0),
    ([(2, 3), (2, 1), (2, 2)], [f32, i64, f16], -1),
    ([(2, 3)], [b8], 1),
    ([(0,), (2, 3)], [f32, f32], 1),  # torch skips 1-D empty tensors
    ([(0,), (0,)], [i64, f32], 0),
    ([(2, 0), (2, 3)], [f32, f32], 1),
])
def test_cat(shapes, dtypes, dim):
    xs = [tensor(shape, dtype) for shape, dtype in zip(shapes, dtypes)]
    check_op('cat', xs, {'dim': dim}, torch.cat(xs, dim))


@pytest.mark.parametrize('shape, dtypes, dim', [
    ((2, 3), [f32, f32], 0), ((2, 3), [f32, i64, f32], 2), ((2, 3), [i64, b8], -1),
    ((), [f32, f32, f32], 0), ((4,), [b8], -2),
])
def test_stack(shape, dtypes, dim):
    xs = [tensor(shape, dtype) for dtype in dtypes]
    check_op('stack', xs, {'dim': dim}, torch.stack(xs, dim))


@pytest.mark.parametrize('shape, sizes, dim', [
    ((2, 6), [1, 2, 3], 1), ((2, 6), [2], 0), ((4, 3), [0, 4], 0), ((5,), [2, 3], -1),
    ((2, 6), (3, 3), -1),
])
def test_split(shape, sizes, dim):
    x = tensor(shape)
    check_op('split', [x], {'sizes': sizes, 'dim': dim}, tuple(torch.split(x, list(sizes), dim)))


@pytest.mark.parametrize('dtype', [f32, torch.float64, f16, i64, torch.int32], ids=str)
@pytest.mark.parametrize('a, b', [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 1, 2, 3), (5, 3, 4)), ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
])
def test_matmul(a, b, dtype):
    x, y = tensor(a, dtype, low=-3, high=4), tensor(b, dtype, low=-3, high=4)
    check_op('matmul', [x, y], {}, torch.matmul(x, y))


@pytest.mark.parametrize('dtype', [f32, torch.float64, f16, torch.bfloat16, i64], ids=str)
@pytest.mark.parametrize('a, b', [((4, 3), (4, 5)), ((2, 3, 4), (2, 3, 5)), ((0, 3), (0, 2)),
                                  ((2, 0, 3), (2, 0, 4)), ((1, 2, 3, 4), (1, 2, 3, 1)),
                                  ((2, 3, 0), (2, 3, 4)), ((2, 3, 4), (2, 3, 0))])
def test_folded_mm_is_one_mm_over_every_leading_position(a, b, dtype):
    """folded_mm(a, b) is a.flatten(0, -2).T @ b.flatten(0, -2) by torch.mm, the product
    torch's matmul backward computes for the matrix operand of a batched product."""
    x, y = tensor(a, dtype, low=-3, high=4), tensor(b, dtype, low=-3, high=4)
    check_op('folded_mm', [x, y], {},
             torch.mm(x.flatten(0, -2).t(), y.flatten(0, -2)))


@pytest.mark.parametrize('dtype', [f32, torch.float64], ids=str)
@pytest.mark.parametrize('bias, a, b', [((5,), (64, 784), (784, 5)), ((1, 5), (3, 4), (4, 5)),
                                        ((3, 5), (3, 4), (4, 5)), ((5,), (0, 4), (4, 5))],
                         ids=str)
def test_addmm_adds_the_bias_inside_the_product_as_torch(bias, a, b, dtype):
    """'addmm' is torch.addmm: one rounding, where a product and a sum take two."""
    c, x, y = (tensor(shape, dtype, low=-3, high=4) for shape in (bias, a, b))
    check_op('addmm', [c, x, y], {}, torch.addmm(c, x, y), numpy=False)


@pytest.mark.parametrize('a, b', [((3, 7, 16), (16, 5)), ((2, 3, 4), (4,)), ((5, 4), (2, 4, 3)),
                                  ((4,), (2, 4, 3)), ((0, 2, 3), (3, 2))])
@pytest.mark.parametrize('transposed', [False, True])
def test_folded_matmul_is_torchs_matmul_with_the_smaller_operand_requiring_grad(a, b, transposed):
    """'folded_matmul' gives torch.matmul's values and bits as torch computes them when
    the smaller operand requires grad: the larger folded into one mm, even a transposed
    batch (copied), where torch's matmul of tensors that require nothing takes bmm."""
    x, y = tensor(a), tensor(b)
    if transposed:
        x, y = (x.transpose(0, 1).contiguous().transpose(0, 1) if x.ndim >= 3 else x,
                y.transpose(0, 1).contiguous().transpose(0, 1) if y.ndim >= 3 else y)
    smaller = 1 if len(b) < len(a) else 0
    with torch.enable_grad():
        operands = [x, y]
        operands[smaller] = operands[smaller].clone().requires_grad_()
        expected = torch.matmul(*operands).detach()
    check_op('folded_matmul', [x, y], {}, expected)


@pytest.mark.parametrize('viewed', ['contiguous', 'transposed', 'split_heads', 'empty'])
def test_batched_layout_folds_as_torch_matmul_folds_a_batched_operand(viewed):
    """'batched_layout' keeps the values; its layout is torch.matmul's folded operand:
    a view where the batch dims fold (the same strides), a fresh copy where they do not."""
    x = {'contiguous': lambda: tensor((2, 3, 4, 5)),
         'transposed': lambda: tensor((2, 3, 5, 4)).transpose(-2, -1),
         'split_heads': lambda: tensor((2, 4, 3, 5)).transpose(1, 2),
         'empty': lambda: tensor((2, 0, 4, 5))}[viewed]()
    check_op('batched_layout', [x], {}, x)
    laid_out = OPS['batched_layout'].torch(x)
    folded = x.reshape(-1, *x.shape[-2:])
    assert laid_out.stride()[-2:] == folded.stride()[-2:]
    assert (laid_out.data_ptr() == x.data_ptr()) == (folded.data_ptr() == x.data_ptr())


@pytest.mark.parametrize('dtype', [torch.float32, torch.int64, torch.bool], ids=str)
def test_contiguous_copies_a_view_into_a_fresh_layout(dtype):
    """'contiguous' is torch's: a transposed view becomes a copy laid out row by row."""
    view = tensor((3, 4), dtype).t()
    check_op('contiguous', [view], {}, view.contiguous())
    assert OPS['contiguous'].torch(view).stride() == (3, 1)
