"""Functions of tensors, as `gt.cat(...)` like `torch.cat(...)`: multi-tensor ops and the
function forms of Tensor methods."""

import functools
from typing import Any, Callable

import torch

from gt.fallback import call, written_out
from gt.numpy_names import numpy_names
from gt.tensor import Tensor, apply, as_tensor


@numpy_names
def cat(tensors: list[Tensor], dim: int = 0) -> Tensor:
    if isinstance(tensors, Tensor):  # cat(a, b): the list forgotten
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        'Tensor')
    return apply('cat', [as_tensor(t) for t in tensors], dim=dim)


@numpy_names
def stack(tensors: list[Tensor], dim: int = 0) -> Tensor:
    return apply('stack', [as_tensor(t) for t in tensors], dim=dim)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """Elementwise `input if condition else other`; numbers take the dtype torch gives them
    (beside a tensor, that tensor's; two numbers, the default int or float dtype).
    `where(condition)` alone is torch's `nonzero(condition, as_tuple=True)`: the indices
    of the true elements, one tensor per dimension (one round trip for their count)."""
    if input is None and other is None:
        return call('torch.nonzero', (condition,), {'as_tuple': True})
    if input is None or other is None:
        raise TypeError('where() takes a condition alone, or a condition, input and other')
    like = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else None
    return apply('where', [as_tensor(condition), as_tensor(input, like), as_tensor(other, like)])


def matmul(a: Tensor, b: Tensor, *, out: Tensor | None = None) -> Tensor:
    return a @ b if out is None else written_out(a @ b, out, 'matmul')


def tensor_input(function: Callable) -> Callable:
    """torch's TypeError for an input that is not a tensor (`gt.exp(1.0)`), where calling
    its method would raise an AttributeError; `input=` as a keyword, as torch takes it."""
    name = function.__name__

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if 'input' in kwargs:
            args = (kwargs.pop('input'), *args)
        if args and not isinstance(args[0], (Tensor, torch.Tensor)):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f'{type(args[0]).__name__}')
        return function(*args, **kwargs)
    return checked


@tensor_input
def maximum(a: Tensor, b: Tensor) -> Tensor: return a.maximum(b)
@tensor_input
def minimum(a: Tensor, b: Tensor) -> Tensor: return a.minimum(b)
@tensor_input
def relu(x: Tensor) -> Tensor: return x.relu()
@tensor_input
def sigmoid(x: Tensor) -> Tensor: return x.sigmoid()
@tensor_input
def tanh(x: Tensor) -> Tensor: return x.tanh()
@tensor_input
def exp(x: Tensor) -> Tensor: return x.exp()
@tensor_input
def log(x: Tensor) -> Tensor: return x.log()
@tensor_input
def sqrt(x: Tensor) -> Tensor: return x.sqrt()
@tensor_input
def abs(x: Tensor) -> Tensor: return x.abs()
@tensor_input
def clamp(x: Tensor, min=None, max=None) -> Tensor: return x.clamp(min, max)
@tensor_input
@numpy_names
def sum(x: Tensor, dim=None, keepdim=False, **kwargs) -> Tensor:
    return x.sum(dim, keepdim, **kwargs)


@tensor_input
@numpy_names
def mean(x: Tensor, dim=None, keepdim=False, **kwargs) -> Tensor:
    return x.mean(dim, keepdim, **kwargs)
@tensor_input
@numpy_names
def softmax(x: Tensor, dim: int, dtype=None) -> Tensor: return x.softmax(dim, dtype)
@tensor_input
@numpy_names
def argmax(x: Tensor, dim=None, keepdim=False) -> Tensor: return x.argmax(dim, keepdim)
@tensor_input
@numpy_names
def argmin(x: Tensor, dim=None, keepdim=False) -> Tensor: return x.argmin(dim, keepdim)


def _at_least(tensors: tuple, shape_of: Any) -> Any:
    """torch's atleast_*d: each tensor, or a view of it with ones added, alone or as a
    tuple as given."""
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    items = tensors[0] if len(tensors) == 1 and not single else tensors
    if not all(isinstance(t, (Tensor, torch.Tensor)) for t in items):
        raise TypeError('atleast_*d() takes tensors, or a tuple of tensors')
    results = tuple(t.view(*shape_of(tuple(t.shape))) for t in map(as_tensor, items))
    return results[0] if single else results


def atleast_1d(*tensors: Any) -> Any:
    return _at_least(tensors, lambda shape: (1,) * (1 - len(shape)) + shape)


def atleast_2d(*tensors: Any) -> Any:
    return _at_least(tensors, lambda shape: (1,) * (2 - len(shape)) + shape)


def atleast_3d(*tensors: Any) -> Any:
    """A vector `(n,)` becomes `(1, n, 1)` and a matrix `(a, b)` `(a, b, 1)`, as in torch."""
    return _at_least(tensors, lambda shape: {0: (1, 1, 1), 1: (1, *shape, 1),
                                             2: (*shape, 1)}.get(len(shape), shape))
