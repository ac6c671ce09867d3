"""gt.autograd.functional against torch.autograd.functional: jacobian, hessian, vjp, jvp,
hvp and vhp of functions of one tensor or several, returning one tensor or several, with
create_graph, unused inputs (zeros), strict mode's errors and bad arguments' errors."""

import pytest
import torch
import torch.autograd.functional as torch_functional

import gt
from gt.autograd import functional as gt_functional


def one(a):
    return (a.exp() * a.sum()).tanh()


def two(a, b):
    return (a[:2] * b).sum() + (a ** 2).sum() * b.prod()


CASES = {
    'jacobian': lambda F, lib, x, y: F.jacobian(one, x),
    'jacobian-two-inputs': lambda F, lib, x, y: F.jacobian(two, (x, y)),
    'jacobian-two-outputs': lambda F, lib, x, y: F.jacobian(lambda a: (a * 2, a.sum()), x),
    'jacobian-unused-input': lambda F, lib, x, y: F.jacobian(lambda a, b: a * 2, (x, y)),
    'jacobian-vectorized': lambda F, lib, x, y: F.jacobian(one, x, vectorize=True),
    'hessian': lambda F, lib, x, y: F.hessian(lambda a: (a.sin() * a).sum(), x),
    'hessian-two-inputs': lambda F, lib, x, y: F.hessian(two, (x, y)),
    'vjp': lambda F, lib, x, y: F.vjp(one, x, lib.ones(3)),
    'vjp-scalar': lambda F, lib, x, y: F.vjp(two, (x, y)),
    'jvp': lambda F, lib, x, y: F.jvp(one, x, lib.ones(3)),
    'jvp-two-inputs': lambda F, lib, x, y: F.jvp(two, (x, y), (lib.ones(3), lib.ones(2))),
    'hvp': lambda F, lib, x, y: F.hvp(lambda a: (a ** 3).sum(), x, lib.ones(3)),
    'vhp-two-inputs': lambda F, lib, x, y: F.vhp(two, (x, y), (lib.ones(3), lib.ones(2))),
}


def flat(value):
    if isinstance(value, (tuple, list)):
        return [item for part in value for item in flat(part)]
    return [value]


@pytest.mark.parametrize('case', CASES)
def test_results_are_torchs(case):
    torch.manual_seed(0)
    x, y = torch.randn(3), torch.randn(2)
    mine = CASES[case](gt_functional, gt, gt.tensor(x), gt.tensor(y))
    theirs = CASES[case](torch_functional, torch, x, y)
    assert isinstance(mine, tuple) == isinstance(theirs, tuple)
    got, want = flat(mine), flat(theirs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert not a.requires_grad
        torch.testing.assert_close(a.data, b, rtol=1e-5, atol=1e-6)


def test_create_graph_differentiates_again_as_torchs():
    results = []
    for lib, F in ((gt, gt_functional), (torch, torch_functional)):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        jacobian = F.jacobian(one, x, create_graph=True)
        jacobian.sum().backward()
        _, product = F.hvp(lambda a: (a ** 3).sum(), x, lib.ones(3), create_graph=True)
        results.append([jacobian.requires_grad, x.grad.tolist(), product.requires_grad])
    assert results[0][0] == results[1][0] and results[0][2] == results[1][2]
    assert results[0][1] == pytest.approx(results[1][1], rel=1e-5)


ERRORS = {
    'strict-jacobian': lambda F, lib, x, y: F.jacobian(lambda a, b: a * 2, (x, y), strict=True),
    'strict-vjp': lambda F, lib, x, y: F.vjp(lambda a, b: a * 2, (x, y), lib.ones(3),
                                             strict=True),
    'strict-hessian': lambda F, lib, x, y: F.hessian(lambda a, b: (a * 2).sum(), (x, y),
                                                     strict=True),
    'strict-hvp': lambda F, lib, x, y: F.hvp(lambda a: a.sum(), x, lib.ones(3), strict=True),
    'vjp-without-v': lambda F, lib, x, y: F.vjp(one, x),
    'vjp-bad-v': lambda F, lib, x, y: F.vjp(one, x, lib.ones(4)),
    'hessian-of-a-vector': lambda F, lib, x, y: F.hessian(one, x),
    'jacobian-bad-strategy': lambda F, lib, x, y: F.jacobian(one, x, strategy='sideways'),
    'jvp-bad-v-entry': lambda F, lib, x, y: F.jvp(two, (x, y), (lib.ones(3), lib.ones(3))),
    'jvp-v-of-wrong-length': lambda F, lib, x, y: F.jvp(two, (x, y), (lib.ones(3),)),
    'hvp-of-a-pair': lambda F, lib, x, y: F.hvp(lambda a: (a.sum(), a.sum()), x, lib.ones(3)),
}


@pytest.mark.parametrize('case', ERRORS)
def test_errors_are_torchs(case):
    x, y = torch.randn(3), torch.randn(2)
    with pytest.raises(Exception) as theirs:
        ERRORS[case](torch_functional, torch, x, y)
    with pytest.raises(type(theirs.value)) as mine:
        ERRORS[case](gt_functional, gt, gt.tensor(x), gt.tensor(y))
    assert str(mine.value) == str(theirs.value)
