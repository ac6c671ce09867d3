"""The arguments of a `torch_call` as plain data, and its results as a flat list of tensors.

A call's positional arguments are a list and its keyword arguments a dict, both of
wire items, so that they hash, print and travel by msgpack without pickling. Python
numbers, strings, bools and None are themselves; everything else is a tagged list:

    ['T', k]  the k-th tensor input       ['L', [...]] a list     ['U', [...]] a tuple
    ['D', 'float32'] a dtype              ['S', start, stop, step] a slice
    ['E'] Ellipsis                        ['M', 'contiguous_format'] a memory format
    ['H', [3, 2, 1]] integers that the call gets as an int64 tensor in host memory
                     (`HostIndices`: the `batch_sizes` of torch's packed recurrent
                     kernels, which read them on the CPU even for a GPU's data)

A bare list never appears, so a tag cannot be mistaken for user data. Callables,
objects and complex numbers are refused: the fallback computes on tensors, it does not
ship code.
"""

from typing import Any, Callable

import torch

from gt.ir.dtypes import DTYPE_NAMES, TORCH_DTYPES

MEMORY_FORMATS = {'contiguous_format': torch.contiguous_format,
                  'channels_last': torch.channels_last,
                  'channels_last_3d': torch.channels_last_3d,
                  'preserve_format': torch.preserve_format}


class HostIndices(tuple):
    """Integers a call takes as a CPU int64 tensor, whatever the worker's device: known
    to the client (a packed sequence's batch sizes), they travel in the call's attrs
    instead of as a tensor input, which would live on the worker's device."""


