"""torch.nn.utils.weight_norm (the hook form torch deprecates in favour of
parametrizations, still what many scripts call): the parameter `name` becomes a
direction `name_v` and a magnitude `name_g`, and a forward pre-hook remakes
`name = name_v * (name_g / ||name_v||)` before each call, norms taken over every
dimension but `dim`. Recorded from ops, so gradients reach both parts; the norm is summed
in GT's order, not by torch's fused CPU kernel, so weights agree to a few ulps."""

import warnings
from typing import Any

from gt.nn import module_hooks
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The 2-norm of `v` over every dimension but `dim`, kept as size-1 dimensions (dim -1:
    the norm of the whole tensor, 0-d), as torch's `norm_except_dim`."""
    if pow != 2:
        raise NotImplementedError('weight_norm: GT takes 2-norms only')
    if dim == -1:
        return (v * v).sum().sqrt()
    others = tuple(axis for axis in range(v.ndim) if axis != dim % v.ndim)
    return (v * v).sum(others, keepdim=True).sqrt() if others else v.abs()


class WeightNorm:
    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        v, g = getattr(module, self.name + '_v'), getattr(module, self.name + '_g')
        return v * (g / norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> 'WeightNorm':
        warnings.warn('torch.nn.utils.weight_norm is deprecated in favor of '
                      'torch.nn.utils.parametrizations.weight_norm.', FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f'Cannot register two weight_norm hooks on the same '
                                   f'parameter {name}')
        hook = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + '_g',
                                  Parameter(norm_except_dim(weight.detach(), 2, hook.dim)))
        module.register_parameter(name + '_v', Parameter(weight))
        setattr(module, name, hook.compute_weight(module))
        module.register_forward_pre_hook(hook)
        return hook

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + '_g']
        del module._parameters[self.name + '_v']
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = 'weight', dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` by magnitude and direction (torch's
    `torch.nn.utils.weight_norm`); returns the module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = 'weight') -> Module:
    """Undo `weight_norm`: `name` is a single parameter again, with the current weight."""
    hook = module_hooks.take_forward_pre_hook(module, WeightNorm, lambda hook: hook.name == name)
    if hook is not None:
        hook.remove(module)
        return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
