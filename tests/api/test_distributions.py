"""gt.distributions against torch.distributions: the same parameters as torch tensors and
as GT tensors give the same log_prob, entropy, moments, cdf, KL divergences, gradients
(through rsample and log_prob, GT's tape against torch's autograd) and, after the same
seed, the same samples; bad arguments raise torch's ValueError. Ends with a policy
gradient step and a VAE step computed both ways."""

import math
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch
import torch.distributions as TD
from api_check import assert_same

import gt
import gt.distributions as GD
from gt.runtime import client


def t(*values: Any) -> torch.Tensor:
    return torch.tensor(values)


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable  # (distributions module, *params) -> distribution
    params: tuple  # float torch tensors, the build's tensor arguments
    value: torch.Tensor  # a point of the support, for log_prob and cdf
    seeded: bool = True  # samples are torch's bit for bit after the same seed



SPD = t([2.0, 0.5], [0.5, 1.0])
CASES = [
    Case('Normal', lambda d, m, s: d.Normal(m, s), (t(0.0, 1.5), t(1.0, 2.0)), t(0.3, -1.0)),
    Case('Categorical(logits)', lambda d, x: d.Categorical(logits=x),
         (t([0.0, 1.0, 2.0], [1.0, 1.0, -1.0]),), t(2, 0)),
    Case('Categorical(probs)', lambda d, p: d.Categorical(probs=p),
         (t([0.2, 0.3, 0.5], [0.1, 0.1, 0.8]),), t(1, 2)),
    Case('Bernoulli(probs)', lambda d, p: d.Bernoulli(probs=p), (t(0.2, 0.7),), t(1.0, 0.0)),
    Case('Bernoulli(logits)', lambda d, x: d.Bernoulli(logits=x), (t(0.2, -0.7),), t(1.0, 1.0)),
    Case('Uniform', lambda d, a, b: d.Uniform(a, b), (t(0.0, 1.0), t(1.0, 3.0)), t(0.5, 2.0)),
    Case('MultivariateNormal(covariance)', lambda d, m, c: d.MultivariateNormal(m, c),
         (t(0.0, 1.0), SPD), t(0.3, 0.2)),
    Case('MultivariateNormal(scale_tril)',
         lambda d, m, s: d.MultivariateNormal(m, scale_tril=s),
         (t([0.0, 1.0], [1.0, -1.0]), t([2.0, 0.0], [0.5, 1.0])), t(0.3, 0.2)),
    Case('MultivariateNormal(precision)',
         lambda d, m, p: d.MultivariateNormal(m, precision_matrix=p), (t(0.0, 1.0), SPD),
         t(0.3, 0.2)),
    Case('Independent(Normal)', lambda d, m, s: d.Independent(d.Normal(m, s), 1),
         (t(0.0, 1.0), t(1.0, 2.0)), t(0.3, -1.0)),
    Case('OneHotCategorical', lambda d, x: d.OneHotCategorical(logits=x), (t(0.0, 1.0, 2.0),),
         t(0.0, 1.0, 0.0)),
    Case('OneHotCategoricalStraightThrough',
         lambda d, x: d.OneHotCategoricalStraightThrough(logits=x), (t(0.0, 1.0, 2.0),),
         t(0.0, 0.0, 1.0)),
    Case('Beta', lambda d, a, b: d.Beta(a, b), (t(2.0, 1.0), t(1.0, 3.0)), t(0.3, 0.6)),
    Case('Gamma', lambda d, a, b: d.Gamma(a, b), (t(2.0, 1.0), t(1.0, 3.0)), t(0.3, 0.6)),
    Case('Dirichlet', lambda d, a: d.Dirichlet(a), (t(2.0, 1.0, 3.0),), t(0.2, 0.3, 0.5)),
    Case('LogNormal', lambda d, m, s: d.LogNormal(m, s), (t(0.0, 1.0), t(1.0, 2.0)),
         t(0.3, 2.0)),
    Case('Laplace', lambda d, m, s: d.Laplace(m, s), (t(0.0, 1.0), t(1.0, 2.0)), t(0.3, 2.0)),
    Case('Exponential', lambda d, r: d.Exponential(r), (t(1.0, 2.0),), t(0.3, 2.0)),
    Case('Poisson', lambda d, r: d.Poisson(r), (t(1.0, 2.0),), t(3.0, 0.0)),
    Case('Binomial', lambda d, p: d.Binomial(10, p), (t(0.2, 0.7),), t(3.0, 7.0)),
    Case('Cauchy', lambda d, m, s: d.Cauchy(m, s), (t(0.0, 1.0), t(1.0, 2.0)), t(0.3, 2.0)),
    Case('Chi2', lambda d, k: d.Chi2(k), (t(2.0, 3.0),), t(0.3, 2.0)),
    Case('ContinuousBernoulli', lambda d, p: d.ContinuousBernoulli(p), (t(0.3, 0.8),),
         t(0.3, 0.9)),
    Case('GeneralizedPareto', lambda d, m, s, c: d.GeneralizedPareto(m, s, c),
         (t(0.0, 1.0), t(1.0, 2.0), t(0.1, 0.2)), t(0.3, 2.0)),
    Case('Gumbel', lambda d, m, s: d.Gumbel(m, s), (t(0.0, 1.0), t(1.0, 2.0)), t(0.3, 2.0)),
    Case('HalfCauchy', lambda d, s: d.HalfCauchy(s), (t(1.0, 2.0),), t(0.3, 2.0)),
    Case('HalfNormal', lambda d, s: d.HalfNormal(s), (t(1.0, 2.0),), t(0.3, 2.0)),
    Case('InverseGamma', lambda d, a, b: d.InverseGamma(a, b), (t(2.0, 3.0), t(1.0, 2.0)),
         t(0.3, 2.0)),
    Case('Kumaraswamy', lambda d, a, b: d.Kumaraswamy(a, b), (t(2.0, 3.0), t(1.0, 2.0)),
         t(0.3, 0.6)),
    Case('LogisticNormal', lambda d, m, s: d.LogisticNormal(m, s), (t(0.0, 1.0), t(1.0, 2.0)),
         t(0.2, 0.3, 0.5)),
    Case('MixtureSameFamily',
         lambda d, w, m, s: d.MixtureSameFamily(d.Categorical(logits=w), d.Normal(m, s)),
         (t(0.0, 1.0), t(0.0, 1.0), t(1.0, 2.0)), t(0.3)),
    Case('Pareto', lambda d, s, a: d.Pareto(s, a), (t(1.0, 2.0), t(1.0, 2.0)), t(1.3, 2.5)),
    Case('RelaxedBernoulli', lambda d, p: d.RelaxedBernoulli(t(0.5), probs=p), (t(0.3, 0.8),),
         t(0.3, 0.6)),
    Case('RelaxedOneHotCategorical',
         lambda d, x: d.RelaxedOneHotCategorical(t(0.5), logits=x), (t(0.0, 1.0, 2.0),),
         t(0.2, 0.3, 0.5)),
    Case('VonMises', lambda d, m, k: d.VonMises(m, k), (t(0.0, 1.0), t(1.0, 2.0)), t(0.3, 2.0)),
    Case('Weibull', lambda d, s, k: d.Weibull(s, k), (t(1.0, 2.0), t(1.0, 2.0)), t(0.3, 2.0)),
    # These mix gamma draws with normal or Poisson ones.
    Case('StudentT', lambda d, k, m, s: d.StudentT(k, m, s),
         (t(4.0, 5.0), t(0.0, 1.0), t(1.0, 2.0)), t(0.3, 2.0)),
    Case('NegativeBinomial', lambda d, n, p: d.NegativeBinomial(n, p),
         (t(3.0, 4.0), t(0.3, 0.6)), t(3.0, 2.0)),
    Case('Wishart', lambda d, k, c: d.Wishart(k, covariance_matrix=c), (t(6.0), SPD), SPD),
    # torch's code for these calls clone(memory_format=...).
    Case('Geometric', lambda d, p: d.Geometric(p), (t(0.3, 0.8),), t(3.0, 0.0)),
    Case('Multinomial', lambda d, p: d.Multinomial(5, p), (t(0.2, 0.3, 0.5),),
         t(1.0, 1.0, 3.0)),
    Case('FisherSnedecor', lambda d, a, b: d.FisherSnedecor(a, b), (t(2.0, 3.0), t(5.0, 6.0)),
         t(0.3, 2.0)),
]
BY_NAME = {case.name: case for case in CASES}


