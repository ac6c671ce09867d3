"""`cov` and `corrcoef` composed of GT ops, in the order of torch's kernel, so that their
gradients run on the cluster. torch's kernel checks its weights' values, which would make
GT run it in the client; here those checks and the degrees of freedom's sign are one
fetch, made only when weights are given."""

import warnings
from typing import Any

import torch

FREEDOM_WARNING = ('cov(): degrees of freedom is <= 0. Correction should be strictly less '
                   'than the number of observations.')


def cov(input: Any, correction: float = 1, fweights: Any = None, aweights: Any = None) -> Any:
    if input.ndim > 2:
        raise RuntimeError(f'cov(): expected input to have two or fewer dimensions but got '
                           f'an input with {input.ndim} dimensions')
    rows = input.reshape(1, -1) if input.ndim < 2 else input
    if not rows.is_floating_point():
        rows = rows.to(torch.get_default_dtype())
    observations = rows.shape[1]
    _check_weights(fweights, 'fweights', observations, integral=True)
    _check_weights(aweights, 'aweights', observations, integral=False)
    weights = fweights if aweights is None else aweights if fweights is None \
        else fweights * aweights
    if weights is None:
        freedom = observations - correction
        if freedom <= 0:
            warnings.warn(FREEDOM_WARNING, stacklevel=3)
            freedom = 0
        centered = rows - rows.mean(1, keepdim=True)
        return (centered @ centered.t() / freedom).squeeze()
    total = weights.sum()
    mean = (rows * weights).sum(1) / total
    if correction == 0:
        freedom = total
    elif aweights is None:
        freedom = total - correction
    else:
        freedom = total - correction * (weights * aweights).sum() / total
    negative = [(given < 0).any() for given in (fweights, aweights) if given is not None]
    *refused, unfree = _fetch([*negative, freedom <= 0])
    if any(refused):
        name = 'fweights' if fweights is not None and refused[0] else 'aweights'
        raise RuntimeError(f'cov(): {name} cannot be negative')
    if unfree:
        warnings.warn(FREEDOM_WARNING, stacklevel=3)
        freedom = freedom * 0
    centered = rows - mean.unsqueeze(1)
    return (centered @ (centered * weights).t() / freedom).squeeze()


def corrcoef(input: Any) -> Any:
    covariance = cov(input)
    if covariance.ndim == 0:
        return covariance / covariance
    deviation = covariance.diagonal().sqrt()
    return (covariance / deviation.unsqueeze(1) / deviation.unsqueeze(0)).clamp(-1, 1)


def _check_weights(weights: Any, name: str, observations: int, integral: bool) -> None:
    if weights is None:
        return
    if weights.ndim > 1:
        raise RuntimeError(f'cov(): expected {name} to have one or fewer dimensions but got '
                           f'{name} with {weights.ndim} dimensions')
    if weights.numel() != observations:
        raise RuntimeError(f'cov(): expected {name} to have the same numel as there are '
                           f'observations in the input but got {weights.numel()} != '
                           f'{observations}')
    if integral and weights.is_floating_point():
        raise RuntimeError(f'cov(): expected {name} to have integral dtype but got '
                           f'{name} with {weights.dtype} dtype')
    if not integral and not weights.is_floating_point():
        raise RuntimeError(f'cov(): expected {name} to have floating point dtype but got '
                           f'{name} with {weights.dtype} dtype')


def _fetch(flags: list) -> list:
    """The flags' values in one round trip."""
    from gt.functional import stack

    return stack(flags).tolist()
