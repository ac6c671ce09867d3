"""Gradients whose bits depend on memory layouts, as torch lays them out: attention's
batched products of transposed views, and a leaf's gradient kept as a fresh tensor.
Each differed from torch's in the last bits (found porting nanoGPT: its loss drifted
from the fifth step)."""

import math

import numpy as np
import pytest
import torch

import gt


def attention(library, upto: str) -> list:
    """nanoGPT's attention on one block of a split projection; the gradients of the
    projection's output and of a leaf used through a transposed view."""
    library.manual_seed(0)
    batch, time, channels, heads = 4, 8, 16, 2
    projected = library.randn(batch, time, 3 * channels, requires_grad=True)
    q, k, v = projected.split(channels, dim=2)
    q, k, v = (t.view(batch, time, heads, channels // heads).transpose(1, 2) for t in (q, k, v))
    out = q @ k.transpose(-2, -1)
    if upto != 'scores':
        out = (out * (1.0 / math.sqrt(k.size(-1)))).softmax(-1) @ v
    if upto == 'merged':
        out = out.transpose(1, 2).contiguous().view(batch, time, channels)
    weights = library.linspace(-1, 1, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    return [projected.grad.detach().numpy().copy(), projected.grad.sum().item()]


@pytest.mark.parametrize('upto', ['scores', 'values', 'merged'])
def test_attention_gradients_are_torchs_bits(upto):
    got, expected = attention(gt, upto), attention(torch, upto)
    assert np.array_equal(got[0], expected[0])
    assert got[1] == expected[1]


def test_a_gradient_through_a_transposed_view_is_kept_as_torch_keeps_it():
    """The values were torch's; summed on the worker as the transposed view they were
    made as, the sum was not (torch's AccumulateGrad keeps a fresh tensor)."""
    def run(library):
        library.manual_seed(0)
        leaf = library.randn(4, 8, 2, 8, requires_grad=True)
        keys = library.randn(4, 2, 8, 8)
        scores = leaf.transpose(1, 2) @ keys.transpose(-2, -1)
        scores.backward(library.ones(scores.shape))
        return leaf.grad.sum().item(), leaf.grad.abs().sum().item()
    assert run(gt) == run(torch)


def test_broadcast_batched_products_still_match_torch():
    def run(library):
        library.manual_seed(1)
        a = library.randn(3, 1, 5, 4, requires_grad=True)
        b = library.randn(2, 4, 6, requires_grad=True)
        (a @ b).pow(2).sum().backward()
        return a.grad.numpy().copy(), b.grad.numpy().copy()
    for got, expected in zip(run(gt), run(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
