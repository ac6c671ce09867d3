"""Making tensors through the real runtime: from data (`tensor`, `from_numpy`), from shapes
(`zeros`, `ones`, `full`, `arange`, `randn`, `rand`), like other tensors, and the seed."""

import numpy as np
import pytest
import torch
from api_check import NUMPY_OF, assert_same, pair

import gt

DATA = [
    [1, 2, 3],
    [[1.5, -2.0], [3.25, 4.0]],
    [True, False, True],
    [[1, 2.5], [3, 4]],
    [[True, 2], [3, 4]],
    [[[1], [2]], [[3], [4]]],
    7,
    -2.5,
    True,
    [],
    [[], []],
]


@pytest.mark.parametrize('data', DATA, ids=repr)
def test_tensor_from_python_data_matches_torch_tensor(data):
    assert_same(gt.tensor(data), torch.tensor(data))


@pytest.mark.parametrize('dtype', [gt.float64, gt.int32, gt.float16, gt.bool, gt.uint8])
def test_tensor_with_dtype(dtype):
    data = [[0, 1.75], [2, -3]] if dtype != gt.uint8 else [[0, 1], [2, 3]]
    assert_same(gt.tensor(data, dtype=dtype), torch.tensor(data, dtype=dtype))


def test_tensor_from_numpy_and_torch_sources_keeps_dtype():
    array = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert_same(gt.tensor(array), torch.tensor(array))
    assert_same(gt.tensor(torch.arange(4, dtype=torch.int16)), torch.arange(4, dtype=torch.int16))
    assert_same(gt.tensor(gt.tensor([1, 2])), torch.tensor([1, 2]))


def test_tensor_from_bfloat16_data():
    source = torch.tensor([[1.5, -2.0], [0.1, 3e38]], dtype=torch.bfloat16)
    assert_same(gt.tensor(source), source)
    assert_same(gt.tensor([1.25, 2], dtype=gt.bfloat16) * 2,
                torch.tensor([1.25, 2], dtype=torch.bfloat16) * 2)


@pytest.mark.parametrize('dtype', [np.float64, np.float32, np.float16, np.int64, np.int32,
                                   np.int16, np.int8, np.uint8, np.bool_])
def test_from_numpy_keeps_dtype_and_values(dtype):
    values = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    got, want = pair(values)
    assert_same(got, want)


def test_from_numpy_copies_the_array():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = gt.from_numpy(values)
    doubled = got * 2
    values[:] = -1
    assert got.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert doubled.tolist() == [[0, 2, 4], [6, 8, 10]]


def test_from_numpy_of_views_and_scalars():
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    view = base[::2, 1::3].T  # not contiguous
    assert_same(gt.from_numpy(view), torch.from_numpy(np.ascontiguousarray(view)))
    assert_same(gt.from_numpy(np.array(3.5)), torch.tensor(3.5, dtype=torch.float64))


def test_from_numpy_refuses_other_things():
    with pytest.raises(TypeError):
        gt.from_numpy([1, 2, 3])


@pytest.mark.parametrize('make', ['zeros', 'ones'])
@pytest.mark.parametrize('shape', [(), (3,), (2, 3), (2, 0, 4)])
def test_zeros_ones(make, shape):
    if shape:
        assert_same(getattr(gt, make)(*shape), getattr(torch, make)(*shape))
    assert_same(getattr(gt, make)(shape), getattr(torch, make)(shape))
    assert_same(getattr(gt, make)(list(shape), dtype=gt.int32),
                getattr(torch, make)(list(shape), dtype=torch.int32))


@pytest.mark.parametrize('value', [2.5, 3, True, -1.0])
def test_full_infers_dtype_like_torch(value):
    assert_same(gt.full((2, 3), value), torch.full((2, 3), value))


def test_full_with_dtype():
    assert_same(gt.full((4,), 2.7, dtype=gt.int64), torch.full((4,), 2.7, dtype=torch.int64))
    assert_same(gt.full([2, 2], 7, dtype=gt.float64), torch.full([2, 2], 7, dtype=torch.float64))


