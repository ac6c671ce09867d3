"""Elementwise functions through the real runtime, as methods and as `gt.` functions:
activations, exp/log/sqrt, abs, clamp, maximum/minimum and where."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from api_check import FLOATS, array, assert_same, pair, pairs

import gt

UNARY = ['relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt', 'abs']


@pytest.mark.parametrize('name', UNARY)
@pytest.mark.parametrize('dtype', [*FLOATS, torch.int64, torch.int32], ids=str)
def test_unary_methods_and_functions(name, dtype):
    got, want = pair(array((3, 4), dtype))
    if dtype == torch.float16:
        tolerance = {'rtol': 1e-3, 'atol': 1e-3}
    else:
        tolerance = {}
    assert_same(getattr(got, name)(), getattr(want, name)(), **tolerance)
    assert_same(getattr(gt, name)(got), getattr(torch, name)(want), **tolerance)


def test_special_values():
    values = np.array([0.0, -0.0, 1e-30, -1.0, np.inf, -np.inf, np.nan, 88.0, -100.0],
                      dtype=np.float32)
    got, want = pair(values)
    for name in UNARY:
        assert_same(getattr(got, name)(), getattr(want, name)())


@pytest.mark.parametrize('approximate', ['none', 'tanh'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_gelu(approximate, dtype):
    got, want = pair(array((5, 3), dtype) * 3)
    assert_same(got.gelu(approximate=approximate), F.gelu(want, approximate=approximate))
    assert_same(got.gelu(), F.gelu(want))


def test_gelu_refuses_integers_and_unknown_modes():
    with pytest.raises(RuntimeError):
        gt.tensor([1, 2]).gelu()
    with pytest.raises(ValueError):
        gt.randn(2).gelu(approximate='fast')


@pytest.mark.parametrize('bounds', [(-0.5, 0.5), (0, None), (None, 0.25), (1, -1), (-2, 2)],
                         ids=str)
@pytest.mark.parametrize('dtype', [torch.float32, torch.int64, torch.float64])
def test_clamp(bounds, dtype):
    low, high = bounds
    got, want = pair(array((4, 5), dtype))
    assert_same(got.clamp(low, high), want.clamp(low, high))
    assert_same(got.clamp(min=low, max=high), torch.clamp(want, min=low, max=high))
    assert_same(gt.clamp(got, low, high), torch.clamp(want, low, high))
    assert_same(got.clip(low, high), want.clip(low, high))


def test_clamp_needs_a_bound():
    with pytest.raises(ValueError):
        gt.randn(3).clamp()


@pytest.mark.parametrize('name', ['maximum', 'minimum'])
def test_maximum_minimum(name):
    (a, ta), (b, tb) = pairs((3, 1, 4), (2, 4))
    assert_same(getattr(a, name)(b), getattr(ta, name)(tb))
    assert_same(getattr(gt, name)(a, b), getattr(torch, name)(ta, tb))
    ints, tints = pair(array((2, 4), torch.int32))
    assert_same(getattr(a, name)(ints), getattr(ta, name)(tints))
    nans, tnans = pair(np.array([np.nan, 1.0, -np.inf], dtype=np.float32))
    zeros, tzeros = pair(np.zeros(3, dtype=np.float32))
    assert_same(getattr(nans, name)(zeros), getattr(tnans, name)(tzeros))


def test_where():
    (x, tx), (y, ty) = pairs((3, 4), (4,))
    condition, tcondition = x > 0, tx > 0
    assert_same(gt.where(condition, x, y), torch.where(tcondition, tx, ty))
    assert_same(gt.where(condition, x, 0.0), torch.where(tcondition, tx, 0.0))
    assert_same(gt.where(condition, -1, y), torch.where(tcondition, -1, ty))
    ints, tints = pair(array((3, 4), torch.int64))
    assert_same(gt.where(condition, ints, 0.5), torch.where(tcondition, tints, 0.5))
    assert_same(gt.where(condition[0], ints, x), torch.where(tcondition[0], tints, tx))


def test_where_of_a_condition_alone_is_the_indices_of_its_true_elements():
    """Old code's `rows, cols = torch.where(mask)`: torch's nonzero(as_tuple=True)."""
    x, tx = pair(array((3, 4)))
    got, want = gt.where(x > 0), torch.where(tx > 0)
    assert isinstance(got, tuple) and len(got) == len(want) == 2
    for mine, theirs in zip(got, want):
        assert_same(mine, theirs)
    assert_same(torch.where(x > 0)[1], want[1])  # torch's own name for it reaches GT's
    with pytest.raises(TypeError, match='condition alone'):
        gt.where(x > 0, x)


def test_where_needs_a_bool_condition():
    x = gt.randn(3)
    with pytest.raises(RuntimeError):
        gt.where(x, x, x)
    with pytest.raises(ValueError, match=r'\[3\].*\[4\]'):
        gt.where(x > 0, x, gt.randn(4))


def test_composite_expression():
    (x, tx), (w, tw) = pairs((8, 5), (5,))
    got = ((x * w).sigmoid() + (x - 1).tanh() * 0.5).exp().log() - x.abs().sqrt()
    want = ((tx * tw).sigmoid() + (tx - 1).tanh() * 0.5).exp().log() - tx.abs().sqrt()
    assert_same(got, want)
    assert_same(x.relu().clamp(max=0.5) + x.maximum(w), tx.relu().clamp(max=0.5) + tx.maximum(tw))


def test_clamp_with_tensor_bounds():
    (x, tx), (low, tlow) = pairs((3, 4), (4,))
    assert_same(x.clamp(min=low), tx.clamp(min=tlow))
