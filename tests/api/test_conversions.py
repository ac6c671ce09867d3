"""Dtype casts, properties and the ways values leave GT (`item`, `tolist`, `numpy`, `.data`,
`repr`, `print`, `bool`, iteration), each held against torch on the same data."""

import numpy as np
import pytest
import torch
from api_check import array, assert_same, pair
from gt_test_support import assert_raises_as_torch

import gt

CASTS = ['float', 'double', 'half', 'long', 'int', 'bool', 'bfloat16']
SOURCES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.uint8,
           torch.float16]


@pytest.mark.parametrize('source', SOURCES, ids=str)
def test_cast_methods(source):
    got, want = pair(array((3, 4), source) * (3 if source.is_floating_point else 1))
    for name in CASTS:
        assert_same(getattr(got, name)(), getattr(want, name)())


@pytest.mark.parametrize('target', [gt.float64, torch.float16, gt.int32, gt.bool, torch.int8,
                                    gt.bfloat16], ids=str)
def test_to_and_type(target):
    got, want = pair(array((2, 5)) * 4)
    assert_same(got.to(target), want.to(target))
    assert_same(got.to(dtype=target), want.to(dtype=target))
    assert_same(got.to('cpu', target), want.to('cpu', target))
    assert_same(got.type(target), want.type(target))


@pytest.mark.parametrize('name', ['torch.DoubleTensor', 'torch.cuda.LongTensor',
                                  'torch.BoolTensor', 'torch.HalfTensor'])
def test_type_by_legacy_name_and_without_arguments(name):
    got, want = pair(array((2, 3)))
    assert got.type() == want.type() == 'torch.FloatTensor'
    target = name.replace('cuda.', '')  # torch would move it to a GPU; GT places it itself
    assert_same(got.type(name), want.type(target))
    with pytest.raises(ValueError, match='invalid type'):
        got.type('torch.NoSuchTensor')


def test_to_without_a_dtype_and_copies():
    got, want = pair(array((2, 3)))
    assert got.to('cpu') is got and got.cpu() is got and got.contiguous() is got
    assert_same(got.clone(), want.clone())
    assert_same(got.detach(), want.detach())
    assert got.clone() is not got


def test_to_another_tensor_takes_its_dtype():
    ints, tints = pair(np.array([1, 2, 3]))
    assert_same(ints.to(gt.tensor([0.5])), tints.to(torch.tensor([0.5])))
    assert_same(ints.to(torch.tensor([0.5])), tints.to(torch.tensor([0.5])))  # a host tensor's


@pytest.mark.parametrize('arguments', [(), (torch.float32,)], ids=['no dtype', 'its own'])
def test_to_with_copy_copies(arguments):
    """A copy, not the tensor itself: an in-place op on it leaves the original alone."""
    got, want = pair(array((3,)))
    copied, want_copied = got.to(*arguments, copy=True), want.to(*arguments, copy=True)
    copied.add_(1)
    want_copied.add_(1)
    assert_same(got, want)
    assert_same(copied, want_copied)


def test_bfloat16_round_trip():
    got, want = pair(array((4,)))
    assert_same(got.bfloat16() * 2, want.bfloat16() * 2)
    assert_same(got.bfloat16().float(), want.bfloat16().float())


def test_properties():
    got, want = pair(array((2, 3, 4)))
    assert got.shape == want.shape and isinstance(got.shape, torch.Size)
    assert got.size() == want.size() and got.size(1) == want.size(1) == 3
    assert got.size(-1) == want.size(-1) == 4
    assert got.dtype == want.dtype and got.ndim == want.ndim == 3 and got.dim() == 3
    assert got.numel() == want.numel() == 24
    assert len(got) == len(want) == 2
    scalar = gt.tensor(1.0)
    assert scalar.shape == torch.Size([]) and scalar.ndim == 0 and scalar.numel() == 1
    with pytest.raises(TypeError):
        len(scalar)  # torch: len() of a 0-d tensor
    assert gt.zeros(0, 3).numel() == 0


def test_properties_are_known_before_computing():
    lazy = (gt.randn(5, 7) @ gt.randn(7, 2)).sum(1, keepdim=True).to(gt.float64)
    assert lazy.shape == (5, 1) and lazy.dtype == torch.float64


