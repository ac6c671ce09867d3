"""Tensor methods that compute: activations and other elementwise math, and reductions.

A mixin of `gt.tensor.Tensor`, kept apart to keep files short; every method records one
op of the table through `gt.tensor.apply`.
"""

from typing import Any

import numpy as np
import torch

from gt import tensor as core
from gt.ir.dtypes import representable
from gt.numpy_names import numpy_names
from gt.tensor_class import TensorClass

# The C++ names torch's messages give dtypes: of a mask's type, and of a value's target.
C_TYPES = {torch.uint8: 'unsigned char', torch.int8: 'signed char', torch.int16: 'short int',
           torch.int32: 'int', torch.int64: 'long int', torch.float32: 'float',
           torch.float64: 'double', torch.float16: 'c10::Half', torch.bfloat16: 'c10::BFloat16'}
FIXED_WIDTH_TYPES = {**C_TYPES, torch.uint8: 'uint8_t', torch.int8: 'int8_t',
                     torch.int16: 'int16_t', torch.int64: 'int64_t'}


def power_op(exponent: Any) -> str:
    """The op of `tensor ** exponent`: `pow_number` for a number, which torch computes in
    its number forms (x * x for `x ** 2`, sqrt for `x ** 0.5`), `pow` for a tensor."""
    return 'pow_number' if isinstance(exponent, (int, float, np.number)) else 'pow'