ARANGES = [
    (5,), (0,), (2, 9), (-3, 4, 2), (10, 0, -3), (0, 1, 0.1), (1.0, 4), (1, 2.5, 0.5),
    (-1.0, 1.0, 0.25), (0, 10, 3), (5, 5), (0.5, 3), (-2.5, 2.5, 0.7), (0, 3, 0.3),
    (1, -1, -0.1), (3.0,), (0, 100, 7),
]


@pytest.mark.parametrize('args', ARANGES, ids=repr)
def test_arange_matches_torch(args):
    assert_same(gt.arange(*args), torch.arange(*args))


def test_arange_values_do_not_depend_on_rounding_of_the_end():
    assert_same(gt.arange(8.06, 42.36, 2.3), torch.arange(8.06, 42.36, 2.3), rtol=0, atol=0)


def test_arange_with_bounds_against_the_step_raises():
    with pytest.raises(RuntimeError):
        torch.arange(5, 1)
    with pytest.raises((ValueError, RuntimeError)):
        gt.arange(5, 1)


@pytest.mark.parametrize('dtype', [gt.float64, gt.int32, gt.float32])
def test_arange_with_dtype(dtype):
    assert_same(gt.arange(1, 11, 2, dtype=dtype), torch.arange(1, 11, 2, dtype=dtype))


def test_like_functions_keep_shape_and_dtype():
    got, want = pair(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert_same(gt.zeros_like(got), torch.zeros_like(want))
    assert_same(gt.ones_like(got), torch.ones_like(want))
    assert_same(gt.full_like(got, 7), torch.full_like(want, 7))
    assert_same(gt.zeros_like(got, dtype=gt.float64), torch.zeros_like(want, dtype=torch.float64))
    floats = gt.zeros(4, 5, dtype=gt.float64)
    for made in (gt.randn_like(floats), gt.rand_like(floats)):
        assert made.shape == (4, 5) and made.dtype == gt.float64
        assert made.data.dtype == torch.float64


@pytest.mark.parametrize('make', ['randn', 'rand'])
def test_random_shapes_and_dtypes(make):
    for shape in [(), (3,), (2, 3, 4), (0, 2)]:
        x = getattr(gt, make)(*shape) if shape else getattr(gt, make)(shape)
        assert x.shape == torch.Size(shape) and x.dtype == torch.float32
        assert x.data.shape == torch.Size(shape)
    x = getattr(gt, make)(3, 2, dtype=gt.float64)
    assert x.dtype == torch.float64 and x.data.dtype == torch.float64
    with pytest.raises(RuntimeError):
        getattr(gt, make)(3, dtype=gt.int64)  # torch: randn is not implemented for Long


def test_random_statistics():
    normal = gt.randn(200, 100).numpy()
    uniform = gt.rand(200, 100).numpy()
    assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1) < 0.05
    assert uniform.min() >= 0 and uniform.max() < 1
    assert abs(uniform.mean() - 0.5) < 0.02 and abs(uniform.var() - 1 / 12) < 0.01
    assert not np.array_equal(gt.randn(5).numpy(), gt.randn(5).numpy())


def test_manual_seed_repeats_and_equals_torch():
    def draw():
        return [gt.randn(3, 4), gt.rand(5), gt.randn(2, dtype=gt.float64)]

    gt.manual_seed(1234)
    first = [t.data for t in draw()]
    gt.manual_seed(1234)
    second = [t.data for t in draw()]
    with torch.random.fork_rng():
        torch.manual_seed(1234)
        want = [torch.randn(3, 4), torch.rand(5), torch.randn(2, dtype=torch.float64)]
    for a, b, w in zip(first, second, want):
        assert torch.equal(a, b)
        assert torch.equal(a, w)
    gt.manual_seed(1235)
    assert not torch.equal(gt.randn(3, 4).data, first[0])


def test_manual_seed_covers_like_functions():
    base = gt.zeros(3, 3)
    gt.manual_seed(7)
    got = gt.randn_like(base)
    with torch.random.fork_rng():
        torch.manual_seed(7)
        want = torch.randn_like(torch.zeros(3, 3))
    assert_same(got, want)


def test_unused_random_tensor_still_advances_the_generator():
    gt.manual_seed(0)
    gt.randn(3)  # dropped at once, as in torch it still consumes random numbers
    got = gt.randn(3)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        torch.randn(3)
        want = torch.randn(3)
    assert_same(got, want)


