"""torch.nn.functional for GT tensors (`import gt.nn.functional as F`): activations,
`linear`, `dropout`, `layer_norm`, `embedding` and the losses, all built from op-table
ops, so their gradients come from the ops' rules and they run where their inputs live.
Every other torch.nn.functional function (`pad`, `one_hot`, `conv2d`, ...) runs by name
(gt/fallback.py).
"""

from typing import Sequence

from gt.creation import rand
from gt.fallback import namespace
from gt.nn.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from gt.tensor import Tensor, emit


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def gelu(input: Tensor, approximate: str = 'none') -> Tensor:
    return input.gelu(approximate=approximate)


def softmax(input: Tensor, dim: int, _stacklevel: int = 3, dtype=None) -> Tensor:
    return (input if dtype is None else input.to(dtype)).softmax(dim)


def log_softmax(input: Tensor, dim: int, _stacklevel: int = 3, dtype=None) -> Tensor:
    return (input if dtype is None else input.to(dtype)).log_softmax(dim)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`input @ weight.T + bias`, with torch's (out_features, in_features) weight."""
    output = input @ weight.transpose(0, 1) if weight.ndim == 2 else input @ weight
    return output if bias is None else output + bias


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1/(1-p); the mask is
    drawn on the worker. The identity when not training, as in torch."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f'dropout probability has to be between 0 and 1, but got {p}')
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    # Keep with probability 1 - p, as torch's bernoulli(1 - p); scale folded into the mask.
    keep = rand(*input.shape, dtype=input.dtype) < 1.0 - p
    return input * (keep.to(input.dtype) * (1.0 / (1.0 - p)))


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int,
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the last dims with the biased variance, as torch's layer_norm."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise ValueError(f'layer_norm: normalized_shape {list(shape)} does not match the last '
                         f'dims of an input of shape {list(input.shape)}')
    dims = list(range(input.ndim - len(shape), input.ndim))
    centered = input - input.mean(dims, keepdim=True)
    variance = (centered * centered).mean(dims, keepdim=True)
    output = centered / (variance + eps).sqrt()
    if weight is not None:
        output = output * weight
    if bias is not None:
        output = output + bias
    return output


def embedding(input: Tensor, weight: Tensor) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`."""
    return emit('embedding', weight, input)


__all__ = [
    'relu', 'sigmoid', 'tanh', 'gelu', 'softmax', 'log_softmax', 'linear', 'dropout',
    'layer_norm', 'embedding', 'mse_loss', 'l1_loss', 'binary_cross_entropy',
    'binary_cross_entropy_with_logits', 'cross_entropy', 'nll_loss',
]

__getattr__ = namespace('torch.nn.functional', globals())
