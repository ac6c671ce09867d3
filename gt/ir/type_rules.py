"""Helpers the op table's type rules share: broadcasting, dims, dtypes and basic indexing.

Errors name the op and the shapes (ValueError) or dtypes (TypeError), because the client
raises them at the user's line.
"""

import numpy as np

from gt.ir.dtypes import DIMENSIONED, DTYPES, FLOATING, ZERO_DIM, result_type
from gt.ir.graph import TensorType
from gt.ir.invalid_op import DimOutOfRangeError, InvalidOpError


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max(len(shape) for shape in shapes)
    result = []
    for axis in range(-ndim, 0):
        size = 1
        for shape in shapes:
            dim = shape[axis] if -axis <= len(shape) else 1
            if dim != 1:
                if size != 1 and dim != size:
                    shown = ' and '.join(str(list(s)) for s in shapes)
                    raise ValueError(f'{op}: shapes {shown} cannot be broadcast together')
                size = dim
        result.append(size)
    return tuple(result)


def common_dtype(*types: TensorType) -> str:
    return result_type(*((t.dtype, DIMENSIONED if t.shape else ZERO_DIM) for t in types))


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) as a non-negative index (0-d tensors accept 0 and -1)."""
    bound = max(ndim, 1)
    if isinstance(dim, np.integer):  # as torch takes one; the wire sends the int it holds
        dim = int(dim)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise ValueError(f'{op}: dim must be an int, got {dim!r}')
    if not -bound <= dim < bound:
        raise DimOutOfRangeError(f'{op}: Dimension out of range (expected to be in range of '
                                 f'[{-bound}, {bound - 1}], but got {dim})')
    return dim % bound


def normalize_dims(
    op: str, dim: int | tuple[int, ...] | list[int] | None, ndim: int
) -> tuple[int, ...]:
    """The reduced dims, sorted; None (or an empty list, as torch treats it) means all.

    A 0-d tensor accepts dim 0 (or -1) and has no axis to reduce.
    """
    if dim is None:
        return tuple(range(ndim))
    dims = tuple(int(d) if isinstance(d, np.integer) else d
                 for d in (dim if isinstance(dim, (list, tuple)) else (dim,)))
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ValueError(f'{op}: dim must be None, an int or a list of ints, got {dim!r}')
    if not dims:
        return tuple(range(ndim))
    normalized = tuple(sorted(normalize_dim(op, d, ndim) for d in dims))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f'{op}: dim {list(dims)} names a dimension twice')
    return normalized if ndim else ()


def reduced_shape(
    shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool
) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if axis in dims else size for axis, size in enumerate(shape))
    return tuple(size for axis, size in enumerate(shape) if axis not in dims)


def numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def check_dtype(op: str, dtype: object) -> str:
    if dtype not in DTYPES:
        raise TypeError(f'{op}: unknown dtype {dtype!r} (expected one of {", ".join(DTYPES)})')
    return dtype


def require_floating(op: str, *types: TensorType) -> None:
    for t in types:
        if t.dtype not in FLOATING:
            raise InvalidOpError(f'{op}: expected a floating point tensor, got {t.dtype} '
                            f'(cast it first, e.g. x.float())')


def require_integral(op: str, *types: TensorType) -> None:
    """Bitwise ops take integers and bools only, as in torch."""
    for t in types:
        if t.dtype in FLOATING:
            raise InvalidOpError(f'{op}: expected an integer or bool tensor, got {t.dtype}')


def forbid_bool(op: str, *types: TensorType) -> None:
    for t in types:
        if t.dtype == 'bool':
            raise InvalidOpError(f'{op}: not supported for bool tensors')


def check_shape(op: str, shape: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """A size list from attrs (a list after msgpack) as a tuple of non-negative ints."""
    sizes = tuple(shape)
    if any(not isinstance(size, int) or isinstance(size, bool) or size < 0 for size in sizes):
        raise ValueError(f'{op}: sizes must be non-negative integers, got {list(sizes)}')
    return sizes


def indexed_shape(op: str, shape: tuple[int, ...], index: list) -> tuple[int, ...]:
    """The shape of `x[index]` under torch's basic indexing.

    `index` is a list of items: `['int', k]`, `['slice', start, stop, step]`, `['none']`
    (a new axis) or `['ellipsis']`; items may be tuples or lists.
    """
    kinds = [item[0] for item in index]
    if kinds.count('ellipsis') > 1:
        raise ValueError(f'{op}: an index can only have a single ellipsis')
    consumed = sum(kind in ('int', 'slice') for kind in kinds)
    if consumed > len(shape):
        raise IndexError(f'{op}: too many indices for a tensor of shape {list(shape)} '
                         f'({consumed} indices, {len(shape)} dimension(s))')
    result: list[int] = []
    axis = 0
    for item in index:
        kind = item[0]
        if kind == 'none':
            result.append(1)
        elif kind == 'ellipsis':
            kept = len(shape) - consumed
            result.extend(shape[axis:axis + kept])
            axis += kept
        elif kind == 'int':
            position, size = item[1], shape[axis]
            if not isinstance(position, int) or not -size <= position < size:
                raise IndexError(f'{op}: index {position} is out of bounds for dimension {axis} '
                                 f'with size {size} (shape {list(shape)})')
            axis += 1
        elif kind == 'slice':
            _, start, stop, step = item
            if step is not None and step <= 0:
                raise ValueError(f'{op}: step must be greater than zero, got {step}')
            result.append(len(range(*slice(start, stop, step).indices(shape[axis]))))
            axis += 1
        else:
            raise ValueError(f'{op}: unknown index item {list(item)!r}')
    return tuple(result) + tuple(shape[axis:])


def check_assignable(op: str, value: tuple[int, ...], target: tuple[int, ...]) -> None:
    """Torch's rule for `x[index] = value`: drop leading 1s, then broadcast to the target."""
    stripped = tuple(value)
    while len(stripped) > len(target) and stripped[0] == 1:
        stripped = stripped[1:]
    fits = len(stripped) <= len(target) and all(
        size in (1, want) for size, want in zip(reversed(stripped), reversed(target)))
    if not fits:
        raise ValueError(f'{op}: a value of shape {list(value)} cannot be assigned to '
                         f'an indexed region of shape {list(target)}')


def same_types(types: tuple, **attrs) -> tuple:
    """The type rule of an op whose outputs are its inputs' types (a copy, a move)."""
    return tuple(types)
