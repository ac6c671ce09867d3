"""The lazy Tensor: every operation records a node and returns at once.

Shapes and dtypes are inferred when the op is recorded, so a mistake raises at the
user's line. Values are only computed when something needs them (`.data`, `.numpy()`,
`.item()`, `print`, `bool()`); in-place operators rebind the tensor to a new value.
"""

import warnings
from collections import namedtuple
from typing import Any

import numpy as np
import torch

from gt import autograd
from gt.autograd import grad_mode
from gt.indexing import normalize_index
from gt.ir import OPS, TensorType
from gt.ir.dtypes import (
    DIMENSIONED,
    PYTHON_SCALAR,
    TORCH_DTYPES,
    ZERO_DIM,
    dtype_name,
    result_type,
    scalar_dtype,
)
from gt.ir.ops.creation import check_literal
from gt.runtime import client as connection
from gt.signal import current_scope

MinMax = namedtuple('MinMax', ['values', 'indices'])


class Tensor:
    __slots__ = ('_id', '_type', '_client', 'requires_grad', '_grad', 'grad_fn', '_retained',
                 '__weakref__')

    def __init__(self, value_id: int, type_: TensorType, client: Any):
        self._id = value_id
        self._type = type_
        self._client = client
        self.requires_grad = False
        self._grad = None
        self.grad_fn = None
        self._retained = False

    def __del__(self) -> None:
        if self._id is not None:
            self._client.release(self._id)

    # ---- properties ------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return torch.Size(self._type.shape)

    @property
    def dtype(self) -> torch.dtype:
        return TORCH_DTYPES[self._type.dtype]

    @property
    def ndim(self) -> int:
        return len(self._type.shape)

    @property
    def device(self) -> str:
        return 'gt'

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self) -> 'Tensor | None':
        if self._grad is None and self.grad_fn is not None and not self._retained:
            warnings.warn(
                'the .grad of a non-leaf tensor is not filled in by backward(); call '
                '.retain_grad() on it first if you want it (as in PyTorch)', stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: 'Tensor | None') -> None:
        if value is not None and tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f'assigned grad has shape {list(value.shape)} but the tensor '
                               f'has shape {list(self.shape)}')
        self._grad = value

    def dim(self) -> int:
        return len(self._type.shape)

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self._type.shape[dim]

    def numel(self) -> int:
        count = 1
        for size in self._type.shape:
            count *= size
        return count

    def __len__(self) -> int:
        if not self._type.shape:
            raise TypeError('len() of a 0-d tensor')
        return self._type.shape[0]

    # ---- materialization -------------------------------------------------------------
    @property
    def data(self) -> torch.Tensor:
        """The computed value, as a CPU torch.Tensor snapshot (so `.data.numpy()` works)."""
        return self._client.fetch([self._id])[0]

    def numpy(self) -> np.ndarray:
        return self.data.numpy()

    def item(self) -> Any:
        if self.numel() != 1:
            raise ValueError(f'a tensor with {self.numel()} elements cannot be converted to '
                             'a Python scalar')
        return self.data.item()

    def tolist(self) -> Any:
        return self.data.tolist()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f'the truth value of a tensor with {self.numel()} elements is '
                               'ambiguous')
        return bool(self.data.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._type.dtype not in ('int64', 'int32', 'int16', 'int8', 'uint8'):
            raise TypeError('only integer tensors of a single element can be used as an index')
        return int(self.item())

    def __repr__(self) -> str:
        text = repr(self.data)
        if self.grad_fn is not None:
            return f'{text[:-1]}, grad_fn=<{self.grad_fn.name}>)'
        if self.requires_grad:
            return f'{text[:-1]}, requires_grad=True)'
        return text

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    def __hash__(self) -> int:
        return id(self)

    # ---- arithmetic ------------------------------------------------------------------
    def __add__(self, other):
        if type(other) is Tensor:  # the commonest case, on the shortest path
            return apply_binary('add', self, other)
        return binary('add', self, other)

    def __radd__(self, other): return binary('add', other, self)
    def __sub__(self, other): return binary('sub', self, other)
    def __rsub__(self, other): return binary('sub', other, self)
    def __mul__(self, other): return binary('mul', self, other)
    def __rmul__(self, other): return binary('mul', other, self)
    def __truediv__(self, other): return binary('div', self, other)
    def __rtruediv__(self, other): return binary('div', other, self)
    def __floordiv__(self, other): return binary('floor_divide', self, other)
    def __rfloordiv__(self, other): return binary('floor_divide', other, self)
    def __mod__(self, other): return binary('remainder', self, other)
    def __rmod__(self, other): return binary('remainder', other, self)
    def __pow__(self, other): return binary('pow', self, other)
    def __rpow__(self, other): return binary('pow', other, self)
    def __matmul__(self, other): return apply('matmul', [self, as_tensor(other)])
    def __rmatmul__(self, other): return apply('matmul', [as_tensor(other), self])
    def __neg__(self): return apply('neg', [self])
    def __pos__(self): return self
    def __abs__(self): return apply('abs', [self])
    def __invert__(self): return apply('logical_not', [self])
    def __and__(self, other): return binary('logical_and', self, other)
    def __or__(self, other): return binary('logical_or', self, other)
    def __eq__(self, other): return binary('eq', self, other)
    def __ne__(self, other): return binary('ne', self, other)
    def __gt__(self, other): return binary('gt', self, other)
    def __lt__(self, other): return binary('lt', self, other)
    def __ge__(self, other): return binary('ge', self, other)
    def __le__(self, other): return binary('le', self, other)

    # In-place operators rebind this tensor to the new value (the graph is never mutated).
    def __iadd__(self, other): return self._rebind(self + other)
    def __isub__(self, other): return self._rebind(self - other)
    def __imul__(self, other): return self._rebind(self * other)
    def __itruediv__(self, other): return self._rebind(self / other)

    def add_(self, other): return self._rebind(self + other)
    def sub_(self, other): return self._rebind(self - other)
    def mul_(self, other): return self._rebind(self * other)
    def div_(self, other): return self._rebind(self / other)

    def zero_(self) -> 'Tensor':
        return self._rebind(creation('zeros', self._type.shape, self._type.dtype))

    def fill_(self, value: float) -> 'Tensor':
        return self._rebind(creation('full', self._type.shape, self._type.dtype, value=value))

    def copy_(self, source: 'Tensor') -> 'Tensor':
        return self._rebind(as_tensor(source).to(self.dtype).expand(*self._type.shape))

    def _rebind(self, new: 'Tensor') -> 'Tensor':
        if self.requires_grad and self.is_leaf and grad_mode.enabled:
            raise RuntimeError('a leaf tensor that requires grad cannot be updated in place; '
                               'wrap the update in gt.no_grad()')
        # `h += x` records an add whose input is h: then the tape keeps h's old value.
        if new.grad_fn is None or not new.grad_fn.rebind_output(new, self):
            self._client.release(self._id)
        if new.grad_fn is not None:
            self.requires_grad = True
        elif self.grad_fn is not None:
            self.requires_grad = False  # a non-leaf overwritten with a constant (zero_, fill_)
        self._id, self._type, self.grad_fn = new._id, new._type, new.grad_fn
        new._id = None
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        index = normalize_index(key, self._type.shape)
        value = as_tensor(value, like=self)
        self._rebind(apply('setitem', [self, value], index=index))

    def __getitem__(self, key: Any) -> 'Tensor':
        return apply('getitem', [self], index=normalize_index(key, self._type.shape))

    # ---- elementwise -----------------------------------------------------------------
    def relu(self): return apply('relu', [self])
    def sigmoid(self): return apply('sigmoid', [self])
    def tanh(self): return apply('tanh', [self])
    def exp(self): return apply('exp', [self])
    def log(self): return apply('log', [self])
    def sqrt(self): return apply('sqrt', [self])
    def abs(self): return apply('abs', [self])
    def neg(self): return apply('neg', [self])
    def gelu(self, approximate: str = 'none'): return apply('gelu', [self], approximate=approximate)
    def pow(self, exponent): return binary('pow', self, exponent)
    def maximum(self, other): return apply('maximum', [self, as_tensor(other)])
    def minimum(self, other): return apply('minimum', [self, as_tensor(other)])
    def matmul(self, other): return self @ other

    def clamp(self, min: float | None = None, max: float | None = None) -> 'Tensor':
        return apply('clamp', [self], min=min, max=max)

    clip = clamp

    # ---- reductions ------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None):
        result = apply('sum', [self], **_dims(dim, keepdim, axis, keepdims))
        return result if dtype is None else result.to(dtype)

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return apply('mean', [self], **_dims(dim, keepdim, axis, keepdims))

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return self._extreme('amax', 'max_dim', 'maximum', dim, keepdim, axis, keepdims)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return self._extreme('amin', 'min_dim', 'minimum', dim, keepdim, axis, keepdims)

    def _extreme(self, whole, along, elementwise, dim, keepdim, axis, keepdims):
        if isinstance(dim, Tensor):
            return apply(elementwise, [self, dim])
        dims = _dims(dim, keepdim, axis, keepdims)
        if isinstance(dims['dim'], int):
            return MinMax(*apply(along, [self], **dims))
        return apply(whole, [self], **dims)

    def amax(self, dim=None, keepdim=False):
        return apply('amax', [self], dim=_dim_attr(dim), keepdim=keepdim)

    def amin(self, dim=None, keepdim=False):
        return apply('amin', [self], dim=_dim_attr(dim), keepdim=keepdim)

    def argmax(self, dim=None, keepdim=False):
        return apply('argmax', [self], dim=dim, keepdim=keepdim)

    def argmin(self, dim=None, keepdim=False):
        return apply('argmin', [self], dim=dim, keepdim=keepdim)

    def var(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None,
            keepdims=None):
        return apply('var', [self], correction=_correction(unbiased, correction),
                     **_dims(dim, keepdim, axis, keepdims))

    def std(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None,
            keepdims=None):
        return apply('std', [self], correction=_correction(unbiased, correction),
                     **_dims(dim, keepdim, axis, keepdims))

    def softmax(self, dim: int): return apply('softmax', [self], dim=dim)
    def log_softmax(self, dim: int): return apply('log_softmax', [self], dim=dim)

    # ---- shapes ----------------------------------------------------------------------
    def reshape(self, *shape): return apply('reshape', [self], shape=_sizes(shape))
    view = reshape

    def transpose(self, dim0: int, dim1: int):
        return apply('transpose', [self], dim0=dim0, dim1=dim1)

    @property
    def T(self) -> 'Tensor':
        return self.permute(*reversed(range(self.ndim)))

    def permute(self, *dims): return apply('permute', [self], dims=_sizes(dims))
    def unsqueeze(self, dim: int): return apply('unsqueeze', [self], dim=dim)

    def squeeze(self, dim=None):
        return apply('squeeze', [self], dim=list(dim) if isinstance(dim, tuple) else dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> 'Tensor':
        shape = self._type.shape
        if not shape:
            return self.reshape(1)
        start, end = start_dim % len(shape), end_dim % len(shape)
        middle = 1
        for size in shape[start:end + 1]:
            middle *= size
        return self.reshape(*shape[:start], middle, *shape[end + 1:])

    def expand(self, *sizes): return apply('expand', [self], shape=_sizes(sizes))
    def expand_as(self, other): return self.expand(*other.shape)
    def view_as(self, other): return self.reshape(*other.shape)
    def reshape_as(self, other): return self.reshape(*other.shape)

    def split(self, split_size, dim: int = 0):
        size = self._type.shape[dim]
        if isinstance(split_size, int):
            sizes = [min(split_size, size - start) for start in range(0, size, split_size)]
        else:
            sizes = list(split_size)
        return tuple(_as_tuple(apply('split', [self], sizes=sizes, dim=dim)))

    def chunk(self, chunks: int, dim: int = 0):
        size = self._type.shape[dim]
        return self.split(max(1, -(-size // chunks)), dim)

    def contiguous(self): return self
    def cpu(self): return self

    # ---- dtypes ----------------------------------------------------------------------
    def to(self, *args, **kwargs) -> 'Tensor':
        dtype = kwargs.get('dtype')
        for arg in args:
            if isinstance(arg, (torch.dtype, type)) or arg in TORCH_DTYPES:
                dtype = arg
        if dtype is None:
            return self  # devices are GT's business: the dispatcher places values
        return apply('cast', [self], dtype=dtype_name(dtype))

    def type(self, dtype): return self.to(dtype)
    def float(self): return self.to(torch.float32)
    def double(self): return self.to(torch.float64)
    def half(self): return self.to(torch.float16)
    def bfloat16(self): return self.to(torch.bfloat16)
    def int(self): return self.to(torch.int32)
    def long(self): return self.to(torch.int64)
    def bool(self): return self.to(torch.bool)

    def clone(self) -> 'Tensor':
        return apply('cast', [self], dtype=self._type.dtype)

    # ---- autograd --------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph: bool = False) -> None:
        autograd.backward(self, gradient, retain_graph)

    def detach(self) -> 'Tensor':
        with autograd.no_grad():
            return self.clone()

    def requires_grad_(self, requires_grad: bool = True) -> 'Tensor':
        autograd.set_requires_grad(self, requires_grad)
        return self

    def retain_grad(self) -> None:
        self._retained = True


# ---- recording ops -------------------------------------------------------------------------
# Type rules of attribute-free ops, memoized: loops apply the same op to the same types.
_inferred: dict[tuple, tuple] = {}


def apply(op: str, inputs: list[Tensor], **attrs: Any) -> Any:
    """Record `op` on `inputs`; return the result tensor (or a list of them)."""
    input_types = tuple([t._type for t in inputs])
    if attrs:
        types = OPS[op].infer(input_types, **attrs)
    else:
        key = (op, input_types)
        types = _inferred.get(key)
        if types is None:
            types = _inferred[key] = OPS[op].infer(input_types)
    client = inputs[0]._client if inputs else connection.current()
    first = client.record(op, [t._id for t in inputs], attrs, len(types), current_scope())
    outputs = [Tensor(first + k, t, client) for k, t in enumerate(types)]
    if grad_mode.enabled:
        for tensor in inputs:
            if tensor.requires_grad:
                autograd.record(op, inputs, outputs, attrs)
                break
    return outputs[0] if len(outputs) == 1 else outputs


def apply_binary(op: str, left: Tensor, right: Tensor) -> Tensor:
    """`apply` for the commonest case, two tensors and no attributes, kept lean because
    elementwise loops run through it."""
    key = (op, left._type, right._type)
    types = _inferred.get(key)
    if types is None:
        types = _inferred[key] = OPS[op].infer((left._type, right._type))
    client = left._client
    out = Tensor(client.record(op, [left._id, right._id], {}, 1, current_scope()), types[0],
                 client)
    if (left.requires_grad or right.requires_grad) and grad_mode.enabled:
        autograd.record(op, [left, right], [out], {})
    return out


def emit(op: str, *operands: Any, **attrs: Any) -> Any:
    """Record `op` on tensors or numbers; what gradient rules and gt.nn build with."""
    like = next((x for x in operands if isinstance(x, Tensor)), None)
    return apply(op, [as_tensor(x, like) for x in operands], **attrs)


def creation(op: str, shape: tuple[int, ...], dtype: str, requires_grad: bool = False,
             **attrs: Any) -> Tensor:
    result = apply(op, [], shape=list(shape), dtype=dtype, **attrs)
    if requires_grad:
        result.requires_grad_()
    return result


def binary(op: str, left: Any, right: Any) -> Tensor:
    if type(left) is not Tensor or type(right) is not Tensor:
        tensor = left if isinstance(left, Tensor) else right
        left, right = as_tensor(left, like=tensor), as_tensor(right, like=tensor)
    return apply_binary(op, left, right)


def as_tensor(value: Any, like: Tensor | None = None) -> Tensor:
    """A Tensor for `value`; a Python number becomes a 0-d constant in the dtype the op
    with `like` computes in, which is how torch treats a number operand."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float)) and like is not None:
        rank = DIMENSIONED if like._type.shape else ZERO_DIM
        dtype = result_type((like._type.dtype, rank), (scalar_dtype(value), PYTHON_SCALAR))
        check_literal('scalar', value, dtype)
        return apply('scalar', [], dtype=dtype, slot=like._client.add_literal(value))
    from gt.creation import tensor

    return tensor(value)


def _as_tuple(result: Any) -> list:
    return result if isinstance(result, list) else [result]


def _sizes(args: tuple) -> list[int]:
    if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
        args = tuple(args[0])
    return [int(size) for size in args]


def _dim_attr(dim: Any) -> Any:
    return list(dim) if isinstance(dim, tuple) else dim


def _dims(dim: Any, keepdim: bool, axis: Any, keepdims: Any) -> dict:
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return {'dim': _dim_attr(dim), 'keepdim': bool(keepdim)}


def _correction(unbiased: bool, correction: Any) -> int:
    if correction is not None:
        return int(correction)
    return 1 if unbiased else 0
