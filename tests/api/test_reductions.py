"""Reductions through the real runtime: over all, one or several dims, with `dim/keepdim`
and `axis/keepdims`; max/min with indices or another tensor; softmax and log_softmax."""

import numpy as np
import pytest
import torch
from api_check import array, assert_like_torch, assert_same, pair

import gt

DIMS = [None, 0, 1, -1, (0, 2), [1, 2], (-1, 0, 1)]
SHAPE = (3, 4, 5)


@pytest.mark.parametrize('name', ['sum', 'mean', 'var', 'std'])
@pytest.mark.parametrize('dim', DIMS, ids=str)
def test_reduce_over_dims(name, dim):
    got, want = pair(array(SHAPE))
    if dim is None:
        assert_same(getattr(got, name)(), getattr(want, name)())
        return
    for keepdim in (False, True):
        assert_same(getattr(got, name)(dim, keepdim), getattr(want, name)(dim, keepdim))
        assert_same(getattr(got, name)(dim=dim, keepdim=keepdim),
                    getattr(want, name)(dim=dim, keepdim=keepdim))
        assert_same(getattr(got, name)(axis=dim, keepdims=keepdim),
                    getattr(want, name)(axis=dim, keepdims=keepdim))


@pytest.mark.parametrize('dtype', [torch.int64, torch.int32, torch.bool, torch.float64,
                                   torch.float16, torch.uint8])
def test_sum_dtypes(dtype):
    got, want = pair(array((4, 6), dtype))
    assert_same(got.sum(), want.sum())
    assert_same(got.sum(1), want.sum(1))
    assert_same(gt.sum(got, 0, keepdim=True), torch.sum(want, 0, keepdim=True))


def test_sum_with_dtype_to_a_wider_float():
    got, want = pair(array((4, 6)))
    assert_same(got.sum(dtype=gt.float64), want.sum(dtype=torch.float64))
    ints, tints = pair(array((4, 6), torch.int32))
    assert_same(ints.sum(0, dtype=gt.float32), tints.sum(0, dtype=torch.float32))


def test_sum_with_dtype_casts_before_summing():
    got, want = pair(np.array([0.5, 0.5, 0.75], dtype=np.float32))
    assert_same(got.sum(dtype=gt.int32), want.sum(dtype=torch.int32))


def test_mean_with_dtype_casts_before_averaging():
    got, want = pair(array((4, 6), torch.float16))
    assert_same(got.mean(dtype=gt.float64), want.mean(dtype=torch.float64))
    assert_same(got.mean(1, True, dtype=gt.float32), want.mean(1, True, dtype=torch.float32))
    assert_same(gt.mean(got, 1, dtype=gt.float64), torch.mean(want, 1, dtype=torch.float64))
    assert_same(torch.mean(got, dim=0, dtype=torch.float32),  # through __torch_function__
                torch.mean(want, dim=0, dtype=torch.float32))
    ints, tints = pair(array((4, 6), torch.int32))
    assert_same(ints.mean(axis=0, dtype=gt.float64), tints.mean(0, dtype=torch.float64))
    assert_like_torch(lambda t: t.mean(dtype=torch.int64), [got], [want])


def test_mean_var_std_refuse_integers_like_torch():
    ints = gt.tensor([[1, 2], [3, 4]])
    for name in ['mean', 'var', 'std']:
        with pytest.raises(RuntimeError):
            getattr(ints, name)()


@pytest.mark.parametrize('name', ['var', 'std'])
def test_var_std_corrections(name):
    got, want = pair(array((6, 5), torch.float64))
    method, tmethod = getattr(got, name), getattr(want, name)
    assert_same(method(unbiased=False), tmethod(unbiased=False))
    assert_same(method(1, unbiased=False), tmethod(1, unbiased=False))
    assert_same(method(0, correction=0), tmethod(0, correction=0))
    assert_same(method(dim=0, correction=2, keepdim=True),
                tmethod(dim=0, correction=2, keepdim=True))
    assert_same(method(1, correction=1.5), tmethod(1, correction=1.5))  # kept whole
    assert_same(method(False), tmethod(False))  # torch's positional flag, every element
    assert_same(getattr(gt, name)(got, True), getattr(torch, name)(want, True))


@pytest.mark.parametrize('name', ['max', 'min'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.int64])
def test_max_min_whole_along_and_elementwise(name, dtype):
    got, want = pair(array(SHAPE, dtype, low=-50, high=50))
    assert_same(getattr(got, name)(), getattr(want, name)())
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            result = getattr(got, name)(dim=dim, keepdim=keepdim)
            expected = getattr(want, name)(dim=dim, keepdim=keepdim)
            values, indices = result
            assert_same(values, expected.values)
            assert_same(indices, expected.indices)
            assert_same(result.values, expected.values)
            assert_same(result.indices, expected.indices)
    values, indices = getattr(got, name)(1)
    assert_same(indices, getattr(want, name)(1)[1])
    other, tother = pair(array((4, 5), dtype, low=-50, high=50))
    assert_same(getattr(got, name)(other), getattr(want, name)(tother))
    assert_same(getattr(got, 'a' + name)(dim=(0, 2)), getattr(want, 'a' + name)(dim=(0, 2)))
    assert_same(getattr(got, name)(axis=2, keepdims=True).values,
                getattr(want, name)(axis=2, keepdims=True).values)


