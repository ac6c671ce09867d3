"""Containers: `Sequential` chains modules; `ModuleList` and `ModuleDict` hold them, and
`ParameterList` and `ParameterDict` hold parameters, for the user's forward. Entries are
registered under their positions ('0', '1', ...) or keys, as torch names them, so state
dicts move between GT and torch models."""

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Iterable, Iterator

import torch

from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


class _Positional(Module):
    """What Sequential and ModuleList share, as torch has it: entries by position, which
    insert, delete and pop renumber ('0', '1', ...)."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def _key(self, index: int) -> str:
        if not -len(self) <= index < len(self):
            raise IndexError(f'index {index} is out of range')
        return list(self._modules)[index]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(self._key(index), module)

    def __delitem__(self, index: int | slice) -> None:
        doomed = list(self._modules)[index] if isinstance(index, slice) else [self._key(index)]
        for key in doomed:
            del self._modules[key]
        self._renumber(list(self._modules.values()))

    def _renumber(self, modules: list) -> None:
        self._modules.clear()
        for position, module in enumerate(modules):
            self.add_module(str(position), module)

    def append(self, module: Module) -> '_Positional':
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> '_Positional':
        for module in modules:
            self.append(module)
        return self

    def __iadd__(self, modules: Iterable[Module]) -> '_Positional':
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> '_Positional':
        return type(self)([*self, *other])

    def insert(self, index: int, module: Module) -> None:
        if not isinstance(module, Module):
            raise AssertionError(f'module should be of type: {Module}')
        modules = list(self._modules.values())
        if not -len(modules) <= index <= len(modules):
            raise IndexError(f'Index out of range: {index}')
        modules.insert(index, module)
        self._renumber(modules)

    def pop(self, index: int | slice = -1) -> Any:
        popped = self[index]
        del self[index]
        return popped


class Sequential(_Positional):
    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(modules):
                self.add_module(str(index), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index: int | slice) -> Module:
        modules = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(modules[index]))
        return modules[index][1]

    def insert(self, index: int, module: Module) -> 'Sequential':
        super().insert(index, module)
        return self

    def __add__(self, other: Iterable[Module]) -> 'Sequential':
        return Sequential(*self, *other)


class ModuleList(_Positional):
    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for module in modules:
            self.append(module)

    def __repr__(self) -> str:
        """As torch prints it: a run of equal entries on one line, `(0-5): 6 x Block(...)`."""
        runs: list[list] = []  # [first index, last index, repr]
        for index, module in enumerate(self._modules.values()):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        name = type(self).__name__
        if not runs:
            return f'{name}()'
        lines = [(f'({first}): ' if first == last else f'({first}-{last}): {last - first + 1} x ')
                 + text.replace('\n', '\n  ') for first, last, text in runs]
        return f'{name}(\n  ' + '\n  '.join(lines) + '\n)'

    def __getitem__(self, index: int | slice) -> Any:
        modules = list(self._modules.values())
        return ModuleList(modules[index]) if isinstance(index, slice) else modules[index]


class ModuleDict(Module):
    """Modules by name, in insertion order; no forward of its own."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        for key, module in _pairs(modules, 'ModuleDict', sort_plain_dicts=False):
            self[key] = module


class ParameterList(Module):
    """Parameters by position; tensors put in are made Parameters, as in torch."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _key(self, index: int) -> str:
        if not -len(self) <= index < len(self):
            raise IndexError(f'index {index} is out of range')
        return str(index % len(self))

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ParameterList(self[i] for i in range(*index.indices(len(self))))
        return getattr(self, self._key(index))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, self._key(index), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> 'ParameterList':
        return self.extend(values)

    def append(self, value: Any) -> 'ParameterList':
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> 'ParameterList':
        if not isinstance(values, Iterable) or isinstance(values, (Tensor, torch.Tensor)):
            raise TypeError('ParameterList.extend should be called with an iterable, but got '
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return '\n'.join(_entry_line(str(i), value, typename=False)
                         for i, value in enumerate(self))


    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError('ParameterList should not be called.')


class ParameterDict(Module):
    """Parameters by string key, in insertion order (a plain dict's keys are sorted first,
    as torch sorts them); tensors put in are made Parameters."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, _string_key(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, _string_key(key), _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, _string_key(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> 'ParameterDict':
        return ParameterDict(OrderedDict((key, self[key]) for key in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> 'ParameterDict':
        return ParameterDict((key, default) for key in keys)

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((key, self[key]) for key in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[key] for key in self._keys)

    def update(self, parameters: Any) -> None:
        for key, value in _pairs(parameters, 'ParameterDict', sort_plain_dicts=True):
            self[key] = value

    def __or__(self, other: 'ParameterDict') -> 'ParameterDict':
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: 'ParameterDict') -> 'ParameterDict':
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: 'ParameterDict') -> 'ParameterDict':
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return '\n'.join(_entry_line(key, value, typename=True) for key, value in self.items())


    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError('ParameterDict should not be called.')


def _pairs(entries: Any, kind: str, sort_plain_dicts: bool) -> Iterator[tuple[Any, Any]]:
    """(key, value) pairs of a mapping or of an iterable of pairs, checked as torch does."""
    if not isinstance(entries, Iterable):
        raise TypeError(f'{kind}.update should be called with an iterable of key/value '
                        f'pairs, but got {type(entries).__name__}')
    if isinstance(entries, (OrderedDict, ModuleDict, ParameterDict)):
        yield from entries.items()
    elif isinstance(entries, Mapping):
        yield from sorted(entries.items()) if sort_plain_dicts else entries.items()
    else:
        for index, pair in enumerate(entries):
            if not isinstance(pair, Iterable):
                raise TypeError(f'{kind} update sequence element #{index} should be Iterable; '
                                f'is{type(pair).__name__}')
            if len(pair) != 2:
                raise ValueError(f'{kind} update sequence element #{index} has length '
                                 f'{len(pair)}; 2 is required')
            yield pair[0], pair[1]


def _string_key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError('Index given to ParameterDict cannot be used as a key as it is not a '
                        f"string (type is '{type(key).__name__}'). Open an issue on github if "
                        'you need non-string keys.')
    return key


def _as_parameter(value: Any) -> Any:
    """A tensor (GT or torch) that is not a Parameter becomes one; others stay as they are."""
    if isinstance(value, (Tensor, torch.Tensor)) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _entry_line(key: str, value: Any, typename: bool) -> str:
    """One entry of torch's ParameterList/ParameterDict repr. The two differ in torch:
    the list shows the dtype (torch.float32), the dict the type name (torch.FloatTensor)."""
    if not isinstance(value, (Tensor, torch.Tensor)):
        return f'  ({key}): Object of type: {type(value).__name__}'
    kind = 'Parameter' if isinstance(value, Parameter) else 'Tensor'
    dtype = torch.typename(torch.empty(0, dtype=value.dtype)) if typename else value.dtype
    size = 'x'.join(str(size) for size in value.shape)
    return f'  ({key}): {kind} containing: [{dtype} of size {size}]'
