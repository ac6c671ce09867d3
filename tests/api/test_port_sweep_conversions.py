"""What a port sweep of ordinary PyTorch scripts found in making and reading tensors:
numbers made into a wide dtype keep their digits, a torch.Generator draws torch's values,
`.data` formats like a number, and `max(dim)` returns torch's result type."""

import pytest
import torch

import gt


def test_numbers_reach_the_dtype_asked_for_unrounded():
    """The initial conditions of a float64 simulation, say: torch.tensor takes the Python
    numbers straight into float64, not by way of float32."""
    for values, dtype in (([[-0.97000436, 0.24308753], [0.1, 1e40]], torch.float64),
                          ([2.7, -1.5], torch.int64), ([0.1, 3], torch.float16)):
        got = gt.tensor(values, dtype=dtype)
        assert torch.equal(got.data, torch.tensor(values, dtype=dtype))
    assert gt.as_tensor(0.1, dtype=torch.float64).item() == 0.1


@pytest.mark.parametrize('name', ['randn', 'rand'])
def test_a_generator_draws_torchs_values(name):
    mine, theirs = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    got = getattr(gt, name)(2, 3, dtype=torch.float64, generator=mine, requires_grad=True)
    assert got.requires_grad and got.dtype == torch.float64
    assert torch.equal(got.data, getattr(torch, name)(2, 3, dtype=torch.float64,
                                                       generator=theirs))
    assert torch.equal(torch.rand(2, generator=mine), torch.rand(2, generator=theirs))


def test_data_of_a_scalar_formats_as_its_number():
    loss = gt.tensor(1.23456)
    assert f'{loss.data:.3f} {loss.data:.2e}' == '1.235 1.23e+00'
    assert '{:.4f}'.format(loss.data) == f'{torch.tensor(1.23456):.4f}'


def test_max_and_min_along_a_dim_return_torchs_types():
    values = [[1.0, 5.0], [3.0, 2.0]]
    x, tx = gt.tensor(values), torch.tensor(values)
    for name in ('max', 'min'):
        got, want = getattr(x, name)(1), getattr(tx, name)(1)
        assert type(got) is type(want) and repr(got) == repr(want)
        assert torch.equal(got.indices.data, want.indices)
