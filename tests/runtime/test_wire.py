"""Tensors on the wire: every dtype, empty, 0-d, large and non-contiguous values go to a
worker and come back bit for bit; Python numbers reach the worker as they were."""

import math

import numpy as np
import pytest
import torch
from gt_test_support import connected

import gt


@pytest.fixture
def client(cluster):
    with connected(cluster.address) as connection:
        yield connection


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64', 'int8', 'uint8', 'int16',
                                   'int32', 'int64', 'bool'])
def test_round_trip_keeps_dtype_and_bits(client, dtype):
    array = (np.arange(-6, 6).reshape(3, 4) * 7 % 5).astype(dtype)
    back = gt.from_numpy(array).numpy()
    assert back.dtype == array.dtype
    assert back.shape == array.shape
    assert back.tobytes() == array.tobytes()


@pytest.mark.parametrize('shape', [(), (0,), (0, 3), (1,), (5, 1, 2)])
def test_round_trip_odd_shapes(client, shape):
    array = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    back = gt.from_numpy(array).numpy()
    assert back.shape == array.shape
    assert np.array_equal(back, array)
    assert np.array_equal((gt.from_numpy(array) * 2).numpy(), array * 2)


def test_large_and_non_contiguous(client):
    array = np.random.default_rng(1).random((1500, 1100), dtype=np.float32)
    x = gt.from_numpy(array)
    assert np.array_equal(x.numpy(), array)
    assert np.array_equal(x.T.numpy(), array.T)
    assert np.array_equal(x[::3, 5:].numpy(), array[::3, 5:])
    # The array is copied when recorded: changing it afterwards changes nothing.
    y = gt.from_numpy(array)
    array[:] = 0
    assert y.numpy().sum() > 0


def test_special_floats(client):
    values = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, 3.4e38], dtype=np.float32)
    back = gt.from_numpy(values).numpy()
    assert back.tobytes() == values.tobytes()


def test_numbers_keep_their_sign_of_zero(client):
    x = gt.tensor([1.0, 2.0])
    assert (1 / (x * 0.0)).tolist() == [math.inf, math.inf]
    assert (1 / (x * -0.0)).tolist() == [-math.inf, -math.inf]


def test_numbers_of_every_kind(client):
    x = gt.tensor([1, 2, 3])
    assert (x + True).tolist() == [2, 3, 4]
    assert (x * 2**40).tolist() == [2**40, 2**41, 3 * 2**40]
    assert (x * 0.5).tolist() == [0.5, 1.0, 1.5]
    assert math.isnan((gt.tensor([1.0]) * math.nan).item())
    assert (gt.tensor([1.5]) * math.inf).tolist() == [math.inf]


@pytest.mark.time_limit(60)
def test_bfloat16_from_the_client(start_cluster):
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    source = torch.randn(3, 4).to(torch.bfloat16)
    with connected(private.address):
        try:
            back = gt.tensor(source).data
        finally:
            assert private.workers[0].poll() is None, 'the worker died:\n' + private.logs()
    assert back.dtype == torch.bfloat16
    assert torch.equal(back, source)


def test_bfloat16_made_on_the_worker(client):
    source = torch.randn(3, 4)
    back = gt.tensor(source).to(torch.bfloat16).data
    assert back.dtype == torch.bfloat16
    assert torch.equal(back, source.to(torch.bfloat16))