@pytest.mark.parametrize('dtype', [torch.float32, torch.int64, torch.bool, torch.float64])
def test_item_tolist_numpy(dtype):
    values = array((2, 3), dtype)
    got, want = pair(values)
    assert got.tolist() == want.tolist()
    assert isinstance(got.numpy(), np.ndarray)
    np.testing.assert_array_equal(got.numpy(), values)
    assert got.numpy().dtype == values.dtype
    np.testing.assert_array_equal(got.data.numpy(), values)
    np.testing.assert_array_equal(np.asarray(got), values)
    element, telement = got[1, 2], want[1, 2]
    assert element.item() == telement.item()
    assert type(element.item()) is type(telement.item())
    assert element.tolist() == telement.tolist()
    one, tone = got[1:, 2:], want[1:, 2:]
    assert one.item() == tone.item()


def test_python_number_conversions():
    assert float(gt.tensor(2.5)) == 2.5 and int(gt.tensor(7)) == 7
    assert int(gt.tensor([3.9])) == int(torch.tensor([3.9])) == 3
    assert [10, 20, 30][gt.tensor(1)] == 20
    with pytest.raises(TypeError):
        [10, 20][gt.tensor(1.0)]


def test_item_of_many_elements_raises():
    with pytest.raises((RuntimeError, ValueError), match='6'):
        gt.randn(2, 3).item()


def test_item_of_many_elements_raises_runtime_error_like_torch():
    with pytest.raises(RuntimeError):
        gt.randn(2, 3).item()


REPR_DATA = [
    np.array([1.5, -2.25, 3.0], dtype=np.float32),
    np.array([[1, 2], [3, 4]], dtype=np.int64),
    np.array([0.1, 0.2], dtype=np.float64),
    np.array([True, False]),
    np.array(3.5, dtype=np.float32),
    np.array(7, dtype=np.int32),
    np.zeros((0, 3), dtype=np.float32),
    np.array([1e-8, 1e8, 1.0], dtype=np.float32),
    np.array([np.nan, np.inf, -np.inf, 0.0], dtype=np.float32),
    np.arange(2000, dtype=np.float32).reshape(40, 50),
    np.array([1.0, 2.0], dtype=np.float16),
    np.array([[1, 2, 3]], dtype=np.uint8),
]


@pytest.mark.parametrize('values', REPR_DATA, ids=lambda v: f'{v.dtype}{list(v.shape)}')
def test_repr_and_print_match_torch(values, capsys):
    got, want = pair(values)
    assert repr(got) == repr(want)
    assert str(got) == str(want)
    print(got)
    assert capsys.readouterr().out == str(want) + '\n'


def test_repr_of_computed_and_grad_tensors():
    (x, tx) = pair(array((2, 3)))
    assert repr(x * 2 - 1) == repr(tx * 2 - 1)
    values = array((3,))
    leaf = gt.from_numpy(values, requires_grad=True)
    tleaf = torch.tensor(values, requires_grad=True)
    assert repr(leaf) == repr(tleaf)
    text, ttext = repr(leaf * 2), repr(tleaf * 2)
    assert text.split(' object at ')[0] == ttext.split(' object at ')[0]  # ...<MulBackward0
    z = gt.matmul(leaf, gt.ones(3, 2)) + 1
    tz = torch.matmul(tleaf, torch.ones(3, 2)) + 1
    assert repr(z.grad_fn).split(' object')[0] == repr(tz.grad_fn).split(' object')[0]
    assert [repr(f).split(' object')[0] for f, _ in z.grad_fn.next_functions[0][0].next_functions
            if f is not None] == ['<AccumulateGrad']


def test_format_spec_on_a_zero_dim_tensor():
    assert f'{gt.tensor(1.23456):.2f}' == f'{torch.tensor(1.23456):.2f}' == '1.23'


def test_bool_of_one_element_and_many():
    assert bool(gt.tensor([3.0])) and not bool(gt.tensor(0))
    assert bool(gt.tensor([[True]])) is True
    x = gt.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match='ambiguous'):
        bool(x)
    with pytest.raises(RuntimeError):
        if x > 0:
            pass
    with pytest.raises(RuntimeError):
        bool(gt.zeros(0))
    assert bool(gt.tensor(2) > 1) and not bool(gt.tensor(2) < 1)


def test_iteration():
    got, want = pair(array((3, 2, 2)))
    rows = list(got)
    assert len(rows) == 3
    for row, trow in zip(rows, want):
        assert_same(row, trow)
    vector, tvector = pair(np.array([4, 5, 6]))
    assert [v.item() for v in vector] == [v.item() for v in tvector]
    assert [tuple(v.shape) for v in vector] == [()] * 3
    first, *rest = got
    assert_same(first, want[0])
    with pytest.raises(TypeError):
        iter(gt.tensor(1.0)).__next__()  # torch: iteration over a 0-d tensor


