"""torch.nn.utils.spectral_norm (the hook form GAN code calls): the parameter `name`
becomes `name_orig`, and a forward pre-hook sets `name = name_orig / sigma`, sigma the
largest singular value of the weight as a matrix (dim `dim` by the rest), estimated by
power iteration on the buffers `name_u` and `name_v`. In training each call first runs
`n_power_iterations` steps and writes the new vectors into the buffers (as torch's `out=`
does, so a reference to a buffer sees them); in eval mode the stored vectors are used.
The vectors start as torch's draws after the same seed; normalize runs by name, so the
estimate is torch's kernel's."""

from typing import Any

from gt.autograd import no_grad
from gt.creation import zeros
from gt.nn import functional as F
from gt.nn import module_hooks
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


class SpectralNorm:
    def __init__(self, name: str = 'weight', n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError('Expected n_power_iterations to be positive, but got '
                             f'n_power_iterations={n_power_iterations}')
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + '_orig')
        u, v = getattr(module, self.name + '_u'), getattr(module, self.name + '_v')
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(weight_mat.t() @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(weight_mat @ v, dim=0, eps=self.eps))
                # As torch clones them: the next call's iteration rebinds the buffers,
                # which this call's sigma must not see changed when it differentiates.
                u, v = u.detach(), v.detach()
        sigma = u @ (weight_mat @ v)
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ('', '_u', '_v', '_orig'):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> 'SpectralNorm':
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError('Cannot register two spectral_norm hooks on the same '
                                   f'parameter {name}')
        hook = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f'`SpectralNorm` cannot be applied as parameter `{name}` is None')
        with no_grad():
            height, width = hook.reshape_weight_to_matrix(weight).shape
            u = F.normalize(zeros(height, dtype=weight.dtype).normal_(0, 1), dim=0, eps=eps)
            v = F.normalize(zeros(width, dtype=weight.dtype).normal_(0, 1), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + '_orig', weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + '_u', u)
        module.register_buffer(name + '_v', v)
        module.register_forward_pre_hook(hook)
        return hook


def spectral_norm(module: Module, name: str = 'weight', n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide `module.<name>` by its spectral norm before each call (torch's
    `torch.nn.utils.spectral_norm`); returns the module. `dim` defaults to 1 for
    transposed convolutions (their output channels), else 0."""
    from gt.nn.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = 'weight') -> Module:
    """Undo `spectral_norm`: `name` is a single parameter again, the normalized weight."""
    hook = module_hooks.take_forward_pre_hook(module, SpectralNorm, lambda hook: hook.name == name)
    if hook is not None:
        hook.remove(module)
        return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
