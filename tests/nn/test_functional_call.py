"""`gt.func.functional_call` (and `gt.nn.utils.stateless.functional_call`) against
torch.func's: MAML's fast weights with a second-order gradient, buffers, tied weights,
strictness, and the module's own tensors put back after the call."""

import pytest
import torch

import gt
import gt.nn as nn


def maml_step(lib, module_lib, functional_call):
    lib.manual_seed(0)
    net = module_lib.Sequential(module_lib.Linear(3, 4), module_lib.BatchNorm1d(4),
                                module_lib.ReLU(), module_lib.Linear(4, 1))
    x, y = lib.randn(8, 3), lib.randn(8, 1)
    params = dict(net.named_parameters())
    loss = module_lib.functional.mse_loss(functional_call(net, params, (x,)), y)
    grads = lib.autograd.grad(loss, list(params.values()), create_graph=True)
    fast = {name: p - 0.1 * g for (name, p), g in zip(params.items(), grads)}
    outer = module_lib.functional.mse_loss(functional_call(net, fast, x), y)
    outer.backward()
    return [loss, outer, net[1].running_mean, net[0].weight,
            *[p.grad for p in net.parameters()]]


def test_fast_weights_and_their_second_order_gradient_match_torch():
    mine = maml_step(gt, nn, gt.func.functional_call)
    theirs = maml_step(torch, torch.nn, torch.func.functional_call)
    for got, want in zip(mine, theirs):
        torch.testing.assert_close(got.data, want.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('call', [gt.func.functional_call,
                                  nn.utils.stateless.functional_call])
def test_tied_weights_strictness_and_the_modules_own_tensors(call):
    tied = nn.Linear(2, 2, bias=False)
    model = nn.Sequential(tied, tied)
    original = tied.weight
    assert len(list(model.named_parameters())) == 1
    assert len(list(model.named_parameters(remove_duplicate=False))) == 2
    assert len(list(model.named_modules(remove_duplicate=False))) == 3
    out = call(model, {'0.weight': gt.eye(2) * 2}, (gt.ones(1, 2),), strict=True)
    assert out.tolist() == [[4.0, 4.0]] and model[1].weight is original
    with pytest.raises(RuntimeError, match='unexpected keys'):
        call(model, {'0.weight': gt.eye(2), 'nosuch': gt.eye(2)}, gt.ones(1, 2), strict=True)
    assert model[0].weight is original


def test_the_rest_of_torch_func_says_why_it_is_absent():
    with pytest.raises(AttributeError, match='functionalize'):
        gt.func.functionalize  # noqa: B018
