"""Gradients of the indexing ops ('getitem', 'setitem', 'gather', 'scatter_add',
'index_add', 'embedding', 'embedding_backward') against torch; index tensors get no gradient."""

import numpy as np
import pytest
import torch
from check import check_vs_torch, like, op, rng

import gt

KEYS = [
    1, -1, (0, 2), (slice(None), 1), slice(1, None), slice(None, None, 2),
    (slice(None), slice(None), slice(1, 4, 2)), (Ellipsis, 0), (None, 1), (1, None, Ellipsis),
    (Ellipsis, None), (slice(-2, None), Ellipsis, slice(None, -1)), (0, 1, 2),
    (slice(5, 9),), Ellipsis, (),
]


@pytest.mark.parametrize('key', KEYS, ids=str)
def test_getitem(key):
    check_vs_torch(lambda x: x[key], (3, 4, 5))


def test_getitem_twice_and_of_0d():
    check_vs_torch(lambda x: x[1][::2] * x[0, :3], (2, 5))
    check_vs_torch(lambda x: x[None] + x[...], ())


def _assigned(x, key, value):
    out = x * 1  # torch refuses to write into a leaf that requires grad
    out[key] = value
    return out


@pytest.mark.parametrize('key, value_shape', [
    (0, (4,)), (0, (1,)), ((slice(None), 1), (3,)), ((slice(None), 1), ()),
    (slice(1, None, 2), (1, 4)), ((Ellipsis, slice(0, 2)), (3, 2)), ((None, 1), (1, 1, 4)),
    ((slice(None), slice(1, 3)), (3, 1)), ((1, 2), ()),
], ids=str)
def test_setitem(key, value_shape):
    check_vs_torch(lambda x, v: _assigned(x, key, v.exp()), (3, 4), value_shape)


def test_setitem_with_numbers_and_twice():
    check_vs_torch(lambda x: _assigned(x, (slice(None), 0), 2.5), (3, 4))

    def twice(x, v):
        out = x * 2
        out[0] = v
        out[:, 1] = v[1] * 3
        return out * out

    check_vs_torch(twice, (3, 4), (4,))


def test_setitem_into_a_tensor_without_grad():
    def fn(x):
        out = like(x, np.zeros((2, 3)))
        out[1] = x * 2
        return out.sum(0)

    check_vs_torch(fn, (3,))


INDEX = np.array([[0, 2, 1, 2], [1, 1, 0, 0]])


@pytest.mark.parametrize('dim', [0, 1, -1])
def test_gather(dim):
    check_vs_torch(lambda x: op('gather', x, like(x, INDEX), dim=dim), (3, 4))


def test_gather_with_a_smaller_index_and_1d():
    check_vs_torch(lambda x: op('gather', x, like(x, INDEX[:1, :2]), dim=1), (3, 4))
    check_vs_torch(lambda x: op('gather', x, like(x, np.array([3, 0, 3])), dim=0), (4,))


@pytest.mark.parametrize('dim', [0, 1])
def test_scatter_add(dim):
    index = INDEX[:, :3]
    check_vs_torch(lambda x, s: op('scatter_add', x, like(x, index), s, dim=dim), (3, 3), (2, 3))


def test_scatter_add_source_bigger_than_index():
    """torch rejects the gradient it computes here; the unread part gets zeros."""
    data = rng().standard_normal((3, 4))
    source = gt.tensor(data, requires_grad=True)
    x = gt.zeros(3, 3, dtype=torch.float64)
    index = gt.tensor(INDEX[:, :2])
    op('scatter_add', x, index, source, dim=0).sum().backward()
    want = np.zeros((3, 4))
    want[:2, :2] = 1
    assert np.array_equal(source.grad.numpy(), want)


@pytest.mark.parametrize('dim', [0, 1, -1])
def test_index_add(dim):
    index = np.array([2, 0, 2, 1])
    source_shape = (4, 3) if dim == 0 else (3, 4)
    check_vs_torch(lambda x, s: op('index_add', x, like(x, index), s, dim=dim), (3, 3),
                   source_shape)


def test_index_add_1d_and_0d():
    check_vs_torch(lambda x, s: op('index_add', x, like(x, np.array([1, 1])), s, dim=0),
                   (3,), (2,))
    check_vs_torch(lambda x, s: op('index_add', x, like(x, np.array([0])), s, dim=0),
                   (), ())


@pytest.mark.parametrize('indices', [np.array([1, 3, 1]), np.array([[0, 4], [4, 4]]),
                                     np.array(2)], ids=['1d', '2d', '0d'])
def test_embedding(indices):
    check_vs_torch(lambda w: op('embedding', w, like(w, indices)), (5, 3))


@pytest.mark.parametrize('indices', [np.array([1, 3, 1]), np.array([[0, 4], [4, 4]])],
                         ids=['1d', '2d'])
def test_embedding_backward(indices):
    """The gradient of embedding's gradient (a gradient penalty through an embedding)."""
    check_vs_torch(lambda g: op('embedding_backward', g, like(g, indices), rows=5),
                   indices.shape + (3,))
