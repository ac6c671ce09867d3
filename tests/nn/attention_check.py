"""Shared by the attention and transformer tests: `check_masked` runs a GT module and its
torch twin (torch's weights loaded into GT's) on the same inputs and keyword masks, and
compares outputs (a tensor or a tuple of them), input gradients and parameter gradients.
"""

import torch
from nn_check import assert_close, both, randn, seeded

import gt


def as_gt(value):
    return gt.tensor(value) if isinstance(value, torch.Tensor) else value


def check_masked(mine: gt.nn.Module, theirs: torch.nn.Module, inputs: list[torch.Tensor],
                 rtol: float = 1e-5, atol: float = 1e-5, **kwargs) -> None:
    """An input given twice is one leaf on each side, so `query is key` stays true, as
    self-attention takes it. Keyword tensors (masks) go to both modules without grad."""
    mine.load_state_dict(theirs.state_dict())
    pairs = {}
    for x in inputs:
        pairs.setdefault(id(x), both(x, requires_grad=True))
    out_mine = mine(*[pairs[id(x)][0] for x in inputs],
                    **{name: as_gt(value) for name, value in kwargs.items()})
    out_theirs = theirs(*[pairs[id(x)][1] for x in inputs], **kwargs)
    outs_mine = out_mine if isinstance(out_mine, tuple) else (out_mine,)
    outs_theirs = out_theirs if isinstance(out_theirs, tuple) else (out_theirs,)
    assert len(outs_mine) == len(outs_theirs)
    generator = seeded()
    loss_mine = loss_theirs = 0
    for got, want in zip(outs_mine, outs_theirs):
        assert (got is None) == (want is None)
        if want is None:
            continue
        assert_close(got, want, rtol, atol)
        # A random weighting, so that every output element's gradient matters.
        weights = randn(*want.shape, generator=generator)
        loss_mine = loss_mine + (got * gt.tensor(weights)).sum()
        loss_theirs = loss_theirs + (want * weights).sum()
    loss_mine.backward()
    loss_theirs.backward()
    for x_mine, x_theirs in pairs.values():
        assert_close(x_mine.grad, x_theirs.grad, rtol, atol)
    grads = dict(theirs.named_parameters())
    assert [name for name, _ in mine.named_parameters()] == list(grads)
    for name, parameter in mine.named_parameters():
        assert_close(parameter.grad, grads[name].grad, rtol, atol)
