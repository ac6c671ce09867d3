"""Tensor methods that rearrange: shapes, indexing, splitting, and dtype casts.

A mixin of `gt.tensor.Tensor`, kept apart to keep files short; every method records ops
of the table through `gt.tensor.apply`.
"""

import operator
import warnings
from typing import Any

import torch

from gt import tensor as core
from gt import views
from gt.indexing import (
    TensorSlice,
    byte_masks_as_bool,
    byte_masks_written,
    is_advanced,
    normalize_index,
    tensor_ints,
    with_ints,
    without_ranges,
)
from gt.ir.dtypes import TORCH_NAMES, dtype_name
from gt.ir.type_rules import normalize_dim
from gt.numpy_names import numpy_names

# torch's legacy type names (`x.type()`, `x.type('torch.DoubleTensor')`), by GT dtype.
LEGACY_TYPES = {'float32': 'torch.FloatTensor', 'float64': 'torch.DoubleTensor',
                'float16': 'torch.HalfTensor', 'bfloat16': 'torch.BFloat16Tensor',
                'int64': 'torch.LongTensor', 'int32': 'torch.IntTensor',
                'int16': 'torch.ShortTensor', 'int8': 'torch.CharTensor',
                'uint8': 'torch.ByteTensor', 'bool': 'torch.BoolTensor'}


T_DEPRECATED = ('The use of `x.T` on tensors of dimension other than 2 to reverse their shape is '
                'deprecated and it will throw an error in a future release. Consider `x.mT` to '
                'transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` '
                'to reverse the dimensions of a tensor.')
_warned_of_T = False

