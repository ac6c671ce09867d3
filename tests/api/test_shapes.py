"""Shape ops through the real runtime: reshape/view, transpose, .T, permute, (un)squeeze,
flatten, expand, cat, stack, split and chunk."""

import warnings

import numpy as np
import pytest
import torch
from api_check import array, assert_all_same, assert_same, pair, pairs

import gt


@pytest.mark.parametrize('shape', [(6, 4), (2, -1), (-1,), (4, 3, 2), (1, 24, 1), (2, 2, -1, 3)],
                         ids=str)
def test_reshape_and_view(shape):
    got, want = pair(array((2, 3, 4)))
    assert_same(got.reshape(*shape), want.reshape(*shape))
    assert_same(got.reshape(shape), want.reshape(shape))
    assert_same(got.view(*shape), want.view(*shape))
    assert_same(got.reshape(torch.Size(want.reshape(shape).shape)), want.reshape(shape))


def test_reshape_like_and_of_zero_dim():
    (a, ta), (b, tb) = pairs((2, 6), (3, 4))
    assert_same(a.view_as(b), ta.view_as(tb))
    assert_same(a.reshape_as(b), ta.reshape_as(tb))
    scalar, tscalar = pair(np.array(3.0, dtype=np.float32))
    assert_same(scalar.reshape(1, 1), tscalar.reshape(1, 1))
    assert_same(a.reshape(2, 1, 6).reshape(-1), ta.reshape(2, 1, 6).reshape(-1))


def test_transpose_T_permute():
    got, want = pair(array((2, 3, 4)))
    for dims in [(0, 1), (1, 2), (-1, 0), (2, 2)]:
        assert_same(got.transpose(*dims), want.transpose(*dims))
    for order in [(2, 0, 1), (0, 2, 1), (-1, -2, -3)]:
        assert_same(got.permute(*order), want.permute(*order))
        assert_same(got.permute(order), want.permute(order))
    matrix, tmatrix = pair(array((3, 5), torch.int64))
    assert_same(matrix.T, tmatrix.T)
    assert_same(matrix.T.T, tmatrix)
    vector, tvector = pair(array((4,)))
    assert_same(vector.T, tvector)  # torch warns on .T of other than 2 dims


