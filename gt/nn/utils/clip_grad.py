"""Gradient clipping with torch.nn.utils' functions and formulas: the total norm is the
norm of the gradients' norms, and each gradient is scaled by
`min(max_norm / (total_norm + 1e-6), 1)`. Everything is recorded, nothing is fetched:
the norm comes back as a 0-d GT tensor, and clipping is part of the training step's
fragment (unless `error_if_nonfinite` asks to look at the norm, which waits for it).
"""

import functools
import math
import types
import warnings
from typing import Iterable

import torch

from gt import linalg
from gt.autograd import no_grad
from gt.creation import zeros
from gt.functional import stack
from gt.tensor import Tensor

LOW_PRECISION = (torch.float16, torch.bfloat16)


def _gradients(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters.grad] if parameters.grad is not None else []
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = list(parameters)
    if is_generator and not parameters:
        warnings.warn('`parameters` is an empty generator, no gradient clipping will occur.',
                      stacklevel=3)
    return [param.grad for param in parameters if param.grad is not None]


def vector_norm(tensor: Tensor, norm_type: float) -> Tensor:
    """torch.linalg.vector_norm(tensor, norm_type) of the whole tensor: torch's kernel on
    a cluster of one worker (its bits: `(g * g).sum().sqrt()` rounded otherwise, and a
    clipped step differed), else from ops that shard (a sharded gradient's norm is partial
    sums, not a gather). Half and bfloat16 accumulate in float32 and return their own
    dtype, as in torch."""
    if tensor._client.single_worker:
        return linalg.vector_norm(tensor, norm_type)
    dtype = tensor.dtype
    if dtype in LOW_PRECISION:
        tensor = tensor.float()
    if norm_type == 2:
        norm = (tensor * tensor).sum().sqrt()
    elif norm_type == math.inf:
        norm = tensor.abs().amax()
    elif norm_type == -math.inf:
        norm = tensor.abs().amin()
    elif norm_type == 1:
        norm = tensor.abs().sum()
    elif norm_type == 0:
        norm = (tensor != 0).sum().to(tensor.dtype)
    else:
        norm = (tensor.abs() ** norm_type).sum() ** (1.0 / norm_type)
    return norm.to(dtype)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of the tensors' norms: the norm of them all as one vector."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return zeros(())
    norms = [vector_norm(tensor, norm_type) for tensor in tensors]
    dtype = functools.reduce(torch.promote_types, [norm.dtype for norm in norms])
    total = vector_norm(stack([norm.to(dtype) for norm in norms]), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f'The total norm of order {norm_type} for gradients from '
                           '`parameters` is non-finite, so it cannot be clipped. To disable '
                           'this error and scale the gradients by the non-finite norm anyway, '
                           'set `error_if_nonfinite=False`')
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale the gradients by min(max_norm / (total_norm + 1e-6), 1)."""
    grads = _gradients(parameters)
    if not grads:
        return
    coefficient = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    with no_grad():
        for grad in grads:
            grad *= coefficient  # rebinds the gradient: param.grad sees the new value


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Clip the gradients' total norm to `max_norm`, in place; return the total norm
    (before clipping) as a 0-d GT tensor, not yet computed. `norm_type` may be `inf`."""
    if isinstance(parameters, types.GeneratorType):
        parameters = list(parameters)  # read twice below
        if not parameters:
            warnings.warn('`parameters` is an empty generator, no gradient clipping will '
                          'occur.', stacklevel=2)
    elif isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
    grads = [param.grad for param in parameters if param.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp each gradient to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for grad in _gradients(parameters):
            grad._assign(grad.clamp(min=-clip_value, max=clip_value))


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """torch's old name, which older scripts still call, with torch's FutureWarning."""
    warnings.warn('`torch.nn.utils.clip_grad_norm` is now deprecated in favor of '
                  '`torch.nn.utils.clip_grad_norm_`.', FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
