"""Mistakes: a shape error raises at the line that made it (a RuntimeError, as in torch, and
a ValueError), naming both shapes;
a bad dim raises; a failure on a worker raises when the value is needed; and afterwards
every other tensor keeps working."""

import inspect
import os

import pytest
import torch
from api_check import assert_same, pair, pairs

import gt

HERE = os.path.abspath(__file__)


def raise_line(info: pytest.ExceptionInfo) -> int:
    """The 1-based line of this file that the exception passed through last."""
    lines = [entry.lineno + 1 for entry in info.traceback if str(entry.path) == HERE]
    return lines[-1]


def next_line() -> int:
    return inspect.currentframe().f_back.f_lineno + 1


SHAPE_ERRORS = [
    ('add', lambda: gt.randn(2, 3) + gt.randn(4, 5), ['[2, 3]', '[4, 5]']),
    ('mul', lambda: gt.randn(3) * gt.randn(2), ['[3]', '[2]']),
    ('maximum', lambda: gt.randn(3).maximum(gt.randn(4)), ['[3]', '[4]']),
    ('matmul', lambda: gt.randn(2, 3) @ gt.randn(4, 5), ['[2, 3]', '[4, 5]']),
    ('matmul batch', lambda: gt.randn(2, 3, 4) @ gt.randn(3, 4, 5), ['[2, 3, 4]', '[3, 4, 5]']),
    ('reshape', lambda: gt.randn(2, 3).reshape(4, 5), ['[2, 3]', '[4, 5]']),
    ('view', lambda: gt.randn(2, 3).view(-1, 4), ['[2, 3]', '[-1, 4]']),
    ('cat', lambda: gt.cat([gt.randn(2, 3), gt.randn(4, 5)]), ['[2, 3]', '[4, 5]']),
    ('stack', lambda: gt.stack([gt.randn(2, 3), gt.randn(3, 2)]), ['[2, 3]', '[3, 2]']),
    ('expand', lambda: gt.randn(2, 3).expand(4, 3), ['[2, 3]', '[4, 3]']),
    ('where', lambda: gt.where(gt.randn(3) > 0, gt.randn(2), 0.0), ['[3]', '[2]']),
]


@pytest.mark.parametrize('name,make,shapes', SHAPE_ERRORS, ids=[e[0] for e in SHAPE_ERRORS])
def test_shape_error_names_both_shapes(name, make, shapes):
    with pytest.raises(ValueError) as info:
        make()
    for shape in shapes:
        assert shape in str(info.value)


MISFITS = [
    ('add', lambda m: m.ones(2, 3) + m.ones(4, 5)),
    ('matmul', lambda m: m.ones(2, 3) @ m.ones(4, 5)),
    ('reshape', lambda m: m.ones(2, 3).reshape(4, 5)),
    ('cat', lambda m: m.cat([m.ones(2, 3), m.ones(4, 5)])),
    ('expand', lambda m: m.ones(2, 3).expand(4, 3)),
    ('einsum, run by name', lambda m: m.einsum('ij,jk->ik', m.ones(2, 3), m.ones(2, 3))),
    ('conv2d, run by name',
     lambda m: m.nn.functional.conv2d(m.ones(1, 3, 4, 4), m.ones(2, 2, 3, 3))),
    ('topk, run by name', lambda m: m.ones(2, 3).topk(5)),
]


@pytest.mark.parametrize('name,make', MISFITS, ids=[e[0] for e in MISFITS])
def test_a_misfit_is_the_runtime_error_torch_raises(name, make):
    """A ported `except RuntimeError` catches GT's error where it caught torch's; it is
    a ValueError too, as GT's type rules have always said."""
    with pytest.raises(RuntimeError):
        make(torch)
    with pytest.raises(RuntimeError) as info:
        make(gt)
    assert isinstance(info.value, ValueError) and isinstance(info.value, gt.InvalidOpError)


