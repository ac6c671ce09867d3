"""Shared by the API tests: make the same data as a GT tensor and a torch tensor, and hold
GT's results against torch's (values, shape and dtype) after a real round trip.

The pytest process is the client; the first op auto-starts the local server, which the
whole session then shares.
"""

import os
import zlib

import numpy as np
import torch

import gt

NUMPY_OF = {
    torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
    torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
    torch.float32: np.float32, torch.float64: np.float64,
}
FLOATS = (torch.float16, torch.float32, torch.float64)
INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def rng() -> np.random.Generator:
    """A generator seeded from the running test's id: data that does not depend on order."""
    test = os.environ.get('PYTEST_CURRENT_TEST', '').rsplit(' ', 1)[0]
    return np.random.default_rng(zlib.crc32(test.encode()))


def array(shape: tuple[int, ...], dtype: torch.dtype = torch.float32, low: int = -5,
          high: int = 6, generator: np.random.Generator | None = None) -> np.ndarray:
    """Normal floats, ints in [low, high) (unsigned: [0, high)), or random bools."""
    generator = generator or rng()
    if dtype == torch.bool:
        return generator.integers(0, 2, shape).astype(np.bool_)
    if dtype.is_floating_point:
        return generator.standard_normal(shape).astype(NUMPY_OF[dtype])
    low = max(low, 0) if dtype == torch.uint8 else low
    return generator.integers(low, high, shape).astype(NUMPY_OF[dtype])


def pair(values: np.ndarray) -> tuple[gt.Tensor, torch.Tensor]:
    """The same data as a GT tensor and a torch tensor (each with its own copy)."""
    return gt.from_numpy(values), torch.from_numpy(values.copy())


def pairs(*shapes: tuple[int, ...], dtype: torch.dtype = torch.float32, **kwargs) -> list:
    generator = rng()
    return [pair(array(shape, dtype, generator=generator, **kwargs)) for shape in shapes]


def assert_same(got: gt.Tensor, want: torch.Tensor, rtol: float | None = None,
                atol: float | None = None) -> None:
    """GT's tensor has torch's shape and dtype (recorded, then computed) and its values."""
    assert isinstance(got, gt.Tensor), f'expected a gt.Tensor, got {type(got).__name__}'
    assert got.shape == want.shape, f'shape {list(got.shape)} != torch {list(want.shape)}'
    assert got.dtype == want.dtype, f'dtype {got.dtype} != torch {want.dtype}'
    value = got.data
    assert isinstance(value, torch.Tensor)
    assert value.shape == want.shape and value.dtype == want.dtype, (
        f'computed {list(value.shape)} {value.dtype}, recorded {list(want.shape)} {want.dtype}')
    torch.testing.assert_close(value, want, rtol=rtol, atol=atol, equal_nan=True)


def assert_all_same(got: list, want: list, **tolerances) -> None:
    assert len(got) == len(want), f'{len(got)} results, torch gives {len(want)}'
    for g, w in zip(got, want):
        assert_same(g, w, **tolerances)


def made(shape: tuple[int, ...], dtype: torch.dtype, nonzero: bool = False, low: int = -5):
    """GT and torch tensors of `dtype` (bfloat16 made by a cast, as numpy has none)."""
    source = torch.float32 if dtype == torch.bfloat16 else dtype
    values = array(shape, source, low=low)
    if nonzero and dtype != torch.bool:
        values[values == 0] = 1
    got, want = pair(values)
    if dtype == torch.bfloat16:
        got, want = got.to(gt.bfloat16), want.to(torch.bfloat16)
    return got, want


def outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as error:  # noqa: BLE001 - torch's refusal is the expected result
        return None, error


def assert_like_torch(fn, gt_args, torch_args):
    """GT gives torch's result, or raises (when recording or when computing) where torch
    raises."""
    want, torch_error = outcome(fn, *torch_args)
    if torch_error is not None:
        try:
            fn(*gt_args).data
        except Exception:  # noqa: BLE001 - any refusal, when recording or computing
            return
        raise AssertionError(f'torch raises {torch_error!r}, gt does not')
    got, gt_error = outcome(fn, *gt_args)
    assert gt_error is None, f'torch gives {want.dtype} {list(want.shape)}, gt raised {gt_error!r}'
    assert_same(got, want)
