"""torch.nn.utils.prune for GT: pruning a parameter `name` keeps it whole as
`name_orig`, adds a buffer `name_mask` of ones and zeros, and makes `name` the product,
recomputed by a forward pre-hook before each call, so gradients reach `name_orig` only
where the mask keeps it. A second pruning of the same parameter combines with the first
in a `PruningContainer`, pruning only what is left. Masks are computed on the cluster
from GT ops (`topk`, `kthvalue`, norms) and random masks draw from the session's stream,
so they are torch's after the same seed; `remove` makes the pruned value permanent.
"""

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from gt.autograd import no_grad
from gt.creation import ones_like, rand, rand_like, zeros_like
from gt.nn import module_hooks
from gt.nn.module import Module
from gt.nn.utils.convert_parameters import parameters_to_vector
from gt.tensor import Tensor

__all__ = ['BasePruningMethod', 'PruningContainer', 'Identity', 'RandomUnstructured',
           'L1Unstructured', 'RandomStructured', 'LnStructured', 'CustomFromMask',
           'identity', 'random_unstructured', 'l1_unstructured', 'random_structured',
           'ln_structured', 'global_unstructured', 'custom_from_mask', 'remove', 'is_pruned']


class BasePruningMethod(ABC):
    """A way of choosing a mask; also the forward pre-hook that applies it."""

    _tensor_name: str | None = None
    PRUNING_TYPE = 'unstructured'

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for `t`, given the mask already applied (`default_mask`)."""

    def apply_mask(self, module: Module) -> Tensor:
        if self._tensor_name is None:
            raise AssertionError(f'Module {module} has to be pruned')
        mask = getattr(module, self._tensor_name + '_mask')
        original = getattr(module, self._tensor_name + '_orig')
        return mask.to(dtype=original.dtype) * original

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Any = None,
              **kwargs: Any) -> 'BasePruningMethod':
        """Prune `module.<name>` with a new `cls(*args, **kwargs)`, after any pruning
        already applied to it."""
        method = _combined_with_earlier(cls(*args, **kwargs), module, name)
        original = getattr(module, name)
        if importance_scores is None:
            importance_scores = original
        elif importance_scores.shape != original.shape:
            raise AssertionError(f'importance_scores should have the same shape as parameter '
                                 f'{name} of {module}, got {importance_scores.shape} vs '
                                 f'{original.shape}')
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + '_orig', original)
            del module._parameters[name]
            default_mask = ones_like(original)
        else:
            default_mask = getattr(module, name + '_mask').detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + '_mask', mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # the module as it was
                module.register_parameter(name, getattr(module, name + '_orig'))
                del module._parameters[name + '_orig']
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """`t` with this method's mask applied (the module is not changed)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError('importance_scores should have the same shape as tensor t, '
                                 f'got {importance_scores.shape} vs {t.shape}')
        default_mask = ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: `name` is a parameter again, holding the masked
        values; `name_orig` and `name_mask` go."""
        if self._tensor_name is None:
            raise AssertionError(f'Module {module} has to be pruned before pruning can be '
                                 'removed')
        pruned = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        original = module._parameters.pop(self._tensor_name + '_orig')
        original.data = pruned
        del module._buffers[self._tensor_name + '_mask']
        setattr(module, self._tensor_name, original)


def _earlier_pruning(module: Module, name: str) -> BasePruningMethod | None:
    """The pruning hook of `module.<name>`, taken off the module's hooks."""
    hooks = module._forward_pre_hooks
    found = [key for key, hook in hooks.items()
             if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(found) > 1:
        raise AssertionError(f'Avoid adding multiple pruning hooks to the same tensor {name} '
                             f'of module {module}. Use a PruningContainer.')
    return hooks.pop(found[0]) if found else None


def _combined_with_earlier(method: BasePruningMethod, module: Module,
                           name: str) -> BasePruningMethod:
    method._tensor_name = name
    earlier = _earlier_pruning(module, name)
    if earlier is None:
        return method
    if not isinstance(earlier, PruningContainer):
        earlier = PruningContainer(earlier)
    earlier.add_pruning_method(method)
    return earlier


class PruningContainer(BasePruningMethod):
    """Successive prunings of one tensor: the last one prunes what the earlier left."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if method is None:
            return
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f'{type(method)} is not a BasePruningMethod subclass')
        if self._tensor_name != method._tensor_name:
            raise ValueError('Can only add pruning methods acting on the parameter named '
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, index: int) -> BasePruningMethod:
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed on the part the earlier masks keep: the kept
        elements (unstructured), the channels with any element kept (structured), or
        everything (global)."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == 'unstructured':
            kept: Any = default_mask == 1
        elif method.PRUNING_TYPE == 'structured':
            if not hasattr(method, 'dim'):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     'have the attribute `dim` defined.')
            dim = method.dim + t.ndim if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f'Index is out of bounds for tensor with dimensions {t.ndim}')
            others = [d for d in range(t.ndim) if d != dim]
            kept = [slice(None)] * t.ndim
            kept[dim] = default_mask.sum(dim=others) != 0
            kept = tuple(kept)
        elif method.PRUNING_TYPE == 'global':
            kept = (slice(None),) * t.ndim
        else:
            raise ValueError(f'Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}')
        part = method.compute_mask(t[kept], default_mask=default_mask[kept])
        mask[kept] = part.to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:
        return super().apply(module, name)


class _ElementPruning(BasePruningMethod):
    """Prunes `amount` (a fraction, or a count) of the elements that `_chosen` picks."""

    def __init__(self, amount: float) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if count:
            mask.view(-1)[self._chosen(t, count)] = 0
        return mask


class RandomUnstructured(_ElementPruning):
    """Prunes elements chosen at random."""

    def _chosen(self, t: Tensor, count: int) -> Tensor:
        return rand_like(t).view(-1).topk(k=count).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: float) -> BasePruningMethod:
        return super().apply(module, name, amount=amount)


class L1Unstructured(_ElementPruning):
    """Prunes the elements of least absolute value."""

    def _chosen(self, t: Tensor, count: int) -> Tensor:
        return t.abs().view(-1).topk(k=count, largest=False).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: float,
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` of the channels along `dim`, chosen at random."""

    PRUNING_TYPE = 'structured'

    def __init__(self, amount: float, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels = _structured_size(t, self.dim)
        count = _count_to_prune(self.amount, channels)
        if not count:
            return default_mask
        draws = rand(channels)
        kept = draws > draws.kthvalue(k=count).values
        mask = zeros_like(t)
        mask[_along(t, self.dim, kept)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: float, dim: int = -1
              ) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes `amount` of the channels along `dim`, those of least `n`-norm."""

    PRUNING_TYPE = 'structured'

    def __init__(self, amount: float, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        channels = _structured_size(t, self.dim)
        count = _count_to_prune(self.amount, channels)
        if not count:
            return default_mask
        dim = self.dim % t.ndim
        norms = t.norm(p=self.n, dim=[d for d in range(t.ndim) if d != dim])
        kept = norms.topk(k=channels - count, largest=True).indices
        mask = zeros_like(t)
        mask[_along(t, self.dim, kept)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: float, n: Any, dim: int,
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is zero."""

    PRUNING_TYPE = 'global'

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f'default_mask shape {default_mask.shape} must match '
                                 f'self.mask shape {self.mask.shape}')
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: float) -> Module:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: float,
                    importance_scores: Tensor | None = None) -> Module:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: float, dim: int) -> Module:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: float, n: Any, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable, pruning_method: type,
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prune the (module, name) pairs together: `pruning_method` (unstructured) chooses
    among all their elements at once, so some tensors lose more than others."""
    if not isinstance(parameters, Iterable):
        raise TypeError('global_unstructured(): parameters is not an Iterable')
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError('global_unstructured(): importance_scores must be of type dict')
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    earlier = parameters_to_vector([getattr(module, name + '_mask')
                                    if hasattr(module, name + '_mask')
                                    else ones_like(getattr(module, name))
                                    for module, name in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != 'unstructured':
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f'Found method {pruning_method} of type {method.PRUNING_TYPE}')
    method._tensor_name = 'temp'
    container = PruningContainer(method)
    with no_grad():
        mask = container.compute_mask(scores, earlier)
    offset = 0
    for module, name in parameters:
        size = getattr(module, name).numel()
        custom_from_mask(module, name, mask[offset:offset + size].view_as(getattr(module, name)))
        offset += size


def remove(module: Module, name: str) -> Module:
    """Make the pruning of `module.<name>` permanent."""
    hook = module_hooks.take_forward_pre_hook(module, BasePruningMethod,
                                              lambda hook: hook._tensor_name == name)
    if hook is not None:
        hook.remove(module)
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     'can be removed')


def is_pruned(module: Module) -> bool:
    return any(isinstance(hook, BasePruningMethod)
               for each in module.modules()
               for hook in each._forward_pre_hooks.values())


def _check_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f'Invalid type for amount: {amount}. Must be int or float.')
    integral = isinstance(amount, numbers.Integral)
    if (integral and amount < 0) or (not integral and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f'amount={amount} should either be a float in the range [0, 1] or a '
                         'non-negative integer')


def _count_to_prune(amount: Any, size: int) -> int:
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f'amount={amount} should be smaller than the number of parameters '
                             f'to prune={size}')
        return amount
    return round(amount * size)


def _structured_size(t: Tensor, dim: int) -> int:
    if t.ndim <= 1:
        raise ValueError('Structured pruning can only be applied to multidimensional tensors. '
                         f'Found tensor of shape {t.shape} with {t.ndim} dims')
    if dim >= t.ndim:
        raise IndexError(f'Invalid index {dim} for tensor of size {t.shape}')
    return t.shape[dim]


def _along(t: Tensor, dim: int, index: Any) -> tuple:
    """An index that takes `index` along `dim` and everything along the others."""
    key: list = [slice(None)] * t.ndim
    key[dim] = index
    return tuple(key)
