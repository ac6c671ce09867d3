"""Gamma and Dirichlet draws (Gamma, Beta, Dirichlet, Chi2, StudentT...), made in this
process from torch's generator.

torch samples them with private functions (`torch._standard_gamma`,
`torch._sample_dirichlet`) that the workers do not run by name. So the concentration is
fetched (one round trip), the draw is made here from torch's generator, which
`gt.manual_seed` seeds as `torch.manual_seed` does, and the sample goes back to the
workers with the next fragment. The gradient of a reparameterized sample is torch's own
implicit one (its `_standard_gamma_grad` and `_dirichlet_grad`, evaluated here on the
same values), attached by adding a term whose value is exactly zero and whose gradient
is torch's.
"""

import torch

from gt.autograd import is_grad_enabled
from gt.creation import tensor
from gt.tensor import Tensor


def _value(concentration: Tensor) -> torch.Tensor:
    return concentration.data.as_subclass(torch.Tensor)


def _tracks_grad(concentration: Tensor) -> bool:
    return is_grad_enabled() and concentration.requires_grad


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws; d sample / d concentration is torch's slope."""
    value = _value(concentration)
    drawn = torch._standard_gamma(value)
    sample = tensor(drawn)
    if not _tracks_grad(concentration):
        return sample
    slope = tensor(torch._standard_gamma_grad(value, drawn))
    return sample + (concentration - concentration.detach()) * slope


def dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet(concentration) draws over the last dim. torch's backward gives the
    concentration `slope * (g - sum(sample * g))` for an incoming gradient `g`: the
    gradient of `sample + y - sample * sum(y)` with `y = (c - c.detach()) * slope`,
    whose value is the sample."""
    value = _value(concentration)
    drawn = torch._sample_dirichlet(value)
    sample = tensor(drawn)
    if not _tracks_grad(concentration):
        return sample
    total = value.sum(-1, True).expand_as(value)
    slope = tensor(torch._dirichlet_grad(drawn, value, total))
    moved = (concentration - concentration.detach()) * slope
    return sample + moved - sample * moved.sum(-1, keepdim=True)
