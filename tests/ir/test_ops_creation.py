"""Creation rows (source ops): shapes, dtypes and values against torch, random draws
against a generator seeded the same way, and manual_seed on both engines."""

import numpy as np
import pytest
import torch
from op_check import assert_numpy_close, numpy_context, run_source, torch_context, wire

from gt.ir import Graph, Node, Value, interpret, verify
from gt.ir.ops.random_state import unpack


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16', 'bfloat16'])
@pytest.mark.parametrize('op', ['randn', 'rand'])
def test_random_draws_use_the_session_generator(op, dtype):
    (got,) = run_source(op, {'shape': (3, 4), 'dtype': dtype}, torch_context(seed=7))
    generator = torch.Generator().manual_seed(7)
    expected = getattr(torch, op)((3, 4), dtype=getattr(torch, dtype), generator=generator)
    assert got.dtype == expected.dtype and torch.equal(got, expected)
    if dtype != 'bfloat16':
        (array,) = run_source(op, {'shape': (3, 4), 'dtype': dtype}, numpy_context(), 'numpy')
        assert array.shape == (3, 4) and array.dtype == np.dtype(dtype)
        if op == 'rand':
            assert ((array >= 0) & (array <= 1)).all()


@pytest.mark.parametrize('dtype', ['float32', 'int64', 'bool', 'float16', 'uint8', 'int32'])
@pytest.mark.parametrize('shape', [(2, 3), (), (0, 4)], ids=str)
def test_filled(shape, dtype):
    torch_dtype = getattr(torch, dtype)
    cases = [('zeros', {}, torch.zeros(shape, dtype=torch_dtype)),
             ('ones', {}, torch.ones(shape, dtype=torch_dtype)),
             ('full', {'value': 3}, torch.full(shape, 3, dtype=torch_dtype)),
             ('full', {'value': 0.5}, torch.full(shape, 0.5, dtype=torch_dtype))]
    for op, extra, expected in cases:
        attrs = {'shape': shape, 'dtype': dtype, **extra}
        (got,) = run_source(op, attrs, torch_context())
        assert got.dtype == expected.dtype and torch.equal(got, expected)
        (array,) = run_source(op, attrs, numpy_context(), 'numpy')
        assert_numpy_close(array, expected)


@pytest.mark.parametrize('n, start, step, dtype', [
    (5, 0, 1, 'int64'), (4, 2, 3, 'int64'), (4, 10, -2, 'int64'), (0, 0, 1, 'int64'),
    (3, 0.0, 0.1, 'float32'), (10, -1.0, 0.3, 'float64'), (7, 0.5, 0.25, 'float32'),
    (30, 0.1, 0.1, 'float32'), (6, 1, 2, 'float32'), (5, 0, 1, 'int32'), (9, 1.0, -0.7, 'float16'),
])
def test_arange(n, start, step, dtype):
    attrs = {'shape': (n,), 'dtype': dtype, 'start': start, 'step': step}
    (got,) = run_source('arange', attrs, torch_context())
    reference = torch.arange(start, start + n * step, step, dtype=getattr(torch, dtype))
    assert len(reference) >= n  # torch may give one more with floats; GT keeps n
    assert got.dtype == reference.dtype and torch.equal(got, reference[:n])
    (array,) = run_source('arange', attrs, numpy_context(), 'numpy')
    assert_numpy_close(array, reference[:n])


@pytest.mark.parametrize('value, dtype', [(2, 'int64'), (2.5, 'float32'), (True, 'bool'),
                                          (-1.5, 'float64'), (3, 'float16'), (7, 'uint8')])
def test_scalar(value, dtype):
    attrs = {'dtype': dtype, 'slot': 1}
    (got,) = run_source('scalar', attrs, torch_context(literals=[0, value]))
    expected = torch.tensor(value, dtype=getattr(torch, dtype))
    assert got.shape == () and got.dtype == expected.dtype and torch.equal(got, expected)
    (array,) = run_source('scalar', attrs, numpy_context(literals=[0, value]), 'numpy')
    assert_numpy_close(array, expected)


def test_from_numpy_returns_the_data_in_its_slot():
    data = [torch.zeros(1), torch.arange(6).reshape(2, 3)]
    attrs = {'shape': (2, 3), 'dtype': 'int64', 'slot': 1}
    (got,) = run_source('from_numpy', attrs, torch_context(data))
    assert got is data[1]
    arrays = [d.numpy() for d in data]
    (array,) = run_source('from_numpy', attrs, numpy_context(arrays), 'numpy')
    assert array is arrays[1]


def _seed_then_draw(seed: int) -> Graph:
    draw = Value((4,), 'float32')
    nodes = (Node('manual_seed', (), (), wire({'seed': seed})),
             Node('randn', (), (draw,), wire({'shape': (4,), 'dtype': 'float32'})))
    return verify(Graph((), nodes, (draw,)))


def test_manual_seed_reseeds_the_session_generator():
    (got,) = interpret(_seed_then_draw(123), [], torch_context(seed=0))
    assert torch.equal(got, torch.randn(4, generator=torch.Generator().manual_seed(123)))
    (array,) = interpret(_seed_then_draw(123), [], numpy_context(seed=0), engine='numpy')
    expected = np.random.default_rng(123).standard_normal(4).astype(np.float32)
    np.testing.assert_array_equal(array, expected)


def _save_draw_restore_draw() -> Graph:
    """'rng_state', a draw, 'set_rng_state' back, the same draw again."""
    client = Value((5,), 'uint8')
    state, done = Value((12288,), 'uint8'), Value((), 'uint8')
    first, second = Value((4,), 'float32'), Value((4,), 'float32')
    draw = wire({'shape': (4,), 'dtype': 'float32'})
    nodes = (Node('rng_state', (client,), (state,), {}),
             Node('randn', (), (first,), draw),
             Node('set_rng_state', (state,), (done,), {}),
             Node('randn', (), (second,), draw))
    return verify(Graph((client,), nodes, (state, first, second)))


def test_rng_state_and_set_rng_state_save_and_restore_the_session_generator():
    client = torch.arange(5, dtype=torch.uint8)
    generator = torch.Generator().manual_seed(9)
    torch.randn(2, generator=generator)
    context = torch_context(seed=9)
    context.generator.set_state(generator.get_state())
    state, first, second = interpret(_save_draw_restore_draw(), [client], context)
    worker, saved_client = unpack(state.numpy())
    assert worker == generator.get_state().numpy().tobytes()  # torch's own state
    assert saved_client == client.numpy().tobytes()
    assert torch.equal(first, torch.randn(4, generator=generator)) and torch.equal(first, second)
    state, first, second = interpret(_save_draw_restore_draw(), [client.numpy()],
                                     numpy_context(seed=4), engine='numpy')
    assert state.shape == (12288,) and (first == second).all()
