"""gt.amp.GradScaler('cpu') against torch's CPU scaler: the scale backs off after an inf
or NaN (and the step is skipped), grows after `growth_interval` clean steps, unscale_,
new_scale, state dicts and torch's errors; the same script with each library must print
the same."""

import pytest
import torch

import gt


def scaled_training(lib):
    scaler = lib.amp.GradScaler('cpu', init_scale=2.0 ** 8, growth_interval=2)
    weight = lib.nn.Parameter(lib.ones(3))
    optimizer = lib.optim.SGD([weight], lr=0.1)
    seen = []
    for bad in (True, False, False, False, float('nan')):
        optimizer.zero_grad()
        factor = lib.tensor([1.0, float('inf') if bad is True else bad or 2.0, 1.0])
        scaler.scale((weight * factor).sum()).backward()
        seen.append(scaler.step(optimizer))
        scaler.update()
        seen += [weight.tolist(), scaler.get_scale(), scaler.state_dict()]
    optimizer.zero_grad()
    losses = scaler.scale([(weight * 2).sum(), ((weight * 3).sum(),)])
    losses[1][0].backward()
    scaler.unscale_(optimizer)
    seen.append(weight.grad.tolist())
    for call in (lambda: scaler.unscale_(optimizer), lambda: scaler.step(optimizer),
                 lambda: scaler.step(optimizer), lambda: scaler.unscale_(optimizer),
                 lambda: scaler.step(optimizer, closure=lambda: 0)):
        try:
            seen.append(call())
        except RuntimeError as error:
            seen.append(str(error))
    scaler.update(4.0)
    copy = lib.amp.GradScaler('cpu')
    copy.load_state_dict(scaler.state_dict())
    seen += [scaler.get_scale(), copy.get_scale(), copy.state_dict()]
    return seen


def test_cpu_scaler_is_torchs():
    assert scaled_training(gt) == scaled_training(torch)


def test_errors_and_a_disabled_scaler_are_torchs():
    for lib in (gt, torch):
        with pytest.raises(AssertionError, match='growth factor must be > 1.0'):
            lib.amp.GradScaler('cpu', growth_factor=1.0)
        disabled = lib.amp.GradScaler('cpu', enabled=False)
        assert disabled.get_scale() == 1.0 and disabled.state_dict() == {}
        with pytest.raises(RuntimeError, match='source state dict is empty'):
            lib.amp.GradScaler('cpu').load_state_dict({})
        half = lib.nn.Parameter(lib.ones(2, dtype=torch.float16))
        scaler, optimizer = lib.amp.GradScaler('cpu'), lib.optim.SGD([half], lr=0.1)
        scaler.scale(half.sum()).backward()
        with pytest.raises(ValueError, match='Attempting to unscale FP16 gradients'):
            scaler.unscale_(optimizer)
