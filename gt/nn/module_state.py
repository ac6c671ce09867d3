"""Saving and loading a Module's state as torch.nn does: `state_dict()` and
`load_state_dict()` walk the modules, each through `_save_to_state_dict` and
`_load_from_state_dict` (which libraries override to rename old keys), with torch's
state-dict hooks, `get_extra_state`/`set_extra_state`, `_metadata` versions and `assign`.

Two things differ, both for the cluster:
- state_dict's values are fetched in one round trip at the end of the outermost call,
  so post-hooks see the GT tensors (as with `keep_vars=True`) and the caller gets CPU
  torch tensors that alias the model (gt/snapshot.py).
- load_state_dict checks every module before it copies anything: an error leaves the
  model as it was, where torch has copied the entries before the one that failed.
  Load post-hooks run before the copies, so they can still excuse missing keys.
"""

import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Mapping

import numpy as np
import torch

from gt.autograd import no_grad
from gt.nn.parameter import Parameter
from gt.runtime import client as connection
from gt.snapshot import snapshot
from gt.tensor import Tensor

EXTRA_STATE = '_extra_state'

_saving_depth = 0
_pending_loads: list | None = None  # (module, name, target, value) while loading


class IncompatibleKeys(namedtuple('IncompatibleKeys', ['missing_keys', 'unexpected_keys'])):
    """What load_state_dict returns; printed as torch prints its own."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return '<All keys matched successfully>'
        return (f'_IncompatibleKeys(missing_keys={self.missing_keys!r}, '
                f'unexpected_keys={self.unexpected_keys!r})')

    __str__ = __repr__


# ---- saving ------------------------------------------------------------------------------
def state_dict(module: Any, args: tuple, destination: Any, prefix: str,
               keep_vars: bool) -> Any:
    global _saving_depth
    if args:
        warnings.warn('Positional args are being deprecated, use kwargs instead. Refer to '
                      'https://pytorch.org/docs/main/generated/torch.nn.Module.html'
                      '#torch.nn.Module.state_dict for details.', FutureWarning, stacklevel=3)
        destination, prefix, keep_vars = (*args, prefix, keep_vars)[:3] if len(args) == 1 \
            else (*args, keep_vars)[:3]
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    _saving_depth += 1
    try:
        destination = _save(module, destination, prefix, keep_vars)
    finally:
        _saving_depth -= 1
    if not keep_vars and not _saving_depth:
        _fetch_values(destination)
    return destination


def _save(module: Any, destination: Any, prefix: str, keep_vars: bool) -> Any:
    for hook in list(module._state_dict_pre_hooks.values()):
        hook(module, prefix, keep_vars)
    local_metadata = {'version': module._version}
    if hasattr(destination, '_metadata'):
        destination._metadata[prefix[:-1]] = local_metadata
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=f'{prefix}{name}.',
                             keep_vars=keep_vars)
    for hook, public in list(module._state_dict_hooks.values()):
        result = hook(module, destination, prefix, local_metadata)
        if public and result is not None:
            raise RuntimeError('state_dict post-hook must return None')
        if result is not None:
            destination = result
    return destination


def save_own(module: Any, destination: Any, prefix: str, keep_vars: bool) -> None:
    """This module's parameters, persistent buffers and extra state (not its children's)."""
    for name, tensor in module._parameters.items():
        if tensor is not None:
            destination[prefix + name] = tensor
    for name, tensor in module._buffers.items():
        if tensor is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = tensor
    if _defines(module, 'get_extra_state'):
        destination[prefix + EXTRA_STATE] = module.get_extra_state()


def _fetch_values(destination: Any) -> None:
    """Every GT tensor in `destination` becomes its value, one round trip for all."""
    names = [name for name, value in destination.items() if isinstance(value, Tensor)]
    if not names:
        return
    tensors = [destination[name] for name in names]
    values = connection.current().fetch([tensor._id for tensor in tensors])
    for name, tensor, value in zip(names, tensors, values):
        destination[name] = snapshot(value, tensor, hold=False)


def _defines(module: Any, method: str) -> bool:
    from gt.nn.module import Module

    return getattr(type(module), method) is not getattr(Module, method)


# ---- loading -----------------------------------------------------------------------------
def load_state_dict(module: Any, state: Mapping, strict: bool, assign: bool) -> IncompatibleKeys:
    global _pending_loads
    if not isinstance(state, Mapping):
        raise TypeError(f'Expected state_dict to be dict-like, got {type(state)}.')
    metadata = getattr(state, '_metadata', None)
    state = OrderedDict(state)
    if metadata is not None:
        state._metadata = metadata
    missing: list = []
    unexpected: list = []
    errors: list = []
    loaded: list = []  # modules in the order torch runs their post-hooks
    outer, _pending_loads = _pending_loads, []
    try:
        _load(module, state, '', metadata, assign, (missing, unexpected, errors), loaded)
        pending = _pending_loads
    finally:
        _pending_loads = outer
    keys = IncompatibleKeys(missing, unexpected)
    for each in loaded:
        for hook in list(each._load_state_dict_post_hooks.values()):
            if hook(each, keys) is not None:
                raise RuntimeError('load_state_dict post-hook must return None')
    if strict:
        if unexpected:
            errors.insert(0, 'Unexpected key(s) in state_dict: '
                          + ', '.join(f'"{key}"' for key in unexpected) + '. ')
        if missing:
            errors.insert(0, 'Missing key(s) in state_dict: '
                          + ', '.join(f'"{key}"' for key in missing) + '. ')
    if errors:
        raise RuntimeError(f'Error(s) in loading state_dict for {type(module).__name__}:\n\t'
                           + '\n\t'.join(errors))
    _copy(pending)
    return keys


def _load(module: Any, state: dict, prefix: str, metadata: Any, assign: bool,
          problems: tuple, loaded: list) -> None:
    local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
    if assign:
        local_metadata['assign_to_params_buffers'] = True
    module._load_from_state_dict(state, prefix, local_metadata, True, *problems)
    for name, child in module._modules.items():
        if child is not None:
            child_prefix = f'{prefix}{name}.'
            child_state = {key: value for key, value in state.items()
                           if key.startswith(child_prefix)}
            _load(child, child_state, child_prefix, metadata, assign, problems, loaded)
    loaded.append(module)


def load_own(module: Any, state: dict, prefix: str, local_metadata: dict, strict: bool,
             missing: list, unexpected: list, errors: list) -> None:
    """torch's `_load_from_state_dict`: check this module's entries, and queue their
    copies (made once every module has been checked)."""
    for hook, with_module in list(module._load_state_dict_pre_hooks.values()):
        arguments = (state, prefix, local_metadata, strict, missing, unexpected, errors)
        hook(module, *arguments) if with_module else hook(*arguments)
    own = {name: tensor for name, tensor in module._parameters.items() if tensor is not None}
    own.update((name, tensor) for name, tensor in module._buffers.items()
               if tensor is not None and name not in module._non_persistent_buffers_set)
    for name, target in own.items():
        key = prefix + name
        if key not in state:
            if strict:
                missing.append(key)
            continue
        value = state[key]
        if not isinstance(value, (Tensor, torch.Tensor, np.ndarray)):
            errors.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                          f'or Tensor-like object from checkpoint but received {type(value)}')
            continue
        if target.ndim == 0 and np.ndim(value) == 1:
            value = value[0]  # a 0-d entry saved by torch 0.3 as 1-d
        if tuple(np.shape(value)) != tuple(target.shape):
            errors.append(f'size mismatch for {key}: copying a param with shape '
                          f'{torch.Size(np.shape(value))} from checkpoint, the shape in '
                          f'current model is {target.shape}.')
            continue
        queue = _pending_loads if _pending_loads is not None else []
        queue.append((module, name, target, value, local_metadata.get(
            'assign_to_params_buffers', False)))
        if _pending_loads is None:
            _copy(queue)
    extra = prefix + EXTRA_STATE
    if _defines(module, 'set_extra_state'):
        if extra in state:
            module.set_extra_state(state[extra])
        elif strict:
            missing.append(extra)
    elif strict and extra in state:
        unexpected.append(extra)
    if strict:
        for key in state:
            if key.startswith(prefix) and key != extra:
                head, dot, _ = key[len(prefix):].partition('.')
                if (dot and head not in module._modules) or (not dot and head not in own):
                    unexpected.append(key)


def _copy(pending: list) -> None:
    from gt.creation import tensor as make_tensor

    with no_grad():
        for module, name, target, value, assign in pending:
            if assign:
                value = value if isinstance(value, Tensor) else make_tensor(value)
                if isinstance(target, Parameter) and not isinstance(value, Parameter):
                    value = Parameter(value, requires_grad=target.requires_grad)
                setattr(module, name, value)
                continue
            if not isinstance(value, Tensor):
                value = make_tensor(value, dtype=target.dtype)
            target.copy_(value)  # keeps the parameter's placement
