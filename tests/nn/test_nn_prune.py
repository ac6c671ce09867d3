"""nn.utils.prune against torch's: each pruning method, iterative pruning through a
PruningContainer, global pruning, training through the mask, remove, state_dict keys and
errors. The same script runs with both libraries at the same seed and must agree
exactly: masks choose elements, so a near miss would be a different model."""

import pytest
import torch
import torch.nn.utils.prune  # torch imports it only when asked
from nn_check import assert_close

import gt


def net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.ReLU(), lib.nn.Flatten(),
                             lib.nn.Linear(4 * 4 * 4, 5))


def prune_and_train(lib, prune):
    model = net(lib)
    prune(lib.nn.utils.prune, model)
    lib.manual_seed(1)
    x = lib.randn(3, 2, 6, 6)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


SCHEMES = {
    'l1_unstructured': lambda P, m: P.l1_unstructured(m[3], 'weight', amount=0.3),
    'l1_unstructured-count': lambda P, m: P.l1_unstructured(m[3], 'bias', amount=2),
    'random_unstructured': lambda P, m: P.random_unstructured(m[0], 'weight', amount=0.5),
    'ln_structured': lambda P, m: P.ln_structured(m[0], 'weight', amount=0.5, n=2, dim=0),
    'ln_structured-l1-dim1': lambda P, m: P.ln_structured(m[3], 'weight', amount=0.25,
                                                          n=1, dim=1),
    'random_structured': lambda P, m: P.random_structured(m[0], 'weight', amount=0.5,
                                                          dim=1),
    'iterative': lambda P, m: (P.l1_unstructured(m[3], 'weight', amount=0.2),
                               P.ln_structured(m[3], 'weight', amount=0.4, n=2, dim=0),
                               P.random_unstructured(m[3], 'weight', amount=0.3)),
    'global': lambda P, m: (P.l1_unstructured(m[0], 'weight', amount=0.1),
                            P.global_unstructured([(m[0], 'weight'), (m[3], 'weight')],
                                                  pruning_method=P.L1Unstructured,
                                                  amount=0.5)),
    'custom_from_mask-identity': lambda P, m: (
        P.custom_from_mask(m[3], 'bias', mask=(m[3].bias > 0)), P.identity(m[0], 'bias')),
}


@pytest.mark.parametrize('scheme', SCHEMES)
def test_pruned_training_is_torchs(scheme):
    mine, mine_losses = prune_and_train(gt, SCHEMES[scheme])
    theirs, theirs_losses = prune_and_train(torch, SCHEMES[scheme])
    assert mine_losses == pytest.approx(theirs_losses, rel=1e-5)
    mine_state, theirs_state = mine.state_dict(), theirs.state_dict()
    assert list(mine_state) == list(theirs_state)
    for key, want in theirs_state.items():
        rtol = 0 if key.endswith('_mask') else 1e-5
        assert_close(mine_state[key], want, rtol=rtol, atol=0 if rtol == 0 else 1e-6)
    for index in (0, 3):
        mine_hooks = [type(hook).__name__
                      for hook in (mine[index]._forward_pre_hooks or {}).values()]
        theirs_hooks = [type(hook).__name__
                        for hook in theirs[index]._forward_pre_hooks.values()]
        assert mine_hooks == theirs_hooks
    assert gt.nn.utils.prune.is_pruned(mine) == torch.nn.utils.prune.is_pruned(theirs)
    for index, layer in enumerate(theirs):  # the pruning made permanent
        for name in ('weight', 'bias'):
            if hasattr(layer, name + '_mask'):
                torch.nn.utils.prune.remove(layer, name)
                gt.nn.utils.prune.remove(mine[index], name)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert_close(mine[3].weight, theirs[3].weight)
    assert isinstance(mine[3].weight, gt.nn.Parameter)
    assert not gt.nn.utils.prune.is_pruned(mine)


def test_the_gradient_reaches_only_what_the_mask_keeps():
    layer = gt.nn.Linear(4, 3)
    gt.nn.utils.prune.l1_unstructured(layer, 'weight', amount=0.5)
    layer(gt.randn(2, 4)).sum().backward()
    grad = layer.weight_orig.grad.data
    assert torch.equal(grad == 0, layer.weight_mask.data == 0)
    assert not hasattr(layer.weight, '_parameters') and 'weight' not in layer._parameters


def test_bad_amounts_and_dims_are_refused_as_torch_refuses_them():
    cases = [
        lambda P, m: P.l1_unstructured(m, 'weight', amount=1.5),
        lambda P, m: P.l1_unstructured(m, 'weight', amount=-1),
        lambda P, m: P.l1_unstructured(m, 'weight', amount='half'),
        lambda P, m: P.l1_unstructured(m, 'weight', amount=13),
        lambda P, m: P.ln_structured(m, 'bias', amount=1, n=2, dim=0),
        lambda P, m: P.ln_structured(m, 'weight', amount=1, n=2, dim=2),
        lambda P, m: P.remove(m, 'weight'),
        lambda P, m: P.global_unstructured([(m, 'weight')], P.LnStructured, amount=1,
                                           n=2, dim=0),
    ]
    for case in cases:
        errors = []
        for lib in (gt, torch):
            layer = lib.nn.Linear(4, 3)
            with pytest.raises(Exception) as error:
                case(lib.nn.utils.prune, layer)
            errors.append((type(error.value), str(error.value).replace('gt.', 'torch.')))
            # A failed pruning leaves the layer as it was.
            assert 'weight' in layer._parameters and not hasattr(layer, 'weight_mask')
        assert errors[0][0] is errors[1][0], errors
        assert errors[0][1].split(':')[0] == errors[1][1].split(':')[0], errors


def test_prune_on_a_tensor_leaves_the_module_alone():
    method = gt.nn.utils.prune.L1Unstructured(amount=2)
    t = gt.tensor([[0.1, -3.0], [2.0, -0.05]])
    assert method.prune(t).tolist() == [[0.0, -3.0], [2.0, 0.0]]