def numpy_scalar_uses(lib):
    """NumPy scalars where torch takes numbers (RL code's `np.float32(gamma) * reward`):
    on either side of an operator, as fill values, bounds and pads."""
    t = lib.ones(2, requires_grad=True)
    scaled = np.float32(0.99) * t
    scaled.sum().backward()
    made = [np.int64(2) + t, np.float64(2) - t, lib.full((2,), np.float32(1.5)),
            lib.full((2,), np.float64(1.5)), lib.zeros(2).fill_(np.float32(2)),
            t.clamp(max=np.float32(0.5)),
            lib.nn.functional.pad(lib.ones(2), (1, 1), value=np.float32(3)),
            lib.ones(2, dtype=lib.float16) * np.float32(2),
            lib.ones(2, dtype=lib.int64) * np.int64(3)]
    return [type(scaled).__name__, scaled.tolist(), t.grad.tolist(),
            *[(str(m.dtype), m.tolist()) for m in made]]


def test_numpy_scalars_are_numbers_as_in_torch():
    got, want = numpy_scalar_uses(gt), numpy_scalar_uses(torch)
    assert got[0] == 'Tensor' and want[0] == 'Tensor'
    assert got[1:] == want[1:]


@pytest.mark.parametrize('make', [
    lambda lib: lib.linspace(0, 1, 12).reshape(2, 6),  # grad_fn on a line of its own
    lambda lib: lib.tensor([1.5, 2.5]),
    lambda lib: lib.linspace(0, 1, 20).reshape(1, 20),
    lambda lib: lib.linspace(0, 1, 6).double(),  # after torch's dtype suffix
], ids=['wrapped', 'short', 'long rows', 'float64'])
def test_repr_of_grad_tensors_wraps_its_suffix_as_torchs(make):
    leaf, torch_leaf = make(gt).requires_grad_(), make(torch).requires_grad_()
    assert repr(leaf) == repr(torch_leaf)
    assert repr(leaf * 3) == repr(torch_leaf * 3)


NUMPY_FUNCTIONS = {
    'exp': np.exp, 'abs': np.abs, 'isnan': np.isnan, 'argmax': np.argmax,
    'clip': lambda x: np.clip(x, 0, 1), 'add': lambda x: np.add(x, 1),
    'matmul': lambda x: np.matmul(x, x), 'round': np.round,
    'reshape': lambda x: np.reshape(x, (3, 1)), 'sort': np.sort,
    'allclose': lambda x: np.allclose(x, [1, -2, 3]),
}


@pytest.mark.parametrize('name', NUMPY_FUNCTIONS)
def test_numpy_functions_of_a_tensor_give_a_tensor_as_torchs_do(name):
    """A NumPy function's result on a tensor is a tensor (bools as uint8), 0-d where
    NumPy's is a scalar, as torch's `__array_wrap__` makes it."""
    results = []
    for module in (torch, gt):
        result = NUMPY_FUNCTIONS[name](module.tensor([1.0, -2.0, 3.0]))
        kind = 'tensor' if isinstance(result, (torch.Tensor, gt.Tensor)) else type(result)
        results.append((kind, str(getattr(result, 'dtype', None)),
                        result.tolist() if hasattr(result, 'tolist') else result))
    assert results[0] == results[1]


@pytest.mark.parametrize('mistake', [
    lambda m: f'{m.tensor([0.5]):.2f}', lambda m: format(m.ones(2, 2), '>10'),
    lambda m: iter(m.tensor(1)), lambda m: ~m.tensor([1.0]),
], ids=['format spec', 'format width', 'iterating a 0-d tensor', 'inverting floats'])
def test_formatting_and_iteration_refuse_as_torchs(mistake):
    assert_raises_as_torch(TypeError, mistake)
    assert f'{gt.tensor(0.5):.2f}' == f'{torch.tensor(0.5):.2f}'
    assert f'{gt.tensor([0.5])}' == f'{torch.tensor([0.5])}'


@pytest.mark.parametrize('make', [lambda lib: lib.tensor(2.5),
                                  lambda lib: lib.arange(6.).reshape(2, 3).t(),
                                  lambda lib: lib.ones(2, 3, dtype=lib.float64) * 2,
                                  lambda lib: lib.tensor([True, False])],
                         ids=['0-d', 'transposed', 'float64', 'bool'])
@pytest.mark.parametrize('convert', [torch.tensor, torch.as_tensor], ids=['tensor', 'as_tensor'])
def test_torch_makes_a_tensor_of_a_gt_tensors_values(make, convert):
    """`torch.tensor(loss)` in logging or mixed code reads the values (through DLPack):
    torch took a GT tensor for a sequence and failed on its 0-d elements."""
    got, expected = convert(make(gt)), convert(make(torch))
    assert type(got) is torch.Tensor and got.dtype == expected.dtype
    assert torch.equal(got, expected)