def cases(only: Callable = lambda case: True) -> list:
    return [pytest.param(case, id=case.name) for case in CASES if only(case)]


def built(case: Case, requires_grad: bool = False) -> tuple:
    """(torch's distribution, GT's, torch's parameters, GT's parameters)."""
    torch_params = [p.clone().requires_grad_(requires_grad) for p in case.params]
    gt_params = [gt.tensor(p, requires_grad=requires_grad) for p in case.params]
    return (case.build(TD, *torch_params), case.build(GD, *gt_params), torch_params,
            gt_params)


QUANTILES = t(0.3, 0.6)
STATISTICS = {
    'log_prob': lambda d, value, convert: d.log_prob(convert(value)),
    'cdf': lambda d, value, convert: d.cdf(convert(value)),
    'icdf': lambda d, value, convert: d.icdf(convert(QUANTILES)),
    'entropy': lambda d, value, convert: d.entropy(),
    'perplexity': lambda d, value, convert: d.perplexity(),
    'mean': lambda d, value, convert: d.mean,
    'mode': lambda d, value, convert: d.mode,
    'variance': lambda d, value, convert: d.variance,
    'stddev': lambda d, value, convert: d.stddev,
    'enumerate_support': lambda d, value, convert: d.enumerate_support(),
    'expand': lambda d, value, convert: d.expand((3, *d.batch_shape)).log_prob(convert(value)),
}


