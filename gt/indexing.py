"""Turning a Python index (`x[1:, None, ..., -1]`) into the getitem op's attribute.

The attribute is a list of `['int', k]`, `['slice', start, stop, step]`, `['none']`
and `['ellipsis']` items, plain enough to hash, print and send.
"""

import operator
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch

from gt import tensor_offsets


def normalize_index(key: Any, shape: tuple[int, ...]) -> list[list]:
    items = key if isinstance(key, tuple) else (key,)
    result = []
    for item in items:
        if item is None:
            result.append(['none'])
        elif item is Ellipsis:
            result.append(['ellipsis'])
        elif isinstance(item, slice):
            result.append(['slice', _bound(item.start), _bound(item.stop), _bound(item.step)])
        elif isinstance(item, bool) or not hasattr(item, '__index__'):
            raise TypeError(
                f'GT supports indexing with ints, slices, None and ...; got {type(item).__name__}'
            )
        else:
            result.append(['int', operator.index(item)])
    return result


BYTE_MASK = ('indexing with dtype torch.uint8 is now deprecated, please use a dtype '
             'torch.bool instead.')


def byte_masks_as_bool(key: Any) -> Any:
    """torch takes a uint8 index tensor as a mask, with a deprecation warning (the meta
    kernel GT works types out with refuses one): the key with each a bool mask."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(getattr(item, 'dtype', None) == torch.uint8 for item in items):
        return key
    from gt.runtime.locations import user_call

    warnings.warn(BYTE_MASK, UserWarning, stacklevel=user_call()[0])
    masks = tuple(item.bool() if getattr(item, 'dtype', None) == torch.uint8 else item
                  for item in items)
    return masks if isinstance(key, tuple) else masks[0]


def byte_masks_written(key: Any, value: Any) -> Any:
    """`x[key] = value` with a uint8 mask: torch fills through a lone index tensor with a
    one-element value by `masked_fill_`, which refuses a uint8 mask (its meta kernel, which
    GT types the write with, does not), so that is refused here, at the call, as torch
    refuses it; other writes take it as a bool mask, as reads do."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(getattr(item, 'dtype', None) == torch.uint8 for item in items):
        return key
    indices = [item for item in items if not (
        item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer)))]
    one_element = (isinstance(value, (bool, int, float, np.generic))
                   or (hasattr(value, 'numel') and value.numel() == 1))
    if len(indices) == 1 and one_element:
        from gt.ir.invalid_op import InvalidOpError

        raise InvalidOpError('masked_fill_ only supports boolean masks, but got mask with '
                             'dtype unsigned char')
    return byte_masks_as_bool(key)


def without_ranges(key: Any) -> Any:
    """`x[range(n), y]`: torch indexes with a range as with the list it holds."""
    if isinstance(key, range):
        return list(key)
    if isinstance(key, tuple) and any(isinstance(item, range) for item in key):
        return tuple(list(item) if isinstance(item, range) else item for item in key)
    return key


def is_advanced(key: Any) -> bool:
    """Whether `key` indexes with tensors, arrays, lists or bools (torch's advanced
    indexing) rather than ints, slices, None and Ellipsis alone."""
    items = key if isinstance(key, tuple) else (key,)
    return any(not (item is None or item is Ellipsis or isinstance(item, slice)
                    or (isinstance(item, (int, np.integer)) and not isinstance(item, bool)))
               for item in items)


class TensorSlice(NamedTuple):
    """`[start:stop]` with tensor bounds `length` apart whatever they hold (gt.tensor_offsets)."""
    start: Any
    length: int


def tensor_ints(key: Any, ndim: int) -> tuple[Any, list[tuple[int, Any]]]:
    """The 0-d integer GT tensors in a basic key, which torch takes as the ints they hold,
    and the slices between such a tensor and itself plus an int (`data[i:i + T]`): the
    key with each one a full slice, and per one the dimension of the result it selects
    or slices from, with the tensor or a TensorSlice (the caller takes later ones first)."""
    items = key if isinstance(key, tuple) else (key,)
    picked = [_picked(item) for item in items]
    if not any(pick is not None for pick in picked):
        return key, []
    consuming = sum(1 for item in items if item is not None and item is not Ellipsis)
    picks, out, replaced = [], 0, []
    for item, pick in zip(items, picked):
        if pick is not None:
            picks.append((out, pick))
            replaced.append(slice(None))
            out += 1
            continue
        replaced.append(item)
        if item is Ellipsis:
            out += ndim - consuming
        elif item is None or isinstance(item, slice):
            out += 1
    return tuple(replaced), picks


def _picked(item: Any) -> Any:
    """The tensor or TensorSlice that `item` indexes with, or None for any other item."""
    from gt.tensor import Tensor

    if isinstance(item, Tensor):
        return item if item.ndim == 0 and _integral(item) else None
    if not isinstance(item, slice) or item.step not in (None, 1):
        return None
    start, stop = item.start, item.stop
    if not (isinstance(start, Tensor) and start.ndim == 0 and _integral(start)):
        return None
    length = None if stop is None else tensor_offsets.static_length(start, stop)
    return None if length is None else TensorSlice(start, length)


def _integral(tensor: Any) -> bool:
    return not tensor.dtype.is_floating_point and tensor.dtype != torch.bool


def with_ints(key: Any) -> Any:
    """The key with each 0-d integer GT tensor the int it holds (a fetch each): how
    torch takes them before its advanced indexing."""
    from gt.tensor import Tensor

    def as_int(item: Any) -> Any:
        if isinstance(item, Tensor) and item.ndim == 0 and _integral(item):
            return int(item.item())
        return item
    return tuple(as_int(item) for item in key) if isinstance(key, tuple) else as_int(key)


def _bound(value: Any) -> int | None:
    return None if value is None else operator.index(value)
