"""The loss modules of gt/nn/loss_modules.py against torch.nn: values and gradients for
each reduction and option, repr, buffers, the legacy size_average/reduce arguments, and
torch's argument errors."""

import pytest
import torch
from nn_check import assert_close, randn, seeded

import gt
import gt.nn as nn


def signs(*shape: int) -> torch.Tensor:
    return torch.randint(0, 2, shape, generator=seeded()).float() * 2 - 1


def positive(*shape: int) -> torch.Tensor:
    return torch.rand(shape, generator=seeded()) + 0.1


def check_loss(mine: nn.Module, theirs: torch.nn.Module, inputs: list[torch.Tensor],
               grads: list[bool], atol: float = 1e-6) -> None:
    """Both losses on the same inputs; those flagged in `grads` get gradients, compared."""
    pairs = [(gt.tensor(x, requires_grad=g), x.clone().requires_grad_(g))
             for x, g in zip(inputs, grads, strict=True)]
    loss_mine = mine(*[p[0] for p in pairs])
    loss_theirs = theirs(*[p[1] for p in pairs])
    assert_close(loss_mine, loss_theirs, atol=atol)
    weights = randn(*loss_theirs.shape)
    (loss_mine * gt.tensor(weights)).sum().backward()
    (loss_theirs * weights).sum().backward()
    for (x_mine, x_theirs), g in zip(pairs, grads):
        if g:
            assert_close(x_mine.grad, x_theirs.grad, atol=atol)
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())


# (name, keyword arguments, inputs, which inputs get gradients)
CASES = [
    ('SmoothL1Loss', {}, lambda: [randn(4, 5) * 2, randn(4, 5)], [True, True]),
    ('SmoothL1Loss', {'beta': 0.5, 'reduction': 'sum'},
     lambda: [randn(4, 5) * 2, randn(4, 5)], [True, False]),
    ('HuberLoss', {'delta': 0.5}, lambda: [randn(4, 5) * 2, randn(4, 5)], [True, True]),
    ('HuberLoss', {'reduction': 'none'}, lambda: [randn(6) * 2, randn(6)], [True, False]),
    ('KLDivLoss', {'reduction': 'batchmean'},
     lambda: [randn(4, 5).log_softmax(1), randn(4, 5).softmax(1)], [True, True]),
    ('KLDivLoss', {'reduction': 'sum', 'log_target': True},
     lambda: [randn(4, 5).log_softmax(1), randn(4, 5).log_softmax(1)], [True, True]),
    ('CosineEmbeddingLoss', {}, lambda: [randn(4, 5), randn(4, 5), signs(4)],
     [True, True, False]),
    ('CosineEmbeddingLoss', {'margin': 0.2, 'reduction': 'none'},
     lambda: [randn(4, 5), randn(4, 5), signs(4)], [True, True, False]),
    ('MarginRankingLoss', {'margin': 0.3}, lambda: [randn(6), randn(6), signs(6)],
     [True, True, False]),
    ('TripletMarginLoss', {}, lambda: [randn(4, 5), randn(4, 5), randn(4, 5) * 0.5],
     [True, True, True]),
    ('TripletMarginLoss', {'margin': 0.5, 'p': 1.0, 'swap': True, 'reduction': 'sum'},
     lambda: [randn(4, 5), randn(4, 5), randn(4, 5) * 0.5], [True, True, True]),
    ('HingeEmbeddingLoss', {}, lambda: [randn(4, 5), signs(4, 5)], [True, False]),
    ('HingeEmbeddingLoss', {'margin': 2.0, 'reduction': 'none'},
     lambda: [randn(4, 5), signs(4, 5)], [True, False]),
    ('SoftMarginLoss', {}, lambda: [randn(4, 5), signs(4, 5)], [True, False]),
    ('MultiLabelSoftMarginLoss', {}, lambda: [randn(4, 5), (signs(4, 5) > 0).float()],
     [True, False]),
    ('MultiLabelSoftMarginLoss', {'weight': True, 'reduction': 'sum'},
     lambda: [randn(4, 5), (signs(4, 5) > 0).float()], [True, False]),
    ('MultiMarginLoss', {}, lambda: [randn(4, 5), torch.tensor([0, 3, 4, 1])],
     [True, False]),
    ('MultiMarginLoss', {'p': 2, 'margin': 0.5, 'weight': True},
     lambda: [randn(4, 5), torch.tensor([0, 3, 4, 1])], [True, False]),
    ('PoissonNLLLoss', {}, lambda: [randn(4, 5), positive(4, 5) * 3], [True, False]),
    ('PoissonNLLLoss', {'log_input': False, 'full': True, 'reduction': 'none'},
     lambda: [positive(4, 5), positive(4, 5) * 3], [True, False]),
    ('GaussianNLLLoss', {}, lambda: [randn(4, 5), randn(4, 5), positive(4, 5)],
     [True, True, True]),
    ('GaussianNLLLoss', {'full': True, 'reduction': 'sum'},
     lambda: [randn(4, 5), randn(4, 5), positive(4, 1)], [True, False, True]),
    ('GaussianNLLLoss', {'reduction': 'none'},
     lambda: [randn(4, 5), randn(4, 5), positive(4)], [True, False, True]),
    ('GaussianNLLLoss', {'eps': 0.5},  # var below eps: clamped, its gradient passes
     lambda: [randn(4, 5), randn(4, 5), positive(4, 5)], [True, True, True]),
]


