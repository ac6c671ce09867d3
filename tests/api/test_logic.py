"""any/all over all or some dims, where with numbers on both sides, the comparison
methods, square, type_as and the dtype queries, against torch."""

import re

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


def test_comparison_methods_equal_the_operators_and_torch():
    got, want = pair(np.array([[0.5, 1.0], [2.0, -3.0]], dtype=np.float32))
    other, tother = pair(np.array([[0.5, 2.0], [1.0, -3.0]], dtype=np.float32))
    for name in ('eq', 'ne', 'lt', 'le', 'gt', 'ge'):
        assert_same(getattr(got, name)(other), getattr(want, name)(tother))
        assert_same(getattr(got, name)(1), getattr(want, name)(1))


def test_square_type_as_and_dtype_queries_as_torch():
    got, want = pair(np.array([[0.5, -1.5], [2.0, 3.0]], dtype=np.float32))
    assert_same(got.square(), want.square())
    flags, tflags = pair(np.array([True, False]))
    assert_same(flags.square(), tflags.square())  # int64, as torch makes it
    integers, tintegers = pair(np.array([3, -2], dtype=np.int8))
    assert_same(integers.square(), tintegers.square())
    assert_same(got.type_as(integers), want.type_as(tintegers))
    assert_same(integers.type_as(torch.zeros(1, dtype=torch.float64)),
                tintegers.type_as(torch.zeros(1, dtype=torch.float64)))
    assert (got.is_floating_point(), integers.is_floating_point()) == (True, False)
    assert got.nelement() == want.nelement() == 4
    with pytest.raises(TypeError) as torch_error:
        want.type_as(1.0)
    with pytest.raises(TypeError, match=re.escape(str(torch_error.value))):
        got.type_as(1.0)


def test_squares_gradient_is_torchs_to_the_bit():
    values = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    leaf = gt.from_numpy(values).requires_grad_()
    tleaf = torch.from_numpy(values.copy()).requires_grad_()
    (leaf.square() * 0.3).sum().backward()
    (tleaf.square() * 0.3).sum().backward()
    assert torch.equal(leaf.grad.data, tleaf.grad)


def test_masked_fill_and_clamp_in_place_as_torch_with_gradients():
    values = np.array([[0.5, -1.5], [2.0, 3.0]], dtype=np.float32)
    got, want = pair(values)
    got.masked_fill_(got < 0, 7.0)
    want.masked_fill_(want < 0, 7.0)
    got.clamp_(max=2.5)
    want.clamp_(max=2.5)
    assert_same(got, want)
    leaf = gt.from_numpy(values).requires_grad_()
    tleaf = torch.from_numpy(values.copy()).requires_grad_()
    hidden, thidden = leaf * 2, tleaf * 2
    for h in (hidden, thidden):
        h.clamp_(-1, 4)
        h.masked_fill_(h > 3.5, 0.0)
        h.sum().backward()
    assert torch.equal(leaf.grad.data, tleaf.grad)
    with pytest.raises(RuntimeError, match='cannot be updated in place'):
        leaf.clamp_(0, 1)


class Unrelated:
    pass


OTHERS = [None, 'a', [1.0, 2.0], (1.0, 1.0), Unrelated()]


@pytest.mark.parametrize('other', OTHERS, ids=['None', 'str', 'list', 'tuple', 'object'])
@pytest.mark.parametrize('operator', ['==', '!=', '<', '>=', 'reflected =='])
def test_comparing_with_what_is_not_a_tensor_or_number_is_pythons_answer(other, operator):
    """torch's comparison operators answer NotImplemented for other objects, so Python
    answers: `==` by identity (False), `!=` True, and an ordering a TypeError naming both
    types. GT had compared a list elementwise and raised for a string."""
    def outcome(tensor):
        try:
            if operator == 'reflected ==':
                return other == tensor
            return {'==': tensor == other, '!=': tensor != other}[operator] \
                if operator in ('==', '!=') else \
                (tensor < other if operator == '<' else tensor >= other)
        except TypeError as error:
            return TypeError, str(error)

    assert outcome(gt.ones(2)) == outcome(torch.ones(2))


@pytest.mark.parametrize('other', [1, 1.0, True, np.float32(1.0), np.ones(2), torch.ones(2)],
                         ids=['int', 'float', 'bool', 'numpy scalar', 'ndarray', 'torch'])
def test_comparing_with_numbers_and_tensors_is_elementwise(other):
    x, tx = pair(np.array([1.0, 2.0], dtype=np.float32))
    assert_same(x == other, tx == other)
    if not isinstance(other, np.ndarray):  # torch's `<` refuses an ndarray; GT's compares
        assert_same(x < other, tx < other)