def test_shape_error_raises_at_the_line_of_the_call():
    a, b = gt.randn(2, 3), gt.randn(4, 5)
    line = next_line()
    with pytest.raises(ValueError, match=r'\[2, 3\].*\[4, 5\]') as info:
        c = a + b  # noqa: F841 - the error is the point
    assert raise_line(info) == line + 1
    line = next_line()
    with pytest.raises(ValueError, match=r'\[2, 3\].*\[4, 5\]') as info:
        a @ b
    assert raise_line(info) == line + 1


BAD_DIMS = [
    lambda x: x.sum(3), lambda x: x.sum((0, 0)), lambda x: x.mean(-4), lambda x: x.max(dim=3),
    lambda x: x.argmax(5), lambda x: x.var(dim=[1, 7]), lambda x: x.softmax(3),
    lambda x: x.log_softmax(-4), lambda x: x.transpose(0, 3), lambda x: x.permute(0, 1),
    lambda x: x.permute(0, 0, 1), lambda x: x.unsqueeze(4), lambda x: x.unsqueeze(-5),
    lambda x: x.squeeze(3), lambda x: gt.cat([x, x], dim=3), lambda x: gt.stack([x, x], dim=4),
    lambda x: x.split([1, 1], dim=1), lambda x: x.reshape(-1, -1), lambda x: x.expand(3, 4),
]


@pytest.mark.parametrize('make', BAD_DIMS, ids=range(len(BAD_DIMS)))
def test_bad_dims_raise_like_torch(make):
    got, want = pair(torch.randn(2, 3, 4).numpy())
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)):
        make(want)
    with pytest.raises((ValueError, IndexError, TypeError)):
        make(got)


def test_flatten_checks_its_dims():
    x = gt.randn(2, 3)
    with pytest.raises((IndexError, ValueError)):
        x.flatten(5)
    with pytest.raises((RuntimeError, ValueError)):
        x.flatten(1, 0)


def test_work_goes_on_after_recording_errors():
    (x, tx), (y, ty) = pairs((2, 3), (3,))
    pending = x * y
    for make in [lambda: x + gt.randn(4), lambda: x @ x, lambda: x.reshape(5), lambda: x.sum(9)]:
        with pytest.raises(ValueError):
            make()
    assert_same(pending, tx * ty)
    assert_same((x - y).sum(1), (tx - ty).sum(1))


def test_worker_error_raises_when_the_value_is_needed_and_names_the_op():
    ints, tints = pair(torch.tensor([1, 2, 3]).numpy())
    earlier = ints * 3
    earlier.tolist()
    line = next_line()
    broken = ints // 0
    fine = ints + 1
    with pytest.raises(gt.WorkerError) as info:
        broken.tolist()
    message = str(info.value)
    assert 'floor_divide' in message and f'{os.path.basename(HERE)}:{line}' in message
    assert isinstance(info.value, RuntimeError)
    assert_same(fine, tints + 1)
    assert_same(earlier, tints * 3)
    assert_same(ints * 5, tints * 5)
    with pytest.raises(gt.WorkerError):
        (broken + 1).tolist()  # what depends on the failed value fails too
    assert_same(gt.randn(2, 2).sum() * 0, torch.tensor(0.0))


def test_dtype_errors_raise_at_the_call():
    with pytest.raises(RuntimeError):
        gt.tensor([True]) - gt.tensor([False])
    with pytest.raises(RuntimeError):
        gt.tensor([1, 2]).mean()
    with pytest.raises(TypeError):
        gt.zeros(3, dtype='complex64')
    with pytest.raises(RuntimeError):
        gt.randn(3, dtype=gt.int32)


MISTYPED = {
    'matmul of float32 and float64': lambda m: m.ones(2, 2) @ m.ones(2, 2, dtype=m.float64),
    'where with a float condition': lambda m: m.where(m.ones(2), m.ones(2), m.ones(2)),
    'gather with a float index': lambda m: m.gather(m.ones(2, 2), 0, m.ones(2, 2)),
    'indexing with a float tensor': lambda m: m.ones(2, 2)[m.tensor([0.0])],
    'negating bools': lambda m: -m.tensor([True]),
    'nll_loss with float targets': lambda m: m.nn.functional.nll_loss(m.ones(2, 3),
                                                                      m.zeros(2)),
}