def case_id(case) -> str:
    name, kwargs = case[:2]
    return '-'.join([name, *(f'{k}={v}' for k, v in kwargs.items())])


@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_loss(case):
    name, kwargs, inputs, grads = case
    if kwargs.get('weight'):  # per-class weights, a buffer
        weight = positive(5)
        mine = getattr(nn, name)(**{**kwargs, 'weight': gt.tensor(weight)})
        theirs = getattr(torch.nn, name)(**{**kwargs, 'weight': weight})
    else:
        mine, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    check_loss(mine, theirs, inputs(), grads, atol=1e-5)


def test_gaussian_nll_loss_of_a_float_variance():
    mine, theirs = nn.GaussianNLLLoss(), torch.nn.GaussianNLLLoss()
    x, target = randn(4, 3), randn(4, 3)
    assert_close(mine(gt.tensor(x), gt.tensor(target), 0.7), theirs(x, target, 0.7))


def test_kl_div_mean_warns_as_torch_does():
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss"):
        nn.KLDivLoss()(gt.randn(2, 3).log_softmax(1), gt.randn(2, 3).softmax(1))


@pytest.mark.parametrize('size_average,reduce,reduction', [
    (False, None, 'sum'), (None, False, 'none'), (True, True, 'mean')])
def test_legacy_arguments_become_a_reduction(size_average, reduce, reduction):
    with pytest.warns(UserWarning, match='deprecated'):
        mine = nn.SmoothL1Loss(size_average, reduce)
    assert mine.reduction == reduction


def test_weight_is_a_buffer_as_in_torch():
    weight = gt.tensor([1.0, 2.0, 3.0])
    mine = nn.MultiLabelSoftMarginLoss(weight)
    assert mine.weight is weight and list(mine.state_dict()) == ['weight']
    assert list(nn.MultiLabelSoftMarginLoss().state_dict()) == []


@pytest.mark.parametrize('make,error', [
    (lambda nn: nn.HuberLoss(delta='1'), TypeError),
    (lambda nn: nn.TripletMarginLoss(margin=0.0), ValueError),
    (lambda nn: nn.MultiMarginLoss(p=3), ValueError),
], ids=['huber-delta-type', 'triplet-margin', 'multi-margin-p'])
def test_bad_arguments_raise_torchs_errors(make, error):
    with pytest.raises(error) as theirs:
        make(torch.nn)
    with pytest.raises(error) as mine:
        make(nn)
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize('var,reduction', [
    (-torch.ones(4, 3), 'mean'), (torch.ones(4, 2), 'mean'), (-1.0, 'mean'),
    (torch.ones(4, 3), 'average')], ids=['negative', 'wrong-shape', 'negative-float',
                                         'bad-reduction'])
def test_gaussian_nll_loss_errors_are_torchs(var, reduction):
    x = torch.zeros(4, 3)
    with pytest.raises(ValueError) as theirs:
        torch.nn.GaussianNLLLoss(reduction=reduction)(x, x, var)
    var_mine = gt.tensor(var) if isinstance(var, torch.Tensor) else var
    with pytest.raises(ValueError) as mine:
        nn.GaussianNLLLoss(reduction=reduction)(gt.tensor(x), gt.tensor(x), var_mine)
    assert str(mine.value) == str(theirs.value)
