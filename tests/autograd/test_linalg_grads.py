"""Gradients of 'matmul' against torch: vectors, matrices, batches and broadcast batches."""

import pytest
import torch
from check import check_vs_torch

SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (2, 1, 4, 5)),
]


@pytest.mark.parametrize('a, b', SHAPES, ids=str)
def test_matmul(a, b):
    check_vs_torch(lambda x, y: x @ y, a, b)


def test_matmul_float32_and_method_form():
    check_vs_torch(lambda x, y: x.matmul(y).tanh(), (3, 4), (4, 2), dtype=torch.float32)


def test_matmul_of_a_tensor_with_itself():
    check_vs_torch(lambda x: x @ x.T, (3, 4))
    check_vs_torch(lambda x: x @ x, (3, 3))