@pytest.mark.parametrize('mistake', list(MISTYPED))
def test_a_dtype_mistake_raises_the_class_torch_raises(mistake):
    with pytest.raises(Exception) as torch_error:
        MISTYPED[mistake](torch)
    expected = IndexError if torch_error.type is IndexError else RuntimeError
    with pytest.raises(expected):
        MISTYPED[mistake](gt)
    assert (gt.ones(2) + 1).tolist() == [2.0, 2.0]  # and the session goes on


def test_creation_refuses_bad_sizes():
    with pytest.raises(TypeError):
        gt.zeros(2.5)
    with pytest.raises(ValueError):
        gt.ones(-1, 3)
    with pytest.raises(TypeError):
        gt.randn('3')


@pytest.mark.parametrize('call', [
    lambda lib: lib.nn.functional.conv2d(lib.zeros(1, 4, 8, 8), lib.zeros(8, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv1d(lib.zeros(2, 6, 9), lib.zeros(4, 3, 3), groups=3),
    lambda lib: lib.nn.functional.max_pool2d(lib.zeros(1, 1, 2, 2), 5),
], ids=['conv2d channels', 'conv1d groups', 'max_pool2d too small'])
def test_a_torch_function_by_name_fails_in_torchs_words(call):
    """A function GT runs by name is typed on meta tensors, whose errors are often terser
    than torch's ('Invalid channel dimensions'); small inputs are tried for real to say
    what torch says."""
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(gt)
    assert str(expected.value) in str(got.value)


def test_a_linear_algebra_failure_is_torchs_linalg_error_where_it_is_fetched():
    """The jitter idiom: `except torch.linalg.LinAlgError` catches a Cholesky of a matrix
    that is not positive-definite when its value is fetched (GT runs it later than the
    call), and gt.linalg.LinAlgError is torch's."""
    assert gt.linalg.LinAlgError is torch.linalg.LinAlgError
    matrix = gt.tensor([[1.0, 3.0], [3.0, 1.0]])  # eigenvalues 4 and -2
    jitter = 0.0
    while True:
        try:
            factor = gt.linalg.cholesky(matrix + jitter * gt.eye(2))
            values = factor.tolist()
            break
        except torch.linalg.LinAlgError as error:
            assert isinstance(error, gt.WorkerError) and 'positive-definite' in str(error)
            jitter = 2 * jitter or 1.0
    assert jitter == 4.0  # 1 and 2 were not enough
    expected = torch.linalg.cholesky(torch.tensor([[5.0, 3.0], [3.0, 5.0]]))
    torch.testing.assert_close(torch.tensor(values), expected)


def test_an_advanced_index_out_of_range_is_an_index_error_as_in_torch():
    """`x[idx]` runs torch's indexing by name on the worker: its IndexError keeps its kind
    where the value is fetched, so `except IndexError` catches it as in torch."""
    with pytest.raises(IndexError, match='index 9 is out of bounds for dimension 0'):
        torch.ones(2)[torch.tensor([0, 9])]
    with pytest.raises(IndexError, match='index 9 is out of bounds for dimension 0'):
        gt.ones(2)[gt.tensor([0, 9])].tolist()


@pytest.mark.parametrize('name, args', [('exp', (1.0,)), ('sum', (3,)), ('relu', ([1.0],)),
                                        ('softmax', (None, 0)), ('clamp', ('x', 0.0))])
def test_a_function_of_what_is_not_a_tensor_raises_torchs_type_error(name, args):
    """`gt.exp(1.0)` raised an AttributeError ("'float' object has no attribute 'exp'")."""
    with pytest.raises(TypeError) as theirs:
        getattr(torch, name)(*args)
    with pytest.raises(TypeError) as mine:
        getattr(gt, name)(*args)
    if name != 'clamp':  # torch lists clamp's overloads instead
        assert str(mine.value) == str(theirs.value)
    assert "argument 'input' (position 1) must be Tensor" in str(mine.value)