class MathMethods(metaclass=TensorClass):  # gt.Tensor's type: `gt.Tensor.add` is found
    __slots__ = ()

    # ---- elementwise -----------------------------------------------------------------
    def relu(self): return core.apply('relu', [self])
    def sigmoid(self): return core.apply('sigmoid', [self])
    def tanh(self): return core.apply('tanh', [self])
    def exp(self): return core.apply('exp', [self])
    def log(self): return core.apply('log', [self])
    def sqrt(self): return core.apply('sqrt', [self])
    def abs(self): return core.apply('abs', [self])
    def neg(self): return core.apply('neg', [self])
    def pow(self, exponent): return core.binary(power_op(exponent), self, exponent)
    def maximum(self, other): return core.apply('maximum', [self, core.as_tensor(other, self)])
    def minimum(self, other): return core.apply('minimum', [self, core.as_tensor(other, self)])
    def matmul(self, other): return self @ other

    def mm(self, mat2):
        """`matmul` of two matrices only, as torch's mm."""
        if not isinstance(mat2, core.Tensor):
            return _by_name(self, 'mm')(mat2)
        for name, matrix in (('self', self), ('mat2', mat2)):
            if matrix.ndim != 2:
                raise RuntimeError(f'{name} must be a matrix')
        return self @ mat2

    def gather(self, dim: int, index, *, sparse_grad: bool = False):
        """torch's gather, as GT's row (which reads along `dim` where the index says)."""
        if sparse_grad or not isinstance(index, core.Tensor):
            return _by_name(self, 'gather')(dim, index, sparse_grad=sparse_grad)
        return core.apply('gather', [self, index], dim=dim)

    def scatter_add(self, dim: int, index, src):
        if not (isinstance(index, core.Tensor) and isinstance(src, core.Tensor)):
            return _by_name(self, 'scatter_add')(dim, index, src)
        return core.apply('scatter_add', [self, index, src], dim=dim)

    def square(self):
        """`self * self`: the same bits as torch's square, and its gradient's (2x is
        exact). A bool tensor squares to int64 in torch: its fallback does that."""
        if self._type.dtype == 'bool':
            return _by_name(self, 'square')()
        return core.apply_binary('mul', self, self)

    # ---- unary math: rows of their own (gt/ir/ops/unary_math.py) -----------------------------
    def sin(self): return core.apply('sin', [self])
    def cos(self): return core.apply('cos', [self])
    def tan(self): return core.apply('tan', [self])
    def asin(self): return core.apply('asin', [self])
    def acos(self): return core.apply('acos', [self])
    def atan(self): return core.apply('atan', [self])
    def sinh(self): return core.apply('sinh', [self])
    def cosh(self): return core.apply('cosh', [self])
    def asinh(self): return core.apply('asinh', [self])
    def acosh(self): return core.apply('acosh', [self])
    def atanh(self): return core.apply('atanh', [self])
    def log1p(self): return core.apply('log1p', [self])
    def expm1(self): return core.apply('expm1', [self])
    def log2(self): return core.apply('log2', [self])
    def log10(self): return core.apply('log10', [self])
    def erf(self): return core.apply('erf', [self])
    def erfc(self): return core.apply('erfc', [self])
    def rsqrt(self): return core.apply('rsqrt', [self])
    def reciprocal(self): return core.apply('reciprocal', [self])
    def floor(self): return core.apply('floor', [self])
    def ceil(self): return core.apply('ceil', [self])
    def trunc(self): return core.apply('trunc', [self])
    def sign(self): return core.apply('sign', [self])
    def round(self, decimals: int = 0): return core.apply('round', [self], decimals=decimals)
    arcsin, arccos, arctan, fix = asin, acos, atan, trunc

    def gelu(self, approximate: str = 'none'):
        return core.apply('gelu', [self], approximate=approximate)

    def clamp(self, min: Any = None, max: Any = None):
        if isinstance(min, (core.Tensor, torch.Tensor)) or isinstance(
                max, (core.Tensor, torch.Tensor)):
            result = self if min is None else self.maximum(core.as_tensor(min, self))
            return result if max is None else result.minimum(core.as_tensor(max, self))
        return core.apply('clamp', [self], min=min, max=max)

    def clamp_(self, min: Any = None, max: Any = None):
        return self._assign(self.clamp(min, max))

    clip = clamp

    # ---- reductions ------------------------------------------------------------------
    @numpy_names
    def any(self, dim=None, keepdim=False):
        return (self != 0).sum(dim, keepdim) > 0

    @numpy_names
    def all(self, dim=None, keepdim=False):
        return (self == 0).sum(dim, keepdim) == 0

    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None):
        if dtype is None:
            return core.apply('sum', [self], **_dims(dim, keepdim, axis, keepdims))
        # torch casts, then sums in that dtype
        total = core.apply('sum', [self.to(dtype)], **_dims(dim, keepdim, axis, keepdims))
        return total.to(dtype)

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None):
        # torch casts, then averages in that dtype (an integer one raises, as torch's)
        source = self if dtype is None else self.to(dtype)
        return core.apply('mean', [source], **_dims(dim, keepdim, axis, keepdims))

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return self._extreme('amax', 'max_dim', 'maximum', dim, keepdim, axis, keepdims)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return self._extreme('amin', 'min_dim', 'minimum', dim, keepdim, axis, keepdims)

    def _extreme(self, whole, along, elementwise, dim, keepdim, axis, keepdims):
        if isinstance(dim, (core.Tensor, torch.Tensor)):  # max(x, other): elementwise
            return core.apply(elementwise, [self, core.as_tensor(dim)])
        dims = _dims(dim, keepdim, axis, keepdims)
        if isinstance(dims['dim'], int):
            # torch's own result type, so that it prints, pickles and compares as torch's.
            result_type = torch.return_types.max if along == 'max_dim' else torch.return_types.min
            return result_type(core.apply(along, [self], **dims))
        return core.apply(whole, [self], **dims)

    @numpy_names
    def amax(self, dim=None, keepdim=False):
        return core.apply('amax', [self], dim=_dim_attr(dim), keepdim=keepdim)

    @numpy_names
    def amin(self, dim=None, keepdim=False):
        return core.apply('amin', [self], dim=_dim_attr(dim), keepdim=keepdim)

    @numpy_names
    def argmax(self, dim=None, keepdim=False):
        return core.apply('argmax', [self], dim=dim, keepdim=keepdim)

    @numpy_names
    def argmin(self, dim=None, keepdim=False):
        return core.apply('argmin', [self], dim=dim, keepdim=keepdim)

    def var(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None,
            keepdims=None):
        if isinstance(dim, bool):  # torch's `x.var(False)`: the flag, over every element
            dim, unbiased = None, dim
        return core.apply('var', [self], correction=_correction(unbiased, correction),
                          **_dims(dim, keepdim, axis, keepdims))

    def std(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None,
            keepdims=None):
        if isinstance(dim, bool):  # torch's `x.std(False)`: the flag, over every element
            dim, unbiased = None, dim
        return core.apply('std', [self], correction=_correction(unbiased, correction),
                          **_dims(dim, keepdim, axis, keepdims))

    # dtype: torch casts the input, then computes in that dtype (as F.softmax's dtype=)
    @numpy_names
    def softmax(self, dim: int, dtype=None):
        source = self if dtype is None else self.to(dtype)
        return core.apply('softmax', [source], dim=dim)

    @numpy_names
    def log_softmax(self, dim: int, dtype=None):
        source = self if dtype is None else self.to(dtype)
        return core.apply('log_softmax', [source], dim=dim)

    # ---- built from rows, so they shard, differentiate and compile as rows do ----------
    def masked_fill(self, mask, value):
        """`value` where `mask`, else this tensor; the result keeps this tensor's dtype.
        Checked as torch checks it: a boolean mask, and a number that fits the dtype
        (`-1e9` in half precision is an error, not -inf)."""
        if isinstance(mask, (core.Tensor, torch.Tensor)) and mask.dtype != torch.bool:
            raise RuntimeError('masked_fill_ only supports boolean masks, but got mask with '
                               f'dtype {C_TYPES.get(mask.dtype, mask.dtype)}')
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not \
                representable(value, self._type.dtype):
            raise RuntimeError(f'value cannot be converted to type '
                               f'{FIXED_WIDTH_TYPES.get(self.dtype, self.dtype)} without overflow')
        fill = core.as_tensor(value, like=self)
        if fill.ndim:
            raise RuntimeError(f'masked_fill only supports a 0-dimensional value tensor, but '
                               f'got one with {fill.ndim} dimension(s)')
        if fill._type.dtype != self._type.dtype:
            fill = fill.to(self.dtype)
        return core.apply('where', [core.as_tensor(mask), fill, self])

    def masked_fill_(self, mask, value):
        return self._assign(self.masked_fill(mask, value))

    def tril(self, diagonal: int = 0): return self._triangle(diagonal, lower=True)
    def triu(self, diagonal: int = 0): return self._triangle(diagonal, lower=False)

    def _triangle(self, diagonal: int, lower: bool):
        if self.ndim < 2:
            raise RuntimeError(f'{"tril" if lower else "triu"}: input tensor must have at '
                               f'least 2 dimensions, got {self.ndim}')
        from gt.creation import arange, zeros

        rows, columns = self.shape[-2], self.shape[-1]
        offset = arange(columns).unsqueeze(0) - arange(rows).unsqueeze(1)
        keep = offset <= diagonal if lower else offset >= diagonal
        return core.apply('where', [keep, self, zeros((), dtype=self.dtype)])

    def bmm(self, other):
        if self.ndim != 3 or other.ndim != 3:
            raise RuntimeError(f'bmm: both batches must be 3-D, got {list(self.shape)} and '
                               f'{list(other.shape)}')
        if self.shape[0] != other.shape[0]:
            raise RuntimeError(f'bmm: batch sizes differ: {self.shape[0]} and '
                               f'{other.shape[0]}')
        return self @ other

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        if mat1.ndim != 2 or mat2.ndim != 2:
            raise RuntimeError(f'addmm: mat1 and mat2 must be matrices, got '
                               f'{list(mat1.shape)} and {list(mat2.shape)}')
        if _fused_product_applies(self):
            return _by_name(self, 'addmm')(mat1, mat2, beta=beta, alpha=alpha)
        return _scaled_sum(self, mat1 @ mat2, beta, alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        if _fused_product_applies(self):
            return _by_name(self, 'baddbmm')(batch1, batch2, beta=beta, alpha=alpha)
        return _scaled_sum(self, batch1.bmm(batch2), beta, alpha)

    # Composed (gt/covariance.py), so that their gradients run on the cluster.
    def cov(self, *, correction=1, fweights=None, aweights=None):
        from gt import covariance

        return covariance.cov(self, correction, fweights, aweights)

    def corrcoef(self):
        from gt import covariance

        return covariance.corrcoef(self)

def _scaled_sum(input: Any, product: Any, beta: float, alpha: float) -> Any:
    """`beta * input + alpha * product`, shaped as the product; beta 0 ignores input's
    values (NaNs included), as torch does, but not its shape."""
    if tuple(input.shape) != tuple(product.shape):
        input = input.expand(*product.shape)  # raises as torch does if it cannot
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)


