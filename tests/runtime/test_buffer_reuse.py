"""Buffer reuse: which ops the dispatcher lets overwrite a dying operand, and that the
worker's in-place runs give torch's numbers exactly."""

import sys
from pathlib import Path

import msgpack
import numpy as np
import pytest
import torch

import gt
from gt.ir import OPS, Replicate
from gt.runtime.buffer_reuse import IN_PLACE, reusable_operands
from gt.runtime.engines import TorchEngine
from gt.runtime.program import Program, encode_program

sys.path.insert(0, str(Path(__file__).parents[1] / 'passes'))
from graph_builder import GraphBuilder  # noqa: E402

HERE = Replicate((0,))


def marks(builder: GraphBuilder, *kept) -> list:
    return reusable_operands(builder.graph(*kept), list(kept))


def test_a_chain_overwrites_each_dying_intermediate_but_not_the_inputs():
    b = GraphBuilder()
    x, a = b.input((4, 4), HERE), b.input((4, 4), HERE)
    c = b.emit('add', x, a)  # x is an input: the worker holds it
    for _ in range(3):
        c = b.emit('add', c, a)
    assert marks(b, c) == [None, 0, 0, 0]


def test_add_and_mul_may_overwrite_their_second_operand_but_sub_may_not():
    b = GraphBuilder()
    x = b.input((3,), HERE)
    y = b.emit('exp', x)
    z = b.emit('exp', x)
    w = b.emit('exp', x)
    out = b.emit('sub', x, b.emit('mul', x, b.emit('add', x, y)))
    out = b.emit('sub', x, z)
    assert marks(b, out, w)[3:] == [1, 1, None, None]


def test_a_value_read_later_kept_or_in_the_outputs_is_not_overwritten():
    b = GraphBuilder()
    x = b.input((3,), HERE)
    y = b.emit('neg', x)
    b.emit('exp', y)  # y is read again below
    z = b.emit('add', y, x)
    kept = b.emit('relu', x)
    last = b.emit('tanh', kept)
    assert marks(b, z, kept, last) == [None, None, 0, None, None]


def test_broadcasting_into_a_larger_result_or_a_promoted_dtype_is_not_in_place():
    b = GraphBuilder()
    row, full = b.input((1, 4), HERE), b.input((3, 4), HERE)
    grown = b.emit('add', b.emit('exp', row), full)  # (1, 4) + (3, 4) -> (3, 4)
    ints = b.emit('abs', b.input((4,), HERE, 'int64'))
    floats = b.emit('div', ints, b.input((4,), HERE))  # int64 / float32 -> float32
    assert marks(b, grown, floats) == [None, None, None, None]


def test_a_value_that_a_view_may_share_is_never_overwritten():
    b = GraphBuilder()
    x = b.input((3, 3), HERE)
    y = b.emit('exp', x)
    view = b.emit('transpose', y, dim0=0, dim1=1)
    z = b.emit('add', y, x)  # y dies here, but `view` still shows its memory
    assert marks(b, z, view) == [None, None, None]


def test_the_matmul_result_is_new_memory_so_the_bias_add_takes_it():
    b = GraphBuilder()
    x, w, bias = b.input((2, 3), HERE), b.input((3, 4), HERE), b.input((4,), HERE)
    h = b.emit('relu', b.emit('add', b.emit('matmul', x, w), bias))
    assert marks(b, h) == [None, 0, 0]


def test_the_generated_code_calls_the_in_place_twin_and_matches_the_interpreter():
    b = GraphBuilder()
    x, a = b.input((4, 4), HERE), b.input((4, 4), HERE)
    c = b.emit('mul', x, a)
    c = b.emit('add', a, c)
    c = b.emit('sigmoid', c)
    graph = b.graph(c)
    engine = TorchEngine('cpu')
    program = Program(encode_program(graph, [(c, 0)]), engine.implementation)
    interpreted = Program(encode_program(graph, [(c, 0)]), engine.implementation)
    context = engine.new_context(0)
    inputs = [torch.randn(4, 4), torch.randn(4, 4)]
    before = [t.clone() for t in inputs]
    with torch.inference_mode():
        expected, _ = interpreted.run(inputs, context, 0)
        for _ in range(3):  # interpreted once, then generated
            got, errors = program.run(inputs, context, 0)
    assert program.generated is not None and errors == []
    called = list(program.generated.__globals__.values())
    assert any(f is torch.Tensor.add_ for f in called)
    assert any(f is torch.Tensor.sigmoid_ for f in called)
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=0)
    for held, original in zip(inputs, before):  # inputs are never written
        torch.testing.assert_close(held, original, rtol=0, atol=0)


