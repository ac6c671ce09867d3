"""Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout against torch.nn: after the same
seed the masks (and so the outputs and gradients) are torch's bit for bit; evaluation is
the identity; `inplace` rebinds the caller's tensor; repr and torch's argument errors."""

import pytest
import torch
from nn_check import randn

import gt
import gt.nn as nn

# torch's (and GT's) warning for a 3-d input to dropout2d, checked once below.
pytestmark = pytest.mark.filterwarnings('ignore:dropout2d:UserWarning')
# (name, p, input shape): batched and unbatched inputs, each one visible as a case.
CASES = [
    ('Dropout1d', 0.5, (4, 6, 5)),
    ('Dropout1d', 0.3, (6, 5)),
    ('Dropout2d', 0.5, (3, 8, 2, 3)),
    ('Dropout2d', 0.2, (8, 2, 3)),  # taken as (N, C, L), with torch's warning
    ('Dropout3d', 0.4, (2, 5, 2, 2, 2)),
    ('Dropout3d', 0.6, (5, 2, 2, 2)),
    ('AlphaDropout', 0.5, (7, 9)),
    ('AlphaDropout', 0.1, (2, 3, 4)),
    ('FeatureAlphaDropout', 0.4, (4, 6, 3)),
    ('FeatureAlphaDropout', 0.5, (4, 6, 2, 2)),
]


def case_id(case) -> str:
    name, p, shape = case
    return f'{name}-p{p}-' + 'x'.join(map(str, shape))


@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_training_draws_torchs_mask_after_the_same_seed(case):
    name, p, shape = case
    mine, theirs = getattr(nn, name)(p), getattr(torch.nn, name)(p)
    x = randn(*shape)
    x_mine, x_theirs = gt.tensor(x, requires_grad=True), x.clone().requires_grad_()
    gt.manual_seed(123)
    out_mine = mine(x_mine)
    torch.manual_seed(123)
    out_theirs = theirs(x_theirs)
    assert torch.equal(out_mine.data, out_theirs.detach())
    weights = randn(*shape)
    (out_mine * gt.tensor(weights)).sum().backward()
    (out_theirs * weights).sum().backward()
    assert torch.equal(x_mine.grad.data, x_theirs.grad)
    assert repr(mine) == repr(theirs)


@pytest.mark.parametrize('name', ['Dropout1d', 'Dropout2d', 'Dropout3d', 'AlphaDropout',
                                  'FeatureAlphaDropout'])
def test_evaluation_is_the_identity(name):
    layer = getattr(nn, name)(0.9).eval()
    x = gt.randn(2, 3, 4, 2, 2) if name == 'Dropout3d' else gt.randn(2, 3, 4)
    assert layer(x) is x


@pytest.mark.parametrize('name', ['Dropout1d', 'Dropout2d', 'AlphaDropout'])
@pytest.mark.parametrize('p', [0.0, 1.0])
def test_edge_probabilities(name, p):
    x = randn(2, 3, 4)
    out = getattr(nn, name)(p)(gt.tensor(x))
    torch.manual_seed(0)
    assert torch.equal(out.data, getattr(torch.nn, name)(p)(x))


@pytest.mark.parametrize('name,shape', [('Dropout1d', (3, 5)), ('Dropout2d', (2, 3, 2, 2)),
                                        ('Dropout3d', (3, 2, 2, 2))])
def test_inplace_rebinds_the_callers_tensor(name, shape):
    mine, theirs = getattr(nn, name)(0.5, inplace=True), getattr(torch.nn, name)(0.5, True)
    x = randn(*shape)
    x_mine, x_theirs = gt.tensor(x), x.clone()
    gt.manual_seed(5)
    out = mine(x_mine)
    torch.manual_seed(5)
    theirs(x_theirs)
    assert torch.equal(x_mine.data, x_theirs) and torch.equal(out.data, x_theirs)
    assert repr(mine) == repr(theirs)


def test_alpha_dropout_ignores_inplace_as_torch_does():
    x = gt.ones(4, 4)
    nn.AlphaDropout(0.5, inplace=True)(x)
    assert x.tolist() == [[1.0] * 4] * 4


@pytest.mark.parametrize('p', [-0.1, 1.5])
@pytest.mark.parametrize('name', ['Dropout1d', 'Dropout2d', 'Dropout3d', 'AlphaDropout',
                                  'FeatureAlphaDropout'])
def test_bad_probability_raises_torchs_error(name, p):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.nn, name)(p)
    with pytest.raises(ValueError) as mine:
        getattr(nn, name)(p)
    assert str(mine.value) == str(theirs.value)


def test_dropout1d_refuses_other_ranks_as_torch_does():
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Dropout1d()(torch.zeros(2, 3, 4, 5))
    with pytest.raises(RuntimeError) as mine:
        nn.Dropout1d()(gt.zeros(2, 3, 4, 5))
    assert str(mine.value) == str(theirs.value)


def test_dropout2d_warns_as_torch_does_for_3d_inputs():
    with pytest.warns(UserWarning, match='Received a 3D input to dropout2d'):
        nn.Dropout2d()(gt.zeros(2, 3, 4))


def test_functional_forms_have_torchs_defaults():
    x = gt.randn(3, 4)
    assert nn.dropout.alpha_dropout(x) is x  # training=False by default, as in torch
    assert nn.dropout.feature_alpha_dropout(x) is x


LAID_OUT = {
    'a transpose made contiguous': lambda lib: lib.ones(3, 4).t().contiguous(),
    'cloned to contiguous_format': lambda lib: lib.ones(3, 4).t().clone(
        memory_format=torch.contiguous_format),
    'pad_packed_sequence, batch first, unsorted': lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_sequence([lib.ones(n, 3) for n in (2, 5, 4)],
                                       enforce_sorted=False), batch_first=True)[0],
}


@pytest.mark.parametrize('case', LAID_OUT, ids=str)
def test_a_mask_over_a_copy_of_a_transpose_is_torchs(case):
    """A mask is drawn in the order of its input's memory: a `.contiguous()` of a
    transpose kept the transposed layout on the worker, and the mask was another."""
    masks = []
    for lib in (gt, torch):
        x = LAID_OUT[case](lib)
        lib.manual_seed(0)
        masks.append(lib.nn.functional.dropout(x, 0.5).tolist())
    assert masks[0] == masks[1]
