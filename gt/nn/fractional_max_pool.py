"""Fractional max pooling (`F.fractional_max_pool2d/3d`, `nn.FractionalMaxPool2d/3d`):
torch's functions run by name, with their random numbers drawn first, as torch's Python
draws them (`rand(batch, channels, dims)` from the session's generator, so seeded runs
pool where torch's do). Given its numbers, the call draws nothing and differentiates
like any call by name; run by name with none, it was a draw, which GT cannot
differentiate.
"""

from typing import Any

from torch.nn.modules.utils import _pair, _triple

from gt.creation import rand
from gt.fallback import call
from gt.nn.module import Module
from gt.tensor import Tensor


def _fractional(dims: int, input: Tensor, kernel_size: Any, output_size: Any,
                output_ratio: Any, return_indices: bool, samples: Any) -> Any:
    name = f'fractional_max_pool{dims}d'
    if output_size is None and output_ratio is None:
        raise ValueError(f'{name} requires specifying either an output_size or an '
                         'output_ratio')
    if samples is None and isinstance(input, Tensor):
        batch = 1 if input.ndim == dims + 1 else input.shape[0]
        samples = rand(batch, input.shape[-dims - 1], dims, dtype=input.dtype)
    return call(f'torch.nn.functional.{name}', (input, kernel_size), dict(
        output_size=output_size, output_ratio=output_ratio, return_indices=return_indices,
        _random_samples=samples))


def _function(dims: int, with_indices: bool) -> Any:
    """torch.nn.functional's function of that name and signature."""
    def pool(input: Tensor, kernel_size: Any, output_size: Any = None,
             output_ratio: Any = None, return_indices: bool = False,
             _random_samples: Any = None) -> Any:
        return _fractional(dims, input, kernel_size, output_size, output_ratio,
                           with_indices or return_indices, _random_samples)
    pool.__name__ = pool.__qualname__ = (f'fractional_max_pool{dims}d'
                                         + ('_with_indices' if with_indices else ''))
    return pool


fractional_max_pool2d, fractional_max_pool3d = _function(2, False), _function(3, False)
fractional_max_pool2d_with_indices = _function(2, True)
fractional_max_pool3d_with_indices = _function(3, True)


class _FractionalMaxPoolNd(Module):
    """torch's arguments, checks and buffer (`_random_samples`, None unless given)."""

    dims: int

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Any = None) -> None:
        super().__init__()
        expand = _pair if self.dims == 2 else _triple
        name = type(self).__name__
        self.kernel_size = expand(kernel_size)
        self.return_indices = return_indices
        self.register_buffer('_random_samples', _random_samples)
        self.output_size = expand(output_size) if output_size is not None else None
        self.output_ratio = expand(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f'{name} requires specifying either an output size, or a '
                             'pooling ratio')
        if output_size is not None and output_ratio is not None:
            raise ValueError('only one of output_size and output_ratio may be specified')
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f'output_ratio must be between 0 and 1 (got {output_ratio})')

    def forward(self, input: Tensor) -> Any:
        return _fractional(self.dims, input, self.kernel_size, self.output_size,
                           self.output_ratio, self.return_indices, self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    dims = 3
