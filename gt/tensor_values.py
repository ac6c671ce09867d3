"""Reading a tensor's value: `.data`, `.numpy()`, `.item()`, `print`, `bool()` and the
other conversions, each a fetch from the workers (the only places a Tensor waits)."""

from typing import Any

import numpy as np
import torch

from gt import autograd
from gt import tensor as core
from gt.snapshot import snapshot


class ValueMethods:
    __slots__ = ()

    @property
    def data(self) -> torch.Tensor:
        """The computed value, as a CPU torch.Tensor snapshot (so `.data.numpy()` works),
        whose in-place changes reach this tensor too (gt/snapshot.py)."""
        return snapshot(self._value(), self)

    @data.setter
    def data(self, value: Any) -> None:
        """`p.data = value`: `p` takes the value, unrecorded by autograd, as in torch,
        and stops sharing one with its views or base."""
        with autograd.no_grad():
            self._replace(core.as_tensor(value).clone())

    def _value(self) -> torch.Tensor:
        return self._client.fetch([self._id])[0]

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A copy: the values live on the workers (torch's shares memory; `force` is
        accepted, as every GT tensor's values come back detached and on the host)."""
        return self._value().numpy()

    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(f'a tensor with {self.numel()} elements cannot be converted to '
                               'a Python scalar')
        return self._value().item()

    def tolist(self) -> Any:
        return self._value().tolist()

    def __contains__(self, element: Any) -> bool:
        """`token in ids`, for any shape, as torch's: whether any element equals it."""
        if not isinstance(element, (core.Tensor, torch.Tensor, int, float, complex)):
            raise RuntimeError('Tensor.__contains__ only supports Tensor or scalar, but you '
                               f'passed in a {type(element)}.')
        return bool((self == element).any())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f'the truth value of a tensor with {self.numel()} elements is '
                               'ambiguous')
        return bool(self._value().item())

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def _scalar(self) -> Any:
        """`int(x)`, `float(x)`: a ValueError for more than one element, as torch's."""
        if self.numel() != 1:
            raise ValueError('only one element tensors can be converted to Python scalars')
        return self._value().item()

    def __index__(self) -> int:
        if self._type.dtype not in ('int64', 'int32', 'int16', 'int8', 'uint8'):
            raise TypeError('only integer tensors of a single element can be used as an index')
        return int(self.item())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:  # as torch's: a spec is for a number
            raise TypeError('unsupported format string passed to Tensor.__format__')
        return repr(self)

    def __repr__(self) -> str:
        text = repr(self._value())
        if self.grad_fn is not None:
            return _with_suffix(text, f'grad_fn=<{self.grad_fn.name()}>')
        if self.requires_grad:
            return _with_suffix(text, 'requires_grad=True')
        return text

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """The fetched value's: `torch.tensor(x)` and `torch.as_tensor(x)` of a GT tensor
        (logging a loss, mixed code) read it, where they took it for a sequence and failed
        on its 0-d elements."""
        return self._value().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        return torch.empty(0).__dlpack_device__()  # fetched values are on the host's CPU

    def __array_wrap__(self, array: np.ndarray, context: Any = None,
                       return_scalar: bool = False) -> Any:
        """A NumPy function's result on a GT tensor (`np.exp(x)`) is a GT tensor, as
        torch's is one of its own: bools as uint8, as torch's."""
        from gt.creation import from_numpy

        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return from_numpy(np.require(array, requirements='C'))


def _with_suffix(text: str, suffix: str) -> str:
    """torch's repr `text` with one more suffix before its closing parenthesis, on a line
    of its own (under `tensor(`) where the last line would pass torch's print width."""
    body = text[:-1]
    last_line = len(body) - body.rfind('\n') + 1  # as torch counts it
    if last_line + len(suffix) + 2 > torch._tensor_str.PRINT_OPTS.linewidth:
        return f'{body},\n{" " * len("tensor(")}{suffix})'
    return f'{body}, {suffix})'
