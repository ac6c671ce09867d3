"""Matrix products through the real runtime: 1-D, 2-D, batched and broadcast batches, as
`@`, `.matmul` and `gt.matmul`; and mm, of matrices only."""

import pytest
import torch
from api_check import array, assert_same, pair, pairs

import gt

SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)), ((1, 3, 4), (6, 4, 2)), ((3, 0), (0, 2)), ((0, 4), (4, 2)),
]


@pytest.mark.parametrize('shapes', SHAPES, ids=str)
def test_matmul_shapes(shapes):
    (a, ta), (b, tb) = pairs(*shapes)
    want = ta @ tb
    assert_same(a @ b, want)
    assert_same(a.matmul(b), want)
    assert_same(gt.matmul(a, b), torch.matmul(ta, tb))


@pytest.mark.parametrize('dtype', [torch.float64, torch.int64, torch.int32, torch.float16])
def test_matmul_dtypes(dtype):
    (a, ta), (b, tb) = pairs((3, 4), (4, 2), dtype=dtype)
    tolerance = {'rtol': 1e-3, 'atol': 1e-2} if dtype == torch.float16 else {}
    assert_same(a @ b, ta @ tb, **tolerance)


def test_matmul_refuses_mixed_dtypes_and_scalars():
    with pytest.raises(RuntimeError):
        gt.randn(2, 3) @ gt.randn(3, 2, dtype=gt.float64)
    with pytest.raises(ValueError, match=r'\[\].*\[3\]'):
        gt.tensor(2.0) @ gt.randn(3)


def test_matmul_in_expressions():
    (x, tx), (w, tw), (b, tb) = pairs((8, 5), (5, 3), (3,))
    assert_same((x @ w + b).relu() @ w.T, (tx @ tw + tb).relu() @ tw.T)
    assert_same(x.T @ x, tx.T @ tx)


def test_matmul_of_a_tensor_made_from_torch_data():
    a, ta = pair(array((4, 2)))
    assert_same(gt.tensor(ta.T.contiguous()) @ a, ta.T @ ta)


def test_mm_takes_two_matrices_as_torch_does():
    (a, ta), (b, tb) = pairs((3, 4), (4, 2))
    assert_same(a.mm(b), ta.mm(tb))
    assert_same(gt.mm(a, b), torch.mm(ta, tb))
    vector, tvector = pair(array((4,)))
    for left, right, tleft, tright in ((vector, b, tvector, tb), (a, vector, ta, tvector)):
        with pytest.raises(RuntimeError) as torch_error:
            tleft.mm(tright)
        with pytest.raises(RuntimeError, match=str(torch_error.value)):
            left.mm(right)
