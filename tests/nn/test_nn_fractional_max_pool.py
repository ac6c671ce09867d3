"""Fractional max pooling against torch: seeded draws pool where torch's do, gradients
flow (the call by name was a draw, which GT could not differentiate), and the modules
and their checks are torch's."""

import pytest
import torch
from gt_test_support import assert_raises_as_torch

import gt


def pooled(lib):
    F = lib.nn.functional
    lib.manual_seed(0)
    x = lib.randn(2, 2, 9, 9, requires_grad=True)
    y = F.fractional_max_pool2d(x, 2, output_size=4)
    y.sum().backward()
    values, indices = F.fractional_max_pool2d(x, 3, output_ratio=(0.5, 0.5),
                                              return_indices=True)
    pool = lib.nn.FractionalMaxPool3d(2, output_ratio=0.5)
    cube = lib.randn(1, 2, 6, 6, 6, requires_grad=True)
    pool(cube).pow(2).sum().backward()
    unbatched = lib.nn.FractionalMaxPool2d(2, output_size=(3, 3), return_indices=True)
    pair = unbatched(lib.randn(2, 5, 5))
    given = F.fractional_max_pool2d(x, 2, output_size=3,
                                    _random_samples=lib.full((2, 2, 2), 0.25))
    return [y.tolist(), x.grad.tolist(), values.tolist(), indices.tolist(), repr(pool),
            cube.grad.tolist(), [t.tolist() for t in pair], given.tolist(),
            lib.randn(2).tolist()]  # the draws left the generator where torch's did


def test_fractional_max_pooling_is_torchs():
    assert pooled(gt) == pooled(torch)


@pytest.mark.parametrize('mistake', [
    lambda lib: lib.nn.FractionalMaxPool2d(2),
    lambda lib: lib.nn.FractionalMaxPool2d(2, 3, 0.5),
    lambda lib: lib.nn.FractionalMaxPool3d(2, output_ratio=1.5),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(1, 1, 4, 4), 2),
], ids=['neither size', 'both sizes', 'ratio past 1', 'functional, neither size'])
def test_fractional_max_pooling_refuses_as_torch(mistake):
    assert_raises_as_torch(ValueError, mistake)
