"""Shared by the op-table tests: run one op as a one-node graph and hold it against torch.

`check_op` checks, for one call, that the type rule matches torch's output types, that
the interpreter (the torch row) gives torch's values, and that the numpy row agrees.
"""

import os
import zlib

import msgpack
import numpy as np
import torch

from gt.ir import OPS, Graph, Node, TensorType, Value, interpret, verify
from gt.ir.dtypes import NUMPY_DTYPES, dtype_name
from gt.runtime.engines import NumpyEngine, SessionContext, TorchEngine

_generator = torch.Generator()
_seeded_for: list[str | None] = [None]


def _reseed_per_test() -> None:
    """Seed from the running test's id, so its data does not depend on which tests ran."""
    test = os.environ.get('PYTEST_CURRENT_TEST', '').rsplit(' ', 1)[0]
    if test != _seeded_for[0]:
        _seeded_for[0] = test
        _generator.manual_seed(zlib.crc32(test.encode()))


def tensor(shape: tuple[int, ...], dtype: torch.dtype = torch.float32, low: int = -5,
           high: int = 6) -> torch.Tensor:
    """Deterministic test data: normal floats, ints in [low, high), random bools."""
    _reseed_per_test()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=_generator).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=_generator).bool()
    return torch.randint(low, high, shape, generator=_generator).to(dtype)


def wire(attrs: dict) -> dict:
    """Attrs as the worker sees them: after msgpack, tuples are lists."""
    return msgpack.unpackb(msgpack.packb(attrs))


def type_of(x: torch.Tensor) -> TensorType:
    return TensorType(tuple(x.shape), dtype_name(x.dtype))


def one_node(op: str, input_types: list[TensorType], attrs: dict) -> Graph:
    inputs = tuple(Value(t.shape, t.dtype) for t in input_types)
    outputs = tuple(Value(t.shape, t.dtype) for t in OPS[op].infer(tuple(input_types), **attrs))
    return verify(Graph(inputs, (Node(op, inputs, outputs, attrs),), outputs, name=op))


def as_tuple(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def assert_numpy_close(got: np.ndarray, want: torch.Tensor) -> None:
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == tuple(want.shape)
    assert got.dtype == NUMPY_DTYPES[dtype_name(want.dtype)], (got.dtype, want.dtype)
    if want.dtype.is_floating_point:
        # Half floats: torch sometimes accumulates in half too, so allow an ulp of 1.0.
        rtol, atol = (2e-3, 1e-3) if want.dtype == torch.float16 else (1e-5, 1e-6)
        np.testing.assert_allclose(got.astype(np.float64), want.double().numpy(),
                                   rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, want.numpy())


def check_op(op: str, inputs: list[torch.Tensor], attrs: dict, expected,
             numpy: bool = True) -> None:
    attrs = wire(attrs)
    expected = as_tuple(expected)
    graph = one_node(op, [type_of(x) for x in inputs], attrs)
    assert tuple(v.type for v in graph.outputs) == tuple(type_of(e) for e in expected)
    results = interpret(graph, list(inputs))
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    has_bf16 = any(x.dtype == torch.bfloat16 for x in [*inputs, *expected])
    if numpy and not has_bf16:
        arrays = interpret(graph, [x.numpy() for x in inputs], engine='numpy')
        for got, want in zip(arrays, expected):
            assert_numpy_close(got, want)


def torch_context(data: list | None = None, seed: int = 0,
                  literals: list | None = None) -> SessionContext:
    """The context a torch worker gives creation ops, seeded and holding `data`."""
    context = TorchEngine('cpu').new_context(0)
    context.generator.manual_seed(seed)
    context.data, context.literals = data or [], literals or []
    return context


def numpy_context(data: list | None = None, seed: int = 0,
                  literals: list | None = None) -> SessionContext:
    context = NumpyEngine().new_context(0)
    context.reseed(seed)
    context.data, context.literals = data or [], literals or []
    return context


def run_source(op: str, attrs: dict, context, engine: str = 'torch'):
    attrs = wire(attrs)
    outputs = tuple(Value(t.shape, t.dtype) for t in OPS[op].infer((), **attrs))
    graph = verify(Graph((), (Node(op, (), outputs, attrs),), outputs, name=op))
    results = interpret(graph, [], context, engine=engine)
    for value, result in zip(graph.outputs, results):
        assert tuple(result.shape) == value.shape
    return results