def test_marks_travel_in_the_encoded_program():
    b = GraphBuilder()
    x = b.input((2,), HERE)
    y = b.emit('neg', b.emit('exp', x))
    instructions = msgpack.unpackb(encode_program(b.graph(y), [(y, 0)]))[0]
    assert [instruction[5] for instruction in instructions] == [None, 0]


UNARY = ['neg', 'abs', 'sign', 'reciprocal', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10',
         'sqrt', 'rsqrt', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh',
         'sigmoid', 'relu', 'erf', 'erfc', 'floor', 'ceil', 'trunc']
BINARY = ['add', 'sub', 'mul', 'div', 'pow', 'pow_number', 'remainder', 'floor_divide']


def test_every_in_place_twin_is_covered_here():
    assert set(IN_PLACE) == {OPS[name].torch for name in [*UNARY, *BINARY, 'clamp']}


def _hot_and_interpreted(graph, result, inputs: list) -> tuple:
    """The program's result run generated (its third run) and interpreted, and the
    functions its generated code calls."""
    engine = TorchEngine('cpu')
    hot, cold = (Program(encode_program(graph, [(result, 0)]), engine.implementation)
                 for _ in range(2))
    context = engine.new_context(0)
    with torch.inference_mode():
        expected, _ = cold.run(inputs, context, 0)
        for _ in range(3):
            got, errors = hot.run(inputs, context, 0)
    assert errors == []
    return got[0], expected[0], list(hot.generated.__globals__.values())


@pytest.mark.parametrize('name', UNARY + BINARY + ['clamp'])
def test_each_op_run_in_place_gives_the_interpreters_numbers(name):
    b = GraphBuilder()
    x, y = b.input((5, 6), HERE), b.input((5, 6), HERE)
    fresh = b.emit('mul', x, x)
    if name == 'clamp':
        out = b.emit('clamp', fresh, min=-0.5, max=0.5)
    elif name in BINARY:
        out = b.emit(name, fresh, y)
    else:
        out = b.emit(name, fresh)
    graph = b.graph(out)
    generator = torch.Generator().manual_seed(3)
    inputs = [torch.randn(5, 6, generator=generator), torch.randn(5, 6, generator=generator) + 3]
    got, expected, called = _hot_and_interpreted(graph, out, inputs)
    assert any(f is IN_PLACE[OPS[name].torch] for f in called)
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


def test_a_chain_through_the_server_matches_torch_exactly():
    x = np.random.default_rng(4).standard_normal((4, 4)).astype(np.float32)
    expected = start = torch.from_numpy(x)
    for _ in range(50):
        expected = (expected * 0.5 + start).tanh()
    a = gt.from_numpy(x)
    for _ in range(3):  # the same program each time: the last runs generated, in place
        c = a
        for _ in range(50):
            c = (c * 0.5 + a).tanh()
        torch.testing.assert_close(c.data, expected, rtol=0, atol=0)


def test_a_value_fetched_beside_its_successor_keeps_its_own_numbers():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = gt.from_numpy(x)
    for _ in range(3):
        y = a * 2
        z = (y + 1).exp()
        w = y.t() + 0
        assert y.tolist() == (torch.from_numpy(x) * 2).tolist()
        torch.testing.assert_close(z.data, (torch.from_numpy(x) * 2 + 1).exp(), rtol=0, atol=0)
        torch.testing.assert_close(w.data, (torch.from_numpy(x) * 2).t(), rtol=0, atol=0)
