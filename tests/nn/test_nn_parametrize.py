"""nn.utils.parametrize and nn.utils.parametrizations against torch's: the same script
run with each library at the same seed gives the same weights, outputs, gradients,
state_dict keys, printed modules and errors."""

import copy
import pickle

import pytest
import torch
from nn_check import assert_close, randn

import gt


def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()
    return Symmetric()


def scaled(lib):
    class Scaled(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.nn.Parameter(lib.tensor(2.0))

        def forward(self, x):
            return x * self.scale
    return Scaled()


def train(lib, register, steps=3, data=None):
    """Register on a Linear(4, 4), then a few SGD steps; what each step saw."""
    lib.manual_seed(0)
    layer = lib.nn.Linear(4, 4)
    register(lib, layer)
    optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
    x = lib.tensor(data.numpy())
    seen = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = (layer(x) ** 2).sum()
        loss.backward()
        optimizer.step()
        seen.append(float(loss))
    return layer, seen


REGISTRATIONS = {
    'custom': lambda lib, m: lib.nn.utils.parametrize.register_parametrization(
        m, 'weight', symmetric(lib)),
    'custom-twice-with-parameters': lambda lib, m: (
        lib.nn.utils.parametrize.register_parametrization(m, 'weight', symmetric(lib)),
        lib.nn.utils.parametrize.register_parametrization(m, 'weight', scaled(lib)),
        lib.nn.utils.parametrize.register_parametrization(m, 'bias', scaled(lib))),
    'weight_norm': lambda lib, m: lib.nn.utils.parametrizations.weight_norm(m),
    'weight_norm-dim-none': lambda lib, m: lib.nn.utils.parametrizations.weight_norm(
        m, dim=None),
    'spectral_norm': lambda lib, m: lib.nn.utils.parametrizations.spectral_norm(m),
    'orthogonal-matrix_exp': lambda lib, m: lib.nn.utils.parametrizations.orthogonal(m),
    'orthogonal-cayley': lambda lib, m: lib.nn.utils.parametrizations.orthogonal(
        m, orthogonal_map='cayley'),
    'orthogonal-householder': lambda lib, m: lib.nn.utils.parametrizations.orthogonal(
        m, orthogonal_map='householder'),
    'orthogonal-householder-no-trivialization': lambda lib, m:
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map='householder',
                                                 use_trivialization=False),
}


@pytest.mark.parametrize('name', REGISTRATIONS)
def test_training_through_a_parametrization_is_torchs(name):
    data = randn(3, 4)
    mine, mine_losses = train(gt, REGISTRATIONS[name], data=data)
    theirs, theirs_losses = train(torch, REGISTRATIONS[name], data=data)
    assert mine_losses == pytest.approx(theirs_losses, rel=1e-5)
    assert_close(mine.weight, theirs.weight, rtol=1e-4, atol=1e-5)
    assert type(mine).__name__ == type(theirs).__name__ == 'ParametrizedLinear'
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    for (key, got), want in zip(mine.state_dict().items(), theirs.state_dict().values()):
        assert_close(got, want, rtol=1e-4, atol=1e-5), key
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def test_spectral_norm_buffers_follow_torchs_power_iteration_on_a_convolution():
    def run(lib):
        lib.manual_seed(1)
        conv = lib.nn.utils.parametrizations.spectral_norm(lib.nn.ConvTranspose2d(2, 3, 3))
        x = lib.tensor(randn(1, 2, 4, 4).numpy())
        first = conv(x)
        second = conv(x)  # two accesses before backward: each keeps its own vectors
        (first.sum() + (second ** 2).sum()).backward()
        conv.eval()
        return conv, conv(x)

    mine, mine_out = run(gt)
    theirs, theirs_out = run(torch)
    assert_close(mine_out, theirs_out)
    assert_close(mine.parametrizations.weight.original.grad,
                 theirs.parametrizations.weight.original.grad, rtol=1e-4, atol=1e-6)
    assert_close(mine.parametrizations.weight[0]._u, theirs.parametrizations.weight[0]._u)


def test_assignment_goes_through_right_inverse_and_keeps_the_original_object():
    for lib in (gt, torch):
        layer = lib.nn.Linear(3, 3)
        original = layer.weight
        lib.nn.utils.parametrize.register_parametrization(layer, 'weight', symmetric(lib))
        assert layer.parametrizations.weight.original is original
        with lib.no_grad():
            layer.weight = lib.ones(3, 3) * 2
        assert layer.parametrizations.weight.original.tolist() == [[2, 2, 2], [0, 2, 2],
                                                                   [0, 0, 2]]
        with pytest.raises(KeyError, match="attribute 'weight' already exists"):
            layer.weight = lib.nn.Parameter(lib.zeros(3, 3))


