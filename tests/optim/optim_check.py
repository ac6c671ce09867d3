"""Shared by the gt.optim tests: a small model built twice, in GT and in torch, with the
same weights; a training step on the same data in both; and value checks against torch.

The pytest process is the client; the first op auto-starts the local server, which the
whole session then shares.
"""

import os
import zlib

import numpy as np
import torch

import gt
import gt.nn as nn
import gt.nn.functional as F


def seeded() -> torch.Generator:
    """A generator seeded from the running test's id: data that does not depend on order."""
    test = os.environ.get('PYTEST_CURRENT_TEST', '').rsplit(' ', 1)[0]
    return torch.Generator().manual_seed(zlib.crc32(test.encode()))


def models() -> tuple[nn.Module, torch.nn.Module]:
    """The same two-layer model in GT and in torch, with torch's initial weights."""
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    mine = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


def batches(count: int, generator: torch.Generator | None = None) -> list[tuple]:
    generator = generator or seeded()
    return [(torch.randn(5, 6, generator=generator), torch.randn(5, 3, generator=generator))
            for _ in range(count)]


def backward_both(mine: nn.Module, theirs: torch.nn.Module, batch: tuple) -> None:
    x, y = batch
    F.mse_loss(mine(gt.tensor(x)), gt.tensor(y)).backward()
    torch.nn.functional.mse_loss(theirs(x), y).backward()


def assert_close(mine, theirs, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    got = mine.data if isinstance(mine, gt.Tensor) else torch.as_tensor(mine).detach()
    want = torch.as_tensor(theirs).detach()
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=rtol, atol=atol)


def assert_same_weights(mine: nn.Module, theirs: torch.nn.Module, rtol: float = 1e-5,
                        atol: float = 1e-6) -> None:
    want = theirs.state_dict()
    got = mine.state_dict()
    assert list(got) == list(want)
    for name in want:
        assert_close(got[name], want[name], rtol, atol)
