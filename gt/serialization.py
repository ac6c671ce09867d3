"""`gt.save` and `gt.load` in torch's file format: `save` writes what `torch.load` opens
(GT tensors become CPU torch tensors, fetched together in one round trip), `load`
reads any `torch.save` file and makes its tensors GT tensors again, dtypes kept.
"""

import copy
import os
import weakref
from typing import IO, Any, Callable

import torch

# torch's allow-list for `weights_only` loads, which gt.load's torch.load reads: a
# script lists its model's classes (`with torch.serialization.safe_globals([...])`).
from torch.serialization import (  # noqa: F401 (torch's place for them)
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

from gt.runtime import client as connection
from gt.tensor import Tensor

FileLike = str | os.PathLike | IO[bytes]


def save(obj: Any, f: FileLike, **torch_save_args: Any) -> None:
    """Save `obj` (tensors in dicts, lists and tuples, with numbers and strings) as
    `torch.save` would: GT tensors are written as CPU torch tensors, so the file is a
    torch file. A tensor that appears twice is stored once, and loads as one tensor. A
    whole module is pickled as torch pickles one (its class by name, its tensors as
    torch tensors): `load(f, weights_only=False)` gives it back, as torch's does."""
    tensors: dict[int, Tensor] = {}
    _walk(obj, lambda tensor: tensors.setdefault(id(tensor), tensor))
    fetched = {}
    if tensors:
        values = connection.current().fetch([tensor._id for tensor in tensors.values()])
        for key, tensor, value in zip(tensors, tensors.values(), values):
            fetched[key] = _as_saved(tensor, value)
    torch.save(_walk(obj, lambda tensor: fetched[id(tensor)]), f, **torch_save_args)


def _as_saved(tensor: Tensor, value: torch.Tensor) -> torch.Tensor:
    """What torch would have saved for `tensor`: a Parameter for a Parameter, and
    requires_grad kept."""
    from gt.nn.parameter import Parameter

    if isinstance(tensor, Parameter):
        return torch.nn.Parameter(value, requires_grad=tensor.requires_grad)
    return value.requires_grad_() if tensor.requires_grad else value


def load(f: FileLike, map_location: Any = None, weights_only: bool = True,
         **torch_load_args: Any) -> Any:
    """Read a `torch.save` file (`weights_only` as torch takes it): its torch tensors
    become GT tensors of the same dtypes (Parameters stay Parameters), sent to the workers
    with the next message. `map_location` is accepted for torch's sake and not needed: the
    file is read onto the CPU and GT places the tensors itself."""
    loaded = torch.load(f, map_location='cpu', weights_only=weights_only, **torch_load_args)
    return _walk(loaded, upload, kind=torch.Tensor)


# Each loaded torch tensor's GT tensor, while the torch tensor lives (by id, with a
# reference that drops the entry: a weak-keyed dict would compare tensors with `==`,
# elementwise): a tensor that appears twice in a file (tied weights) loads as one.
_uploaded: dict[int, tuple[weakref.ref, Tensor]] = {}


def upload(value: torch.Tensor) -> Tensor:
    """A loaded torch tensor as a GT tensor of its dtype (a Parameter stays one)."""
    from gt.creation import tensor as make_tensor
    from gt.nn.parameter import Parameter

    key = id(value)
    held = _uploaded.get(key)
    if held is not None and held[0]() is value:
        return held[1]
    if isinstance(value, torch.nn.Parameter):
        made = Parameter(value.detach(), value.requires_grad)
    else:
        made = make_tensor(value.detach(), requires_grad=value.requires_grad)
    _uploaded[key] = (weakref.ref(value, lambda _: _uploaded.pop(key, None)), made)
    return made


def adopt_loaded_tensors(module: Any) -> None:
    """A GT module unpickled by pickle or torch.load (its tensors were pickled as torch
    tensors): its parameters and buffers become GT tensors again. It kept torch's, and
    its forward ran on the host with nothing for autograd or the optimizer."""
    for registry in ('_parameters', '_buffers'):
        table = module.__dict__.get(registry) or {}
        for name, value in table.items():
            if isinstance(value, torch.Tensor):
                table[name] = upload(value)


def _walk(obj: Any, visit: Callable[[Any], Any], kind: type = Tensor,
          modules: dict | None = None) -> Any:
    """`obj` with each `kind` tensor in it replaced by `visit(tensor)`, containers rebuilt
    with their own types (an OrderedDict stays one, a namedtuple too), and modules too,
    each once (`modules`: by id, what each became)."""
    from gt.nn.module import Module

    modules = {} if modules is None else modules
    if isinstance(obj, kind):
        return visit(obj)
    if isinstance(obj, Module):
        if id(obj) not in modules:
            # A new module of the same class: a saved one must not change the model,
            # and a loaded one is the file's own.
            made = modules[id(obj)] = object.__new__(type(obj))
            object.__setattr__(made, '__dict__', {
                key: _walk(value, visit, kind, modules) for key, value in vars(obj).items()})
        return modules[id(obj)]
    if isinstance(obj, dict):
        # A copy keeps the type and what it carries (a defaultdict's factory, the
        # `_metadata` of torch's state dicts).
        # Each entry assigned: a Counter's `update` counts what it is given (a resumed
        # MultiStepLR's milestones became pairs, and its learning rate never fell).
        rebuilt = copy.copy(obj)
        rebuilt.clear()
        for key, value in obj.items():
            rebuilt[key] = _walk(value, visit, kind, modules)
        return rebuilt
    if isinstance(obj, tuple) and hasattr(obj, '_fields'):
        return type(obj)(*(_walk(item, visit, kind, modules) for item in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_walk(item, visit, kind, modules) for item in obj)
    return obj
