"""`gt.distributions`: torch.distributions for GT tensors, so that a script using
`torch.distributions` ports by its import (`import gt as torch`).

Each class is torch's own, subclassed (gt/distributions/base.py) so that its code records
GT ops: `Normal(loc, scale).rsample()` draws on the workers and its gradient reaches `loc`
and `scale` on GT's tape. Constraints, transforms and `register_kl` are torch's, which
work on GT tensors as they are.
"""

import sys
import types

import torch.distributions as _torch
from torch.distributions import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    biject_to,
    identity_transform,
    register_kl,
    transform_to,
)

# Modules, reached as attributes as in torch (`gt.distributions.constraints.positive`).
from torch.distributions import constraint_registry as constraint_registry
from torch.distributions import constraints as constraints
from torch.distributions import kl as kl
from torch.distributions import transforms as transforms

from gt.distributions.base import Distribution, gt_class
from gt.distributions.recording import recorded

kl_divergence = recorded(_torch.kl_divergence)

Bernoulli = gt_class(_torch.Bernoulli)
Beta = gt_class(_torch.Beta)
Binomial = gt_class(_torch.Binomial)
Categorical = gt_class(_torch.Categorical)
Cauchy = gt_class(_torch.Cauchy)
Chi2 = gt_class(_torch.Chi2)
ContinuousBernoulli = gt_class(_torch.ContinuousBernoulli)
Dirichlet = gt_class(_torch.Dirichlet)
Exponential = gt_class(_torch.Exponential)
ExponentialFamily = gt_class(_torch.ExponentialFamily)
FisherSnedecor = gt_class(_torch.FisherSnedecor)
Gamma = gt_class(_torch.Gamma)
GeneralizedPareto = gt_class(_torch.GeneralizedPareto)
Geometric = gt_class(_torch.Geometric)
Gumbel = gt_class(_torch.Gumbel)
HalfCauchy = gt_class(_torch.HalfCauchy)
HalfNormal = gt_class(_torch.HalfNormal)
Independent = gt_class(_torch.Independent)
InverseGamma = gt_class(_torch.InverseGamma)
Kumaraswamy = gt_class(_torch.Kumaraswamy)
Laplace = gt_class(_torch.Laplace)
LogNormal = gt_class(_torch.LogNormal)
LKJCholesky = gt_class(_torch.LKJCholesky)
LogisticNormal = gt_class(_torch.LogisticNormal)
LowRankMultivariateNormal = gt_class(_torch.LowRankMultivariateNormal)
MixtureSameFamily = gt_class(_torch.MixtureSameFamily)
Multinomial = gt_class(_torch.Multinomial)
MultivariateNormal = gt_class(_torch.MultivariateNormal)
NegativeBinomial = gt_class(_torch.NegativeBinomial)
Normal = gt_class(_torch.Normal)
OneHotCategorical = gt_class(_torch.OneHotCategorical)
OneHotCategoricalStraightThrough = gt_class(_torch.OneHotCategoricalStraightThrough)
Pareto = gt_class(_torch.Pareto)
Poisson = gt_class(_torch.Poisson)
RelaxedBernoulli = gt_class(_torch.RelaxedBernoulli)
RelaxedOneHotCategorical = gt_class(_torch.RelaxedOneHotCategorical)
StudentT = gt_class(_torch.StudentT)
TransformedDistribution = gt_class(_torch.TransformedDistribution)
Uniform = gt_class(_torch.Uniform)
VonMises = gt_class(_torch.VonMises)
Weibull = gt_class(_torch.Weibull)
Wishart = gt_class(_torch.Wishart)

__all__ = [
    'AbsTransform', 'AffineTransform', 'Bernoulli', 'Beta', 'Binomial', 'CatTransform',
    'Categorical', 'Cauchy', 'Chi2', 'ComposeTransform', 'ContinuousBernoulli',
    'CorrCholeskyTransform', 'CumulativeDistributionTransform', 'Dirichlet', 'Distribution',
    'ExpTransform', 'Exponential', 'ExponentialFamily', 'FisherSnedecor', 'Gamma',
    'GeneralizedPareto', 'Geometric', 'Gumbel', 'HalfCauchy', 'HalfNormal', 'Independent',
    'IndependentTransform', 'InverseGamma', 'Kumaraswamy', 'LKJCholesky', 'Laplace', 'LogNormal',
    'LogisticNormal', 'LowRankMultivariateNormal', 'LowerCholeskyTransform', 'MixtureSameFamily',
    'Multinomial', 'MultivariateNormal', 'NegativeBinomial', 'Normal', 'OneHotCategorical',
    'OneHotCategoricalStraightThrough', 'Pareto', 'Poisson', 'PositiveDefiniteTransform',
    'PowerTransform', 'RelaxedBernoulli', 'RelaxedOneHotCategorical', 'ReshapeTransform',
    'SigmoidTransform', 'SoftmaxTransform', 'SoftplusTransform', 'StackTransform',
    'StickBreakingTransform', 'StudentT', 'TanhTransform', 'Transform', 'TransformedDistribution',
    'Uniform', 'VonMises', 'Weibull', 'Wishart', 'biject_to',
    'identity_transform', 'kl_divergence', 'register_kl', 'transform_to',
]


def _submodules() -> None:
    """`from gt.distributions.transforms import TanhTransform`, `from
    gt.distributions.normal import Normal`: each of torch's submodules under GT's name.
    One that defines a name GT has its own of (a distribution class, `kl_divergence`) is
    a copy of its namespace with GT's; the others (transforms, constraints) are torch's."""
    package = sys.modules[__name__]
    for name, module in vars(_torch).items():
        if not (isinstance(module, types.ModuleType)
                and module.__name__.startswith('torch.distributions.')):
            continue
        names = vars(module)
        own = {attribute: getattr(package, attribute) for attribute in names
               if attribute in __all__ and getattr(package, attribute) is not names[attribute]
               and getattr(names[attribute], '__module__', None) == module.__name__}
        if own:
            mirror = types.ModuleType(f'{__name__}.{name}', module.__doc__)
            vars(mirror).update({key: value for key, value in names.items()
                                 if not key.startswith('__')}, **own)
            module = mirror
        sys.modules[f'{__name__}.{name}'] = module
        setattr(package, name, module)


_submodules()