@pytest.mark.parametrize('name', ['argmax', 'argmin'])
def test_argmax_argmin(name):
    got, want = pair(array(SHAPE, torch.float32))
    assert_same(getattr(got, name)(), getattr(want, name)())
    assert_same(getattr(gt, name)(got), getattr(torch, name)(want))
    for dim in (0, 1, 2, -1):
        for keepdim in (False, True):
            assert_same(getattr(got, name)(dim, keepdim), getattr(want, name)(dim, keepdim))
            assert_same(getattr(gt, name)(got, dim=dim, keepdim=keepdim),
                        getattr(torch, name)(want, dim=dim, keepdim=keepdim))
    assert_same(getattr(got, name)(keepdim=True), getattr(want, name)(keepdim=True))


def test_ties_pick_the_first_index_like_torch():
    got, want = pair(np.array([[1, 3, 3], [2, 2, 0]], dtype=np.float32))
    assert_same(got.argmax(1), want.argmax(1))
    assert_same(got.max(1).indices, want.max(1).indices)
    assert_same(got.argmin(), want.argmin())


@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('dim', [0, 1, -1])
def test_softmax_log_softmax(name, dim):
    got, want = pair(array((4, 7), torch.float32) * 10)
    assert_same(getattr(got, name)(dim), getattr(want, name)(dim))
    assert_same(getattr(got, name)(dim=dim), getattr(want, name)(dim=dim))
    if name == 'softmax':
        assert_same(gt.softmax(got, dim), torch.softmax(want, dim))


@pytest.mark.parametrize('name', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('dtype', [torch.float64, torch.float32], ids=str)
def test_softmax_log_softmax_with_dtype(name, dtype):
    """torch casts the input to dtype first: a half input computed in float32 (as mixed
    precision code asks) is not a float32 cast of the half result."""
    got, want = pair(array((4, 7), torch.float16) * 10)
    method, tmethod = getattr(got, name), getattr(want, name)
    assert_same(method(-1, dtype), tmethod(-1, dtype))
    assert_same(method(dim=0, dtype=dtype), tmethod(dim=0, dtype=dtype))
    assert_same(getattr(torch, name)(got, 1, dtype=dtype),
                getattr(torch, name)(want, 1, dtype=dtype))
    if name == 'softmax':
        assert_same(gt.softmax(got, -1, dtype=dtype), torch.softmax(want, -1, dtype=dtype))


def test_softmax_of_large_values_is_stable():
    got, want = pair(np.array([[1000.0, 1001.0, -1000.0]], dtype=np.float32))
    assert_same(got.softmax(-1), want.softmax(-1))
    assert_same(got.log_softmax(-1), want.log_softmax(-1))


def test_functional_forms_and_zero_dim():
    got, want = pair(array((3, 4)))
    assert_same(gt.sum(got, dim=1), torch.sum(want, dim=1))
    assert_same(gt.mean(got, 0, keepdim=True), torch.mean(want, 0, keepdim=True))
    assert_same(gt.sum(got, axis=0), torch.sum(want, axis=0))
    scalar, tscalar = pair(np.array(2.5, dtype=np.float32))
    assert_same(scalar.sum(), tscalar.sum())
    assert_same(scalar.mean(0), tscalar.mean(0))
    assert_same(scalar.max(), tscalar.max())


def test_reductions_of_empty_tensors():
    got, want = pair(np.zeros((0, 3), dtype=np.float32))
    assert_same(got.sum(), want.sum())
    assert_same(got.sum(0), want.sum(0))
    assert_same(got.amax(1), want.amax(1))
    with pytest.raises(ValueError):
        got.max(0)  # torch: max(): Expected reduction dim 0 to have non-zero size


@pytest.mark.parametrize('shape', [(4, 6), (6,), (1, 5), ()], ids=str)
@pytest.mark.parametrize('name', ['cov', 'corrcoef'])
def test_cov_and_corrcoef_and_their_gradients_on_the_cluster(name, shape):
    """Composed of GT ops (gt/covariance.py): torch's kernel checks its weights' values,
    which made GT run it in the client, where no gradient could pass."""
    start = torch.randn(shape, dtype=torch.float64)
    mine, theirs = gt.tensor(start, requires_grad=True), start.clone().requires_grad_()
    got, want = getattr(gt, name)(mine), getattr(torch, name)(theirs)
    assert_same(got, want)
    if shape:
        got.sum().backward()
        want.sum().backward()
        assert_same(mine.grad, theirs.grad)


def test_weighted_cov_checks_its_weights_as_torch():
    start = torch.randn(3, 5)
    frequencies, importances = torch.tensor([1, 2, 0, 1, 3]), torch.rand(5)
    for fweights, aweights in [(frequencies, None), (None, importances),
                               (frequencies, importances)]:
        assert_same(gt.cov(gt.tensor(start), correction=2,
                           fweights=None if fweights is None else gt.tensor(fweights),
                           aweights=None if aweights is None else gt.tensor(aweights)),
                    torch.cov(start, correction=2, fweights=fweights, aweights=aweights))
    with pytest.raises(RuntimeError, match='fweights cannot be negative'):
        gt.cov(gt.tensor(start), fweights=gt.tensor([1, -2, 0, 1, 3]))
    with pytest.raises(RuntimeError, match='integral dtype'):
        gt.cov(gt.tensor(start), fweights=gt.tensor(importances))
    with pytest.warns(UserWarning, match='degrees of freedom is <= 0'):
        gt.cov(gt.tensor(start), fweights=gt.tensor([1, 0, 0, 0, 0])).tolist()
