"""Basic indexing through the real runtime: ints, slices with steps, negative indices,
`...`, `None` and their combinations, read (`x[k]`) and written (`x[k] = v`)."""

import numpy as np
import pytest
import torch
from api_check import array, assert_same, pair

import gt

E = Ellipsis
KEYS = [
    0, -1, 2, slice(None), slice(1, None), slice(None, -1), slice(None, None, 2),
    slice(1, 3), slice(-3, None, 2), slice(5, 1), slice(-100, 100), (1, 2), (-1, -2, -3),
    (slice(None), 1), (0, slice(None, None, 3)), (slice(1, None), slice(None, None, 2)),
    (E, 1), (E, slice(None, None, -1 + 3)), (1, E), (0, E, 2), (None,), (None, 0),
    (slice(None), None, 1), (E, None), (None, E, None), (1, None, slice(1, 3), None),
    (slice(None, None, 2), -1, slice(2, None)), (E,), (), (-2, slice(None), None, -1),
]


@pytest.mark.parametrize('key', KEYS, ids=repr)
def test_getitem(key):
    got, want = pair(array((3, 4, 5), torch.int64, low=-100, high=100))
    assert_same(got[key], want[key])


def test_getitem_of_vectors_and_scalars():
    got, want = pair(array((7,)))
    for key in [3, -7, slice(None, None, 3), (None, slice(2, 5)), E, (E, None)]:
        assert_same(got[key], want[key])
    scalar, tscalar = pair(np.array(4.0, dtype=np.float32))
    for key in [(), E, None, (None, E)]:
        assert_same(scalar[key], tscalar[key])


def test_index_with_numpy_and_gt_integers():
    got, want = pair(array((4, 3)))
    assert_same(got[np.int64(2)], want[2])
    assert_same(got[gt.tensor(1)], want[1])
    assert_same(got[1:np.int32(3)], want[1:3])


def test_indexing_refuses_steps_below_one_and_what_is_no_index():
    got = gt.randn(4, 3)
    with pytest.raises(ValueError):
        got[::-1]  # torch: step must be greater than zero
    with pytest.raises((TypeError, ValueError), match='Tensor.__getitem__'):
        got['a']
    with pytest.raises((ValueError, IndexError)):
        got[4]
    with pytest.raises((ValueError, IndexError)):
        got[0, 0, 0]


def test_index_out_of_range_raises_index_error():
    with pytest.raises(IndexError):
        gt.randn(2, 3)[5]
    with pytest.raises(IndexError):
        gt.randn(2, 3)[0, 0, 0]


# A value: a number, 'region' (an array of the indexed region's shape), 'row' (its last
# dim, broadcast) or 'lead' (a leading 1 that torch drops).
SET_KEYS = [
    (1, 0.5), (-1, -2.0), ((slice(1, None), slice(None, None, 2)), 'region'),
    ((0, 1), 7.0), ((E, 0), 'row'), ((slice(None), 1), 'region'), (slice(None), 0.0),
    ((None, 0, slice(1, 3)), 'lead'), ((slice(None, None, 2), E, -1), 3.0),
    ((slice(None), slice(1, 3)), 'row'), (E, 'row'),
]


@pytest.mark.parametrize('key,value', SET_KEYS, ids=repr)
def test_setitem(key, value):
    got, want = pair(array((3, 4)))
    shape = tuple(want[key].shape)
    sources = {'region': shape, 'row': shape[-1:], 'lead': (1, *shape)}
    alias = got
    if value in sources:
        source = array(sources[value], generator=np.random.default_rng(len(shape)))
        got[key] = gt.from_numpy(source)
        want[key] = torch.from_numpy(source)
    else:
        got[key] = value
        want[key] = value
    assert_same(alias, want)


def test_setitem_casts_to_the_target_dtype_and_keeps_old_readers():
    got, want = pair(np.arange(12).reshape(3, 4))
    before = got * 1
    got[0] = 2.7
    want[0] = 2.7
    got[1:, ::2] = gt.tensor([[-1.5, 9.0]])
    want[1:, ::2] = torch.tensor([[-1.5, 9.0]])
    got[2, 3] = True
    want[2, 3] = True
    assert_same(got, want)
    assert before.tolist() == np.arange(12).reshape(3, 4).tolist()


def test_setitem_shape_error_names_both_shapes():
    got = gt.zeros(3, 4)
    with pytest.raises(ValueError, match=r'\[5\].*\[3, 4\]|\[3, 4\].*\[5\]'):
        got[:] = gt.ones(5)
    assert got.sum().item() == 0


def test_a_range_indexes_as_the_list_it_holds():
    """`x_[range(x.shape[0]), y] = x.max()` (torch's forward-forward example)."""
    got, want = pair(array((3, 5), torch.float32))
    rows, trows = gt.tensor([1, 4, 0]), torch.tensor([1, 4, 0])
    assert_same(got[range(3), rows], want[range(3), trows])
    assert_same(got[range(0, 3, 2)], want[range(0, 3, 2)])
    got[range(3), rows] = got.max()
    want[range(3), trows] = want.max()
    assert_same(got, want)


def run_zero_dim_tensor_indices(lib):
    """A 0-d integer tensor indexes as the int it holds (the Bi-LSTM CRF tutorial's
    `transitions[tags[i + 1], tags[i]]`): a select, with gradients, a view that writes
    reach, negative values counting from the end; mixed with advanced indices too."""
    lib.manual_seed(0)
    w = lib.randn(5, 5, requires_grad=True)
    tags = lib.tensor([3, 0, 1, -1])
    total = (w[tags[1]].sum() + w[tags[0], tags[1]] * 2 + w[:, tags[2]].sum() * 3
             + w[4, tags[3]] + w[tags[3]][tags[0]] + w[..., tags[0]].sum()
             + w[tags[0], [1, 2]].sum() + w[None, tags[1]].sum())
    total.backward()
    x = lib.zeros(5, 5)
    one = lib.tensor(1)
    x[one] = 1
    x[one, lib.tensor(0)] += 5
    x[:, lib.tensor(-1)] = lib.arange(5.0)
    x[lib.tensor(2)].fill_(7)
    return [total.item(), w.grad.tolist(), x.tolist(), x[one].is_contiguous(),
            x[:, one].is_contiguous(), tuple(x[one].shape)]


def test_a_zero_dim_integer_tensor_indexes_as_torchs():
    mine, theirs = run_zero_dim_tensor_indices(gt), run_zero_dim_tensor_indices(torch)
    assert mine[0] == pytest.approx(theirs[0], rel=1e-6)
    assert mine[1:] == theirs[1:]


@pytest.mark.parametrize('flag', [True, False])
def test_a_write_through_a_0d_boolean_mask_is_torchs(flag):
    """A 0-d mask selects the whole tensor or nothing; its write ran in the client (its
    result's size depends on the mask's value) and was lost."""
    results = []
    for lib in (gt, torch):
        x, y = lib.zeros(2, 2), lib.arange(4.0).view(2, 2)
        x[lib.tensor(flag)] = y[lib.tensor(flag)]
        z = lib.zeros(3)
        z[lib.tensor(flag)] = 5.0
        results.append((x.tolist(), z.tolist()))
    assert results[0] == results[1]