def test_dtypes_are_torch_dtypes():
    assert gt.float32 is torch.float32 and gt.float64 is torch.float64
    assert gt.float16 is torch.float16 and gt.bfloat16 is torch.bfloat16
    assert gt.int64 is torch.int64 and gt.int32 is torch.int32 and gt.int16 is torch.int16
    assert gt.int8 is torch.int8 and gt.uint8 is torch.uint8 and gt.bool is torch.bool
    assert gt.half is torch.half and gt.double is torch.double and gt.long is torch.long
    assert gt.float is torch.float and gt.int is torch.int


@pytest.mark.parametrize('dtype', list(NUMPY_OF))
def test_creation_accepts_every_dtype(dtype):
    assert_same(gt.zeros(2, dtype=dtype), torch.zeros(2, dtype=dtype))
    assert_same(gt.ones(2, dtype=dtype), torch.ones(2, dtype=dtype))


def test_as_tensor_keeps_a_gt_tensor_and_converts_the_rest_as_torch():
    x = gt.tensor([1, 2])
    assert gt.as_tensor(x) is x
    assert gt.as_tensor(x, dtype=torch.float32).dtype == torch.float32
    for data in ([1.5, 2], np.arange(3, dtype=np.int16), torch.ones(2, dtype=torch.float64)):
        mine, theirs = gt.as_tensor(data), torch.as_tensor(data)
        assert mine.dtype == theirs.dtype and torch.equal(mine.data, theirs)


def test_print_options_and_version_are_torch_s_spellings():
    gt.set_printoptions(precision=2)
    try:
        assert repr(gt.tensor([1.23456])) == 'tensor([1.23])'
    finally:
        torch.set_printoptions(profile='default')
    assert gt.__version__.count('.') >= 1


@pytest.mark.parametrize('make', ['zeros', 'ones', 'randn', 'rand'])
def test_sizes_may_be_named_size_as_in_torch(make):
    for size in [(2, 3), [4], ()]:
        assert getattr(gt, make)(size=size).shape == getattr(torch, make)(size=size).shape
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        getattr(gt, make)(2, size=(3,))


def test_tensor_of_gt_tensors_takes_their_values_as_torch_tensor_does():
    loss = gt.tensor(1.5, requires_grad=True) * 2
    made = gt.tensor([loss, gt.tensor(3), 4.5])
    expected = torch.tensor([torch.tensor(1.5, requires_grad=True) * 2, torch.tensor(3), 4.5])
    assert made.dtype == expected.dtype and not made.requires_grad
    assert made.tolist() == expected.tolist()
    nested = gt.tensor([[gt.tensor(1), 2], (3, gt.tensor(4))], dtype=gt.float64)
    assert_same(nested, torch.tensor([[1, 2], (3, 4)], dtype=torch.float64))
    with pytest.raises(ValueError, match='only one element tensors'):
        gt.tensor([gt.ones(2), gt.ones(2)])  # torch refuses a list of vectors too


@pytest.mark.parametrize('data', [[1 + 2j], torch.tensor([1 + 2j]), np.array([1j])],
                         ids=['python', 'torch', 'numpy'])
def test_complex_data_is_refused_naming_the_dtype(data):
    with pytest.raises(TypeError, match='dtype torch.complex.*which GT has not'):
        gt.tensor(data)


@pytest.mark.parametrize('args', [(0, 5, 1.5), (-5, 5, 2.5), (0.7, 5.2, 1.2), (5, 0, -1.5),
                                  (1, 10, 2.9)], ids=repr)
@pytest.mark.parametrize('dtype', [gt.int64, gt.int32], ids=str)
def test_an_integer_arange_of_fractional_bounds_has_torchs_length(args, dtype):
    """torch counts an int64 range on truncated bounds, an int32 one in double."""
    assert_same(gt.arange(*args, dtype=dtype), torch.arange(*args, dtype=dtype))
    with pytest.raises(ValueError, match='step must be nonzero'):  # 0.5 truncates to 0
        gt.arange(0, 5, 0.5, dtype=gt.int64)
