"""nn.utils.spectral_norm against torch's: the starting vectors after the same seed, the
power iteration in training (its buffers updated where they are, as torch's out= does)
and not in eval, outputs and gradients through the normalized weight, state_dict keys
that load either way, and remove_spectral_norm."""

import pytest
import torch
from nn_check import assert_close, randn

import gt


def train_then_evaluate(lib, make, data, steps=3):
    lib.manual_seed(0)
    x = lib.tensor(data.numpy())
    module = lib.nn.utils.spectral_norm(make(lib))
    u = module.weight_u
    outputs = []
    for _ in range(steps):
        output = module(x)
        (output * output).sum().backward()
        outputs.append(output)
    module.eval()
    outputs.append(module(x))
    return module, outputs, u


@pytest.mark.parametrize('make, shape', [
    (lambda lib: lib.nn.Linear(5, 4), (3, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), (1, 2, 5, 5)),
    (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), (1, 2, 4, 4)),
], ids=['linear', 'conv', 'conv-transpose'])
def test_spectral_norm_is_torchs_bit_for_bit(make, shape):
    x = randn(*shape)
    mine, mine_outputs, mine_u = train_then_evaluate(gt, make, x)
    theirs, theirs_outputs, theirs_u = train_then_evaluate(torch, make, x)
    for got, want in zip(mine_outputs, theirs_outputs):
        assert_close(got, want, rtol=0, atol=0)
    assert_close(mine.weight_orig.grad, theirs.weight_orig.grad, rtol=0, atol=0)
    assert mine_u is mine.weight_u  # updated in place, as torch's buffer is
    assert_close(mine_u, theirs_u, rtol=0, atol=0)
    assert mine.state_dict().keys() == theirs.state_dict().keys()
    gt.nn.utils.remove_spectral_norm(mine)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert_close(mine.weight, theirs.weight, rtol=0, atol=0)
    assert isinstance(mine.weight, gt.nn.Parameter)
    assert mine.state_dict().keys() == theirs.state_dict().keys()


def test_torch_weights_load_and_eval_uses_the_stored_vectors():
    theirs = torch.nn.utils.spectral_norm(torch.nn.Linear(6, 3), n_power_iterations=2)
    theirs(randn(2, 6))
    mine = gt.nn.utils.spectral_norm(gt.nn.Linear(6, 3), n_power_iterations=2)
    mine.load_state_dict(theirs.state_dict())
    mine.eval()
    theirs.eval()
    x = randn(4, 6)
    assert_close(mine(gt.tensor(x)), theirs(x), rtol=0, atol=0)
    assert_close(mine.weight_v, theirs.weight_v, rtol=0, atol=0)


def test_errors_are_torchs():
    layer = gt.nn.utils.spectral_norm(gt.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match='two spectral_norm hooks'):
        gt.nn.utils.spectral_norm(layer)
    with pytest.raises(ValueError, match='n_power_iterations to be positive'):
        gt.nn.utils.spectral_norm(gt.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found"):
        gt.nn.utils.remove_spectral_norm(layer, 'bias')
