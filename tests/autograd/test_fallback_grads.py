"""Gradients of 'torch_call' (torch functions GT runs by name, differentiated by
'torch_vjp') against torch's autograd: one output, several outputs of which some are
integer, list results, data-dependent shapes, index inputs that take no gradient, and
chains mixing fallback calls with GT's own ops."""

import pytest
import torch
from check import check_vs_torch, lib, like

CASES = {
    'sin': (lambda x: lib(x).sin(x), [(3, 4)]),
    'einsum': (lambda x, y: lib(x).einsum('bij,bjk->bik', x, y), [(2, 3, 4), (2, 4, 5)]),
    'topk values': (lambda x: x.topk(2, dim=1).values * 3, [(4, 5)]),
    'sort both outputs': (lambda x: x.sort(dim=0)[0] + x.sort(dim=0)[1].float(), [(5, 3)]),
    'cummax': (lambda x: lib(x).cummax(x, dim=1).values, [(3, 6)]),
    'split': (lambda x: lib(x).split(x, [1, 2], dim=0)[1].exp(), [(3, 4)]),
    'pad reflect': (lambda x: lib(x).nn.functional.pad(x, (2, 1), mode='reflect'), [(2, 3, 5)]),
    'cumprod': (lambda x: x.cumprod(dim=1), [(3, 4)]),
    'tril then matmul': (lambda x, y: lib(x).tril(x) @ y, [(4, 4), (4, 2)]),
    'index_select': (lambda x: lib(x).index_select(x, 0, like(x, [2, 0, 2])), [(3, 4)]),
    'take_along_dim': (lambda x: lib(x).take_along_dim(x, like(x, [[0, 2], [1, 1]]), dim=1),
                       [(2, 3)]),
    'mask index': (lambda x: x[x > 0] * 2, [(4, 5)]),
    'tensor index': (lambda x: x[like(x, [3, 0])], [(4, 5)]),
    'masked_fill': (lambda x: x.masked_fill(x < 0, 0.5), [(3, 4)]),
    'norm': (lambda x: lib(x).linalg.norm(x, dim=1), [(3, 4)]),
    'logsumexp': (lambda x: x.logsumexp(dim=1), [(3, 4)]),
}


@pytest.mark.parametrize('name', CASES)
def test_torch_call(name):
    function, shapes = CASES[name]
    check_vs_torch(function, *shapes)


def test_torch_call_in_float32_beside_gt_ops():
    check_vs_torch(lambda x, y: (x.relu().cumsum(dim=0) * y).sigmoid(), (3, 4), (3, 4),
                   dtype=torch.float32)
