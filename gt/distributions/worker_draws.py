"""Gamma and Dirichlet draws (Gamma, Beta, Dirichlet, Chi2, StudentT...), made on the
workers from the session generator, as every GT draw is.

torch samples them with `torch._standard_gamma` and `torch._sample_dirichlet`, which GT
runs by name as random calls: so after `gt.manual_seed(s)` they give torch's draws after
`torch.manual_seed(s)`, whatever other draws come between. A random call by name carries
no gradient, so the draw is recorded under no_grad, and a reparameterized sample gets
torch's implicit gradient (its `_standard_gamma_grad` and `_dirichlet_grad`, also run by
name) through a term whose value is exactly zero.
"""

from gt.autograd import is_grad_enabled, no_grad
from gt.fallback import call
from gt.tensor import Tensor


def _tracks_grad(concentration: Tensor) -> bool:
    return is_grad_enabled() and concentration.requires_grad


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws; d sample / d concentration is torch's slope."""
    tracks = _tracks_grad(concentration)
    with no_grad():
        sample = call('torch._standard_gamma', (concentration,), {})
        if not tracks:
            return sample
        slope = call('torch._standard_gamma_grad', (concentration, sample), {})
    return sample + (concentration - concentration.detach()) * slope


def dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet(concentration) draws over the last dim. torch's backward gives the
    concentration `slope * (g - sum(sample * g))` for an incoming gradient `g`: the
    gradient of `sample + y - sample * sum(y)` with `y = (c - c.detach()) * slope`,
    whose value is the sample."""
    tracks = _tracks_grad(concentration)
    with no_grad():
        sample = call('torch._sample_dirichlet', (concentration,), {})
        if not tracks:
            return sample
        total = concentration.sum(-1, True).expand_as(concentration)
        slope = call('torch._dirichlet_grad', (sample, concentration, total), {})
    moved = (concentration - concentration.detach()) * slope
    return sample + moved - sample * moved.sum(-1, keepdim=True)
