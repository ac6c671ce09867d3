"""torch.nn.utils.parametrize for GT: `register_parametrization(module, 'weight', P)`
makes `module.weight` a property computed as `P(original)` at each access, recorded like
any other ops, so the gradient reaches `module.parametrizations.weight.original`.

As in torch, the module's class is swapped for a subclass made for it alone
(`ParametrizedLinear`) that carries the property; assigning `module.weight = value`
stores `P.right_inverse(value)` in the original; state_dict names are torch's
(`parametrizations.weight.original`, `original0`, `original1`), so checkpoints move both
ways. The original keeps its identity when `right_inverse` changes its value (`set_`), so
an optimizer made before registering still holds it.
"""

from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy
from typing import Any, Iterator

from gt.autograd import no_grad
from gt.nn.containers import ModuleDict, ModuleList
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor

__all__ = ['cached', 'ParametrizationList', 'register_parametrization', 'is_parametrized',
           'remove_parametrizations', 'type_before_parametrizations',
           'transfer_parametrizations_and_params']

_cache_depth = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside, each parametrized tensor is computed once and reused (a weight read at
    every step of an RNN); the values are dropped on leaving the outermost block."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_tensor(module: Module, name: str, tensor: Tensor) -> None:
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _check_result(what: str, result: Any, shape: Any, dtype: Any, unsafe_hint: str) -> None:
    if not isinstance(result, Tensor):
        raise ValueError(f'{what} must return a tensor. Got {type(result).__name__}.')
    if result.dtype != dtype:
        raise ValueError(f'{what} may not change the dtype of the tensor{unsafe_hint}: '
                         f'{dtype} became {result.dtype}')
    if result.shape != shape:
        raise ValueError(f'{what} may not change the shape of the tensor{unsafe_hint}: '
                         f'{shape} became {result.shape}')


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to `original` (or to
    `original0`, `original1`... when the first one's `right_inverse` returns several)."""

    def __init__(self, modules: Sequence[Module], original: Tensor,
                 unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError('ParametrizationList requires one or more modules.')
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for parametrization in reversed(self):
                if hasattr(parametrization, 'right_inverse'):
                    try:
                        new = parametrization.right_inverse(new)
                    except NotImplementedError:
                        pass  # torch's convention: taken as the identity
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f'(list, tuple...). Got {type(new).__name__}')
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != dtype:
                raise ValueError('When `right_inverse` outputs one tensor, it may not change '
                                 f'the dtype: {dtype} became {new.dtype}')
            if new is not original:
                with no_grad():
                    original.set_(new)
            _register_tensor(self, 'original', original)
        else:
            for index, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f'tensors (list, tuple...). Got element {index} of the '
                                     f'sequence with type {type(part).__name__}.')
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_tensor(self, f'original{index}', part)
        if not unsafe:
            _check_result('Registering a parametrization', self(), shape, dtype,
                          ', unless `unsafe` flag is enabled')

    def right_inverse(self, value: Tensor) -> None:
        """`module.weight = value`: the originals become what gives `value` back."""
        with no_grad():
            for parametrization in reversed(self):
                if not hasattr(parametrization, 'right_inverse'):
                    raise RuntimeError(f'parametrization {type(parametrization).__name__} '
                                       'does not implement right_inverse.')
                value = parametrization.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError('`right_inverse` should return a tensor. '
                                     f'Got {type(value).__name__}')
                if value.dtype != self.original.dtype:
                    raise ValueError(f'The tensor returned by `right_inverse` has dtype '
                                     f'{value.dtype} while `original` has dtype '
                                     f'{self.original.dtype}')
                self.original.set_(value)
                return
            if not isinstance(value, Sequence) or len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of "
                                 f'{self.ntensors} tensors. Got {value!r:.80}.')
            for index, part in enumerate(value):
                original = getattr(self, f'original{index}')
                if not isinstance(part, Tensor) or part.dtype != original.dtype:
                    raise ValueError(f'Tensor {index} returned by `right_inverse` must be a '
                                     f'tensor of dtype {original.dtype}; got {part!r:.80}')
                original.set_(part)

    def forward(self) -> Tensor:
        if self.is_tensor:
            value = self[0](self.original)
        else:
            value = self[0](*(getattr(self, f'original{i}') for i in range(self.ntensors)))
        for parametrization in list(self)[1:]:
            value = parametrization(value)
        return value


def _refuse_pickling(module: Module) -> None:
    raise RuntimeError('Serialization of parametrized modules is only supported through '
                       'state_dict() (torch.save(model.state_dict(), path)).')


def _copy_parametrized(module: Module, memo: dict) -> Module:
    """`copy.deepcopy` of a parametrized module (pickling is refused): the copy shares
    the made-up class, which holds no state."""
    if id(module) in memo:
        return memo[id(module)]
    replica = type(module).__new__(type(module))
    memo[id(module)] = replica
    replica.__dict__.update(deepcopy(module.__dict__, memo))
    return replica


def _parametrized_class(module: Module) -> None:
    cls = type(module)
    namespace = {'__getstate__': _refuse_pickling}
    if not hasattr(cls, '__deepcopy__'):
        namespace['__deepcopy__'] = _copy_parametrized
    module.__class__ = type(f'Parametrized{cls.__name__}', (cls,), namespace)


def _add_property(module: Module, tensor_name: str) -> None:
    def compute(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def assign(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(compute, assign))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` be `parametrization(original)`; a second registration
    on the same name applies after the first. `unsafe` allows a change of shape or dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            result = parametrization(current)
            _check_result('Registering a parametrization', result, current.shape,
                          current.dtype, ', unless the `unsafe` flag is enabled')
            if hasattr(parametrization, 'right_inverse'):
                try:
                    inverse = parametrization.right_inverse(result)
                except NotImplementedError:
                    pass
                else:
                    _check_result('parametrization.right_inverse', inverse, current.shape,
                                  current.dtype, ', unless the `unsafe` flag is enabled')
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _parametrized_class(module)
            module.parametrizations = ModuleDict()
        _add_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    parametrizations = getattr(module, 'parametrizations', None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """`tensor_name` is a plain parameter or buffer again: its current parametrized value
    (`leave_parametrized`), or the original's."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f'Module {module} does not have a parametrization on {tensor_name}')
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                original.set_(getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value
    else:
        raise ValueError('Cannot leave unparametrized (`leave_parametrized=False`) a tensor '
                         'that is parametrized in terms of a sequence of tensors.')
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, 'parametrizations')
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before its first parametrization."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Give `to_module` the parametrizations of `from_module` (of every tensor, or of
    `tensor_name`), sharing their original tensors."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if source.is_tensor:
            target.original = source.original
        else:
            for index in range(source.ntensors):
                setattr(target, f'original{index}', getattr(source, f'original{index}'))
    return to_module