def same_statistics(case: Case) -> None:
    want_distribution, got_distribution, _, _ = built(case)
    assert got_distribution.batch_shape == want_distribution.batch_shape
    assert got_distribution.event_shape == want_distribution.event_shape
    assert isinstance(got_distribution, type(want_distribution))
    for name, statistic in STATISTICS.items():
        try:
            want = statistic(want_distribution, case.value, lambda v: v)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                statistic(got_distribution, case.value, gt.tensor)
            continue
        got = statistic(got_distribution, case.value, gt.tensor)
        try:
            assert_same(got, want, rtol=1e-5, atol=1e-6)
        except AssertionError as error:
            raise AssertionError(f'{case.name}.{name}: {error}') from None


@pytest.mark.parametrize('case', cases())
def test_statistics_match_torch(case):
    same_statistics(case)


@pytest.mark.parametrize('case', cases(lambda case: case.seeded))
def test_seeded_samples_are_torchs(case):
    want_distribution, got_distribution, _, _ = built(case, requires_grad=True)
    torch.manual_seed(7)
    want = want_distribution.sample((3,))
    gt.manual_seed(7)
    got = got_distribution.sample((3,))
    assert_same(got, want, rtol=0, atol=0)
    assert not got.requires_grad


@pytest.mark.parametrize('case', cases())
def test_gradients_through_rsample_and_log_prob_match_torch(case):
    """The loss reaches every parameter through a reparameterized sample (where the
    distribution has one and its draws are torch's) and through log_prob and entropy."""
    want_distribution, got_distribution, torch_params, gt_params = built(case, True)

    def loss(distribution: Any, convert: Callable, seed: Callable) -> Any:
        total = distribution.log_prob(convert(case.value)).sum()
        try:
            total = total + distribution.entropy().sum()
        except NotImplementedError:
            pass
        # torch's own Wishart.rsample cannot be differentiated: it writes in place into
        # a mask its backward needs.
        if distribution.has_rsample and case.seeded and case.name != 'Wishart':
            seed(3)
            total = total + (distribution.rsample((2,)) ** 2).sum()
        return total

    want = loss(want_distribution, lambda v: v, torch.manual_seed)
    got = loss(got_distribution, gt.tensor, gt.manual_seed)
    assert_same(got, want.detach(), rtol=1e-5, atol=1e-5)
    want.backward()
    got.backward()
    for index, (g, w) in enumerate(zip(gt_params, torch_params)):
        assert (g.grad is None) == (w.grad is None), f'parameter {index}'
        if w.grad is not None:
            assert_same(g.grad, w.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('name', ['Gamma', 'Beta', 'Dirichlet', 'StudentT'])
def test_gamma_draws_between_other_draws_are_torchs(name):
    """The gamma family draws on the workers from the session generator like every other
    draw, so a script's sequence of draws is torch's, whatever the order."""
    case = BY_NAME[name]
    want_distribution, got_distribution, _, _ = built(case)
    torch.manual_seed(5)
    want = [torch.randn(3), want_distribution.sample((2,)), torch.rand(2),
            want_distribution.sample()]
    gt.manual_seed(5)
    got = [gt.randn(3), got_distribution.sample((2,)), gt.rand(2), got_distribution.sample()]
    for mine, theirs in zip(got, want):
        assert_same(mine, theirs, rtol=0, atol=0)


KL_PAIRS = [
    ('Normal', lambda d, T: (d.Normal(T([0.0, 1.0]), T([1.0, 2.0])),
                             d.Normal(T([0.5, 0.0]), T([2.0, 1.0])))),
    ('Categorical', lambda d, T: (d.Categorical(logits=T([0.0, 1.0, 2.0])),
                                  d.Categorical(logits=T([1.0, 0.0, -1.0])))),
    ('Categorical with zeros', lambda d, T: (d.Categorical(probs=T([0.5, 0.5, 0.0])),
                                             d.Categorical(probs=T([0.2, 0.0, 0.8])))),
    ('Bernoulli', lambda d, T: (d.Bernoulli(probs=T([0.2, 0.7])),
                                d.Bernoulli(probs=T([0.5, 0.1])))),
    ('MultivariateNormal', lambda d, T: (d.MultivariateNormal(T([0.0, 1.0]), T(SPD.tolist())),
                                         d.MultivariateNormal(T([1.0, 0.0]),
                                                              T((SPD * 2).tolist())))),
    ('Independent', lambda d, T: (d.Independent(d.Normal(T([0.0, 1.0]), T([1.0, 2.0])), 1),
                                  d.Independent(d.Normal(T([1.0, 1.0]), T([2.0, 2.0])), 1))),
    ('OneHotCategorical', lambda d, T: (d.OneHotCategorical(logits=T([0.0, 1.0, 2.0])),
                                        d.OneHotCategorical(logits=T([2.0, 1.0, 0.0])))),
    ('Beta', lambda d, T: (d.Beta(T([2.0, 1.0]), T([1.0, 3.0])),
                           d.Beta(T([1.0, 2.0]), T([2.0, 2.0])))),
    ('Gamma', lambda d, T: (d.Gamma(T([2.0, 1.0]), T([1.0, 3.0])),
                            d.Gamma(T([1.0, 2.0]), T([2.0, 2.0])))),
    ('Dirichlet', lambda d, T: (d.Dirichlet(T([2.0, 1.0, 3.0])),
                                d.Dirichlet(T([1.0, 1.0, 1.0])))),
    ('Uniform', lambda d, T: (d.Uniform(T([0.0, 1.0]), T([1.0, 2.0])),
                              d.Uniform(T([-1.0, 1.5]), T([2.0, 3.0])))),
    ('Exponential', lambda d, T: (d.Exponential(T([1.0, 2.0])), d.Exponential(T([3.0, 0.5])))),
    ('Laplace', lambda d, T: (d.Laplace(T([0.0, 1.0]), T([1.0, 2.0])),
                              d.Laplace(T([1.0, 0.0]), T([2.0, 1.0])))),
    ('Poisson', lambda d, T: (d.Poisson(T([1.0, 2.0])), d.Poisson(T([3.0, 0.5])))),
    ('Normal to Laplace', lambda d, T: (d.Normal(T([0.0, 1.0]), T([1.0, 2.0])),
                                        d.Laplace(T([1.0, 0.0]), T([2.0, 1.0])))),
]


@pytest.mark.parametrize('name, pair', KL_PAIRS, ids=[name for name, _ in KL_PAIRS])
def test_kl_divergence_and_its_gradients_match_torch(name, pair):
    torch_params: list = []
    gt_params: list = []

    def torch_tensor(values: list) -> torch.Tensor:
        torch_params.append(torch.tensor(values, requires_grad=True))
        return torch_params[-1]

    def gt_tensor(values: list) -> gt.Tensor:
        gt_params.append(gt.tensor(values, requires_grad=True))
        return gt_params[-1]

    want = TD.kl_divergence(*pair(TD, torch_tensor))
    got = GD.kl_divergence(*pair(GD, gt_tensor))
    assert_same(got, want.detach(), rtol=1e-5, atol=1e-6)
    finite = want.isfinite()
    torch.where(finite, want, 0).sum().backward()
    gt.where(gt.tensor(finite), got, 0).sum().backward()
    for g, w in zip(gt_params, torch_params):
        assert_same(g.grad, w.grad, rtol=1e-5, atol=1e-6)


BAD_ARGUMENTS = [
    ('Normal', lambda d, T: d.Normal(T([0.0, 1.0]), T([1.0, -2.0])), 'parameter scale'),
    ('Normal nan', lambda d, T: d.Normal(T([0.0, math.nan]), T([1.0, 2.0])), 'parameter loc'),
    ('Categorical', lambda d, T: d.Categorical(probs=T([0.5, -0.1, 0.6])), 'parameter probs'),
    ('Bernoulli', lambda d, T: d.Bernoulli(probs=T([1.5])), 'parameter probs'),
    ('MultivariateNormal', lambda d, T: d.MultivariateNormal(T([0.0, 0.0]),
                                                            T([[1.0, 2.0], [2.0, 1.0]])),
     'parameter covariance_matrix'),
    ('MultivariateNormal scale_tril',
     lambda d, T: d.MultivariateNormal(T([0.0, 0.0]), scale_tril=T([[1.0, 0.0], [2.0, -1.0]])),
     'parameter scale_tril'),
    ('LogNormal', lambda d, T: d.LogNormal(T([0.0]), T([-1.0])), 'parameter scale'),
    ('Beta', lambda d, T: d.Beta(T([0.0]), T([1.0])), 'parameter concentration'),
    ('Dirichlet', lambda d, T: d.Dirichlet(T([1.0, -1.0])), 'parameter concentration'),
    ('Exponential', lambda d, T: d.Exponential(T([-1.0])), 'parameter rate'),
    ('Poisson', lambda d, T: d.Poisson(T([-1.0])), 'parameter rate'),
    ('value outside Categorical', lambda d, T: d.Categorical(logits=T([0.0, 1.0])).log_prob(
        T([2])), 'within the support'),
    ('value outside Bernoulli', lambda d, T: d.Bernoulli(probs=T([0.3])).log_prob(T([0.5])),
     'within the support'),
    ('value outside Uniform', lambda d, T: d.Uniform(T([0.0]), T([1.0])).log_prob(T([2.0])),
     'within the support'),
    ('value of another shape', lambda d, T: d.Normal(T([0.0, 1.0]), T([1.0, 2.0])).log_prob(
        T([1.0, 2.0, 3.0])), 'not broadcastable'),
    ('value of another event shape',
     lambda d, T: d.OneHotCategorical(logits=T([0.0, 1.0, 2.0])).log_prob(T([0.0, 1.0])),
     'must match event_shape'),
    ('value not a tensor', lambda d, T: d.Normal(T([0.0]), T([1.0])).log_prob([1.0]),
     'must be a Tensor'),
]


@pytest.mark.parametrize('name, make, message', BAD_ARGUMENTS,
                         ids=[name for name, _, _ in BAD_ARGUMENTS])
def test_bad_arguments_raise_torchs_value_error(name, make, message):
    with pytest.raises(ValueError, match=message) as torch_error:
        make(TD, torch.tensor)
    with pytest.raises(ValueError, match=message) as gt_error:
        make(GD, gt.tensor)
    assert str(gt_error.value).split(':')[0] == str(torch_error.value).split(':')[0]


def test_the_session_works_on_after_a_rejected_distribution():
    with pytest.raises(ValueError, match='covariance_matrix'):
        GD.MultivariateNormal(gt.zeros(2), gt.tensor([[1.0, 2.0], [2.0, 1.0]]))
    assert GD.Normal(gt.zeros(2), gt.ones(2)).log_prob(gt.zeros(2)).tolist() == \
        TD.Normal(torch.zeros(2), torch.ones(2)).log_prob(torch.zeros(2)).tolist()


@pytest.fixture
def fetches(monkeypatch) -> list:
    """The fetches (round trips to the workers) the client makes during the test."""
    made: list = []
    session = client.current()
    fetch = session.fetch

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return fetch(*args, **kwargs)
    monkeypatch.setattr(session, 'fetch', counting)
    return made


def test_argument_checks_cost_one_round_trip_and_none_without_validation(fetches):
    loc, scale = gt.zeros(2), gt.ones(2)
    gt.sync()
    GD.Normal(loc, scale, validate_args=False)
    assert len(fetches) == 0
    GD.LogNormal(loc, scale)  # its base Normal's checks and its own: fetched together
    assert len(fetches) == 1
    distribution = GD.Normal(loc, scale, validate_args=False)
    distribution.log_prob(distribution.sample())
    assert len(fetches) == 1
    distribution = GD.Normal(loc, scale)
    distribution.log_prob(distribution.sample())  # the sample's check
    assert len(fetches) == 3
    GD.Distribution.set_default_validate_args(False)  # torch's switch, for torch's too
    try:
        GD.Normal(loc, scale).log_prob(loc)
        assert len(fetches) == 3
    finally:
        GD.Distribution.set_default_validate_args(True)


def test_numbers_as_parameters_are_gt_tensors_of_torchs_dtype():
    standard = GD.Normal(0.0, 1.0)
    assert isinstance(standard.loc, gt.Tensor) and isinstance(standard.scale, gt.Tensor)
    torch.manual_seed(2)
    want = TD.Normal(0.0, 1.0).sample((3,))
    gt.manual_seed(2)
    assert_same(standard.sample((3,)), want, rtol=0, atol=0)
    loc = torch.tensor([0.0, 1.0], dtype=torch.float64)
    assert_same(GD.Normal(gt.tensor(loc), 0.1).scale, TD.Normal(loc, 0.1).scale)
    assert_same(GD.Beta(2.0, 3.0).variance, TD.Beta(2.0, 3.0).variance)


def test_lazy_properties_carry_gradients_even_when_first_read_under_no_grad():
    logits = gt.tensor([0.0, 1.0, 2.0], requires_grad=True)
    distribution = GD.Categorical(logits=logits)
    with gt.no_grad():
        probs = distribution.probs
    assert probs.requires_grad
    probs[2].backward()
    want = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    torch.softmax(want, 0)[2].backward()
    assert_same(logits.grad, want.grad)


def test_a_custom_distribution_on_gts_base_class_ports_by_its_import():
    def shifted(d: Any) -> type:
        class Shifted(d.Distribution):
            arg_constraints = {'loc': d.constraints.real}
            support = d.constraints.real
            has_rsample = True

            def __init__(self, loc: Any, validate_args: Any = None) -> None:
                self.loc = loc
                super().__init__(loc.shape, validate_args=validate_args)

            def rsample(self, sample_shape: Any = torch.Size()) -> Any:
                shape = self._extended_shape(sample_shape)
                return self.loc + torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)

            def log_prob(self, value: Any) -> Any:
                if self._validate_args:
                    self._validate_sample(value)
                return -0.5 * (value - self.loc) ** 2 - 0.5 * math.log(2 * math.pi)
        return Shifted

    torch.manual_seed(5)
    want = shifted(TD)(torch.tensor([1.0, 2.0], requires_grad=True)).sample((2,))
    gt.manual_seed(5)
    distribution = shifted(GD)(gt.tensor([1.0, 2.0], requires_grad=True))
    got = distribution.sample((2,))
    assert_same(got, want)
    assert not got.requires_grad
    with pytest.raises(ValueError, match='parameter loc'):
        shifted(GD)(gt.tensor([math.nan]))
    assert_same(distribution.log_prob(got), shifted(TD)(torch.tensor([1.0, 2.0])).log_prob(want))
    unsupported = type('Unsupported', (shifted(GD),), {'support': property(
        lambda self: GD.Distribution.support.fget(self))})
    with pytest.warns(UserWarning, match='defines no support'):
        unsupported(gt.tensor([1.0])).log_prob(gt.tensor([0.5]))


