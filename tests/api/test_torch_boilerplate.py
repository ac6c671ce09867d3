"""The lines ported training scripts carry around their work: mixed-precision wrappers,
torch.backends flags, inference_mode, thread settings and torch.utils. Each runs, and
means what it means in torch on a machine without CUDA."""

import warnings

import pytest

import gt
import gt.nn as nn


def test_disabled_mixed_precision_trains_as_without_it():
    def train(use_amp_boilerplate):
        gt.manual_seed(0)
        model = nn.Linear(3, 1)
        optimizer = gt.optim.SGD(model.parameters(), lr=0.1)
        scaler = gt.cuda.amp.GradScaler(enabled=False)
        for _ in range(3):
            x = gt.randn(4, 3)
            if use_amp_boilerplate:
                with gt.autocast(device_type='cuda', enabled=False):
                    loss = model(x).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                model(x).pow(2).mean().backward()
                optimizer.step()
            optimizer.zero_grad()
        return model.weight.tolist()
    assert train(True) == train(False)


def test_enabled_mixed_precision_says_it_is_off():
    with pytest.warns(UserWarning, match='GradScaler is enabled, but GT has no CUDA'):
        scaler = gt.amp.GradScaler('cuda')
    assert scaler.get_scale() == 1.0 and not scaler.is_enabled()
    with pytest.warns(UserWarning, match='does not autocast'):
        with gt.autocast('cpu', dtype=gt.bfloat16):
            assert (gt.ones(2) @ gt.ones(2)).dtype == gt.float32


def test_backends_flags_threads_and_utils_are_accepted():
    gt.backends.cudnn.benchmark = True
    gt.backends.cudnn.deterministic = True
    assert gt.backends.cudnn.benchmark and not gt.backends.mps.is_available()
    gt.set_num_threads(2)
    assert gt.get_num_threads() >= 1
    assert gt.utils.data.TensorDataset is not None


def test_inference_mode_records_no_tape_as_a_context_and_a_decorator():
    weight = gt.ones(2, requires_grad=True)
    with gt.inference_mode():
        assert not (weight * 2).requires_grad
    with gt.inference_mode(False):
        assert (weight * 2).requires_grad

    @gt.inference_mode()
    def predict():
        return (weight * 2).requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert not predict() and gt.is_grad_enabled()
