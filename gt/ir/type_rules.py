"""Helpers the op table's type rules share: broadcasting, dim normalization, reductions.

Errors are ValueErrors that name the op and the shapes, because the client raises them
at the user's line.
"""

from gt.ir.dtypes import DIMENSIONED, ZERO_DIM, result_type
from gt.ir.graph import TensorType


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
    if not -bound <= dim < bound:
        raise ValueError(
            f'{op}: dim {dim} is out of range for a tensor with {ndim} dimension(s)'
        )
    return dim % bound


def normalize_dims(op: str, dim: int | tuple[int, ...] | list[int] | None, ndim: int) -> tuple[int, ...]:
    """The reduced dims, sorted; None (or an empty list, as torch treats it) means all."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    normalized = tuple(sorted(normalize_dim(op, d, ndim) for d in dims))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f'{op}: dim {list(dims)} names a dimension twice')
    return normalized


def reduced_shape(shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if axis in dims else size for axis, size in enumerate(shape))
    return tuple(size for axis, size in enumerate(shape) if axis not in dims)


def numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