def test_distributions_whose_torch_code_writes_through_views():
    """torch's LowRankMultivariateNormal adds the identity to its capacitance matrix
    through a view, and LKJCholesky zeroes a row of its draw through one (gt/views.py)."""
    torch.manual_seed(0)
    loc, factor, diagonal = torch.randn(2, 3), torch.randn(2, 3, 2), torch.rand(2, 3) + 0.5
    want = TD.LowRankMultivariateNormal(loc, factor, diagonal)
    mine = gt.tensor(loc, requires_grad=True)
    got = GD.LowRankMultivariateNormal(mine, gt.tensor(factor), gt.tensor(diagonal))
    value = torch.randn(2, 3)
    theirs = loc.clone().requires_grad_()
    expected = TD.LowRankMultivariateNormal(theirs, factor, diagonal).log_prob(value)
    assert_same(got.log_prob(gt.tensor(value)), expected)
    assert_same(got.entropy(), want.entropy())
    assert_same(got.variance, want.variance)
    got.log_prob(gt.tensor(value)).sum().backward()
    expected.sum().backward()
    assert_same(mine.grad, theirs.grad)
    gt.manual_seed(3)  # torch's generator in this process too
    draws = TD.LKJCholesky(3, 0.5).sample((2,))
    assert_same(GD.LKJCholesky(3, gt.tensor(0.5)).sample((2,)), draws)
    assert_same(GD.LKJCholesky(3, gt.tensor(0.5)).log_prob(gt.tensor(draws)),
                TD.LKJCholesky(3, 0.5).log_prob(draws))