def test_T_of_other_than_a_matrix_warns_once_as_torchs(monkeypatch):
    from gt import tensor_shapes

    monkeypatch.setattr(tensor_shapes, '_warned_of_T', False)
    with pytest.warns(UserWarning, match='The use of `x.T` on tensors of dimension other'):
        reversed_dims = gt.ones(2, 3, 4).T
    assert tuple(reversed_dims.shape) == (4, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert tuple(gt.ones(2, 3, 4).T.shape) == (4, 3, 2)  # once a process, as torch's
        assert tuple(gt.ones(2, 3).T.shape) == (3, 2)


def test_t_of_up_to_two_dims_as_torch_and_its_gradient():
    for shape in [(), (4,), (3, 5)]:
        got, want = pair(array(shape))
        assert_same(got.t(), want.t())
    leaf = gt.from_numpy(array((2, 3))).requires_grad_()
    weights = array((3, 2))
    (leaf.t() * gt.from_numpy(weights)).sum().backward()
    assert_same(leaf.grad, torch.from_numpy(weights.T.copy()))
    with pytest.raises(RuntimeError, match=r't\(\) expects a tensor with <= 2 dimensions, '
                       'but self is 3D'):
        gt.zeros(2, 2, 2).t()


def test_T_of_three_dims_reverses_them():
    got = gt.randn(2, 3, 4)
    assert got.T.shape == (4, 3, 2)
    assert torch.equal(got.T.data, got.data.permute(2, 1, 0))


def test_unsqueeze_squeeze():
    got, want = pair(array((3, 1, 4, 1)))
    for dim in [0, 1, 2, -1, 4, -5]:
        assert_same(got.unsqueeze(dim), want.unsqueeze(dim))
    assert_same(got.squeeze(), want.squeeze())
    for dim in [1, 0, -1, 3]:
        assert_same(got.squeeze(dim), want.squeeze(dim))
    assert_same(got.squeeze((1, 3)), want.squeeze((1, 3)))
    ones, tones = pair(np.ones((1, 1), dtype=np.float32))
    assert_same(ones.squeeze(), tones.squeeze())


def test_flatten():
    got, want = pair(array((2, 3, 4, 5)))
    assert_same(got.flatten(), want.flatten())
    for start, end in [(1, -1), (0, 1), (1, 2), (-2, -1), (2, 2)]:
        assert_same(got.flatten(start, end), want.flatten(start, end))
        assert_same(got.flatten(start_dim=start, end_dim=end),
                    want.flatten(start_dim=start, end_dim=end))
    scalar, tscalar = pair(np.array(1.5, dtype=np.float32))
    assert_same(scalar.flatten(), tscalar.flatten())


def test_expand():
    got, want = pair(array((3, 1)))
    assert_same(got.expand(3, 4), want.expand(3, 4))
    assert_same(got.expand(2, 3, 4), want.expand(2, 3, 4))
    assert_same(got.expand(-1, 5), want.expand(-1, 5))
    assert_same(got.expand((2, -1, 2)), want.expand((2, -1, 2)))
    other, tother = pair(array((2, 3, 6)))
    assert_same(got.expand_as(other), want.expand_as(tother))
    assert_same(got.expand(3, 4) + 1, want.expand(3, 4) + 1)


def test_cat():
    (a, ta), (b, tb), (c, tc) = pairs((2, 3), (4, 3), (2, 5))
    assert_same(gt.cat([a, b]), torch.cat([ta, tb]))
    assert_same(gt.cat((a, b, a), dim=0), torch.cat((ta, tb, ta), dim=0))
    assert_same(gt.cat([a, c], dim=1), torch.cat([ta, tc], dim=1))
    assert_same(gt.cat([a, c], -1), torch.cat([ta, tc], -1))
    assert_same(gt.cat([a]), torch.cat([ta]))
    ints, tints = pair(array((2, 3), torch.int64))
    assert_same(gt.cat([ints, a]), torch.cat([tints, ta]))  # promotes like torch
    empty, tempty = pair(np.zeros((0,), dtype=np.float32))
    assert_same(gt.cat([a, empty]), torch.cat([ta, tempty]))


def test_stack():
    (a, ta), (b, tb) = pairs((2, 3), (2, 3))
    for dim in [0, 1, 2, -1, -3]:
        assert_same(gt.stack([a, b], dim), torch.stack([ta, tb], dim))
    assert_same(gt.stack((a, b, a), dim=1), torch.stack((ta, tb, ta), dim=1))
    scalars = [gt.tensor(1.0), gt.tensor(2.0)]
    assert_same(gt.stack(scalars), torch.stack([torch.tensor(1.0), torch.tensor(2.0)]))


@pytest.mark.parametrize('split_size', [1, 2, 3, 5, 7, [1, 4], [2, 0, 3], [5]], ids=str)
def test_split(split_size):
    got, want = pair(array((5, 4)))
    assert_all_same(got.split(split_size), want.split(split_size))
    transposed = got.T
    assert_all_same(transposed.split(split_size, dim=1), want.T.split(split_size, dim=1))


@pytest.mark.parametrize('chunks', [1, 2, 3, 4, 6, 8])
def test_chunk(chunks):
    got, want = pair(array((6, 5)))
    assert_all_same(got.chunk(chunks), want.chunk(chunks))
    assert_all_same(got.chunk(chunks, dim=1), want.chunk(chunks, dim=1))
    assert_all_same(got.chunk(chunks, -1), want.chunk(chunks, -1))


def test_split_results_are_a_tuple_of_tensors():
    parts = gt.randn(4, 2).split(2)
    assert isinstance(parts, tuple) and all(isinstance(p, gt.Tensor) for p in parts)
    only = gt.randn(2, 2).split(5)
    assert isinstance(only, tuple) and len(only) == 1 and only[0].shape == (2, 2)


def test_chained_shape_ops():
    got, want = pair(array((2, 3, 4)))
    result = got.permute(2, 0, 1).reshape(4, 6).T.unsqueeze(0).expand(2, 6, 4).flatten(0, 1)
    expected = want.permute(2, 0, 1).reshape(4, 6).T.unsqueeze(0).expand(2, 6, 4).flatten(0, 1)
    assert_same(result, expected)
    assert_same(gt.cat(result.chunk(3), dim=1), torch.cat(expected.chunk(3), dim=1))


def test_one_element_integer_tensors_serve_as_sizes_as_in_torch():
    """`max_len = lengths.max()` then `zeros(2, max_len)`, `arange(lengths[0], max_len)`,
    `split(lengths[0])`: torch takes them through `__index__`; GT refused them."""
    for library in (gt, torch):
        lengths = library.tensor([3, 5])
        longest = lengths.max()
        assert library.zeros(2, longest).shape == (2, 5)
        assert library.full((2, longest), 0).shape == (2, 5)
        assert library.ones(longest, longest).shape == (5, 5)
        assert library.randn(longest).shape == (5,) and library.empty(lengths[0], 2).shape == (3, 2)
        assert library.arange(lengths[0], longest).tolist() == [3, 4]
        assert [piece.tolist() for piece in library.arange(8).split(lengths[0])] == [
            [0, 1, 2], [3, 4, 5], [6, 7]]
        assert [piece.shape[0] for piece in library.arange(8).split([lengths[0], 5])] == [3, 5]
        with pytest.raises(TypeError):
            library.zeros(2, library.tensor(2.5))
        # torch's chunk of an empty dim: as many empty pieces as asked for
        assert [tuple(piece.shape) for piece in library.zeros(0, 3).chunk(3)] == [(0, 3)] * 3


def test_in_looks_through_every_element_as_torchs():
    """`eos in ids` on a batch of sequences: GT iterated the rows and asked each for a
    truth value, which a row of several elements has none of."""
    for library in (gt, torch):
        ids = library.tensor([[5, 2, 9], [1, 3, 4]])
        assert 9 in ids and 7 not in ids and library.tensor(3) in ids and 2.0 in ids
        with pytest.raises(RuntimeError, match='only supports Tensor or scalar'):
            'a' in ids  # noqa: B015


def test_view_as_another_dtype_reads_the_bits_as_torch():
    x, tx = pair(array((2, 4)))
    for dtype in (torch.int32, torch.int16, torch.uint8, torch.float32):
        assert_same(x.view(dtype), tx.view(dtype))
    with pytest.raises(RuntimeError):
        gt.ones(3).view(torch.float64)
