"""Indexing rows against torch: basic getitem/setitem, gather, scatter_add, embedding and
index_add, all out of place."""

import pytest
import torch
from op_check import check_op, tensor

from gt.ir.ops.indexing import index_key

f32, f16, i64, i32, b8 = torch.float32, torch.float16, torch.int64, torch.int32, torch.bool
ALL = ['slice', None, None, None]

INDICES = [
    [['int', 0]],
    [['int', -1], ['int', 2]],
    [['slice', 1, None, None]],
    [['slice', None, None, 2], ['int', 1]],
    [['slice', -3, -1, 1], ['slice', 5, 1, 1]],
    [['slice', 0, 100, 3]],
    [['none'], ['ellipsis'], ['none'], ['int', 1]],
    [['ellipsis'], ['int', 0]],
    [['ellipsis']],
    [],
    [ALL, ['none'], ['slice', 1, 3, None]],
    [['int', 1], ['int', 2], ['int', 3]],
]


@pytest.mark.parametrize('index', INDICES, ids=str)
@pytest.mark.parametrize('dtype', [f32, i64, b8], ids=str)
def test_getitem(index, dtype):
    x = tensor((3, 4, 5), dtype)
    check_op('getitem', [x], {'index': index}, x[index_key(index)])


def test_getitem_of_a_0d_tensor():
    x = torch.tensor(3.0)
    for index in ([['none']], [['ellipsis']], [], [['none'], ['ellipsis'], ['none']]):
        check_op('getitem', [x], {'index': index}, x[index_key(index)])


def _assigned(x, value, index):
    out = x.clone()
    out[index_key(index)] = value
    return out


@pytest.mark.parametrize('index, value_shape', [
    ([['int', 0]], (4, 5)), ([['int', 0]], (5,)), ([['int', 0]], ()), ([['int', 0]], (1, 1, 5)),
    ([['slice', 1, None, None], ['int', 2]], (2, 5)), ([['ellipsis'], ['int', -1]], (1, 4)),
    ([['slice', None, None, 2]], (2, 1, 5)), ([['none'], ['int', 1]], (1, 4, 1)),
    ([], (3, 4, 5)), ([['int', 1], ['int', 2], ['int', 3]], (1,)),
])
@pytest.mark.parametrize('dtypes', [(f32, f32), (f32, i64), (i64, f32), (b8, f32)], ids=str)
def test_setitem(index, value_shape, dtypes):
    x, value = tensor((3, 4, 5), dtypes[0]), tensor(value_shape, dtypes[1])
    expected = _assigned(x, value, index)
    check_op('setitem', [x, value], {'index': index}, expected)


def test_setitem_does_not_touch_its_input():
    x = torch.zeros(2, 2)
    check_op('setitem', [x, torch.ones(())], {'index': [['int', 0]]},
             torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    assert not x.any()


@pytest.mark.parametrize('x_shape, index_shape, dim', [
    ((3, 4), (3, 2), 1), ((3, 4), (2, 4), 0), ((3, 4), (2, 6), 1), ((3, 4), (1, 1), -1),
    ((2, 3, 4), (2, 3, 5), 2), ((5,), (7,), 0), ((), (), 0), ((), (3,), 0), ((4,), (), 0),
])
@pytest.mark.parametrize('index_dtype', [i64, i32], ids=str)
def test_gather(x_shape, index_shape, dim, index_dtype):
    x = tensor(x_shape)
    size = x_shape[dim] if x_shape else 1
    index = tensor(index_shape, index_dtype, low=0, high=size)
    check_op('gather', [x, index], {'dim': dim}, torch.gather(x, dim, index))


@pytest.mark.parametrize('x_shape, index_shape, source_shape, dim', [
    ((3, 4), (3, 2), (3, 2), 1), ((3, 4), (2, 4), (3, 5), 0), ((3, 4), (3, 6), (3, 6), 1),
    ((2, 3, 4), (2, 2, 6), (2, 3, 7), -1), ((5,), (8,), (9,), 0), ((), (), (), 0),
    ((4,), (), (), 0),
])
@pytest.mark.parametrize('dtype', [f32, i64, torch.float64], ids=str)
def test_scatter_add(x_shape, index_shape, source_shape, dim, dtype):
    x, source = tensor(x_shape, dtype), tensor(source_shape, dtype)
    size = x_shape[dim] if x_shape else 1
    index = tensor(index_shape, i64, low=0, high=size)
    check_op('scatter_add', [x, index, source], {'dim': dim},
             torch.scatter_add(x, dim, index, source))


@pytest.mark.parametrize('indices_shape', [(4,), (2, 3), (), (0,)], ids=str)
@pytest.mark.parametrize('dtypes', [(f32, i64), (f16, i32), (i64, i64), (b8, i64)], ids=str)
def test_embedding(indices_shape, dtypes):
    weight = tensor((5, 3), dtypes[0])
    indices = tensor(indices_shape, dtypes[1], low=0, high=5)
    check_op('embedding', [weight, indices], {},
             torch.nn.functional.embedding(indices, weight))


@pytest.mark.parametrize('indices_shape', [(4,), (2, 3), ()])
@pytest.mark.parametrize('dtype', [f32, f16, torch.bfloat16, torch.float64], ids=str)
def test_embedding_backward(indices_shape, dtype):
    """torch's embedding gradient: repeated indices sum, in half precision as torch sums."""
    indices = tensor(indices_shape, i64, low=0, high=5)
    grad = tensor(indices_shape + (3,), dtype)
    check_op('embedding_backward', [grad, indices], {'rows': 5},
             torch.ops.aten.embedding_dense_backward(grad, indices, 5, -1, False))


@pytest.mark.parametrize('x_shape, index_length, dim', [
    ((3, 4), 5, 0), ((3, 4), 2, 1), ((3, 4), 6, -1), ((2, 3, 4), 3, 1), ((5,), 7, 0),
    ((5,), 0, 0),
])
@pytest.mark.parametrize('dtypes', [(f32, i64), (i64, i64), (f32, i32)], ids=str)
def test_index_add(x_shape, index_length, dim, dtypes):
    x = tensor(x_shape, dtypes[0])
    source_shape = list(x_shape)
    source_shape[dim] = index_length
    source = tensor(tuple(source_shape), dtypes[0])
    index = tensor((index_length,), dtypes[1], low=0, high=x_shape[dim])
    check_op('index_add', [x, index, source], {'dim': dim},
             torch.index_add(x, dim, index, source))


def test_index_add_of_0d_tensors():
    x, source = torch.tensor(1.0), torch.tensor(2.0)
    for index in (torch.tensor([0]), torch.tensor(0)):
        check_op('index_add', [x, index, source], {'dim': 0},
                 torch.index_add(x, 0, index, source))
