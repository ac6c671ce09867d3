"""gt.optim.LBFGS against torch.optim.LBFGS: the same closure, weights and options give
the same weights bit for bit after each step, with the same numbers of evaluations and
iterations (the control flow follows fetched values, so it must take the same turns),
with and without the strong-Wolfe line search; state dicts load both ways."""

import pytest
import torch

import gt
import gt.nn as nn
import gt.nn.functional as F
import gt.optim as optim
from gt.serialization import load, save

CASES = [
    dict(max_iter=4),
    dict(lr=0.5, max_iter=6, history_size=3),
    dict(line_search_fn='strong_wolfe', max_iter=5),
    dict(line_search_fn='strong_wolfe', lr=0.8, max_iter=7, max_eval=9, history_size=2),
]
IDS = ['plain', 'short-history', 'strong-wolfe', 'strong-wolfe-short']


def model(library):
    return library.Sequential(library.Linear(12, 16), library.Tanh(), library.Linear(16, 4))


def problem(options: dict, start: dict | None = None) -> tuple:
    """The same model, data and LBFGS in GT and torch, and each one's closure."""
    theirs = model(torch.nn)
    if start is not None:
        theirs.load_state_dict(start)
    mine = model(nn)
    mine.load_state_dict(theirs.state_dict())
    generator = torch.Generator().manual_seed(5)
    x, y = torch.randn(24, 12, generator=generator), torch.randint(0, 4, (24,),
                                                                   generator=generator)
    optimizer = optim.LBFGS(mine.parameters(), **options)
    expected = torch.optim.LBFGS(theirs.parameters(), **options)
    inputs, targets = gt.tensor(x), gt.tensor(y)

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(mine(inputs), targets)
        loss.backward()
        return loss

    def torch_closure():
        expected.zero_grad()
        loss = torch.nn.functional.cross_entropy(theirs(x), y)
        loss.backward()
        return loss

    return mine, theirs, (optimizer, closure), (expected, torch_closure)


def counts(optimizer, model) -> tuple:
    state = optimizer.state[next(iter(model.parameters()))]
    return state['func_evals'], state['n_iter']


def assert_equal_weights(mine, theirs) -> None:
    want = theirs.state_dict()
    for key, value in mine.state_dict().items():
        assert torch.equal(value.data, want[key]), key


@pytest.mark.parametrize('options', CASES, ids=IDS)
def test_steps_equal_torchs_bit_for_bit(options):
    mine, theirs, (optimizer, closure), (expected, torch_closure) = problem(options)
    for _ in range(3):
        loss = optimizer.step(closure)
        torch_loss = expected.step(torch_closure)
        assert isinstance(loss, gt.Tensor) and loss.item() == torch_loss.item()
        assert counts(optimizer, mine) == counts(expected, theirs)
        assert_equal_weights(mine, theirs)


@pytest.mark.parametrize('options', [CASES[1], CASES[3]], ids=[IDS[1], IDS[3]])
def test_state_dicts_load_both_ways_and_runs_resume_identically(options, tmp_path):
    mine, theirs, (optimizer, closure), (expected, torch_closure) = problem(options)
    start = {key: value.clone() for key, value in theirs.state_dict().items()}
    for _ in range(4):
        expected.step(torch_closure)  # torch, uninterrupted: the oracle

    for _ in range(2):
        optimizer.step(closure)
    save({'model': mine.state_dict(), 'optimizer': optimizer.state_dict()}, tmp_path / 'gt.pt')
    checkpoint = torch.load(tmp_path / 'gt.pt')
    _, resumed, _, (resumed_optimizer, resumed_closure) = problem(options, start)
    resumed.load_state_dict(checkpoint['model'])
    resumed_optimizer.load_state_dict(checkpoint['optimizer'])
    for _ in range(2):
        resumed_optimizer.step(resumed_closure)
    assert counts(resumed_optimizer, resumed) == counts(expected, theirs)
    for key, value in resumed.state_dict().items():
        assert torch.equal(value, theirs.state_dict()[key]), key

    _, torch_run, _, (torch_optimizer, run_closure) = problem(options, start)
    for _ in range(2):
        torch_optimizer.step(run_closure)
    torch.save(torch_optimizer.state_dict(), tmp_path / 'torch.pt')
    for state in (torch_optimizer.state_dict(), load(tmp_path / 'torch.pt')):
        gt_run, _, (gt_optimizer, gt_closure), _ = problem(options, start)
        gt_run.load_state_dict(torch_run.state_dict())
        gt_optimizer.load_state_dict(state)
        for _ in range(2):
            gt_optimizer.step(gt_closure)
        assert counts(gt_optimizer, gt_run) == counts(expected, theirs)
        assert_equal_weights(gt_run, theirs)


def test_errors_as_in_torch():
    layers = model(nn)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{'params': layers[0].parameters()}, {'params': layers[2].parameters()}])
    with pytest.raises(ValueError, match='lr=-1'):
        optim.LBFGS(layers.parameters(), lr=-1)
    optimizer = optim.LBFGS(layers.parameters(), line_search_fn='backtracking')
    x = gt.randn(3, 12)

    def closure():
        optimizer.zero_grad()
        loss = layers(x).square().sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optimizer.step(closure)
    assert optim.LBFGS(layers.parameters()).defaults == torch.optim.LBFGS(
        model(torch.nn).parameters()).defaults