def _dim_attr(dim: Any) -> Any:
    """A copy: the user's list may change after the op is recorded. A NumPy integer is
    the int it holds, as torch takes it (`x.max(np.int64(1))` gives values and indices)."""
    if isinstance(dim, (tuple, list)):
        return list(dim)
    return dim.item() if isinstance(dim, np.integer) else dim


def _dims(dim: Any, keepdim: bool, axis: Any, keepdims: Any) -> dict:
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return {'dim': _dim_attr(dim), 'keepdim': bool(keepdim)}


def _correction(unbiased: bool, correction: Any) -> float:
    """torch's degrees of freedom removed; a fraction (`correction=0.5`) is kept."""
    if correction is not None:
        return correction.item() if hasattr(correction, 'item') else correction
    return 1 if unbiased else 0


def _fused_product_applies(tensor: Any) -> bool:
    """Whether addmm and baddbmm run torch's kernel by name, which scales and adds
    inside the product and rounds once: always in half precision, and on a cluster of
    one worker (`torch.addmm(a, b, c, beta=0.5, alpha=2)` rounded otherwise); on
    several, a product and a sum of GT's shard."""
    return (tensor.dtype in (torch.float16, torch.bfloat16)
            or tensor._client.single_worker)


def _by_name(tensor: Any, name: str) -> Any:
    """torch's method `name` run by name (gt/fallback.py), for the arguments GT's own
    form does not take."""
    from gt import fallback

    return fallback.method(tensor, name)
