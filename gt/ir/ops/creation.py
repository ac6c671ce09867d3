"""Creation ops: tensors made on the worker from a shape, a seed, or data sent along.

They are `source` rows: the engine passes a RunContext with the device, the session's
random generator, and the data frames that came with the message.
"""

import numpy as np
import torch

from gt.ir.dtypes import NUMPY_DTYPES, TORCH_DTYPES
from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef


def _of_shape(types: tuple, shape: list[int], dtype: str, **_: object) -> tuple[TensorType, ...]:
    if any(not isinstance(size, int) or size < 0 for size in shape):
        raise ValueError(f'sizes must be non-negative integers, got {list(shape)}')
    return (TensorType(tuple(shape), dtype),)


def _nothing(types: tuple, **_: object) -> tuple[TensorType, ...]:
    return ()


def _torch_random(draw):
    def run(ctx, shape, dtype):
        return draw(shape, dtype=TORCH_DTYPES[dtype], device=ctx.device, generator=ctx.generator)
    return run


def _numpy_filled(value):
    return lambda ctx, shape, dtype: np.full(shape, value, dtype=NUMPY_DTYPES[dtype])


def _torch_data(ctx, shape, dtype, slot):
    return ctx.data[slot]


def _numpy_data(ctx, shape, dtype, slot):
    return ctx.data[slot]


def _numpy_arange(ctx, shape, dtype, start, step):
    return (start + step * np.arange(shape[0])).astype(NUMPY_DTYPES[dtype])


def _torch_arange(ctx, shape, dtype, start, step):
    end = start + step * shape[0]
    return torch.arange(start, end, step, dtype=TORCH_DTYPES[dtype], device=ctx.device)[: shape[0]]


ROWS = [
    OpDef(
        'randn', _of_shape, _torch_random(torch.randn), source=True,
        numpy=lambda ctx, shape, dtype: ctx.generator.standard_normal(shape).astype(NUMPY_DTYPES[dtype]),
    ),
    OpDef(
        'rand', _of_shape, _torch_random(torch.rand), source=True,
        numpy=lambda ctx, shape, dtype: ctx.generator.random(shape).astype(NUMPY_DTYPES[dtype]),
    ),
    OpDef(
        'zeros', _of_shape, source=True,
        torch=lambda ctx, shape, dtype: torch.zeros(shape, dtype=TORCH_DTYPES[dtype], device=ctx.device),
        numpy=_numpy_filled(0),
    ),
    OpDef(
        'ones', _of_shape, source=True,
        torch=lambda ctx, shape, dtype: torch.ones(shape, dtype=TORCH_DTYPES[dtype], device=ctx.device),
        numpy=_numpy_filled(1),
    ),
    OpDef(
        'full', _of_shape, source=True,
        torch=lambda ctx, shape, dtype, value: torch.full(
            shape, value, dtype=TORCH_DTYPES[dtype], device=ctx.device),
        numpy=lambda ctx, shape, dtype, value: np.full(shape, value, dtype=NUMPY_DTYPES[dtype]),
    ),
    OpDef('arange', _of_shape, _torch_arange, _numpy_arange, source=True),
    # A Python number used as an operand, already cast to the dtype the op computes in.
    OpDef(
        'scalar', lambda types, value, dtype: (TensorType((), dtype),), source=True,
        torch=lambda ctx, value, dtype: torch.tensor(value, dtype=TORCH_DTYPES[dtype], device=ctx.device),
        numpy=lambda ctx, value, dtype: np.array(value, dtype=NUMPY_DTYPES[dtype]),
    ),
    # Data the client sent along with the message (gt.tensor, gt.from_numpy).
    OpDef('from_numpy', _of_shape, _torch_data, _numpy_data, source=True),
    OpDef(
        'manual_seed', _nothing, source=True, effects=True,
        torch=lambda ctx, seed: ctx.generator.manual_seed(seed) and None,
        numpy=lambda ctx, seed: ctx.reseed(seed),
    ),
]