class ShapeMethods:
    __slots__ = ()

    def reshape(self, *shape):
        """A view where torch's would be one (the source's strides allow it), else a copy."""
        result = core.apply('reshape', [self], shape=_sizes(shape))
        size = list(result._type.shape)
        if not views.reshape_aliases(self, size):
            return result
        return views.mark(result, self, views.reshape_step(size))

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            # its bits read as another dtype, torch's call by name (a view: gt/views.py)
            from gt import fallback
            return fallback.call('Tensor.view', (self, shape[0]), {})
        result = core.apply('reshape', [self], shape=_sizes(shape))
        size = list(result._type.shape)
        if not views.reshape_aliases(self, size):
            raise RuntimeError("view size is not compatible with input tensor's size and "
                               'stride (at least one dimension spans across two contiguous '
                               'subspaces). Use .reshape(...) instead.')
        return views.mark(result, self, views.reshape_step(size))

    def transpose(self, dim0: int | None = None, dim1: int | None = None):
        """Swap two dims; with none named, a 2-D tensor's two (as the seeds' API has it)."""
        if dim0 is None and dim1 is None:
            if self.ndim != 2:
                raise TypeError(f'transpose() without dims works on 2-D tensors only; this '
                                f'one has {self.ndim} dimension(s): name the two to swap')
            dim0, dim1 = 0, 1
        elif dim0 is None or dim1 is None:
            raise TypeError('transpose() takes two dims (or none, for a 2-D tensor)')
        result = core.apply('transpose', [self], dim0=dim0, dim1=dim1)
        dims = list(range(self.ndim))
        if dims:
            first, second = normalize_dim('transpose', dim0, self.ndim), normalize_dim(
                'transpose', dim1, self.ndim)
            dims[first], dims[second] = dims[second], dims[first]
        return views.mark(result, self, views.permute_step(dims))

    def t(self):
        """torch's t(): a 2-D tensor's transpose; a 0-D or 1-D one as it is."""
        if self.ndim > 2:
            raise RuntimeError(f't() expects a tensor with <= 2 dimensions, but self is '
                               f'{self.ndim}D')
        if self.ndim < 2:
            return self.view(*self._type.shape)
        return self.transpose(0, 1)

    @property
    def T(self):
        """Every dim reversed; torch warns, once a process, where that is not a matrix
        transpose (0-d and 2-d tensors aside)."""
        global _warned_of_T
        if self.ndim not in (0, 2) and not _warned_of_T:
            _warned_of_T = True
            warnings.warn(T_DEPRECATED, UserWarning, stacklevel=2)
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        """The last two dims swapped (GT's tensors are real, so `mH` is the same)."""
        if self.ndim < 2:
            raise RuntimeError(f'tensor.mT is only supported on matrices or batches of '
                               f'matrices. Got {self.ndim}-D tensor.')
        return self.transpose(-2, -1)

    mH = mT

    @property
    def H(self):
        if self.ndim not in (0, 2):
            raise RuntimeError(f'tensor.H is only supported on matrices (2-D tensors). Got '
                               f'{self.ndim}-D tensor.')
        return self.T

    def permute(self, *dims):
        result = core.apply('permute', [self], dims=_sizes(dims))
        order = [normalize_dim('permute', dim, self.ndim) for dim in _sizes(dims)]
        return views.mark(result, self, views.permute_step(order))

    @numpy_names
    def unsqueeze(self, dim: int):
        result = core.apply('unsqueeze', [self], dim=dim)
        return views.mark(result, self, views.reshape_step(
            list(result._type.shape), lambda meta: meta.unsqueeze(dim)))

    @numpy_names
    def squeeze(self, dim=None):
        dims = list(dim) if isinstance(dim, tuple) else dim
        result = core.apply('squeeze', [self], dim=dims)
        return views.mark(result, self, views.reshape_step(
            list(result._type.shape),
            lambda meta: meta.squeeze() if dims is None else meta.squeeze(dims)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        shape = self._type.shape
        if not shape:
            return self.reshape(1)
        start = normalize_dim('flatten', start_dim, len(shape))
        end = normalize_dim('flatten', end_dim, len(shape))
        if start > end:
            raise ValueError(f'flatten: start_dim {start_dim} comes after end_dim {end_dim}')
        middle = 1
        for size in shape[start:end + 1]:
            middle *= size
        return self.reshape(*shape[:start], middle, *shape[end + 1:])

    def expand(self, *sizes):
        result = core.apply('expand', [self], shape=_sizes(sizes))
        return views.mark(result, self, views.expand_step(self._type.shape,
                                                          list(result._type.shape)))

    def expand_as(self, other): return self.expand(*other.shape)
    def view_as(self, other): return self.view(*other.shape)
    def reshape_as(self, other): return self.reshape(*other.shape)

    def split(self, split_size, dim: int = 0):
        size = self._type.shape[dim]
        if isinstance(split_size, (int, core.Tensor, torch.Tensor)):  # a 0-d tensor as torch
            split_size = operator.index(split_size)
            sizes = [min(split_size, size - start) for start in range(0, size, split_size)]
        else:
            sizes = [operator.index(length) for length in split_size]
        result = core.apply('split', [self], sizes=sizes, dim=dim)
        parts = tuple(result) if isinstance(result, list) else (result,)
        whole = [['slice', None, None, None]] * normalize_dim('split', dim, self.ndim)
        start = 0
        for part, length in zip(parts, sizes):
            views.mark(part, self, views.index_step(
                [*whole, ['slice', start, start + length, None]]))
            start += length
        return parts

    def chunk(self, chunks: int, dim: int = 0):
        size = self._type.shape[dim]
        if size == 0:  # torch's: `chunks` empty pieces
            return self.split([0] * chunks, dim)
        return self.split(max(1, -(-size // chunks)), dim)

    def tensor_split(self, indices_or_sections=None, dim: int = 0, *, sections=None,
                     indices=None):
        """torch's: `n` sections (the first `size % n` one longer), or pieces between
        indices (`x[:i0]`, `x[i0:i1]`, ..., `x[ik:]`, empty where an index falls back),
        each a view written through to this tensor, as torch's are."""
        given = next((v for v in (indices_or_sections, sections, indices) if v is not None),
                     None)
        if self.ndim == 0:
            raise RuntimeError('tensor_split expected at least a 1-dimensional tensor, but '
                               'got a tensor with 0 dims')
        dim = normalize_dim('tensor_split', dim, self.ndim)
        size = self._type.shape[dim]
        if isinstance(given, (core.Tensor, torch.Tensor)):
            if given.dtype != torch.int64 or given.ndim > 1:
                raise RuntimeError(
                    'tensor_split expected tensor_indices_or_sections to have dtype of long, '
                    f'but got {given.dtype}'
                    if given.ndim <= 1 else 'tensor_split expected tensor_indices_or_sections'
                    ' to be a zero-dimensional or one-dimensional tensor, but got a tensor '
                    f'with {given.ndim} dims')
            given = given.tolist()
        if isinstance(given, int):
            if given <= 0:
                raise RuntimeError(f'number of sections must be larger than 0, got {given}')
            lengths = [size // given + (k < size % given) for k in range(given)]
            bounds = [sum(lengths[:k]) for k in range(given + 1)]
            pieces = list(zip(bounds, bounds[1:]))
        else:
            cuts = [min(max(operator.index(i) + (size if i < 0 else 0), 0), size)
                    for i in given]
            pieces = list(zip([0, *cuts], [*cuts, size]))
        lead = (slice(None),) * dim
        return tuple(self[(*lead, slice(start, max(start, stop)))] for start, stop in pieces)

    def _split_along(self, name: str, dim: int, least: int, indices_or_sections):
        if self.ndim < least:
            raise RuntimeError(f'torch.{name} requires a tensor with at least {least} '
                               f'dimension, but got a tensor with {self.ndim} dimensions!')
        size = self._type.shape[dim]
        if isinstance(indices_or_sections, int) and indices_or_sections and \
                size % indices_or_sections:
            raise RuntimeError(f'torch.{name} attempted to split along dimension {dim}, but '
                               f'the size of the dimension {size} is not divisible by the '
                               f'split_size {indices_or_sections}!')
        return self.tensor_split(indices_or_sections, dim)

    def hsplit(self, indices_or_sections):
        return self._split_along('hsplit', 1 if self.ndim > 1 else 0, 1, indices_or_sections)

    def vsplit(self, indices_or_sections):
        return self._split_along('vsplit', 0, 2, indices_or_sections)

    def dsplit(self, indices_or_sections):
        return self._split_along('dsplit', 2, 3, indices_or_sections)

    @property
    def real(self):
        """The tensor itself: GT's tensors are real (torch's `real` of one is an alias)."""
        return self

    @property
    def imag(self):
        raise RuntimeError('imag is not implemented for tensors with non-complex dtypes.')

    def ravel(self):
        return self.reshape(-1)

    def adjoint(self):
        if self.ndim < 2:
            raise RuntimeError('tensor.adjoint() is only supported on matrices or batches of '
                               f'matrices. Got {self.ndim}-D tensor.')
        return self.transpose(-2, -1)

    def contiguous(self, memory_format=None):
        """The tensor itself, or a copy where it is a view torch would not lay out as a
        fresh tensor (a transpose, a column): a copy aliases nothing."""
        return self if views.is_contiguous_view(self) else core.apply('contiguous', [self])

    def is_contiguous(self, memory_format=None) -> bool:
        """Another memory format (`channels_last`) is answered for GT's layout as torch
        would answer it: GT accepts memory formats everywhere and keeps torch's default
        layout, so a fresh NCHW tensor is not channels-last contiguous."""
        if memory_format in (None, torch.contiguous_format):
            return views.is_contiguous_view(self)
        laid_out = torch.empty_strided(tuple(self.shape), self.stride(), device='meta')
        return laid_out.is_contiguous(memory_format=memory_format)

    def stride(self, dim: int | None = None):
        """torch's strides for this tensor: a view's in its base, as torch lays it out."""
        strides = views.strides(self)
        return strides if dim is None else strides[normalize_dim('stride', dim, self.ndim)]

    def storage_offset(self) -> int:
        return views.storage_offset(self)
    def cpu(self): return self

    # torch's in-place view ops change how the elements are seen, not the elements: GT
    # rebinds the tensor to the new view, which aliases what it aliased.
    def unsqueeze_(self, dim): return self._replace(self.unsqueeze(dim))
    def squeeze_(self, dim=None): return self._replace(self.squeeze(dim))
    def t_(self): return self._replace(self.t())
    def transpose_(self, dim0, dim1): return self._replace(self.transpose(dim0, dim1))
    swapdims_ = swapaxes_ = transpose_

    def __getitem__(self, key: Any):
        key, picks = self._index_key(byte_masks_as_bool(key))
        if is_advanced(key):  # tensors, masks, lists: torch's advanced indexing
            from gt import fallback
            return fallback.call('Tensor.__getitem__', (self, key), {})
        index = normalize_index(key, self._type.shape)
        if picks and all(item == ['slice', None, None, None] for item in index):
            result = self  # `data[i:i + T]`: only the pick's own view
        else:
            result = views.mark(core.apply('getitem', [self], index=index), self,
                                views.index_step(index))
        for dim, pick in reversed(picks):  # later dims first: earlier ones keep place
            step = (views.tensor_slice_step(dim, pick.start, pick.length)
                    if isinstance(pick, TensorSlice) else views.tensor_select_step(dim, pick))
            result = views.mark(step.take(result), result, step)
        return result

    def _index_key(self, key: Any) -> tuple[Any, list]:
        """The key, and the 0-d integer tensors in it that select as ints do (torch's
        `w[tags[i]]`) or bound slices of a known length (`data[i:i + T]`), without
        fetching them where the rest of the key is basic."""
        key = without_ranges(key)
        basic, picks = tensor_ints(key, self.ndim)
        if picks and is_advanced(basic):
            return with_ints(key), []
        return basic, picks

    def __setitem__(self, key: Any, value: Any) -> None:
        basic, picks = self._index_key(byte_masks_written(key, value))
        if picks:  # a write into the view those ints select
            self[key].copy_(value)
            return
        key = basic
        if is_advanced(key):
            from gt import fallback
            fallback.call('Tensor.__setitem__', (self, key, value), {})
            return
        index = normalize_index(key, self._type.shape)
        value = core.as_tensor(value, like=self)
        self._rebind(core.apply('setitem', [self, value], index=index))

    # ---- dtypes ----------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """torch's `to`: a dtype, or another tensor's (a torch tensor's too); devices are
        GT's business (the dispatcher places values). `copy=True` copies, as torch's."""
        dtype = kwargs.get('dtype')
        for arg in args:
            if isinstance(arg, (core.Tensor, torch.Tensor)):
                dtype = arg.dtype
            elif isinstance(arg, (torch.dtype, type)) or (
                    isinstance(arg, str) and arg.removeprefix('torch.') in TORCH_NAMES):
                dtype = arg  # a string names a dtype, unless it names a device
        if dtype is None or dtype_name(dtype) == self._type.dtype:
            return self.clone() if kwargs.get('copy') else self
        return core.apply('cast', [self], dtype=dtype_name(dtype))

    def type_as(self, other):
        """This tensor in `other`'s dtype (GT places it: devices are its own)."""
        if not isinstance(other, (core.Tensor, torch.Tensor)):
            raise TypeError(f'type_as(): argument \'other\' (position 1) must be Tensor, '
                            f'not {type(other).__name__}')
        return self.to(other.dtype)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """torch's legacy spelling: with no argument the type's name ('torch.FloatTensor'),
        else a cast to a dtype or to a named type ('torch.DoubleTensor')."""
        if dtype is None:
            return LEGACY_TYPES[self._type.dtype]
        if not isinstance(dtype, (str, torch.dtype)) and isinstance(
                getattr(dtype, 'dtype', None), torch.dtype):
            dtype = dtype.dtype  # a legacy type: gt.FloatTensor or torch.FloatTensor
        if isinstance(dtype, str):
            legacy = {name: key for key, name in LEGACY_TYPES.items()}
            name = dtype.replace('torch.cuda.', 'torch.')
            if name not in legacy:
                raise ValueError(f'invalid type: {dtype!r}')
            dtype = legacy[name]
        return self.to(dtype)

    def new(self, *args, **placement):
        """torch's legacy `x.new(sizes)`, `x.new(data)`, `x.new()`: a new tensor of x's
        dtype (sizes give zeros; see gt.legacy_types)."""
        from gt.legacy_types import construct

        return construct(self._type.dtype, args, placement)

    def float(self, memory_format=None): return self.to(torch.float32)
    def double(self, memory_format=None): return self.to(torch.float64)
    def half(self, memory_format=None): return self.to(torch.float16)
    def bfloat16(self, memory_format=None): return self.to(torch.bfloat16)
    def int(self, memory_format=None): return self.to(torch.int32)
    def long(self, memory_format=None): return self.to(torch.int64)
    def bool(self, memory_format=None): return self.to(torch.bool)

    def clone(self, memory_format=None):
        """A copy laid out as this tensor is (a transpose stays one, as torch's
        preserve_format keeps it), or as a fresh tensor for `torch.contiguous_format`."""
        if memory_format == torch.contiguous_format and not views.is_contiguous_view(self):
            return core.apply('contiguous', [self])
        return core.apply('cast', [self], dtype=self._type.dtype)


def _sizes(args: tuple) -> list[int]:
    if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
        args = tuple(args[0])
    return [int(size) for size in args]