def test_torchs_names_are_there():
    assert gt.distributions is GD
    assert GD.constraints is TD.constraints and GD.transforms is TD.transforms
    assert issubclass(GD.Normal, TD.Normal) and issubclass(GD.Normal, GD.Distribution)
    assert set(GD.__all__) == set(TD.__all__)
    assert all(hasattr(GD, name) for name in GD.__all__)


def test_a_policy_gradient_step_matches_torch():
    """REINFORCE: sample actions from a linear policy, weight their log-probabilities by
    the returns, add an entropy bonus; the actions and the gradients are torch's."""
    weight, bias = torch.randn(4, 3), torch.randn(3)
    observations, returns = torch.randn(6, 4), torch.randn(6)

    def step(module: Any, distributions: Any, convert: Callable) -> tuple:
        w = convert(weight).requires_grad_()
        b = convert(bias).requires_grad_()
        policy = distributions.Categorical(logits=convert(observations) @ w + b)
        module.manual_seed(21)
        actions = policy.sample()
        loss = -(policy.log_prob(actions) * convert(returns)).mean() \
            - 0.01 * policy.entropy().mean()
        loss.backward()
        return actions, loss, w.grad, b.grad

    want = step(torch, TD, lambda x: x.clone())
    got = step(gt, GD, gt.tensor)
    for g, w in zip(got, want):
        assert_same(g, w.detach(), rtol=1e-5, atol=1e-6)


