"""The ranks and dtypes of common calls whose sizes depend on the values, known from the
call alone.

`x[mask]`, `nonzero`, `argwhere`, `masked_select` and `unique` have no meta kernel: GT otherwise
learns their result's rank and dtype from fake tensors, and a process's first fake
tensor imports torch._dynamo (2-4 s here, in the client and again in the dispatcher,
whose other sessions wait meanwhile). These idioms are common enough to know outright.
A rule answers None where it is not sure (other arguments, malformed indices), and the
fake tensors decide, reporting any genuine error as before.
"""

from typing import Any, Callable

import torch

from gt.ir.dtypes import TORCH_DTYPES
from gt.ir.graph import TensorType

# (ranks, dtypes) of the result's tensors, and whether it is a tuple of them (else the
# one tensor); or None: not sure.
Rule = Callable[[tuple, list, dict], tuple | None]


def _tensor(item: Any, types: tuple) -> TensorType | None:
    """The type of a wire argument that names a tensor input (`['T', k]`)."""
    if isinstance(item, (list, tuple)) and len(item) == 2 and item[0] == 'T':
        return types[item[1]]
    return None


def _source_and_mask(types: tuple, args: list, kwargs: dict) -> tuple | None:
    """The types of `(x, mask)` in a call taking exactly those, the mask boolean."""
    if len(args) != 2 or kwargs:
        return None
    source, mask = _tensor(args[0], types), _tensor(args[1], types)
    if source is None or mask is None or mask.dtype != 'bool':
        return None
    return source, mask


def _mask_index(types: tuple, args: list, kwargs: dict) -> tuple | None:
    """`x[mask]`: the mask's dimensions become one, of the selected elements."""
    found = _source_and_mask(types, args, kwargs)
    if found is None:
        return None
    source, mask = found
    if source.shape[:len(mask.shape)] != mask.shape:
        return None
    return (len(source.shape) - len(mask.shape) + 1,), (source.dtype,), False


def _positions(types: tuple, args: list, kwargs: dict) -> tuple | None:
    """`nonzero(x)` and `argwhere(x)`: one row of indices per selected element."""
    if len(args) != 1 or _tensor(args[0], types) is None:
        return None
    if set(kwargs) - {'as_tuple'} or kwargs.get('as_tuple', False) is not False:
        return None  # as_tuple=True: one tensor per dimension, left to fake tensors
    return (2,), ('int64',), False


def _masked_select(types: tuple, args: list, kwargs: dict) -> tuple | None:
    found = _source_and_mask(types, args, kwargs)
    if found is None:
        return None
    source, mask = found
    try:
        torch.broadcast_shapes(source.shape, mask.shape)
    except RuntimeError:
        return None
    return (1,), (source.dtype,), False


def _unique(types: tuple, args: list, kwargs: dict) -> tuple | None:
    """`unique(x)` over all elements: the values, then the inverse (x's shape) and the
    counts when asked for; with `dim`, left to fake tensors."""
    if len(args) != 1 or set(kwargs) - {'sorted', 'return_inverse', 'return_counts'}:
        return None
    source = _tensor(args[0], types)
    flags = [kwargs.get(name, False) for name in ('return_inverse', 'return_counts')]
    if source is None or not all(isinstance(flag, bool) for flag in flags):
        return None
    ranks, dtypes = [1], [source.dtype]
    if flags[0]:
        ranks.append(len(source.shape))
        dtypes.append('int64')
    if flags[1]:
        ranks.append(1)
        dtypes.append('int64')
    return tuple(ranks), tuple(dtypes), any(flags)


RULES: dict[str, Rule] = {
    'Tensor.__getitem__': _mask_index,
    'torch.nonzero': _positions, 'Tensor.nonzero': _positions,
    'torch.argwhere': _positions, 'Tensor.argwhere': _positions,
    'torch.masked_select': _masked_select, 'Tensor.masked_select': _masked_select,
    'torch.unique': _unique, 'Tensor.unique': _unique,
}


def known(fn: str, types: tuple, args: list, kwargs: dict) -> tuple | None:
    """`(ranks, dtypes, skeleton)` of the call's result, or None. The skeleton is the
    result's structure with meta tensors of those ranks and dtypes, standing for the
    outputs when the client rebuilds it (their sizes, all 0, mean nothing)."""
    rule = RULES.get(fn)
    found = rule(types, args, kwargs) if rule is not None else None
    if found is None:
        return None
    ranks, dtypes, is_tuple = found
    tensors = tuple(torch.empty((0,) * rank, dtype=TORCH_DTYPES[dtype], device='meta')
                    for rank, dtype in zip(ranks, dtypes))
    return ranks, dtypes, tensors if is_tuple else tensors[0]
