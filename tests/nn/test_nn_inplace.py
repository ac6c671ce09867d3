"""`inplace=True` (F.relu, nn.ReLU, nn.Dropout, and torch functions run by name) changes
the caller's tensor as in torch, with torch's gradients; calls that would write into a
worker's immutable values by a side effect are refused, on the client and on the wire."""

import pytest
import torch
from nn_check import assert_close, check_module, randn

import gt
import gt.nn as nn
import gt.nn.functional as F
from gt.ir import TensorType
from gt.ir.ops.torch_calls import signature

ACTIVATIONS = [('relu', (), {'inplace': True}), ('leaky_relu', (0.1, True), {}),
               ('hardtanh', (), {'inplace': True}), ('elu', (), {'inplace': True}),
               ('threshold', (0.2, -1.0, True), {})]


@pytest.mark.parametrize('name, args, kwargs', ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_an_inplace_activation_updates_the_input_with_torch_s_gradient(name, args, kwargs):
    start = randn(4, 3)
    results = []
    for lib, functional in ((gt, F), (torch, torch.nn.functional)):
        leaf = lib.tensor(start.tolist(), requires_grad=True)
        hidden = leaf * 2
        returned = getattr(functional, name)(hidden, *args, **kwargs)
        assert returned is hidden
        (hidden * hidden).sum().backward()
        results.append((hidden, leaf.grad))
    (mine, mine_grad), (theirs, theirs_grad) = results
    assert_close(mine, theirs)
    assert_close(mine_grad, theirs_grad)


def test_without_inplace_the_input_is_left_alone():
    x = gt.tensor([-1.0, 2.0])
    assert F.leaky_relu(x, 0.5).tolist() == [-0.5, 2.0] and x.tolist() == [-1.0, 2.0]
    assert F.relu(x).tolist() == [0.0, 2.0] and x.tolist() == [-1.0, 2.0]


def test_an_inplace_update_of_a_leaf_that_requires_grad_is_refused_as_in_torch():
    with pytest.raises(RuntimeError, match='leaf'):
        F.relu(gt.randn(3, requires_grad=True), inplace=True)
    with pytest.raises(RuntimeError, match='leaf'):
        F.leaky_relu(gt.randn(3, requires_grad=True), inplace=True)


def test_inplace_modules_match_torch():
    mine = nn.Sequential(nn.Linear(5, 4), nn.ReLU(inplace=True), nn.Dropout(0.3, inplace=True),
                         nn.Linear(4, 2)).eval()
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(inplace=True),
                                 torch.nn.Dropout(0.3, inplace=True), torch.nn.Linear(4, 2)).eval()
    assert repr(mine) == repr(theirs)
    check_module(mine, theirs, randn(6, 5))


def test_inplace_dropout_draws_torch_s_mask_into_the_input():
    gt.manual_seed(3)
    torch.manual_seed(3)
    mine, theirs = gt.ones(8, 8), torch.ones(8, 8)
    assert F.dropout(mine, 0.4, inplace=True) is mine
    torch.nn.functional.dropout(theirs, 0.4, inplace=True)
    assert_close(mine, theirs)


def test_side_effects_are_refused_on_the_wire():
    """What a client that skipped gt.fallback could send: the dispatcher decodes calls
    with the same check."""
    types = (TensorType((2, 3, 4), 'float32'), TensorType((3,), 'float32'))
    with pytest.raises(ValueError, match='write into input'):
        signature('torch.nn.functional.leaky_relu', types[:1], [['T', 0], 0.1, True], {})
    with pytest.raises(ValueError, match='write into running_mean and running_var'):
        signature('torch.instance_norm', types,
                  [['T', 0], None, None, ['T', 1], ['T', 1], True, 0.1, 1e-5, False], {})
    with pytest.raises(ValueError, match='write into running_mean'):
        signature('torch.nn.functional.instance_norm', types, [['T', 0], ['T', 1]], {})


def test_running_statistics_by_name_are_refused_but_the_pure_forms_run():
    x = gt.randn(2, 3, 4)
    with pytest.raises(ValueError, match='write into running_mean'):
        torch.instance_norm(x, None, None, gt.zeros(3), gt.ones(3), True, 0.1, 1e-5, False)
    assert_close(F.instance_norm(x), torch.nn.functional.instance_norm(x.data))
