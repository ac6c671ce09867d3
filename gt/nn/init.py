"""torch.nn.init for GT tensors: each function fills a tensor (or Parameter) in place, by
rebinding it under `no_grad`, and returns it. The draws are the ones torch makes, in its
order, from the session's generator, so after `gt.manual_seed(s)` they equal torch's after
`torch.manual_seed(s)` bit for bit; nothing is sent from the client. With a
`generator=` (a torch.Generator, which lives in the client) torch's initializer draws here
and the values are uploaded, so they are torch's for that generator too.
"""

import math
import warnings
from typing import Any

import torch

from gt import linalg
from gt.autograd import no_grad
from gt.creation import arange, zeros
from gt.fallback import call
from gt.functional import stack, where
from gt.tensor import Tensor

LINEAR_NAMES = ('linear', 'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d',
                'conv_transpose2d', 'conv_transpose3d', 'sigmoid')


def _drawn_here(tensor: Tensor, initializer: Any, generator: torch.Generator,
                *args: Any) -> Tensor:
    """Fill `tensor` by torch's own `initializer` with a torch.Generator the script made:
    the generator lives in this process, so the draw runs here, advancing it exactly as
    torch would, and the values are uploaded into `tensor`."""
    local = torch.empty(tuple(tensor.shape), dtype=tensor.dtype)
    initializer(local, *args, generator=generator)
    with no_grad():
        return tensor.copy_(local)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain torch recommends for `nonlinearity` (the nn.functional name)."""
    if nonlinearity in LINEAR_NAMES:
        return 1
    if nonlinearity == 'tanh':
        return 5.0 / 3
    if nonlinearity == 'relu':
        return math.sqrt(2.0)
    if nonlinearity == 'leaky_relu':
        if param is None:
            negative_slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            negative_slope = param
        else:
            raise ValueError(f'negative_slope {param} not a valid number')
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == 'selu':
        return 3.0 / 4
    raise ValueError(f'Unsupported nonlinearity {nonlinearity}')


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight laid out (out, in, *kernel), as torch counts them."""
    if tensor.ndim < 2:
        raise ValueError('Fan in and fan out can not be computed for tensor with fewer than '
                         '2 dimensions')
    receptive_field_size = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field_size, tensor.shape[0] * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ('fan_in', 'fan_out'):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == 'fan_in' else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    if generator is not None:
        return _drawn_here(tensor, torch.nn.init.uniform_, generator, a, b)
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Any = None) -> Tensor:
    if generator is not None:
        return _drawn_here(tensor, torch.nn.init.normal_, generator, mean, std)
    with no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.zero_()


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """The std of He initialization, or None (with torch's warning) for an empty tensor."""
    if 0 in tensor.shape:
        warnings.warn('Initializing zero-element tensors is a no-op', stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = 'fan_in',
                     nonlinearity: str = 'leaky_relu', generator: Any = None) -> Tensor:
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = 'fan_in',
                    nonlinearity: str = 'leaky_relu', generator: Any = None) -> Tensor:
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """N(mean, std) restricted to [a, b]. torch 2.13's algorithm, draw for draw: redraw the
    values outside when [a, b] holds over 30% of the mass, else rejection-sample from
    U(a, b). Each round asks the worker whether anything is left to redraw (one fetch)."""
    if generator is not None:
        return _drawn_here(tensor, torch.nn.init.trunc_normal_, generator, mean, std, a, b)

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn('mean is more than 2 std from [a, b] in nn.init.trunc_normal_. '
                      'The distribution of values may be incorrect.', stacklevel=2)
    with no_grad():
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            _redraw_outside(tensor, mean, std, a, b)
        else:
            _rejection_sample(tensor, mean, std, a, b)
    return tensor


def _redraw_outside(tensor: Tensor, mean: float, std: float, a: float, b: float) -> None:
    # The bounds in the tensor's dtype, so the test agrees with the values it holds.
    low = torch.tensor(a, dtype=tensor.dtype).item()
    high = torch.tensor(b, dtype=tensor.dtype).item()
    result = tensor.normal_(mean, std)
    while True:
        outside = (result < low) | (result > high)
        if not outside.any():
            break
        result = where(outside, zeros(*tensor.shape, dtype=tensor.dtype).normal_(mean, std),
                       result)
    if result is not tensor:
        tensor.copy_(result)


