"""Misuse that torch refuses at the call is refused by GT at the call with an error of
torch's class, so a ported `except RuntimeError` (or `except ValueError`) still catches
it; the session goes on after each. Written once for both libraries."""

import pytest
import torch

import gt

CASES = {
    'layer_norm of another shape': lambda lib: lib.nn.functional.layer_norm(
        lib.ones(2, 4), (5,)),
    'pad of odd length': lambda lib: lib.nn.functional.pad(lib.ones(2, 3), (1,)),
    'batch norm of other channels': lambda lib: lib.nn.BatchNorm2d(4)(lib.randn(2, 3, 4, 4)),
    'cross_entropy target shape': lambda lib: lib.nn.functional.cross_entropy(
        lib.randn(2, 3, 4, 4), lib.zeros(2, 4, 5).long()),
    'nll_loss weight of other classes': lambda lib: lib.nn.functional.nll_loss(
        lib.randn(2, 3), lib.zeros(2).long(), weight=lib.ones(4)),
    'label_smoothing over 1': lambda lib: lib.nn.functional.cross_entropy(
        lib.randn(2, 3), lib.zeros(2).long(), label_smoothing=1.5),
    'BCE with logits of an integer target': lambda lib: (
        lib.nn.functional.binary_cross_entropy_with_logits(lib.tensor([0.5]), lib.tensor([1]))),
    'transposed convolution of other channels': lambda lib: lib.nn.ConvTranspose2d(4, 2, 2)(
        lib.randn(1, 3, 4, 4)),
    'int() of two elements': lambda lib: int(lib.ones(2)),
    'float() of two elements': lambda lib: float(lib.ones(2)),
}


@pytest.mark.parametrize('case', CASES, ids=str)
def test_refused_with_torchs_error_class(case):
    with pytest.raises(Exception) as theirs:
        CASES[case](torch)
    with pytest.raises(type(theirs.value)) as mine:
        CASES[case](gt)
    if isinstance(theirs.value, RuntimeError) != isinstance(mine.value, RuntimeError):
        pytest.fail(f'torch raised {type(theirs.value).__name__}, GT {type(mine.value).__name__}')
    assert gt.ones(2).sum().item() == 2.0


@pytest.mark.parametrize('name', ['weight', 'a.b', ''])
def test_add_module_checks_the_name_as_torch_does(name):
    """An attribute's name, a dotted one (state_dict keys that load into nothing), none."""
    errors = []
    for lib in (torch, gt):
        with pytest.raises(KeyError) as raised:
            lib.nn.Linear(2, 2).add_module(name, lib.nn.ReLU())
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


def test_python_float_as_a_dtype_is_float64_as_in_torch():
    assert gt.zeros(2, dtype=float).dtype == torch.zeros(2, dtype=float).dtype == torch.float64
    assert gt.ones(2).to(float).dtype == torch.float64
