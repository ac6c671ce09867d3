"""Gradients of the ops GT builds from rows (tril/triu, masked_fill, bmm/addmm/baddbmm,
constant pad, scaled_dot_product_attention) against torch's autograd."""

import pytest
import torch
from check import check_vs_torch, lib, like

import gt

CASES = {
    'tril': (lambda x: x.tril(-1) * 2 + x.triu(1), [(3, 4, 4)]),
    'masked_fill': (lambda x: x.masked_fill(x > 0.3, 0.5).exp(), [(3, 4)]),
    'bmm': (lambda a, b: lib(a).bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    'addmm': (lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=3), [(5,), (3, 4), (4, 5)]),
    'baddbmm': (lambda c, a, b: c.baddbmm(a, b, beta=2), [(1, 5), (2, 3, 4), (2, 4, 5)]),
    'pad': (lambda x: lib(x).nn.functional.pad(x, (2, -1, 1, 1), value=0.5), [(2, 3, 4)]),
    'attention': (lambda q, k, v: lib(q).nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), [(2, 5, 8), (2, 5, 8), (2, 5, 3)]),
    # Row 1 hidden entirely (left padding): zeros and no gradient there, as torch's safe
    # softmax gives, not NaN everywhere.
    'attention, a hidden row': (lambda q, k, v: lib(q).nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=like(q, [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 1]]).bool()),
        [(2, 3, 8), (2, 4, 8), (2, 4, 3)]),
}


@pytest.mark.parametrize('name', CASES)
def test_composite(name):
    function, shapes = CASES[name]
    check_vs_torch(function, *shapes)


def test_attention_with_a_mask_and_is_causal_masks_by_both():
    """torch's CPU kernel applies both (its math path, taken when inputs require grad,
    refuses): GT applies both on every path. A float mask, a row it hides, and causal."""
    def attend(lib, q, mask):
        return lib.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask,
                                                              is_causal=True)
    query = torch.randn(1, 2, 4, 8, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[0.0, float('-inf'), -1.0, 0.5]] * 4)
    mask[1] = float('-inf')
    want = attend(torch, query, mask)
    got = attend(gt, gt.tensor(query), gt.tensor(mask))
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want)
