"""Unary functions' gradients are derivatives.yaml's formulas in torch's order, so their
bits are torch's: `1 / x` (reciprocal: `-g * (r * r)`), `expm1` (`g * (r + 1)`),
`asin`/`acos` (`(-x * x + 1).rsqrt()`), `asinh`/`acosh`, `rsqrt` differed (found
porting a physics-informed network)."""

import numpy as np
import pytest
import torch

import gt

NAMES = ['sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh',
         'atanh', 'log1p', 'expm1', 'log2', 'log10', 'erf', 'erfc', 'rsqrt', 'reciprocal',
         'exp', 'log', 'sqrt', 'sigmoid', 'tanh']


@pytest.mark.parametrize('name', NAMES)
def test_unary_gradients_are_torchs_bits(name):
    generator = torch.Generator().manual_seed(0)
    base = torch.rand(2000, generator=generator) * 0.9 + 0.05 + (1.0 if name == 'acosh' else 0)
    weights = torch.randn(2000, generator=generator)
    theirs = base.clone().requires_grad_()
    (getattr(torch, name)(theirs) * weights).sum().backward()
    mine = gt.tensor(base).requires_grad_()
    (getattr(gt, name)(mine) * gt.tensor(weights)).sum().backward()
    assert np.array_equal(mine.grad.numpy(), theirs.grad.numpy())


def test_one_over_x_differentiates_as_torchs():
    base = torch.linspace(0.5, 3.0, 1000)
    theirs = base.clone().requires_grad_()
    (1 / theirs).sum().backward()
    mine = gt.tensor(base).requires_grad_()
    (1 / mine).sum().backward()
    assert np.array_equal(mine.grad.numpy(), theirs.grad.numpy())
