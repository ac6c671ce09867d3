"""Channel-wise and alpha dropout: `dropout1d/2d/3d`, `alpha_dropout`,
`feature_alpha_dropout` and their modules, with torch's arguments, checks, warnings and repr.

torch's random functions run by name have no gradient in GT, so each is composed as
torch's CPU kernel is: the Bernoulli(1 - p) noise is drawn by name from the session
generator (one draw per element, or per sample and channel), then scaled and multiplied
in with GT ops. After the same seed, the masks are torch's.
"""

import math
import warnings

from gt.autograd import no_grad
from gt.creation import empty_laid_out_like, zeros
from gt.fallback import call
from gt.nn.module import Module
from gt.tensor import Tensor

# SELU's alpha * scale: alpha dropout keeps a SELU network's mean and variance.
ALPHA = 1.7580993408473766


def _check(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f'dropout probability has to be between 0 and 1, but got {p}')


def _noise(input: Tensor, p: float, feature: bool) -> Tensor:
    """torch's noise: a 0/1 draw per (sample, channel) for feature dropout (a new tensor
    of shape (N, C, 1, ...)), else per element of a tensor laid out as the input
    (`empty_laid_out_like`: the order the draws fill)."""
    if feature:
        if input.ndim < 2:
            raise RuntimeError('Feature dropout requires at least 2 dimensions in the input')
        noise = zeros(*input.shape[:2], *[1] * (input.ndim - 2), dtype=input.dtype)
    else:
        with no_grad():
            noise = empty_laid_out_like(input)
    return call('Tensor.bernoulli_', (noise, 1 - p), {})


def _dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool,
             alpha: bool) -> Tensor:
    """torch's _dropout_impl: the kept values scaled by 1 / (1 - p), or for alpha dropout
    the dropped ones set to SELU's negative saturation and all moved back to the
    input's mean and variance."""
    _check(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        result = input * 0.0
    else:
        noise = _noise(input, p, feature)
        if alpha:
            a = 1.0 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
            shift = (noise - 1) * (ALPHA * a) + ALPHA * a * p
            result = input * (noise * a) + shift
        else:
            result = input * (noise / (1 - p))
    return input._assign(result) if inplace else result


def _unbatched(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Feature dropout of an input without its batch dim: as a batch of one."""
    if p == 0 or not training or input.numel() == 0:
        return input
    result = _dropout(input.unsqueeze(0), p, True, False, True, False).squeeze(0)
    return input._assign(result) if inplace else result


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) inputs."""
    _check(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f'dropout1d: Expected 2D or 3D input, but received a {input.ndim}D '
                           'input. Note that dropout1d exists to provide channel-wise dropout '
                           'on inputs with 1 spatial dimension, a channel dimension, and an '
                           'optional batch dimension (i.e. 2D or 3D inputs).')
    if input.ndim == 2:
        return _unbatched(input, p, training, inplace)
    return _dropout(input, p, training, inplace, True, False)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) inputs; a 3-d input is taken as (N, C, L),
    with torch's warnings."""
    _check(p)
    if input.ndim not in (3, 4):
        warnings.warn(f'dropout2d: Received a {input.ndim}-D input to dropout2d, which is '
                      'deprecated and will result in an error in a future release. To retain '
                      'the behavior and silence this warning, please use dropout instead. Note '
                      'that dropout2d exists to provide channel-wise dropout on inputs with 2 '
                      'spatial dimensions, a channel dimension, and an optional batch dimension '
                      '(i.e. 3D or 4D inputs).', stacklevel=2)
    if input.ndim == 3:
        warnings.warn('dropout2d: Received a 3D input to dropout2d and assuming that '
                      'channel-wise 1D dropout behavior is desired - input is interpreted as '
                      'shape (N, C, L), where C is the channel dim. This behavior will change '
                      'in a future release to interpret the input as one without a batch '
                      'dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise '
                      'dropout behavior, please switch to using dropout1d instead.',
                      stacklevel=2)
    return _dropout(input, p, training, inplace, True, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check(p)
    if input.ndim not in (4, 5):
        warnings.warn(f'dropout3d: Received a {input.ndim}-D input to dropout3d, which is '
                      'deprecated and will result in an error in a future release. To retain '
                      'the behavior and silence this warning, please use dropout instead. Note '
                      'that dropout3d exists to provide channel-wise dropout on inputs with 3 '
                      'spatial dimensions, a channel dimension, and an optional batch dimension '
                      '(i.e. 4D or 5D inputs).', stacklevel=2)
    if input.ndim != 5:
        return _unbatched(input, p, training, inplace)
    return _dropout(input, p, training, inplace, True, False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks, element by element (torch's default: not training)."""
    return _dropout(input, p, training, inplace, False, True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels."""
    return _dropout(input, p, training, inplace, True, True)


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _check(p)
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f'p={self.p}, inplace={self.inplace}'


class Dropout1d(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:
        return dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:
        return dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """torch's module ignores `inplace` here; so does this one."""

    def forward(self, input: Tensor) -> Tensor:
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:
        return feature_alpha_dropout(input, self.p, self.training)