def test_a_vae_step_matches_torch():
    """Encode to a Normal, decode a reparameterized sample, add the KL divergence to the
    standard normal prior: the loss and every gradient are torch's."""
    encoder, decoder = torch.randn(5, 4), torch.randn(2, 5)
    data = torch.randn(3, 5)

    def step(module: Any, distributions: Any, convert: Callable) -> tuple:
        e = convert(encoder).requires_grad_()
        d = convert(decoder).requires_grad_()
        x = convert(data)
        hidden = x @ e
        mu, log_var = hidden[:, :2], hidden[:, 2:]
        posterior = distributions.Normal(mu, (0.5 * log_var).exp())
        prior = distributions.Normal(module.zeros_like(mu), module.ones_like(mu))
        module.manual_seed(4)
        z = posterior.rsample()
        reconstruction = ((z @ d - x) ** 2).sum(-1)
        kl = distributions.kl_divergence(posterior, prior).sum(-1)
        loss = (reconstruction + kl).mean()
        loss.backward()
        return loss, e.grad, d.grad

    want = step(torch, TD, lambda x: x.clone())
    got = step(gt, GD, gt.tensor)
    for g, w in zip(got, want):
        assert_same(g, w.detach(), rtol=1e-5, atol=1e-5)


def test_submodules_import_by_their_dotted_names_as_torchs():
    """SAC and flow code import from torch's submodules (`...transforms import
    TanhTransform`): GT's give GT's classes and kl_divergence, and torch's transforms."""
    import importlib

    for name in ['transforms', 'constraints', 'kl', 'normal', 'categorical', 'utils',
                 'transformed_distribution', 'constraint_registry']:
        module = importlib.import_module(f'gt.distributions.{name}')
        assert getattr(gt.distributions, name) is module
    from gt.distributions.kl import kl_divergence
    from gt.distributions.normal import Normal
    from gt.distributions.transforms import TanhTransform
    assert Normal is gt.distributions.Normal and kl_divergence is gt.distributions.kl_divergence
    assert TanhTransform is torch.distributions.transforms.TanhTransform
    squashed = gt.distributions.TransformedDistribution(
        Normal(gt.zeros(3), gt.ones(3)), [TanhTransform(cache_size=1)])
    point = torch.tensor([0.1, -0.5, 0.9])
    torch_squashed = TD.TransformedDistribution(
        TD.Normal(torch.zeros(3), torch.ones(3)), [TanhTransform(cache_size=1)])
    torch.testing.assert_close(squashed.log_prob(gt.tensor(point)).data,
                               torch_squashed.log_prob(point))
    torch.testing.assert_close(
        kl_divergence(Normal(gt.zeros(2), gt.ones(2)), Normal(gt.ones(2), gt.ones(2) * 2)).data,
        TD.kl_divergence(TD.Normal(torch.zeros(2), torch.ones(2)),
                         TD.Normal(torch.ones(2), torch.ones(2) * 2)))


def test_wisharts_resampling_of_a_singular_draw_is_torchs():
    """torch's Wishart redraws a sample its support check calls singular and writes the
    redraw in with a 0-d boolean mask (`sample[is_singular] = new[is_singular]`), which
    GT had lost: every later draw was out of step with torch's."""
    samples = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        wishart = lib.distributions.Wishart(df=lib.tensor(4.0), covariance_matrix=lib.eye(2))
        with pytest.warns(UserWarning, match='Singular sample detected'):
            first = wishart.sample()
        samples.append(torch.tensor([first.tolist(), lib.randn(2, 2).tolist()]))
    torch.testing.assert_close(samples[0], samples[1])
