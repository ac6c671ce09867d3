"""any/all over all or some dims, and where with numbers on both sides, against torch."""

import numpy as np
import pytest
import torch
from api_check import assert_same, pair

import gt


@pytest.mark.parametrize('values', [
    np.array([[0.0, 1.0], [2.0, 3.0]]), np.zeros((2, 3)), np.array([True, False]),
    np.array([3, 0, -1]), np.zeros((0,)),
])
@pytest.mark.parametrize('dim, keepdim', [(None, False), (0, False), (-1, True)])
def test_any_and_all_match_torch(values, dim, keepdim):
    x, tx = pair(values)
    if dim is not None and values.ndim == 0:
        pytest.skip('no dims')
    if dim is None:
        assert_same(x.any(), tx.any())
        assert_same(x.all(), tx.all())
    else:
        assert_same(x.any(dim, keepdim), tx.any(dim, keepdim))
        assert_same(x.all(dim, keepdim), tx.all(dim, keepdim))


@pytest.mark.parametrize('a, b', [(1.0, 0.0), (1, 2), (1, 2.5), (True, False)])
def test_where_with_two_numbers(a, b):
    condition, tcondition = pair(np.array([True, False, True]))
    assert_same(gt.where(condition, a, b), torch.where(tcondition, a, b))
