"""GT's optimizers train as torch's do, bit for bit: the same model, batches and
hyperparameters give equal losses at every step and equal weights after 20 steps.
torch's single-tensor updates fuse multiply-adds (`add_(g, alpha=-lr)`, `lerp_`,
`addcmul_`); GT's updates use the same kernels (the `addcmul` and `lerp` rows), and the
model's kernels (linear, tanh, cross-entropy) are torch's too."""

import pytest
import torch

import gt
import gt.nn as nn
import gt.nn.functional as F
import gt.optim

STEPS = 20
CONFIGS = [
    ('SGD', dict(lr=0.1)),
    ('SGD', dict(lr=0.1, momentum=0.9)),
    ('SGD', dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-2)),
    ('SGD', dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2, maximize=True)),
    ('Adam', dict(lr=3e-3)),
    ('Adam', dict(lr=3e-3, weight_decay=1e-2, amsgrad=True)),
    ('AdamW', dict(lr=3e-3, weight_decay=1e-2)),
    ('RMSprop', dict(lr=1e-2)),
    ('RMSprop', dict(lr=1e-2, centered=True, momentum=0.9, weight_decay=1e-2)),
    ('Adagrad', dict(lr=1e-2, weight_decay=1e-2, lr_decay=1e-3)),
    ('NAdam', dict(lr=3e-3)),
    ('NAdam', dict(lr=3e-3, weight_decay=1e-2, momentum_decay=1e-2)),
    ('NAdam', dict(lr=3e-3, weight_decay=1e-2, decoupled_weight_decay=True, maximize=True)),
    ('RAdam', dict(lr=3e-3)),
    ('RAdam', dict(lr=3e-3, weight_decay=1e-2, decoupled_weight_decay=True)),
    ('RAdam', dict(lr=3e-3, betas=(0.8, 0.9), weight_decay=1e-2, maximize=True)),
    ('Adamax', dict(lr=3e-3)),
    ('Adamax', dict(lr=3e-3, weight_decay=1e-2, maximize=True)),
    ('Adadelta', dict()),
    ('Adadelta', dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=1e-2, maximize=True)),
    ('ASGD', dict(lr=1e-2)),
    ('ASGD', dict(lr=1e-2, lambd=1e-2, alpha=0.5, t0=5, weight_decay=1e-2, maximize=True)),
    ('Rprop', dict(lr=1e-2)),
    ('Rprop', dict(lr=3e-3, etas=(0.4, 1.5), step_sizes=(1e-4, 1e-2), maximize=True)),
    ('Adafactor', dict()),
    ('Adafactor', dict(lr=3e-2, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5, weight_decay=1e-2,
                       maximize=True)),
]


def model(library):
    return library.Sequential(library.Linear(20, 32), library.Tanh(), library.Linear(32, 5))


@pytest.mark.parametrize('name, options', CONFIGS, ids=[f'{n}-{o}' for n, o in CONFIGS])
def test_training_equals_torchs_bit_for_bit(name, options):
    theirs = model(torch.nn)
    mine = model(nn)
    mine.load_state_dict(theirs.state_dict())
    expected = getattr(torch.optim, name)(theirs.parameters(), foreach=False, **options)
    optimizer = getattr(gt.optim, name)(mine.parameters(), **options)
    x, y = torch.randn(32, 20), torch.randint(0, 5, (32,))
    inputs, targets = gt.tensor(x), gt.tensor(y)
    for step in range(STEPS):
        loss = F.cross_entropy(mine(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(theirs(x), y)
        torch_loss.backward()
        expected.step()
        expected.zero_grad()
        assert loss.item() == torch_loss.item(), f'step {step}'
    final = theirs.state_dict()
    for key, value in mine.state_dict().items():
        assert torch.equal(value.data, final[key]), key


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize('name, options', CONFIGS, ids=[f'{n}-{o}' for n, o in CONFIGS])
def test_half_precision_training_follows_torchs(name, options, dtype):
    """Half and bfloat16 models train too (the rates are float32 numbers beside them). Not
    bit for bit: torch's low-precision kernels compute a whole expression (addmm's bias,
    Adam's denominator) in float32 and round once, where GT's ops round in between, and
    the adaptive optimizers turn those roundings into sign flips of early steps. So SGD
    must stay close to torch, and every optimizer must keep the dtype and be finite (or
    not: eps=1e-8 underflows in float16, in torch too) exactly where torch is."""
    theirs = model(torch.nn).to(dtype)
    mine = model(nn).to(dtype)
    mine.load_state_dict(theirs.state_dict())
    expected = getattr(torch.optim, name)(theirs.parameters(), foreach=False, **options)
    optimizer = getattr(gt.optim, name)(mine.parameters(), **options)
    x, y = torch.randn(32, 20, dtype=dtype), torch.randint(0, 5, (32,))
    inputs, targets = gt.tensor(x), gt.tensor(y)
    for _ in range(5):
        F.cross_entropy(mine(inputs), targets).backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(theirs(x), y).backward()
        expected.step()
        expected.zero_grad()
    final = theirs.state_dict()
    for key, value in mine.state_dict().items():
        got, want = value.data, final[key]
        assert got.dtype == dtype
        assert torch.equal(got.isfinite(), want.isfinite()), key
        if name == 'SGD':
            torch.testing.assert_close(got.float(), want.float(), rtol=0.05, atol=0.02)
