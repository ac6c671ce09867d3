"""Element types of the IR: names, short print forms and PyTorch's promotion rules.

The IR names dtypes by strings (`'float32'`) so graphs serialize without torch objects;
the promotion table is read from torch once so that GT promotes exactly as torch does.
"""

import contextlib
import math
from typing import Any, Iterator

import numpy as np
import torch

DTYPES = (
    'bool', 'uint8', 'int8', 'int16', 'int32', 'int64',
    'float16', 'bfloat16', 'float32', 'float64',
)
SHORT_NAMES = {
    'bool': 'b8', 'uint8': 'u8', 'int8': 'i8', 'int16': 'i16', 'int32': 'i32',
    'int64': 'i64', 'float16': 'f16', 'bfloat16': 'bf16', 'float32': 'f32', 'float64': 'f64',
}
TORCH_DTYPES = {name: getattr(torch, name) for name in DTYPES}
DTYPE_NAMES = {dtype: name for name, dtype in TORCH_DTYPES.items()}
# numpy has no bfloat16: such tensors travel as their raw 16-bit words.
NUMPY_DTYPES = {name: np.dtype('uint16' if name == 'bfloat16' else name) for name in DTYPES}

FLOATING = frozenset({'float16', 'bfloat16', 'float32', 'float64'})
INTEGRAL = frozenset({'uint8', 'int8', 'int16', 'int32', 'int64'})
DEFAULT_INT = 'int64'

_PROMOTED = {
    (a, b): DTYPE_NAMES[torch.promote_types(TORCH_DTYPES[a], TORCH_DTYPES[b])]
    for a in DTYPES for b in DTYPES
}


def promote(a: str, b: str) -> str:
    """The dtype torch gives an op on two tensors of dtypes `a` and `b`."""
    return _PROMOTED[a, b]


# How strongly an operand takes part in type promotion, as in torch's ResultTypeState.
DIMENSIONED, ZERO_DIM, PYTHON_SCALAR = 2, 1, 0


def _combine(higher: str | None, lower: str | None) -> str | None:
    if higher is None:
        return lower
    if lower is None or higher in FLOATING:
        return higher
    if higher == 'bool' or lower in FLOATING:
        return promote(higher, lower)
    return higher


def result_type(*operands: tuple[str, int]) -> str:
    """Torch's result dtype for operands given as `(dtype, DIMENSIONED | ZERO_DIM | PYTHON_SCALAR)`.

    Lower-ranked operands only matter when they belong to a higher category, so
    `int_tensor * 0.5` is float32 but `half_tensor * 0.5` stays float16.
    """
    best: list[str | None] = [None, None, None]
    for dtype, rank in operands:
        best[rank] = dtype if best[rank] is None else promote(best[rank], dtype)
    result = _combine(best[DIMENSIONED], _combine(best[ZERO_DIM], best[PYTHON_SCALAR]))
    assert result is not None, 'result_type needs at least one operand'
    return result


def representable(value: float, dtype: str) -> bool:
    """Whether torch converts the Python number `value` to `dtype` without an overflow error.

    Mirrors c10::overflows: infinities and NaN fit floating types, and unsigned types
    accept negative integers down to -max because torch lets them wrap.
    """
    if dtype == 'bool':
        return True
    if dtype in FLOATING:
        info = torch.finfo(TORCH_DTYPES[dtype])
        return math.isinf(value) or math.isnan(value) or info.min <= value <= info.max
    info = torch.iinfo(TORCH_DTYPES[dtype])
    if isinstance(value, float):
        return math.isfinite(value) and info.min <= value <= info.max
    lowest = -info.max if info.min == 0 else info.min
    return lowest <= value <= info.max


# Ops whose integer number operand torch wraps into an integer tensor's dtype.
WRAPPED_OPERANDS = frozenset({'add', 'sub', 'mul', 'floor_divide', 'remainder', 'bitwise_and',
                              'bitwise_or', 'bitwise_xor', 'eq', 'ne', 'lt', 'le', 'gt', 'ge'})


