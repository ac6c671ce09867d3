"""gt.nn.utils' gradient clipping against torch.nn.utils': the same gradients give the same
total norm and the same clipped gradients, for every norm type; the norm is a lazy 0-d
GT tensor (nothing is fetched unless error_if_nonfinite asks to look at it)."""

import contextlib
import math

import pytest
import torch
from nn_check import assert_close, both, randn

import gt
import gt.nn as nn


def gradients(*shapes: tuple, scale: float = 1.0, dtype=torch.float32) -> tuple[list, list]:
    """Leaves with the same gradients in GT and torch."""
    mine, theirs = [], []
    for shape in shapes:
        gt_leaf, torch_leaf = both(randn(*shape).to(dtype), requires_grad=True)
        grad = (randn(*shape) * scale).to(dtype)
        gt_leaf.grad, torch_leaf.grad = gt.tensor(grad), grad.clone()
        mine.append(gt_leaf)
        theirs.append(torch_leaf)
    return mine, theirs


@contextlib.contextmanager
def no_fetches():
    """Fail if the client fetches anything inside the block."""
    client = gt.runtime.client.current()

    def refuse(ids):
        raise AssertionError(f'fetched {ids}')
    client.fetch = refuse
    try:
        yield
    finally:
        del client.fetch  # the method again


@pytest.mark.parametrize('norm_type', [2.0, 1, math.inf, 'inf', 3.0, -math.inf, 0])
@pytest.mark.parametrize('max_norm', [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    mine, theirs = gradients((4, 3), (3,), (2, 2, 2))
    with no_fetches():
        total = nn.utils.clip_grad_norm_(mine, max_norm, norm_type=norm_type)
    assert isinstance(total, gt.Tensor) and total.shape == ()
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type,
                                              foreach=False)
    assert_close(total, expected)
    for gt_leaf, torch_leaf in zip(mine, theirs):
        assert_close(gt_leaf.grad, torch_leaf.grad)


@pytest.mark.parametrize('norm_type', [2.0, 1, math.inf, 3.0])
def test_clipping_on_one_worker_gives_torchs_bits(norm_type):
    """The norms are torch's kernel's (`(g * g).sum().sqrt()` rounded otherwise, and the
    clipped gradients followed; found porting a transformer's training loop)."""
    mine, theirs = gradients((64, 16), (1000,), scale=3.0)
    total = nn.utils.clip_grad_norm_(mine, 0.5, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type=norm_type)
    if len(gt.runtime.client.current().workers) > 1:  # the sharded re-run: sharding sums
        assert_close(total, expected)
        return
    assert total.item() == expected.item()
    for gt_leaf, torch_leaf in zip(mine, theirs):
        assert torch.equal(torch.from_numpy(gt_leaf.grad.numpy()), torch_leaf.grad)


def test_a_module_clips_as_in_a_training_step():
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2))
    reference = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(),
                                    torch.nn.Linear(4, 2))
    model.load_state_dict(reference.state_dict())
    x = randn(3, 5)
    (model(gt.tensor(x)) * 10).sum().backward()
    (reference(x) * 10).sum().backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # a generator
    expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), max_norm=1.0)
    assert_close(total, expected)
    for (name, parameter), torch_parameter in zip(model.named_parameters(),
                                                  reference.parameters()):
        assert_close(parameter.grad, torch_parameter.grad)
    assert nn.utils.clip_grad.clip_grad_norm_ is nn.utils.clip_grad_norm_


def test_low_precision_gradients_keep_their_dtype():
    mine, theirs = gradients((64,), (8, 8), scale=30.0, dtype=torch.bfloat16)
    total = nn.utils.clip_grad_norm_(mine, 2.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 2.0)
    assert total.dtype == expected.dtype == torch.bfloat16
    assert_close(total, expected, rtol=1e-2)
    for gt_leaf, torch_leaf in zip(mine, theirs):
        assert_close(gt_leaf.grad, torch_leaf.grad, rtol=2e-2, atol=1e-3)


def test_nonfinite_norms():
    mine, theirs = gradients((3,), (2,))
    bad = torch.tensor([1.0, math.inf, 0.0])
    mine[0].grad, theirs[0].grad = gt.tensor(bad), bad.clone()
    for parameters in (mine, theirs):
        utils = nn.utils if parameters is mine else torch.nn.utils
        with pytest.raises(RuntimeError, match='non-finite, so it cannot be clipped'):
            utils.clip_grad_norm_(parameters, 1.0, error_if_nonfinite=True)
    total = nn.utils.clip_grad_norm_(mine, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert math.isinf(total.item()) and math.isinf(expected.item())
    for gt_leaf, torch_leaf in zip(mine, theirs):  # scaled by 0 (and inf * 0 is nan)
        torch.testing.assert_close(gt_leaf.grad.data, torch_leaf.grad, equal_nan=True)


def test_nothing_to_clip():
    leaf = nn.Parameter(torch.ones(3))
    assert nn.utils.clip_grad_norm_([leaf], 1.0).item() == 0.0
    assert nn.utils.clip_grad_norm_(leaf, 1.0).item() == 0.0
    with pytest.warns(UserWarning, match='empty generator'):
        nn.utils.clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_value_matches_torch():
    mine, theirs = gradients((4, 3), (5,), scale=2.0)
    assert nn.utils.clip_grad_value_(mine, 0.7) is None
    torch.nn.utils.clip_grad_value_(theirs, 0.7, foreach=False)
    for gt_leaf, torch_leaf in zip(mine, theirs):
        assert_close(gt_leaf.grad, torch_leaf.grad)
    assert mine[0].grad.data.abs().max() <= 0.7
