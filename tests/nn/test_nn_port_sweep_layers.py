"""Layers and functions a port sweep of ordinary PyTorch scripts found missing, against
torch: EmbeddingBag (torchtext's text classifier), Bilinear, CosineSimilarity,
PairwiseDistance, and gumbel_softmax with gradients (its noise torch's after the same
seed)."""

import pytest
import torch
from nn_check import assert_close, check_module, randn

import gt
import gt.nn as nn
import gt.nn.functional as F

TOKENS = [1, 2, 4, 5, 4, 3, 2, 9, 0, 7]
OFFSETS = [0, 4, 7]


def run_bag(lib, **options):
    lib.manual_seed(0)
    bag = lib.nn.EmbeddingBag(10, 3, **options)
    output = bag(lib.tensor(TOKENS), lib.tensor(OFFSETS))
    (output * lib.arange(3.0)).sum().backward()
    return bag, output


@pytest.mark.parametrize('options', [{}, {'mode': 'sum'}, {'mode': 'max'},
                                     {'padding_idx': 4}, {'max_norm': 1.0, 'mode': 'sum'},
                                     {'include_last_offset': True}],
                         ids=['mean', 'sum', 'max', 'padding', 'max-norm', 'last-offset'])
def test_embedding_bag_draws_reduces_and_differentiates_as_torch(options):
    """Bit for bit, but for max_norm's rescaling, GT's ops where torch has a kernel."""
    mine, mine_out = run_bag(gt, **options)
    theirs, theirs_out = run_bag(torch, **options)
    assert repr(mine) == repr(theirs)
    tolerance = 1e-6 if 'max_norm' in options else 0
    for got, want in ((mine_out, theirs_out), (mine.weight, theirs.weight),
                      (mine.weight.grad, theirs.weight.grad)):
        assert_close(got, want, rtol=tolerance, atol=tolerance)


def test_embedding_bag_of_a_2d_input_with_per_sample_weights():
    table, weights = randn(10, 4), randn(2, 3)
    indices = torch.tensor([[1, 2, 3], [4, 4, 9]])
    mine = nn.EmbeddingBag.from_pretrained(gt.tensor(table), freeze=False, mode='sum')
    theirs = torch.nn.EmbeddingBag.from_pretrained(table, freeze=False, mode='sum')
    assert mine.weight.requires_grad
    mine_weights = gt.tensor(weights, requires_grad=True)
    theirs_weights = weights.clone().requires_grad_()
    got = mine(gt.tensor(indices), per_sample_weights=mine_weights)
    want = theirs(indices, per_sample_weights=theirs_weights)
    got.pow(2).sum().backward()
    want.pow(2).sum().backward()
    assert_close(got, want)
    assert_close(mine.weight.grad, theirs.weight.grad)
    assert_close(mine_weights.grad, theirs_weights.grad)
    assert not nn.EmbeddingBag.from_pretrained(gt.tensor(table)).weight.requires_grad


@pytest.mark.parametrize('bias', [True, False])
def test_bilinear_draws_and_computes_as_torch(bias):
    gt.manual_seed(3)
    torch.manual_seed(3)
    mine, theirs = nn.Bilinear(4, 5, 2, bias=bias), torch.nn.Bilinear(4, 5, 2, bias=bias)
    assert repr(mine) == repr(theirs)
    for name, parameter in theirs.named_parameters():
        assert_close(getattr(mine, name), parameter, rtol=0, atol=0)
    check_module(mine, theirs, randn(3, 4), randn(3, 5))


@pytest.mark.parametrize('mine, theirs', [
    (nn.CosineSimilarity(), torch.nn.CosineSimilarity()),
    (nn.CosineSimilarity(dim=0, eps=0.5), torch.nn.CosineSimilarity(dim=0, eps=0.5)),
    (nn.PairwiseDistance(), torch.nn.PairwiseDistance()),
    (nn.PairwiseDistance(p=1.0, keepdim=True), torch.nn.PairwiseDistance(p=1.0, keepdim=True)),
])
def test_distance_modules(mine, theirs):
    check_module(mine, theirs, randn(4, 6), randn(4, 6))


@pytest.mark.parametrize('hard', [False, True])
@pytest.mark.parametrize('dim', [-1, 0])
def test_gumbel_softmax_draws_torchs_noise_and_differentiates(hard, dim):
    """Run by name, a random call has no gradient in GT: the function is GT's own."""
    logits = randn(4, 6)
    weights = randn(4, 6)
    mine, theirs = gt.tensor(logits, requires_grad=True), logits.clone().requires_grad_()
    gt.manual_seed(5)
    torch.manual_seed(5)
    got = F.gumbel_softmax(mine, tau=0.7, hard=hard, dim=dim)
    want = torch.nn.functional.gumbel_softmax(theirs, tau=0.7, hard=hard, dim=dim)
    (got * gt.tensor(weights)).sum().backward()
    (want * weights).sum().backward()
    assert_close(got, want, rtol=0, atol=0)
    assert_close(mine.grad, theirs.grad, rtol=0, atol=0)
    assert_close(gt.rand(3), torch.rand(3), rtol=0, atol=0)  # the generators stay in step