def _rejection_sample(tensor: Tensor, mean: float, std: float, a: float, b: float) -> None:
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

    def log_density(values: Tensor) -> Tensor:
        return ((values - mean) / std).pow(2) * -0.5 - log_peak

    def rejected(candidates: Tensor) -> Tensor:
        draw = zeros(*tensor.shape, dtype=tensor.dtype).uniform_()
        return draw.log() > log_density(candidates)

    pending = rejected(tensor.uniform_(a, b))
    if not pending.any():
        return
    result = tensor
    while True:
        candidates = zeros(*tensor.shape, dtype=tensor.dtype).uniform_(a, b)
        result = where(pending, candidates, result)
        pending = where(pending, rejected(candidates), pending)
        if not pending.any():
            break
    tensor.copy_(result)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (ones on the diagonal of a 2-d tensor)."""
    if tensor.ndim != 2:
        raise ValueError('Only tensors with 2 dimensions are supported')
    with no_grad():
        return tensor.copy_(call('torch.eye', tuple(tensor.shape), {'dtype': tensor.dtype}))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A convolution weight (out, in, *kernel) that passes its input through: in each
    group, output channel d takes input channel d at the kernel's center. Made from
    comparisons with arange, so nothing is sent."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError('Only tensors with 3, 4, or 5 dimensions are supported')
    if tensor.shape[0] % groups != 0:
        raise ValueError('dim 0 must be divisible by groups')
    out_per_group = tensor.shape[0] // groups
    with no_grad():
        # (out, in): channel o's index in its group equals input channel i (and so is below
        # both out_per_group and in_channels, torch's min_dim).
        passes = (arange(tensor.shape[0]) % out_per_group).unsqueeze(1) == arange(tensor.shape[1])
        for size in tensor.shape[2:]:
            passes = passes.unsqueeze(-1) & (arange(size) == size // 2)
        return tensor.copy_(passes.to(tensor.dtype))


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix over dim 0 and the rest flattened: torch's QR of a
    N(0, 1) draw (on the worker, by name), its columns' signs fixed by R's diagonal, so
    after the same seed the values are torch's."""
    if generator is not None:
        return _drawn_here(tensor, torch.nn.init.orthogonal_, generator, gain)
    if tensor.ndim < 2:
        raise ValueError('Only tensors with 2 or more dimensions are supported')
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flattened = zeros(rows, cols, dtype=tensor.dtype).normal_(0, 1)
        if rows < cols:
            flattened = flattened.t()
        q, r = linalg.qr(flattened)
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.t()
        return tensor.copy_(q.reshape(*tensor.shape) * gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Any = None) -> Tensor:
    """N(0, std) with a `sparsity` fraction of each column zeroed: the rows a fresh
    permutation puts first, one permutation per column, drawn in torch's order."""
    if generator is not None:
        return _drawn_here(tensor, torch.nn.init.sparse_, generator, sparsity, std)
    if tensor.ndim != 2:
        raise ValueError('Only tensors with 2 dimensions are supported')
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std)
        if cols == 0:
            return tensor
        permutations = stack([call('torch.randperm', (rows,), {}) for _ in range(cols)])
        # A row's place in its column's permutation: zeroed if among the first num_zeros.
        places = permutations.argsort(dim=1)
        return tensor.copy_(where(places.t() < num_zeros, 0.0, tensor))


def _deprecated(initializer: Any) -> Any:
    """torch's old name without the underscore (`nn.init.kaiming_normal`), which older
    scripts still call: the same initializer, with torch's FutureWarning."""
    new_name = initializer.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f'`nn.init.{old_name}` is now deprecated in favor of '
                      f'`nn.init.{new_name}`.', FutureWarning, stacklevel=2)
        return initializer(*args, **kwargs)
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

__all__ = [
    'calculate_gain', 'uniform_', 'normal_', 'constant_', 'ones_', 'zeros_', 'xavier_uniform_',
    'xavier_normal_', 'kaiming_uniform_', 'kaiming_normal_', 'trunc_normal_', 'eye_',
    'dirac_', 'orthogonal_', 'sparse_',
]
