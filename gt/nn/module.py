"""`Module`, with torch.nn's semantics: parameters and submodules are registered by
assigning them as attributes, named with torch's dotted names, and saved and loaded
through `state_dict()`, which holds torch tensors, so weights move both ways between GT
and PyTorch models.
"""

import itertools
from collections import OrderedDict
from typing import Any, Iterator

import torch

from gt import fallback, serialization
from gt.autograd import no_grad
from gt.nn import module_hooks, module_state
from gt.nn.module_casts import CastMethods
from gt.nn.module_hooks import (
    GLOBAL_BACKWARD,
    GLOBAL_BACKWARD_PRE,
    GLOBAL_FORWARD,
    GLOBAL_FORWARD_PRE,
)
from gt.nn.parameter import Buffer, Parameter, Parameters
from gt.tensor import Tensor

REGISTRIES = ('_parameters', '_buffers', '_modules')


class Module(CastMethods):
    """Base class of models: subclasses assign layers and Parameters in `__init__` (after
    `super().__init__()`) and define `forward`."""

    training: bool
    # Hooks (gt/nn/module_hooks.py), in torch's registries: an empty one is falsy, so a
    # module without hooks pays one check per call. None for a module whose __init__ did
    # not run (a subclass that forgot super().__init__(), raising when it registers).
    _forward_pre_hooks: OrderedDict | None = None
    _forward_hooks: OrderedDict | None = None
    _backward_hooks: OrderedDict | None = None
    _backward_pre_hooks: OrderedDict | None = None
    _version = 1  # saved in state_dict's _metadata, for a class's old-checkpoint loading

    def __init__(self) -> None:
        object.__setattr__(self, '_parameters', OrderedDict())
        object.__setattr__(self, '_buffers', OrderedDict())
        object.__setattr__(self, '_non_persistent_buffers_set', set())  # torch's name
        object.__setattr__(self, '_modules', OrderedDict())
        object.__setattr__(self, 'training', True)
        for registry in module_hooks.REGISTRIES:
            object.__setattr__(self, registry, OrderedDict())

    def __setstate__(self, state: dict) -> None:
        """A module saved whole (`gt.save(model)`) by a GT without some hook registry
        gets it empty, as torch's `__setstate__` does for its own; unpickled, its tensors
        are GT tensors again."""
        self.__dict__.update(state)
        for registry in module_hooks.REGISTRIES:
            self.__dict__.setdefault(registry, OrderedDict())
        serialization.adopt_loaded_tensors(self)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'{type(self).__name__} does not define forward()')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # A batch a DataLoader collated from numpy arrays is torch's: it joins GT as data,
        # as a torch tensor meeting a GT one does, passed by position or by name.
        args = fallback.gt_operands(*args)
        if kwargs:
            kwargs = dict(zip(kwargs, fallback.gt_operands(*kwargs.values())))
        if self._forward_pre_hooks or self._forward_hooks or self._backward_hooks \
                or self._backward_pre_hooks or GLOBAL_FORWARD_PRE or GLOBAL_FORWARD \
                or GLOBAL_BACKWARD or GLOBAL_BACKWARD_PRE:
            return module_hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def register_forward_pre_hook(self, hook: Any, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> Any:
        """`hook(module, args)` before forward (with_kwargs: `hook(module, args, kwargs)`);
        what it returns, if not None, replaces the arguments."""
        return module_hooks.add_hook(self, '_forward_pre_hooks', hook, prepend,
                                     ('_forward_pre_hooks_with_kwargs',) if with_kwargs else ())

    def register_forward_hook(self, hook: Any, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False) -> Any:
        """`hook(module, args, output)` after forward; a result not None replaces output.
        `always_call`: also when forward raises (output None), as torch's."""
        flags = (('_forward_hooks_with_kwargs',) if with_kwargs else ()) + \
            (('_forward_hooks_always_called',) if always_call else ())
        return module_hooks.add_hook(self, '_forward_hooks', hook, prepend, flags)

    def register_full_backward_hook(self, hook: Any, prepend: bool = False) -> Any:
        """`hook(module, grad_input, grad_output)` once the input's gradient is known; a
        result not None replaces grad_input."""
        return module_hooks.add_hook(self, '_backward_hooks', hook, prepend)

    def register_full_backward_pre_hook(self, hook: Any, prepend: bool = False) -> Any:
        """`hook(module, grad_output)` once the output's gradient is known, before the
        module's backward; a result not None replaces grad_output."""
        return module_hooks.add_hook(self, '_backward_pre_hooks', hook, prepend)

    def get_submodule(self, target: str) -> 'Module':
        module = self
        for name in target.split('.') if target else ():
            if name not in module._modules:
                raise AttributeError(f'{type(module).__name__} has no attribute `{name}`')
            module = module._modules[name]
        return module

    def get_parameter(self, target: str) -> Tensor:
        return self._get_entry(target, '_parameters', 'an nn.Parameter')

    def get_buffer(self, target: str) -> Tensor:
        return self._get_entry(target, '_buffers', 'a buffer')

    def _get_entry(self, target: str, registry: str, kind: str) -> Tensor:
        path, _, name = target.rpartition('.')
        module = self.get_submodule(path)
        if name in getattr(module, registry):
            return getattr(module, registry)[name]
        if not hasattr(module, name):
            raise AttributeError(f'{type(module).__name__} has no attribute `{name}`')
        raise AttributeError(f'`{name}` is not {kind}')

    # ---- registration --------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if name == '_parameters' and name in self.__dict__ and self._lists_own(value):
            return  # the seeds' `self._parameters = fc1.parameters() + fc2.parameters()`
        if name in REGISTRIES and name in self.__dict__:
            raise TypeError(f'{name} is where the module registers its own entries (assigning '
                            f'them as attributes does it); a child module\'s are found '
                            f'through it already, so there is nothing to assign')
        _refuse_torchs(name, value)
        registries = self.__dict__.get('_parameters'), self.__dict__.get('_modules')
        if isinstance(value, (Parameter, Module)) and None in registries:
            raise AttributeError(f'cannot assign {type(value).__name__} {name!r} before '
                                 f'Module.__init__() is called (call super().__init__() first)')
        parameters, modules = registries
        if isinstance(value, Parameter):
            if isinstance(getattr(type(self), name, None), property):  # parametrized
                raise KeyError(f"attribute '{name}' already exists")
            self._forget(name, keep='_parameters')  # a name keeps its place, as in torch
            parameters[name] = value
        elif parameters is not None and name in parameters:
            if value is not None:
                raise TypeError(f'cannot assign {type(value).__name__} as parameter {name!r} '
                                '(gt.nn.Parameter or None expected)')
            parameters[name] = None
        elif isinstance(value, Module):
            self._forget(name, keep='_modules')
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f'cannot assign {type(value).__name__} as child module '
                                f'{name!r} (gt.nn.Module or None expected)')
            modules[name] = None
        elif isinstance(value, Buffer):
            self.register_buffer(name, value, value.persistent)
        elif name in self.__dict__.get('_buffers', ()):
            self._buffers[name] = _as_buffer(name, value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when ordinary lookup fails: registered things live in the registries.
        for registry in ('_parameters', '_buffers', '_modules'):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f'{type(self).__name__!r} object has no attribute {name!r}')

    def __delattr__(self, name: str) -> None:
        if not self._forget(name):
            object.__delattr__(self, name)

    def _forget(self, name: str, keep: str = '') -> bool:
        """Drop `name` wherever it is registered, except in `keep`; whether it was."""
        found = False
        for registry in ('_parameters', '_buffers', '_modules'):
            entries = self.__dict__.get(registry)
            if registry != keep and entries is not None and name in entries:
                del entries[name]
                found = True
                if registry == '_buffers':
                    self._non_persistent_buffers_set.discard(name)
        if name in self.__dict__:
            del self.__dict__[name]
            found = True
        return found

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True
                        ) -> None:
        """A tensor that is part of the state but not a parameter; a persistent one is
        saved in state_dict. torch's checks of the name, in its words."""
        self._check_entry_name('buffer', '_buffers', name)
        self._buffers[name] = _as_buffer(name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def _check_entry_name(self, kind: str, registry: str, name: Any) -> None:
        """torch's checks of a buffer's or parameter's name, in its words."""
        if registry not in self.__dict__:
            raise AttributeError(f'cannot assign {kind} before Module.__init__() call')
        if not isinstance(name, str):
            raise TypeError(f'{kind} name should be a string. Got {type(name).__name__}')
        if '.' in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == '':
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[registry]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, parameter: Parameter | None) -> None:
        """torch's checks of the name, in its words: a dotted one would break state_dict's
        keys, and `training` would be replaced."""
        self._check_entry_name('parameter', '_parameters', name)
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f'cannot assign {type(parameter).__name__} as parameter {name!r} '
                            '(gt.nn.Parameter or None expected)')
        self._forget(name, keep='_parameters')
        self._parameters[name] = parameter

    def add_module(self, name: str, module: 'Module | None') -> None:
        """torch's checks of the name too: a dotted one would break state_dict's keys."""
        _refuse_torchs(name, module)
        if module is not None and not isinstance(module, Module):
            kind = type(module).__name__
            raise TypeError(f'torch.nn.{kind} is torch\'s module, not GT\'s: use gt.nn.{kind}'
                            if isinstance(module, torch.nn.Module) else
                            f'{kind} is not a Module subclass')
        if not isinstance(name, str):
            raise TypeError(f'module name should be a string. Got {type(name).__name__}')
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if '.' in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == '':
            raise KeyError('module name can\'t be empty string ""')
        self._forget(name, keep='_modules')
        self._modules[name] = module

    register_module = add_module

    # ---- traversal -----------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = '',
                      remove_duplicate: bool = True) -> Iterator[tuple[str, 'Module']]:
        """torch's order of arguments; a module reached twice is given once unless
        `remove_duplicate` is False."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f'{prefix}.{name}' if prefix else name,
                                                remove_duplicate)

    def modules(self) -> Iterator['Module']:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, 'Module']]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator['Module']:
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        # Tensors compare elementwise, so duplicates are found by identity.
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, member in module.__dict__[registry].items():
                if member is None or (remove_duplicate and id(member) in seen):
                    continue
                seen.add(id(member))
                yield (f'{module_prefix}.{name}' if module_prefix else name), member

    def named_parameters(self, prefix: str = '', recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members('_parameters', prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        return Parameters(
            parameter for _, parameter in self.named_parameters(recurse=recurse))

    def _lists_own(self, value: Any) -> bool:
        """Whether `value` is a list or tuple of this module's parameters, all of them
        found through its children already: the seeds' modules declared theirs so, and
        assigning it changes nothing."""
        if not isinstance(value, (list, tuple)) or not value:
            return False
        own = {id(parameter) for parameter in self.parameters()}
        return all(isinstance(item, Parameter) and id(item) in own for item in value)

    def named_buffers(self, prefix: str = '', recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members('_buffers', prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # ---- modes and gradients -------------------------------------------------------------
    def train(self, mode: bool = True) -> 'Module':
        """Sets this module's flag and calls each child's `train`, as torch does, so a
        child's own override runs (a backbone that keeps its batch norms in eval)."""
        if not isinstance(mode, bool):
            raise ValueError('training mode is expected to be boolean')
        object.__setattr__(self, 'training', mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> 'Module':
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for parameter in self.parameters():
            if parameter._grad is None:
                continue
            if set_to_none:
                parameter.grad = None
            else:
                zero_grad_in_place(parameter)

    def requires_grad_(self, requires_grad: bool = True) -> 'Module':
        for parameter in self.parameters():
            parameter.requires_grad_(requires_grad)
        return self

    def apply(self, function: Any) -> 'Module':
        for module in self.children():
            module.apply(function)
        function(self)
        return self

    # ---- saving and loading (gt/nn/module_state.py) -------------------------------------
    def state_dict(self, *args: Any, destination: Any = None, prefix: str = '',
                   keep_vars: bool = False) -> 'OrderedDict[str, Any]':
        """Parameters, persistent buffers and extra state by dotted name, as CPU torch
        tensors fetched in one round trip (the gt tensors themselves with `keep_vars`).
        Each is its tensor's `.data` (gt/snapshot.py): torch's alias its parameters, and a
        moving average written into them (`v.copy_(w)`) must reach the model."""
        return module_state.state_dict(self, args, destination, prefix, keep_vars)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        module_state.save_own(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: Any, strict: bool = True,
                        assign: bool = False) -> module_state.IncompatibleKeys:
        """Copy values (torch tensors, numpy arrays or gt tensors) into the parameters and
        buffers of the same names, as torch does, after checking every name and shape;
        `assign` makes the given tensors the module's own."""
        return module_state.load_state_dict(self, state_dict, strict, assign)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        module_state.load_own(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs)

    def get_extra_state(self) -> Any:
        """Overridden to save state that is not a tensor under `<prefix>_extra_state`."""
        raise RuntimeError('Reached a code path in Module.get_extra_state() that should never '
                           'be called: a module that saves extra state overrides it.')

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError('Reached a code path in Module.set_extra_state() that should never '
                           'be called: a module that saves extra state overrides it.')

    def register_state_dict_pre_hook(self, hook: Any) -> Any:
        """`hook(module, prefix, keep_vars)` before the module saves its entries."""
        return module_hooks.add_hook(self, '_state_dict_pre_hooks', hook)

    def register_state_dict_post_hook(self, hook: Any) -> Any:
        """`hook(module, state_dict, prefix, local_metadata)`, which may change the dict."""
        return module_hooks.add_hook(self, '_state_dict_hooks', (hook, True))

    def _register_state_dict_hook(self, hook: Any) -> Any:
        """As the post hook, but what it returns, if not None, replaces the dict."""
        return module_hooks.add_hook(self, '_state_dict_hooks', (hook, False))

    def register_load_state_dict_pre_hook(self, hook: Any) -> Any:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before the module loads, to rename keys."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Any, with_module: bool = False) -> Any:
        return module_hooks.add_hook(self, '_load_state_dict_pre_hooks', (hook, with_module))

    def register_load_state_dict_post_hook(self, hook: Any) -> Any:
        """`hook(module, incompatible_keys)` after loading; it may excuse keys by removing
        them from the lists."""
        return module_hooks.add_hook(self, '_load_state_dict_post_hooks', hook)

    # ---- printing ------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ''

    def __repr__(self) -> str:
        """torch's layout: a one-line extra_repr beside the name; a longer one, and each
        child, on lines of their own."""
        extra = self.extra_repr()
        extra_lines = extra.split('\n') if extra else []
        child_lines = [f'({name}): ' + repr(child).replace('\n', '\n  ')
                       for name, child in self._modules.items()]
        name = type(self).__name__
        if len(extra_lines) == 1 and not child_lines:
            return f'{name}({extra_lines[0]})'
        lines = extra_lines + child_lines
        return f'{name}(\n  ' + '\n  '.join(lines) + '\n)' if lines else f'{name}()'


def zero_grad_in_place(parameter: Tensor) -> None:
    """`zero_grad(set_to_none=False)` as torch's: a gradient with history (made under
    create_graph) is detached first, so the zeros do not keep that history."""
    gradient = parameter._grad
    if gradient.grad_fn is not None:
        gradient.detach_()
    else:
        gradient.requires_grad_(False)
    with no_grad():
        gradient.zero_()


def _as_buffer(name: str, value: Any) -> Tensor | None:
    """A buffer's value: a GT tensor, or a torch tensor (PixelCNN's mask from
    `weight.data.clone()`, a numpy-built table) copied into one."""
    if isinstance(value, Tensor):
        # a failed step made in the same message goes back to it (gt.runtime.reverts)
        value._client.reverts.state(value._id)
        return value
    if value is None:
        return value
    if isinstance(value, torch.Tensor):
        from gt.creation import tensor

        return tensor(value.detach())
    raise TypeError(f'cannot assign {type(value).__name__} as buffer {name!r} '
                    '(gt.Tensor or None expected)')


def _refuse_torchs(name: str, value: Any) -> None:
    """A torch.nn layer with weights, or a torch Parameter, left in a half-ported model
    would run but never train: GT's parameters(), state_dict and optimizers do not see
    torch's. (A torch module without any, torchvision's Normalize say, is a plain
    attribute, as before.)"""
    if isinstance(value, torch.nn.Parameter) or (
            isinstance(value, torch.nn.Module) and
            any(True for _ in itertools.chain(value.parameters(), value.buffers()))):
        kind = type(value).__name__
        raise TypeError(f'cannot assign torch.nn.{kind} {name!r} to a GT module: its tensors '
                        f"are torch's, which GT's parameters(), state_dict and optimizers do "
                        f'not see; use gt.nn.{kind} (import gt.nn as nn)')
