"""Which 0-d integer tensors are another one plus a known int.

`data[i:i + T]` with `i` a 0-d tensor (nanoGPT's `for i in ix`) slices T elements
whatever `i` holds. Knowing that `i + T` is `i` plus T lets GT slice on the workers
without fetching either bound: without it, each bound was a round trip to the workers
and each batch a program of new constants (benchmarks/batching.py: 198x torch for a
batch of 12, 14x with it).
Only sums and differences with Python ints are noted, and a note holds while neither
tensor has been written in place since.
"""

import weakref
from typing import Any

from gt.ir.dtypes import INTEGRAL

# id(result) -> (result, root, root's value id then, result's value id then, offset from
# root), the tensors by weak reference. Keyed by id: a WeakKeyDictionary compares keys
# with ==, which for tensors is elementwise, and a fetch to tell its truth.
_offsets: dict[int, tuple] = {}


def note(result: Any, tensor: Any, offset: int) -> None:
    """`result` is `tensor + offset` (both 0-d and integral)."""
    root, base = resolve(tensor)
    key = id(result)
    _offsets[key] = (weakref.ref(result, lambda _: _offsets.pop(key, None)), weakref.ref(root),
                     root._id, result._id, base + offset)


def counts(tensor: Any, number: Any) -> bool:
    """Whether `tensor op number` is worth noting: a 0-d integer tensor and a Python int."""
    return type(number) is int and not tensor._type.shape and tensor._type.dtype in INTEGRAL


def resolve(value: Any) -> tuple[Any, int]:
    """(root tensor, offset) such that `value` is root + offset; (None, value) for an int.
    A tensor with no live note is its own root."""
    if isinstance(value, int):
        return None, value
    entry = _offsets.get(id(value))
    if entry is not None:
        own_ref, root_ref, root_id, own_id, offset = entry
        root = root_ref()
        if (own_ref() is value and root is not None and root._id == root_id
                and value._id == own_id):
            return root, offset
    return value, 0


def static_length(start: Any, stop: Any) -> int | None:
    """How many elements `[start:stop]` holds whatever the tensors hold, when both bounds
    are the same tensor plus ints (None otherwise): `stop - start`, at least 0."""
    (start_root, start_offset), (stop_root, stop_offset) = resolve(start), resolve(stop)
    if start_root is None or start_root is not stop_root:
        return None
    return max(0, stop_offset - start_offset)
