"""torch.nn.utils.parametrizations for GT: `weight_norm`, `spectral_norm` and
`orthogonal` as parametrizations (gt/nn/utils/parametrize.py), the forms torch now
recommends over the hook-based `nn.utils.weight_norm`/`spectral_norm`. Their modules
print and save under torch's names (`_WeightNorm`, `original0`...), draw their random
vectors from the session's stream in torch's order, and are recorded from GT ops, so
gradients flow through them on the cluster.
"""

from enum import Enum, auto

import torch

from gt import fallback
from gt.autograd import no_grad
from gt.creation import randn, zeros, zeros_like
from gt.functional import cat
from gt.linalg import householder_product, matrix_exp, solve
from gt.nn import functional as F
from gt.nn.module import Module
from gt.nn.utils import parametrize
from gt.nn.utils.weight_norm import norm_except_dim
from gt.tensor import Tensor

__all__ = ['orthogonal', 'spectral_norm', 'weight_norm']


# ---- weight_norm -------------------------------------------------------------------------
class _WeightNorm(Module):
    """`weight = g * v / ||v||`, norms over every dimension but `dim` (None: the whole)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = 'weight', dim: int | None = 0) -> Module:
    """Split `module.<name>` into a magnitude (`parametrizations.<name>.original0`) and a
    direction (`original1`). A state_dict saved with the hook form's `<name>_g` and
    `<name>_v` loads into it, as in torch."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_hook_form(state_dict, prefix, local_metadata, strict, missing_keys,
                       unexpected_keys, error_msgs) -> None:
        magnitude, direction = f'{prefix}{name}_g', f'{prefix}{name}_v'
        if magnitude in state_dict and direction in state_dict:
            state_dict[f'{prefix}parametrizations.{name}.original0'] = state_dict.pop(magnitude)
            state_dict[f'{prefix}parametrizations.{name}.original1'] = state_dict.pop(direction)

    module._register_load_state_dict_pre_hook(load_hook_form)
    return module


# ---- spectral_norm -----------------------------------------------------------------------
class _SpectralNorm(Module):
    """`weight / sigma`, sigma the largest singular value of the weight as a matrix (`dim`
    by the rest), estimated by power iteration on the buffers `_u` and `_v`: 15 steps at
    registration, then `n_power_iterations` at each training-mode access. A vector is
    simply normalized."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexError(f'Dimension out of range (expected to be in range of '
                             f'[-{ndim}, {ndim - 1}] but got {dim})')
        if n_power_iterations <= 0:
            raise ValueError('Expected n_power_iterations to be positive, but got '
                             f'n_power_iterations={n_power_iterations}')
        self.dim, self.eps = dim % ndim, eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._as_matrix(weight)
            height, width = matrix.shape
            with no_grad():
                u = zeros(height, dtype=weight.dtype).normal_(0, 1)
                v = zeros(width, dtype=weight.dtype).normal_(0, 1)
                self.register_buffer('_u', F.normalize(u, dim=0, eps=eps))
                self.register_buffer('_v', F.normalize(v, dim=0, eps=eps))
            self._power_method(matrix, 15)

    def _as_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, matrix: Tensor, iterations: int) -> None:
        """Written into the buffers, as torch's `out=` does: a reference to one sees it."""
        with no_grad():
            for _ in range(iterations):
                self._u.copy_(F.normalize(matrix @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(matrix.t() @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = self._as_matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        # The vectors as they are now: a later access's iteration writes the buffers,
        # and this access's gradient must use these.
        u, v = self._u.detach(), self._v.detach()
        return weight / (u @ (matrix @ v))

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = 'weight', n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide `module.<name>` by its spectral norm at each access. `dim` defaults to 1 for
    transposed convolutions (their output channels), else 0."""
    from gt.nn.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module


# ---- orthogonal --------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _eye(n: int, dtype: torch.dtype) -> Tensor:
    return fallback.call('torch.eye', (n,), {'dtype': dtype})


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    identity = _eye(k, q.dtype)
    return bool((q.mT @ q).allclose(identity, atol=10.0 * n * torch.finfo(q.dtype).eps))


def _orthogonalized(a: Tensor) -> Tensor:
    """The Q of a tall `a = QR` with R's diagonal made non-negative."""
    reflectors, tau = a.geqrf()
    q = householder_product(reflectors, tau)
    return q * reflectors.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    """A matrix (or batch) with orthonormal columns, or rows when it is wide: the matrix
    exponential or Cayley map of a skew-symmetric matrix, or a product of Householder
    reflectors. With trivialization, the buffer `base` holds the orthogonal matrix the
    parametrization starts from, and the original starts as the map's preimage of I."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer('base', None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map == _OrthMaps.householder:
            reflectors = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (reflectors * reflectors).sum(dim=-2))
            q = householder_product(reflectors, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            skew = x - x.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = matrix_exp(skew)
            else:
                identity = _eye(n, skew.dtype)
                q = solve(identity - 0.5 * skew, identity + 0.5 * skew)
            if n != k:
                q = q[..., :k]
        if hasattr(self, 'base'):
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if q.shape != self.shape:
            raise ValueError(f'Expected a matrix or batch of matrices of shape {self.shape}. '
                             f'Got a tensor of shape {q.shape}.')
        with no_grad():
            given = q
            n, k = q.shape[-2], q.shape[-1]
            transposed = n < k
            if transposed:
                q, n, k = q.mT, k, n
            if not hasattr(self, 'base'):
                if self.orthogonal_map != _OrthMaps.householder:
                    raise NotImplementedError(
                        'It is not possible to assign to the matrix exponential or the '
                        'Cayley parametrizations when use_trivialization=False.')
                reflectors, tau = q.geqrf()
                reflectors.diagonal(dim1=-2, dim2=-1).sign_()
                reflectors.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
                return reflectors.mT if transposed else reflectors
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _orthogonalized(q)
            else:
                completion = randn(*q.shape[:-2], n, n - k, dtype=q.dtype)
                q = _orthogonalized(cat([q, completion], dim=-1))
            self.base = q
            minus_identity = zeros_like(given)
            minus_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return minus_identity


def orthogonal(module: Module, name: str = 'weight', orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep `module.<name>` orthogonal. `orthogonal_map` is `matrix_exp` (default for a
    square matrix), `cayley` or `householder` (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError('Expected a matrix or batch of matrices. '
                         f'Got a tensor of {weight.ndim} dimensions.')
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = 'matrix_exp' if square else 'householder'
    chosen = getattr(_OrthMaps, orthogonal_map, None)
    if chosen is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrization = _Orthogonal(weight, chosen, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, parametrization, unsafe=True)
    return module
