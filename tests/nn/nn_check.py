"""Shared by the gt.nn tests: the same data and weights in GT and in torch, and checks
that GT's values and gradients match torch's.

The pytest process is the client; the first op auto-starts the local server, which the
whole session then shares.
"""

import os
import zlib

import numpy as np
import torch

import gt


def seeded() -> torch.Generator:
    """A generator seeded from the running test's id: data that does not depend on order."""
    test = os.environ.get('PYTEST_CURRENT_TEST', '').rsplit(' ', 1)[0]
    return torch.Generator().manual_seed(zlib.crc32(test.encode()))


def randn(*shape: int, generator: torch.Generator | None = None) -> torch.Tensor:
    return torch.randn(shape, generator=generator or seeded())


def both(value: torch.Tensor, requires_grad: bool = False) -> tuple[gt.Tensor, torch.Tensor]:
    """The same values as a gt tensor and a torch tensor (leaves, with grad if asked)."""
    mine = gt.tensor(value, requires_grad=requires_grad)
    theirs = value.detach().clone().requires_grad_(requires_grad)
    return mine, theirs


def assert_close(mine, theirs, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    got = mine.data if isinstance(mine, gt.Tensor) else torch.as_tensor(mine).detach()
    want = theirs.detach()
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=rtol, atol=atol)


def check_module(mine: gt.nn.Module, theirs: torch.nn.Module, *inputs: torch.Tensor,
                 rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Forward and backward of `mine` and `theirs` on the same inputs (floating inputs get
    gradients), after loading torch's weights into `mine`: outputs, input gradients and
    parameter gradients all match."""
    mine.load_state_dict(theirs.state_dict())
    pairs = [both(x, requires_grad=x.dtype.is_floating_point) for x in inputs]
    out_mine = mine(*[p[0] for p in pairs])
    out_theirs = theirs(*[p[1] for p in pairs])
    assert_close(out_mine, out_theirs, rtol, atol)
    # A random weighting, so that every output element's gradient matters.
    weights = randn(*out_theirs.shape)
    (out_mine * gt.tensor(weights)).sum().backward()
    (out_theirs * weights).sum().backward()
    for (x_mine, x_theirs) in pairs:
        if x_theirs.requires_grad:
            assert_close(x_mine.grad, x_theirs.grad, rtol, atol)
    grads = dict(theirs.named_parameters())
    for name, parameter in mine.named_parameters():
        assert_close(parameter.grad, grads[name].grad, rtol, atol)
