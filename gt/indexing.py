"""Turning a Python index (`x[1:, None, ..., -1]`) into the getitem op's attribute.

The attribute is a list of `['int', k]`, `['slice', start, stop, step]`, `['none']`
and `['ellipsis']` items, plain enough to hash, print and send.
"""

import operator
from typing import Any

import numpy as np


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


def _bound(value: Any) -> int | None:
    return None if value is None else operator.index(value)
