"""Creation ops: tensors made on the worker from a shape, a seed, or data sent along.

They are `source` rows: the engine passes a RunContext with the device, the session's
random generator, and the data frames that came with the message.
"""

import numpy as np
import torch

from gt.ir.dtypes import FLOATING, NUMPY_DTYPES, TORCH_DTYPES, representable
from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import check_dtype, check_shape, require_floating


def _of_shape(name: str):
    def infer(types: tuple, shape: list[int], dtype: str, **_: object) -> tuple[TensorType, ...]:
        return (TensorType(check_shape(name, shape), check_dtype(name, dtype)),)
    return infer


def _random_type(name: str):
    def infer(types: tuple, shape: list[int], dtype: str) -> tuple[TensorType, ...]:
        (out,) = _of_shape(name)(types, shape, dtype)
        require_floating(name, out)
        return (out,)
    return infer


def check_literal(op: str, value: float, dtype: str) -> None:
    """A number must fit the dtype it becomes, as torch insists."""
    if not representable(value, dtype):
        raise InvalidOpError(f'{op}: value {value!r} cannot be converted to {dtype} without '
                             'overflow')


def _full_type(types: tuple, shape: list[int], dtype: str, value: float):
    (out,) = _of_shape('full')(types, shape, dtype)
    check_literal('full', value, dtype)
    return (out,)


def _arange_type(types: tuple, shape: list[int], dtype: str, start: float, step: float):
    (out,) = _of_shape('arange')(types, shape, dtype)
    if len(out.shape) != 1:
        raise ValueError(f'arange: the shape must have one dimension, got {list(out.shape)}')
    if step == 0:
        raise ValueError('arange: step must be nonzero')
    return (out,)


def _scalar_type(types: tuple, dtype: str, slot: int):
    return (TensorType((), check_dtype('scalar', dtype)),)


def no_outputs(types: tuple, **_: object) -> tuple[TensorType, ...]:
    return ()


def _torch_random(draw):
    def run(ctx, shape, dtype):
        return draw(shape, dtype=TORCH_DTYPES[dtype], device=ctx.device, generator=ctx.generator)
    return run


def zeros_on(shape, dtype, device):
    return torch.zeros(shape, dtype=TORCH_DTYPES[dtype], device=device)


def ones_on(shape, dtype, device):
    return torch.ones(shape, dtype=TORCH_DTYPES[dtype], device=device)


def full_on(shape, dtype, value, device):
    return torch.full(shape, value, dtype=TORCH_DTYPES[dtype], device=device)


def arange_on(shape, dtype, start, step, device):
    if shape[0] == 0:
        return torch.empty(0, dtype=TORCH_DTYPES[dtype], device=device)
    # With floats, torch.arange over [start, start + n * step) can round up to n + 1
    # values and then vectorizes differently; ending half a step early gives exactly its
    # n values. Integer bounds are exact (and torch truncates a fractional end).
    exact = dtype not in FLOATING and all(isinstance(v, int) for v in (start, step))
    end = start + step * (shape[0] if exact else shape[0] - 0.5)
    return torch.arange(start, end, step, dtype=TORCH_DTYPES[dtype], device=device)[: shape[0]]


def _on_context_device(made_on):
    """The eager form of a `made_on` function: on the RunContext's device."""
    return lambda ctx, **attrs: made_on(device=ctx.device, **attrs)


def _numpy_filled(value):
    return lambda ctx, shape, dtype: np.full(shape, value, dtype=NUMPY_DTYPES[dtype])


def _numpy_full(ctx, shape, dtype, value):
    return np.full(shape, value, dtype=NUMPY_DTYPES[dtype])


def _numpy_arange(ctx, shape, dtype, start, step):
    return (start + step * np.arange(shape[0])).astype(NUMPY_DTYPES[dtype])


def _scalar(ctx, dtype, slot):
    return ctx.literal(slot, dtype)


def _numpy_randn(ctx, shape, dtype):
    return ctx.generator.standard_normal(shape).astype(NUMPY_DTYPES[dtype])


def _numpy_rand(ctx, shape, dtype):
    return ctx.generator.random(shape).astype(NUMPY_DTYPES[dtype])


def _data(ctx, shape, dtype, slot):
    return ctx.data[slot]


def _torch_manual_seed(ctx, seed):
    ctx.generator.manual_seed(seed)
    return ()  # no outputs


def _numpy_manual_seed(ctx, seed):
    ctx.reseed(seed)
    return ()


ROWS = [
    OpDef('randn', _random_type('randn'), _torch_random(torch.randn), _numpy_randn, source=True,
          random=True),
    OpDef('rand', _random_type('rand'), _torch_random(torch.rand), _numpy_rand, source=True,
          random=True),
    OpDef('zeros', _of_shape('zeros'), _on_context_device(zeros_on), _numpy_filled(0),
          source=True, uniform=True, made_on=zeros_on),
    OpDef('ones', _of_shape('ones'), _on_context_device(ones_on), _numpy_filled(1),
          source=True, uniform=True, made_on=ones_on),
    OpDef('full', _full_type, _on_context_device(full_on), _numpy_full, source=True,
          uniform=True, made_on=full_on),
    OpDef('arange', _arange_type, _on_context_device(arange_on), _numpy_arange, source=True,
          made_on=arange_on),
    # A Python number used as an operand, as a 0-d tensor of the dtype the op computes in.
    # The number itself travels with the message (slot k of its literals), not in the
    # structure: a learning rate or a step count that changes does not change the plan.
    OpDef('scalar', _scalar_type, _scalar, _scalar, source=True),
    # Data the client sent along with the message (gt.tensor, gt.from_numpy).
    OpDef('from_numpy', _of_shape('from_numpy'), _data, _data, source=True),
    OpDef('manual_seed', no_outputs, _torch_manual_seed, _numpy_manual_seed,
          source=True, effects=True),
]