def operand_int(op: str, value: int, dtype: str) -> int:
    """The integer operand of arithmetic or a comparison on a `dtype` tensor, as torch
    converts it: wrapped into an integer dtype (`int8_tensor + 200` adds -56), as a C
    cast would, where filling a tensor with it raises. A number past int64 raises as
    torch's conversion does."""
    if op not in WRAPPED_OPERANDS or dtype not in INTEGRAL or representable(value, dtype):
        return value
    if not -(1 << 63) <= value < (1 << 64):
        raise OverflowError('int too big to convert')
    bits = torch.iinfo(TORCH_DTYPES[dtype]).bits
    value &= (1 << bits) - 1
    signed = dtype != 'uint8'
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value


def python_number(value: Any) -> Any:
    """A NumPy scalar (`np.float32(0.99)`, `np.int64(3)`) as the Python number it holds,
    which is how torch takes one where it takes a number; anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value


def scalar_dtype(value: object) -> str:
    """The dtype torch infers for a Python scalar (or a NumPy one, taken as such)."""
    value = python_number(value)
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return DEFAULT_INT
    if isinstance(value, float):
        return default_float()
    raise TypeError(f'expected a Python number, got {type(value).__name__}')


def default_float() -> str:
    """The dtype a Python float, a float range or an integer's true quotient takes: torch's
    process default, which gt.set_default_dtype sets in the client and which the
    dispatcher and the workers set around one session's work (`default_float_as`)."""
    return DTYPE_NAMES[torch.get_default_dtype()]


@contextlib.contextmanager
def default_float_as(name: str) -> Iterator[None]:
    """Work out or run one session's work under its default dtype (a dispatcher and a
    worker serve sessions of different defaults; each stays at float32 between them)."""
    previous = torch.get_default_dtype()
    wanted = TORCH_DTYPES[name]
    if wanted is previous:
        yield
        return
    torch.set_default_dtype(wanted)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


TORCH_NAMES = {**{name: name for name in DTYPES}, 'float': 'float32', 'double': 'float64',
               'half': 'float16', 'long': 'int64', 'int': 'int32', 'short': 'int16'}


def dtype_name(dtype: object) -> str:
    """Accept `torch.float32`, `np.float32`, `'float32'`, `'torch.float32'` or torch's
    `'float'` (float32); return `'float32'`. Python's `float` is float64, as in torch
    (`zeros(2, dtype=float)`), as numpy has it."""
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPE_NAMES:
            raise TypeError(f'GT does not support dtype {dtype}')
        return DTYPE_NAMES[dtype]
    if dtype is float:
        return 'float64'
    if dtype is int:
        return DEFAULT_INT
    if dtype is bool:
        return 'bool'
    if isinstance(dtype, str) and dtype in TORCH_DTYPES:
        return dtype
    if isinstance(dtype, str) and dtype.removeprefix('torch.') in TORCH_NAMES:
        return TORCH_NAMES[dtype.removeprefix('torch.')]  # torch's short names, not numpy's
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f'not a dtype: {dtype!r}') from None
    if name not in TORCH_DTYPES:
        raise TypeError(f'GT does not support dtype {name}')
    return name


LOW_PRECISION = frozenset({'float16', 'bfloat16'})


def number_operand_dtype(value: bool | int | float, dtype: str, dimensioned: bool,
                         divides: bool) -> str:
    """The dtype a number operand of a `dtype` tensor becomes: torch's promotion
    (`divides`: true division, which computes in floating point)."""
    result = result_type((dtype, DIMENSIONED if dimensioned else ZERO_DIM),
                         (scalar_dtype(value), PYTHON_SCALAR))
    if divides and result not in FLOATING:
        return default_float()
    if result in LOW_PRECISION and dimensioned and dtype in LOW_PRECISION:
        return 'float32'  # torch keeps the number in float32 for half and bfloat16
    return result