def encode(value: Any, tensor_index: Callable[[Any], int | None]) -> Any:
    """`value` as a wire item; `tensor_index(v)` gives the input index of a tensor
    operand (registering it), or None when `v` is not one."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, HostIndices):
        return ['H', [int(index) for index in value]]
    index = tensor_index(value)
    if index is not None:
        return ['T', index]
    if isinstance(value, torch.dtype):
        if value not in DTYPE_NAMES:
            raise TypeError(f'GT has no dtype {value}')
        return ['D', DTYPE_NAMES[value]]
    if isinstance(value, torch.Size):
        return ['U', [int(size) for size in value]]
    if isinstance(value, (list, tuple)):
        return ['L' if isinstance(value, list) else 'U',
                [encode(item, tensor_index) for item in value]]
    if isinstance(value, slice):
        return ['S', *(encode(bound, tensor_index) for bound in
                       (value.start, value.stop, value.step))]
    if value is Ellipsis:
        return ['E']
    if isinstance(value, torch.memory_format):
        return ['M', next(k for k, v in MEMORY_FORMATS.items() if v == value)]
    if hasattr(value, '__index__') and not isinstance(value, torch.Tensor):
        return int(value.__index__())  # numpy integers
    if hasattr(value, 'dtype') and getattr(value, 'shape', None) == ():
        return value.item()  # numpy scalars
    raise TypeError(f'GT cannot pass a {type(value).__name__} to a torch function '
                    f'(tensors, numbers, strings, dtypes, slices and lists of them pass)')


def takes_host_indices(args: list, kwargs: dict) -> bool:
    """Whether a call's arguments hold host indices: compilers trace such a call's reads
    of them as data-dependent sizes (torch.export refuses torch's packed LSTM)."""
    def holds(item: Any) -> bool:
        if isinstance(item, dict):
            return any(holds(value) for value in item.values())
        if not isinstance(item, (list, tuple)) or not item:
            return False
        return item[0] == 'H' or (item[0] in ('L', 'U') and any(holds(x) for x in item[1]))
    return any(holds(item) for item in args) or holds(kwargs)


def is_tensor_input(item: Any) -> bool:
    """Whether a wire item is ['T', k], a reference to the k-th tensor input."""
    return isinstance(item, (list, tuple)) and len(item) == 2 and item[0] == 'T'


def decode(item: Any, tensors: list) -> Any:
    if not isinstance(item, (list, tuple)):
        return item
    tag = item[0]
    if tag == 'T':
        return tensors[item[1]]
    if tag == 'L':
        return [decode(x, tensors) for x in item[1]]
    if tag == 'U':
        return tuple(decode(x, tensors) for x in item[1])
    if tag == 'D':
        return TORCH_DTYPES[item[1]]
    if tag == 'S':
        return slice(*(decode(x, tensors) for x in item[1:]))
    if tag == 'E':
        return Ellipsis
    if tag == 'M':
        return MEMORY_FORMATS[item[1]]
    if tag == 'H':
        return torch.tensor(item[1], dtype=torch.int64)
    raise ValueError(f'torch_call: unknown argument tag {tag!r}')


def decode_call(args: list, kwargs: dict, tensors: list) -> tuple[list, dict]:
    return ([decode(item, tensors) for item in args],
            {key: decode(item, tensors) for key, item in kwargs.items()})


def check_wire(item: Any, n_tensors: int) -> None:
    """Refuse a malformed argument (from a socket) with a ValueError that names it."""
    if item is None or isinstance(item, (bool, int, float, str)):
        return
    if isinstance(item, dict):
        for key, value in item.items():
            if not isinstance(key, str):
                raise ValueError(f'torch_call: keyword {key!r} is not a string')
            check_wire(value, n_tensors)
        return
    if not isinstance(item, (list, tuple)) or not item:
        raise ValueError(f'torch_call: malformed argument {item!r}')
    tag = item[0]
    if tag == 'T':
        if len(item) != 2 or not isinstance(item[1], int) or not 0 <= item[1] < n_tensors:
            raise ValueError(f'torch_call: argument {item!r} names no tensor input')
    elif tag in ('L', 'U'):
        if len(item) != 2 or not isinstance(item[1], (list, tuple)):
            raise ValueError(f'torch_call: malformed argument {item!r}')
        for x in item[1]:
            check_wire(x, n_tensors)
    elif tag == 'D':
        if len(item) != 2 or item[1] not in TORCH_DTYPES:
            raise ValueError(f'torch_call: unknown dtype in {item!r}')
    elif tag == 'S':
        if len(item) != 4:
            raise ValueError(f'torch_call: malformed slice {item!r}')
        for x in item[1:]:
            check_wire(x, n_tensors)
    elif tag == 'M':
        if len(item) != 2 or item[1] not in MEMORY_FORMATS:
            raise ValueError(f'torch_call: unknown memory format in {item!r}')
    elif tag == 'H':
        if (len(item) != 2 or not isinstance(item[1], (list, tuple))
                or not all(type(x) is int for x in item[1])):
            raise ValueError(f'torch_call: host indices must be a list of integers, not '
                             f'{item!r}')
    elif tag != 'E' or len(item) != 1:
        raise ValueError(f'torch_call: unknown argument tag in {item!r}')


def frozen(item: Any) -> Any:
    """A hashable form of wire data, for memo keys."""
    if isinstance(item, dict):
        return tuple(sorted((key, frozen(value)) for key, value in item.items()))
    if isinstance(item, (list, tuple)):
        return tuple(frozen(x) for x in item)
    return (type(item), item)


def flatten(result: Any) -> list:
    """The tensors of a result, depth first: what the call's node outputs."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (list, tuple)):
        return [tensor for item in result for tensor in flatten(item)]
    return []


def rebuild(skeleton: Any, outputs: Any) -> Any:
    """`skeleton` (a result computed on meta tensors) with its tensors replaced, in order,
    from the iterator `outputs`; named tuples (`torch.return_types.topk`) keep their type."""
    if isinstance(skeleton, torch.Tensor):
        return next(outputs)
    if isinstance(skeleton, list):
        return [rebuild(item, outputs) for item in skeleton]
    if isinstance(skeleton, tuple):
        items = [rebuild(item, outputs) for item in skeleton]
        return tuple(items) if type(skeleton) is tuple else type(skeleton)(items)
    return skeleton
