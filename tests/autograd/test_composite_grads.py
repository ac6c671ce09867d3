"""Gradients of the ops GT builds from rows (tril/triu, masked_fill, bmm/addmm/baddbmm,
constant pad, scaled_dot_product_attention) against torch's autograd."""

import pytest
from check import check_vs_torch, lib

CASES = {
    'tril': (lambda x: x.tril(-1) * 2 + x.triu(1), [(3, 4, 4)]),
    'masked_fill': (lambda x: x.masked_fill(x > 0.3, 0.5).exp(), [(3, 4)]),
    'bmm': (lambda a, b: lib(a).bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    'addmm': (lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=3), [(5,), (3, 4), (4, 5)]),
    'baddbmm': (lambda c, a, b: c.baddbmm(a, b, beta=2), [(1, 5), (2, 3, 4), (2, 4, 5)]),
    'pad': (lambda x: lib(x).nn.functional.pad(x, (2, -1, 1, 1), value=0.5), [(2, 3, 4)]),
    'attention': (lambda q, k, v: lib(q).nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), [(2, 5, 8), (2, 5, 8), (2, 5, 3)]),
}


@pytest.mark.parametrize('name', CASES)
def test_composite(name):
    function, shapes = CASES[name]
    check_vs_torch(function, *shapes)