@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@pytest.mark.parametrize('batched', [True, False])
def test_ctc_loss_records_and_differentiates_as_torchs(reduction, batched):
    """torch has no meta kernel for ctc_loss; GT knows its result's shape, so the loss is
    recorded like any call and its gradient comes from the worker."""
    steps, batch, classes, length = 12, 2, 5, 4
    log_probs = randn(steps, batch, classes).log_softmax(2)
    targets = torch.randint(1, classes, (batch, length))
    input_lengths, target_lengths = torch.tensor([12, 10]), torch.tensor([4, 3])
    if not batched:
        log_probs, targets = log_probs[:, 0], targets[0, :3]
        input_lengths, target_lengths = input_lengths[:1].sum(), target_lengths[1:].sum()
    mine = gt.tensor(log_probs, requires_grad=True)
    theirs = log_probs.clone().requires_grad_()
    module = nn.CTCLoss(reduction=reduction)
    got = module(mine, gt.tensor(targets), gt.tensor(input_lengths), gt.tensor(target_lengths))
    want = torch.nn.CTCLoss(reduction=reduction)(theirs, targets, input_lengths,
                                                 target_lengths)
    assert got.shape == want.shape
    got.sum().backward()
    want.sum().backward()
    assert_close(got, want)
    assert_close(mine.grad, theirs.grad)


def test_ctc_loss_of_wrong_arguments_fails_on_the_worker_naming_it():
    log_probs = gt.zeros(6, 2, 4).log_softmax(2)
    loss = F.ctc_loss(log_probs, gt.ones(2, 3, dtype=torch.long), gt.tensor([6, 6]),
                      gt.tensor([3, 9]))
    with pytest.raises(gt.WorkerError, match='ctc_loss'):
        loss.item()


def test_triplet_margin_with_a_python_distance_function():
    """The distance function cannot travel to a worker: GT composes the loss of ops, and
    torch.nn.functional's own entry point (given GT tensors) lands there too."""
    def cosine_distance(x, y):
        return 1 - F.cosine_similarity(x, y)

    def torch_cosine_distance(x, y):
        return 1 - torch.nn.functional.cosine_similarity(x, y)

    check_module(nn.TripletMarginWithDistanceLoss(distance_function=cosine_distance, swap=True),
                 torch.nn.TripletMarginWithDistanceLoss(distance_function=torch_cosine_distance,
                                                        swap=True),
                 randn(4, 6), randn(4, 6), randn(4, 6))
    check_module(nn.TripletMarginWithDistanceLoss(margin=0.5, reduction='none'),
                 torch.nn.TripletMarginWithDistanceLoss(margin=0.5, reduction='none'),
                 randn(4, 6), randn(4, 6), randn(4, 6))
    anchor = gt.tensor(randn(3, 2))
    loss = torch.nn.functional.triplet_margin_with_distance_loss(
        anchor, anchor + 1, anchor * 2, distance_function=cosine_distance)
    assert isinstance(loss, gt.Tensor)
    with pytest.raises(ValueError, match='margin to be greater than 0'):
        nn.TripletMarginWithDistanceLoss(margin=0)


def test_unpooling_lp_pooling_channel_shuffle_and_multilabel_margin():
    x = randn(1, 2, 4, 6)
    pooled, indices = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    mine, theirs = nn.MaxUnpool2d(2), torch.nn.MaxUnpool2d(2)
    assert repr(mine) == repr(theirs)
    assert_close(mine(gt.tensor(pooled), gt.tensor(indices)), theirs(pooled, indices))
    pooled1, indices1 = torch.nn.functional.max_pool1d(x[0], 2, return_indices=True)
    assert_close(nn.MaxUnpool1d(2)(gt.tensor(pooled1), gt.tensor(indices1), [6]),
                 torch.nn.MaxUnpool1d(2)(pooled1, indices1, [6]))
    for mine, theirs, given in ((nn.LPPool2d(2, 2), torch.nn.LPPool2d(2, 2), x.abs() + 0.1),
                                (nn.LPPool1d(3, 2, stride=1), torch.nn.LPPool1d(3, 2, stride=1),
                                 x[0].abs() + 0.1),
                                (nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2), x)):
        assert repr(mine) == repr(theirs)
        check_module(mine, theirs, given)
    target = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])
    mine, theirs = nn.MultiLabelMarginLoss(), torch.nn.MultiLabelMarginLoss()
    scores = randn(2, 4)
    given = gt.tensor(scores, requires_grad=True)
    got, want = mine(given, gt.tensor(target)), theirs(scores.requires_grad_(), target)
    got.backward()
    want.backward()
    assert_close(got, want)
    assert_close(given.grad, scores.grad)
