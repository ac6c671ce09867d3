"""nn.Embedding and F.embedding against torch: padding_idx (its row zeroed at the start and
given no gradient), max_norm (rows rescaled as they are looked up), scale_grad_by_freq,
from_pretrained, and seeded draws equal to torch's."""

import pytest
import torch

import gt
import gt.nn as nn


def run(lib, **options):
    lib.manual_seed(0)
    layer = lib.nn.Embedding(6, 3, **options)
    indices = lib.tensor([[1, 2, 1], [0, 5, 3]])
    output = layer(indices)
    (output * output).sum().backward()
    return layer, output


@pytest.mark.parametrize('options', [{}, {'padding_idx': 1}, {'padding_idx': -1},
                                     {'max_norm': 1.0}, {'max_norm': 0.5, 'norm_type': 1.0},
                                     {'padding_idx': 2, 'max_norm': 1.0},
                                     {'scale_grad_by_freq': True},
                                     {'scale_grad_by_freq': True, 'padding_idx': 1,
                                      'max_norm': 1.0}],
                         ids=['plain', 'padding', 'negative-padding', 'max-norm',
                              'max-norm-l1', 'both', 'by-frequency', 'by-frequency-and-all'])
def test_matches_torch(options):
    mine, mine_out = run(gt, **options)
    theirs, theirs_out = run(torch, **options)
    assert repr(mine) == repr(theirs)
    for got, want in ((mine_out, theirs_out), (mine.weight, theirs.weight),
                      (mine.weight.grad, theirs.weight.grad)):
        torch.testing.assert_close(got.data, want.detach(), rtol=1e-6, atol=1e-6)


def test_from_pretrained_freezes_unless_told():
    table = torch.arange(12.).reshape(4, 3)
    frozen = nn.Embedding.from_pretrained(gt.tensor(table))
    assert not frozen.weight.requires_grad and repr(frozen) == 'Embedding(4, 3)'
    trained = nn.Embedding.from_pretrained(gt.tensor(table), freeze=False, padding_idx=0)
    trained(gt.tensor([0, 2])).sum().backward()
    assert trained.weight.grad.tolist() == [[0.0] * 3, [0.0] * 3, [1.0] * 3, [0.0] * 3]
    assert torch.equal(trained.weight.data, table)


def test_bad_arguments_raise_as_torch():
    for lib in (nn, torch.nn):
        with pytest.raises(AssertionError, match='Padding_idx must be within'):
            lib.Embedding(3, 2, padding_idx=3)
        with pytest.raises(AssertionError, match='2-dimensional'):
            lib.Embedding.from_pretrained((gt if lib is nn else torch).ones(3))


def test_max_norm_lookups_twice_before_backward_as_torch():
    """Each lookup renormalizes rows in place; the first lookup's gradient needs only its
    indices, so torch allows a second lookup before backward (matrix factorization's
    `score(u, pos) - score(u, neg)`), and so does GT."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        table = lib.nn.Embedding(10, 3, max_norm=1.0)
        first = table(lib.tensor([1, 2])).sum()
        second = (table(lib.tensor([3, 1])) ** 2).sum()
        (first + second).backward()
        results.append([table.weight.grad, table.weight])
    for got, want in zip(*results):
        torch.testing.assert_close(got.data, want.detach(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16], ids=str)
def test_a_half_precision_embeddings_gradient_is_torchs(dtype):
    """torch sums a row's gradients in its embedding backward kernel, which in half
    precision rounds otherwise than index_add: a bf16 nanoGPT's tied wte differed at step 0
    (up to 0.0156)."""
    torch.manual_seed(0)
    theirs = torch.nn.Embedding(65, 32).to(dtype)
    mine = gt.nn.Embedding(65, 32)
    mine.load_state_dict(theirs.state_dict())
    mine = mine.to(dtype)
    indices, upstream = torch.randint(0, 65, (4, 16)), torch.randn(4, 16, 32).to(dtype)
    (theirs(indices) * upstream).float().sum().backward()
    (mine(gt.tensor(indices)) * gt.tensor(upstream)).float().sum().backward()
    assert torch.equal(mine.weight.grad.data, theirs.weight.grad)
