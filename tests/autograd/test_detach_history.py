"""History kept across writes autograd does not see, and across detach_(), as torch
keeps it: each scenario runs with GT and with torch and must give the same values and
gradients. (Found by an audit: each gave None or a wrong gradient, silently.)"""

import pytest
import torch

import gt


def detach_in_place_after_use(lib):
    a = lib.arange(3.).requires_grad_()
    h = a * 2
    y = (h * 3).sum()
    h.detach_()  # truncated BPTT's `hidden.detach_()` before loss.backward()
    y.backward()
    return a.grad, h, h.requires_grad, h.grad_fn is None


def detach_in_place_after_a_view_was_taken(lib):
    a = lib.arange(4.).requires_grad_()
    h = a.exp()
    v = h[1:3]
    z = (h + a).sum()
    h.detach_()
    (v.sum() + z).backward()
    return a.grad


def detach_in_place_of_a_layer_output(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 3)
    h = lib.tanh(layer(lib.ones(2, 3)) + 1)
    loss = h.sum()
    h.detach_()
    loss.backward()
    return layer.bias.grad


def write_through_detach_of_a_view(lib):
    a = lib.arange(4.).requires_grad_()
    h = a * 2
    h[1:3].detach().zero_()
    (h * a).sum().backward()
    return a.grad, h


def write_through_detach_of_a_leaf_row(lib):
    w = lib.arange(4.).requires_grad_()
    w[1].detach().fill_(9.)
    rows = lib.arange(6.).reshape(3, 2).requires_grad_()
    for row in rows:
        row.detach().mul_(2)
    rows.chunk(3)[2].detach().fill_(0)
    return w, w.is_leaf, w.grad_fn is None, rows, rows.is_leaf


def write_through_detach_of_unbound_rows(lib):
    a = lib.arange(4.).requires_grad_()
    h = a * 1
    h.unbind(0)[1].detach().mul_(0)
    v = h[0]
    v.detach().add_(100)
    (h.sum() + (v * 2)).backward()
    return a.grad, h


def detached_leaf_alias_follows_its_base(lib):
    w = lib.ones(3, requires_grad=True)
    d = w.detach().requires_grad_()
    y = (d * 2).sum()
    with lib.no_grad():
        w.add_(1)
    y.backward()
    return d.grad, d


def zero_grad_in_place_between_a_penalty_and_its_backward(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 1)
    layer(lib.ones(4, 3)).pow(2).sum().backward(create_graph=True)
    penalty = layer.weight.grad.sum() * 3
    layer.zero_grad(set_to_none=False)
    penalty.backward()
    return layer.weight.grad, layer.bias.grad


def leaf_written_after_use_where_no_rule_saved_it(lib):
    w = lib.tensor([1., 2., 3.], requires_grad=True)
    y = (w + 1).sum()
    with lib.no_grad():
        w.mul_(2)
    y.backward()
    lib.manual_seed(0)
    layer = lib.nn.Linear(2, 1)
    out = layer(lib.ones(3, 2)).sum()
    with lib.no_grad():
        layer.bias.add_(1)  # a bias saved by no rule: torch allows it
    out.backward()
    return w.grad, w, layer.bias.grad, layer.weight.grad


SCENARIOS = [detach_in_place_after_use, detach_in_place_after_a_view_was_taken,
             detach_in_place_of_a_layer_output, write_through_detach_of_a_view,
             write_through_detach_of_a_leaf_row, write_through_detach_of_unbound_rows,
             detached_leaf_alias_follows_its_base,
             zero_grad_in_place_between_a_penalty_and_its_backward,
             leaf_written_after_use_where_no_rule_saved_it]


def assert_same(got, want):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, gt.Tensor), (got, want)
        torch.testing.assert_close(got.data, want.detach(), rtol=1e-6, atol=1e-6)
    else:
        assert got == want


@pytest.mark.parametrize('scenario', SCENARIOS, ids=lambda s: s.__name__)
def test_history_is_kept_as_torch_keeps_it(scenario):
    mine, theirs = scenario(gt), scenario(torch)
    assert len(mine) == len(theirs)
    for got, want in zip(mine, theirs):
        assert_same(got, want)
