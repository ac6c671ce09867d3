"""Properties (hypothesis): random chains of elementwise ops and reductions interpret to
what torch computes, and type rules refuse exactly what torch refuses for random shapes."""

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from op_check import type_of, wire

from gt.ir import OPS, Graph, Node, TensorType, Value, interpret, verify
from gt.ir.ops.indexing import index_key

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
TORCH_REFUSALS = (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError)

UNARY = ['neg', 'abs', 'relu', 'sigmoid', 'tanh', 'exp', 'logical_not']
BINARY = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'lt', 'eq', 'logical_and']
REDUCTIONS = ['sum', 'mean', 'amax', 'amin']
DTYPES = [torch.float32, torch.int64, torch.bool]

shapes = st.lists(st.integers(1, 4), max_size=3).map(tuple)


def _data(draw, shape, dtype):
    generator = torch.Generator().manual_seed(draw(st.integers(0, 6)))
    x = torch.randn(shape, generator=generator) * 2
    return x > 0 if dtype == torch.bool else x.to(dtype)


def _broadcastable(draw, shape):
    """A shape that broadcasts with `shape`: a suffix of it, with some sizes set to 1."""
    suffix = shape[draw(st.integers(0, len(shape))):]
    return tuple(1 if draw(st.booleans()) else size for size in suffix)


def _step(draw, x):
    """One random op on tensor `x`: (op, extra inputs, attrs, the torch oracle)."""
    kind = draw(st.sampled_from(['unary', 'binary', 'reduce', 'softmax', 'cast', 'shape']))
    ndim = x.dim()
    if kind == 'unary':
        op = draw(st.sampled_from(UNARY))
        return op, [], {}, lambda: getattr(torch, op)(x)
    if kind == 'binary':
        op = draw(st.sampled_from(BINARY))
        other = _data(draw, _broadcastable(draw, tuple(x.shape)), draw(st.sampled_from(DTYPES)))
        operands = [x, other] if draw(st.booleans()) else [other, x]
        return op, operands, {}, lambda: getattr(torch, op)(*operands)
    if kind == 'reduce':
        op = draw(st.sampled_from(REDUCTIONS))
        dims = st.integers(-ndim, ndim - 1) if ndim else st.sampled_from([0, -1])
        dim = draw(st.one_of(st.none(), dims, st.lists(dims, max_size=ndim, unique=True)))
        keepdim = draw(st.booleans())
        everything = () if op in ('amax', 'amin') else None
        return op, [], {'dim': dim, 'keepdim': keepdim}, lambda: getattr(torch, op)(
            x, dim=everything if dim is None else dim, keepdim=keepdim)
    if kind == 'softmax':
        dim = draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))
        return 'softmax', [], {'dim': dim}, lambda: torch.softmax(x, dim)
    if kind == 'cast':
        dtype = draw(st.sampled_from(DTYPES))
        return 'cast', [], {'dtype': str(dtype)[6:]}, lambda: x.to(dtype)
    if ndim >= 2:
        return 'transpose', [], {'dim0': 0, 'dim1': -1}, lambda: x.transpose(0, -1)
    return 'unsqueeze', [], {'dim': 0}, lambda: x.unsqueeze(0)


@SETTINGS
@given(st.data())
def test_random_chains_interpret_like_torch(data):
    draw = data.draw
    x = _data(draw, draw(shapes), draw(st.sampled_from(DTYPES)))
    graph_inputs, arrays, nodes = [Value(*type_of(x))], [x], []
    current = graph_inputs[0]
    for _ in range(draw(st.integers(1, 6))):
        op, operands, attrs, oracle = _step(draw, x)
        operands = operands or [x]
        values = [current if operand is x else Value(*type_of(operand)) for operand in operands]
        try:
            (out_type,) = OPS[op].infer(tuple(v.type for v in values), **wire(attrs))
        except (TypeError, ValueError):
            with pytest.raises(TORCH_REFUSALS):
                oracle()
            continue
        for value, operand in zip(values, operands):
            if operand is not x:
                graph_inputs.append(value)
                arrays.append(operand)
        x = oracle()
        assert type_of(x) == out_type, (op, attrs)
        current = Value(*out_type)
        nodes.append(Node(op, tuple(values), (current,), wire(attrs)))
    event(f'{len(nodes)} node(s)')
    graph = verify(Graph(tuple(graph_inputs), tuple(nodes), (current,)))
    (result,) = interpret(graph, arrays)
    torch.testing.assert_close(result, x, rtol=0, atol=0, equal_nan=True)


@SETTINGS
@given(shapes, shapes, st.sampled_from(['add', 'where', 'matmul']))
def test_shape_rules_refuse_exactly_what_torch_refuses(a, b, op):
    x, y = torch.ones(a), torch.ones(b)
    inputs = [torch.ones(a, dtype=torch.bool), x, y] if op == 'where' else [x, y]
    try:
        expected = OPS[op].torch(*inputs)
    except TORCH_REFUSALS:
        with pytest.raises(ValueError):
            OPS[op].infer(tuple(type_of(t) for t in inputs))
        return
    assert OPS[op].infer(tuple(type_of(t) for t in inputs)) == (type_of(expected),)


_items = st.one_of(
    st.tuples(st.just('int'), st.integers(-5, 5)),
    st.tuples(st.just('slice'), st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
              st.none() | st.integers(1, 3)),
    st.just(('none',)),
    st.just(('ellipsis',)),
)


@SETTINGS
@given(shapes, st.lists(_items, max_size=4))
def test_getitem_rule_matches_torch_indexing(shape, index):
    x = torch.arange(max(1, torch.Size(shape).numel())).reshape(shape)
    index = wire({'index': index})['index']
    types = (TensorType(shape, 'int64'),)
    if [item[0] for item in index].count('ellipsis') > 1:
        return  # refused on purpose; see test_op_errors
    try:
        expected = x[index_key(index)]
    except IndexError:
        with pytest.raises(IndexError):
            OPS['getitem'].infer(types, index=index)
        return
    assert OPS['getitem'].infer(types, index=index) == (type_of(expected),)
    graph_input = Value(shape, 'int64')
    out = Value(*type_of(expected))
    graph = verify(Graph((graph_input,), (Node('getitem', (graph_input,), (out,),
                                                 {'index': index}),), (out,)))
    assert torch.equal(interpret(graph, [x])[0], expected)
