"""Tensor methods for Python's operators (`a - b`, `a @ b`, `a == b`) and their in-place
forms (`+=`, `add_`), which rebind the tensor to the new value: the graph is never
mutated. A mixin of `gt.tensor.Tensor`, which keeps `__add__` itself (its fast path
checks for exactly `Tensor`); every method records ops through `gt.tensor`.
"""

from numbers import Number
from typing import Any

import numpy as np
import torch

from gt import tensor as core
from gt import views
from gt.grad_mode import grad_mode
from gt.ir.dtypes import FLOATING
from gt.tensor_math import power_op


class OperatorMethods:
    __slots__ = ()

    def __radd__(self, other): return core.binary('add', other, self)
    def __sub__(self, other): return core.binary('sub', self, other)
    def __rsub__(self, other): return core.binary('sub', other, self)
    def __mul__(self, other): return core.binary('mul', self, other)
    def __rmul__(self, other): return core.binary('mul', other, self)
    def __truediv__(self, other): return core.binary('div', self, other)
    def __rtruediv__(self, other):
        # torch computes `number / t` as `t.reciprocal() * number` (bits differ from a
        # division): so does GT, for the same bits.
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self.reciprocal() * other
        return core.binary('div', other, self)
    def __floordiv__(self, other): return core.binary('floor_divide', self, other)
    def __rfloordiv__(self, other): return core.binary('floor_divide', other, self)
    def __mod__(self, other): return core.binary('remainder', self, other)
    def __rmod__(self, other): return core.binary('remainder', other, self)
    def __pow__(self, other): return core.binary(power_op(other), self, other)
    def __rpow__(self, other):
        result = core.binary('pow', other, self)
        if result.grad_fn is not None:  # torch's backward of its number-base overload
            result.grad_fn.shown_as = 'PowBackward2'
        return result
    def __matmul__(self, other): return _matmul(self, core.as_tensor(other))
    def __rmatmul__(self, other): return _matmul(core.as_tensor(other), self)
    def __neg__(self): return core.apply('neg', [self])
    def __pos__(self): return self
    def __abs__(self): return core.apply('abs', [self])
    def __invert__(self):
        if self._type.dtype in FLOATING:  # torch's operator says so itself, as a TypeError
            raise TypeError('~ (operator.invert) is only implemented on integer and '
                            'Boolean-type tensors')
        return core.apply('bitwise_not', [self])
    def __and__(self, other): return core.binary('bitwise_and', self, other)
    def __rand__(self, other): return core.binary('bitwise_and', other, self)
    def __or__(self, other): return core.binary('bitwise_or', self, other)
    def __ror__(self, other): return core.binary('bitwise_or', other, self)
    def __xor__(self, other): return core.binary('bitwise_xor', self, other)
    def __rxor__(self, other): return core.binary('bitwise_xor', other, self)
    def eq(self, other): return core.binary('eq', self, other)
    def ne(self, other): return core.binary('ne', self, other)
    def gt(self, other): return core.binary('gt', self, other)
    def lt(self, other): return core.binary('lt', self, other)
    def ge(self, other): return core.binary('ge', self, other)
    def le(self, other): return core.binary('le', self, other)
    # The operators compare elementwise with what torch's compare with; anything else
    # (None, a string, a list) is NotImplemented, as in torch, and Python answers:
    # `x == 'a'` is False, `x != None` True, and `x < 'a'` a TypeError naming both types.
    def __eq__(self, other): return self.eq(other) if _comparable(other) else NotImplemented
    def __ne__(self, other): return self.ne(other) if _comparable(other) else NotImplemented
    def __gt__(self, other): return self.gt(other) if _comparable(other) else NotImplemented
    def __lt__(self, other): return self.lt(other) if _comparable(other) else NotImplemented
    def __ge__(self, other): return self.ge(other) if _comparable(other) else NotImplemented
    def __le__(self, other): return self.le(other) if _comparable(other) else NotImplemented
    __div__, __rdiv__ = __truediv__, __rtruediv__  # torch keeps Python 2's names

    # Shifts are torch's kernels run by name (gt/fallback.py).
    def __lshift__(self, other): return _by_name('bitwise_left_shift', self, other)
    def __rlshift__(self, other): return _by_name('bitwise_left_shift', other, self)
    def __rshift__(self, other): return _by_name('bitwise_right_shift', self, other)
    def __rrshift__(self, other): return _by_name('bitwise_right_shift', other, self)

    # In-place operators rebind this tensor to the new value (the graph is never mutated).
    def __iadd__(self, other): return self._in_place('add', other)
    def __isub__(self, other): return self._in_place('sub', other)
    def __imul__(self, other): return self._in_place('mul', other)
    def __itruediv__(self, other): return self._in_place('div', other)
    def __ifloordiv__(self, other): return self._in_place('floor_divide', other)
    def __imod__(self, other): return self._in_place('remainder', other)
    def __ipow__(self, other): return self._in_place(power_op(other), other)
    def __iand__(self, other): return self._in_place('bitwise_and', other)
    def __ior__(self, other): return self._in_place('bitwise_or', other)
    def __ixor__(self, other): return self._in_place('bitwise_xor', other)
    def __ilshift__(self, other): return self._assign(self << other)
    def __irshift__(self, other): return self._assign(self >> other)
    mul_ = __imul__
    __idiv__ = __itruediv__

    # With alpha or a rounding mode, the update is the out-of-place method's (torch's
    # kernel run by name, gt/fallback.py), rebound as `+=` is.
    def add_(self, other, *, alpha=1):
        if alpha == 1:
            return self._in_place('add', other)
        return self._assign(self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        if alpha == 1:
            return self._in_place('sub', other)
        return self._assign(self.sub(other, alpha=alpha))

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return self._in_place('div', other)
        return self._assign(self.div(other, rounding_mode=rounding_mode))

    def zero_(self) -> 'core.Tensor':
        return self._fill(core.creation('zeros', self._type.shape, self._type.dtype))

    def fill_(self, value: Any) -> 'core.Tensor':
        if isinstance(value, (core.Tensor, torch.Tensor)) and value.ndim != 0:
            raise RuntimeError(f'fill_ only supports 0-dimension value tensor but got tensor '
                               f'with {value.ndim} dimensions.')
        if isinstance(value, core.Tensor):  # its value, lazily; its gradient, as torch's
            return self.copy_(value)
        if isinstance(value, torch.Tensor):
            value = value.item()
        return self._fill(core.creation('full', self._type.shape, self._type.dtype, value=value))

    def _fill(self, constant: 'core.Tensor') -> 'core.Tensor':
        """Every element takes `constant`'s (a number's, which torch writes through an
        expanded view too). A result that requires grad stays one, its history giving the
        old value a zero gradient, as torch's FillBackward does."""
        if self.requires_grad and grad_mode.enabled:
            return self._rebind(core.apply('copy_into', [self, constant]))
        return self._rebind(constant, uniform=True)

    def copy_(self, source: 'core.Tensor') -> 'core.Tensor':
        """The values of `source`, placed where this tensor's were (torch keeps the device)."""
        values = core.as_tensor(source).to(self.dtype).expand(*self._type.shape)
        return self._rebind(core.apply('copy_into', [self, values]))

    def set_(self, source: 'core.Tensor | None' = None) -> 'core.Tensor':
        """Share `source`'s values from now on, whatever shape this tensor had: a write
        through either shows in the other (`set_()`: empty). Swaps a parameter's value
        while an optimizer holds the same object (`nn.utils.parametrize` does); like
        torch's, it has no derivative."""
        if source is None:
            source = core.creation('zeros', (0,), self._type.dtype)
        elif not isinstance(source, core.Tensor):
            raise TypeError(f'set_(): source must be a gt.Tensor, not {type(source).__name__}')
        if source._type.dtype != self._type.dtype:
            raise RuntimeError(f'Could not set tensor of type {source.dtype} to a tensor of '
                               f'type {self.dtype}')
        if grad_mode.enabled and source.requires_grad:
            raise RuntimeError('derivative for set_ is not implemented (call it under '
                               'gt.no_grad())')
        return self._replace(source.detach())

    def _in_place(self, op: str, other: Any) -> 'core.Tensor':
        """`self op= other` as torch does it: the result keeps self's shape and dtype."""
        return self._assign(core.binary(op, self, other))

    def _assign(self, result: 'core.Tensor') -> 'core.Tensor':
        """Rebind to `result`, an op's result on this tensor, as an in-place op would
        write it: it must have this tensor's shape, and takes its dtype."""
        if result._type.shape != self._type.shape:
            raise RuntimeError(f'output with shape {list(self.shape)} does not match the '
                               f'broadcast shape {list(result.shape)}')
        if result._type.dtype != self._type.dtype:
            if not torch.can_cast(result.dtype, self.dtype):
                raise RuntimeError(f'result type {result._type.dtype} cannot be cast to the '
                                   f'desired output type {self._type.dtype}')
            result = result.to(self.dtype)
        return self._rebind(result)


def _by_name(name: str, first: Any, second: Any) -> 'core.Tensor':
    from gt import fallback

    return fallback.call(f'torch.{name}', (first, second), {})


def _matmul(a, b):
    """`a @ b`; a batch times a matrix or vector that requires grad (a Linear's weight) is
    the `folded_matmul` row, as torch.matmul folds it then (gt/ir/ops/linalg.py)."""
    if (a.ndim >= 3 and b.ndim <= 2 and views.requires_grad_as_torch(b)) or (
            b.ndim >= 3 and a.ndim <= 2 and views.requires_grad_as_torch(a)):
        return core.apply('folded_matmul', [a, b])
    return core.apply('matmul', [a, b])


def _comparable(other: Any) -> bool:
    """A tensor (GT's, torch's, numpy's) or a number (numpy's scalars are numbers too)."""
    return isinstance(other, (core.Tensor, int, float, torch.Tensor, np.ndarray, Number))
