"""torch's legacy tensor types, as older scripts and tutorials write them:
`gt.FloatTensor([1, 2])`, `gt.LongTensor(3)`, `gt.Tensor(2, 3)`, `x.new(5)` and
`gt.autograd.Variable(x, requires_grad=True)`.

Each type makes tensors of its dtype and answers `isinstance` by dtype, as torch's do. A
shape gives zeros where torch leaves the memory uninitialized: GT has no uninitialized
values, and such tensors are filled before they are read anyway.
"""

import collections.abc
from typing import Any

import numpy as np
import torch

from gt.ir.dtypes import TORCH_DTYPES
from gt.tensor import Tensor
from gt.tensor_shapes import LEGACY_TYPES


def construct(dtype: str, args: tuple, placement: dict) -> Tensor:
    """A new tensor of `dtype` from legacy constructor arguments: none (empty), sizes
    (ints or one torch.Size), or one piece of data (a sequence, an array, a tensor of
    that dtype)."""
    from gt.creation import _placement_only, tensor, zeros

    _placement_only(placement)
    torch_dtype = TORCH_DTYPES[dtype]
    if len(args) == 1 and isinstance(args[0], torch.Size):
        args = tuple(args[0])
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        negative = [int(a) for a in args if a < 0]
        if negative:
            raise RuntimeError(f'Trying to create tensor with negative dimension '
                               f'{negative[0]}: {[int(a) for a in args]}')
        return zeros(*args, dtype=torch_dtype) if args else zeros(0, dtype=torch_dtype)
    if len(args) > 1:
        raise TypeError(f'new(): expected sizes (ints) or one sequence of data, got '
                        f'{", ".join(type(a).__name__ for a in args)}')
    data = args[0]
    if isinstance(data, (Tensor, torch.Tensor)):
        if data.dtype != torch_dtype:
            raise TypeError(f'expected {LEGACY_TYPES[dtype]} (got {data.type()}): a legacy '
                            'constructor does not cast; use .to(dtype)')
        return data.detach() if isinstance(data, Tensor) else tensor(data)
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        data = list(data)  # `torch.LongTensor(range(140))`, as pygcn indexes its split
    elif not isinstance(data, np.ndarray):
        raise TypeError(f'new(): data must be a sequence (got {type(data).__name__})')
    return tensor(data, dtype=torch_dtype)


class LegacyType:
    """One of torch's legacy tensor types: calling it makes a tensor of its dtype, and
    `isinstance(x, gt.FloatTensor)` is whether `x` is a GT tensor of that dtype."""

    def __init__(self, name: str, dtype: str):
        self.__name__ = name
        self.dtype = TORCH_DTYPES[dtype]
        self._dtype_name = dtype

    def __call__(self, *args: Any, **placement: Any) -> Tensor:
        return construct(self._dtype_name, args, placement)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, Tensor) and instance._type.dtype == self._dtype_name

    def __repr__(self) -> str:
        return f"<class 'gt.{self.__name__}'>"


FloatTensor = LegacyType('FloatTensor', 'float32')
DoubleTensor = LegacyType('DoubleTensor', 'float64')
HalfTensor = LegacyType('HalfTensor', 'float16')
BFloat16Tensor = LegacyType('BFloat16Tensor', 'bfloat16')
LongTensor = LegacyType('LongTensor', 'int64')
IntTensor = LegacyType('IntTensor', 'int32')
ShortTensor = LegacyType('ShortTensor', 'int16')
CharTensor = LegacyType('CharTensor', 'int8')
ByteTensor = LegacyType('ByteTensor', 'uint8')
BoolTensor = LegacyType('BoolTensor', 'bool')


class VariableType:
    """`Variable(x, requires_grad=...)`: since torch 0.4 a tensor is its own Variable, and
    the call gives a new leaf on `x`'s value (as `x.detach()`) that requires grad as
    asked; every tensor is an instance."""

    __name__ = 'Variable'

    def __call__(self, data: Any, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if not isinstance(data, Tensor):
            raise TypeError(f'Variable data has to be a tensor, but got '
                            f'{type(data).__name__}')
        return data.detach().requires_grad_(requires_grad)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, Tensor)

    def __repr__(self) -> str:
        return "<class 'gt.autograd.Variable'>"


Variable = VariableType()