def test_orthogonal_weight_is_orthogonal_and_assignable():
    layer = gt.nn.utils.parametrizations.orthogonal(gt.nn.Linear(3, 5))
    q = layer.weight
    assert_close(q.t() @ q, torch.eye(3), atol=1e-5)
    with gt.no_grad():
        layer.weight = gt.tensor(torch.linalg.qr(torch.randn(5, 3))[0])
    assert_close(layer.weight.t() @ layer.weight, torch.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match='Expected a matrix or batch of matrices'):
        gt.nn.utils.parametrizations.orthogonal(gt.nn.Linear(3, 5), 'bias')


def test_remove_leaves_the_parametrized_value_or_the_original():
    results = {}
    for lib in (gt, torch):
        lib.manual_seed(0)
        kept, dropped = lib.nn.Linear(3, 3), lib.nn.Linear(3, 3)
        for layer in (kept, dropped):
            lib.nn.utils.parametrize.register_parametrization(layer, 'weight', symmetric(lib))
        want = kept.weight.tolist()
        P = lib.nn.utils.parametrize
        P.remove_parametrizations(kept, 'weight')
        P.remove_parametrizations(dropped, 'weight', leave_parametrized=False)
        results[lib.__name__] = (kept.weight.tolist(), dropped.weight.tolist(),
                                 type(kept).__name__, P.is_parametrized(kept),
                                 hasattr(kept, 'parametrizations'),
                                 isinstance(kept.weight, lib.nn.Parameter))
        assert kept.weight.tolist() == want
    assert results['gt'] == results['torch']
    layer = gt.nn.utils.parametrizations.weight_norm(gt.nn.Linear(3, 3))
    with pytest.raises(ValueError, match='leave_parametrized'):
        gt.nn.utils.parametrize.remove_parametrizations(layer, 'weight', False)
    with pytest.raises(ValueError, match='does not have a parametrization on bias'):
        gt.nn.utils.parametrize.remove_parametrizations(layer, 'bias')


def test_checkpoints_load_both_ways_and_from_the_hook_form():
    torch.manual_seed(0)
    theirs = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 2))
    with torch.no_grad():
        theirs.parametrizations.weight.original0.mul_(3)
    mine = gt.nn.utils.parametrizations.weight_norm(gt.nn.Linear(4, 2))
    mine.load_state_dict(theirs.state_dict())
    x = randn(2, 4)
    assert_close(mine(gt.tensor(x)), theirs(x))
    back = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 2))
    back.load_state_dict(mine.state_dict())
    assert_close(back(x), theirs(x))
    # A state saved with the hook form (weight_g, weight_v) loads through torch's hook.
    with pytest.warns(FutureWarning):
        old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 2))
    converted = gt.nn.utils.parametrizations.weight_norm(gt.nn.Linear(4, 2))
    converted.load_state_dict(old.state_dict())
    assert_close(converted(gt.tensor(x)), old(x))


def test_cached_computes_once_and_errors_name_the_problem():
    layer = gt.nn.utils.parametrize.register_parametrization(gt.nn.Linear(3, 3), 'weight',
                                                             symmetric(gt))
    with gt.nn.utils.parametrize.cached():
        assert layer.weight is layer.weight
    assert layer.weight is not layer.weight
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'nope'"):
        gt.nn.utils.parametrize.register_parametrization(layer, 'nope', symmetric(gt))

    class Widen(gt.nn.Module):
        def forward(self, x):
            return gt.cat([x, x])

    with pytest.raises(ValueError, match='may not change the shape'):
        gt.nn.utils.parametrize.register_parametrization(gt.nn.Linear(3, 3), 'weight',
                                                         Widen())
    wide = gt.nn.utils.parametrize.register_parametrization(gt.nn.Linear(3, 3), 'weight',
                                                            Widen(), unsafe=True)
    assert wide.weight.shape == (6, 3)


def test_copies_pickling_and_type_before_parametrizations():
    layer = gt.nn.utils.parametrizations.weight_norm(gt.nn.Linear(3, 2))
    twin = copy.deepcopy(layer)
    assert twin.parametrizations.weight.original1 is not layer.parametrizations.weight.original1
    assert_close(twin.weight, layer.weight.detach())
    with pytest.raises(RuntimeError, match='only supported through state_dict'):
        pickle.dumps(layer)
    P = gt.nn.utils.parametrize
    assert P.type_before_parametrizations(layer) is gt.nn.Linear
    assert isinstance(layer, gt.nn.Linear)
    target = gt.nn.Linear(3, 2)
    P.transfer_parametrizations_and_params(layer, target)
    assert target.parametrizations.weight.original0 is layer.parametrizations.weight.original0
    assert_close(target.weight, layer.weight.detach())
