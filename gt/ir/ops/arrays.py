"""Helpers for the numpy rows, so that they compute what torch computes.

numpy promotes types differently (int64 + float32 is float64 there) and reduces half
floats in half precision; these helpers apply torch's rules before numpy runs.
"""

import functools

import numpy as np

from gt.ir.dtypes import DIMENSIONED, FLOATING, ZERO_DIM, default_float, result_type


def common(*arrays: np.ndarray) -> np.dtype:
    """The dtype torch would compute in for these arrays (0-d arrays count less)."""
    return np.dtype(result_type(
        *((a.dtype.name, DIMENSIONED if a.ndim else ZERO_DIM) for a in arrays)))


def promoted(*arrays: np.ndarray) -> list[np.ndarray]:
    dtype = common(*arrays)
    return [np.asarray(a, dtype=dtype) for a in arrays]


def floating(x: np.ndarray) -> np.ndarray:
    """Integer and bool arrays in the default dtype, as torch's floating-only ops see them."""
    return x if x.dtype.name in FLOATING else x.astype(default_float())


def wide(x: np.ndarray) -> np.ndarray:
    """float16 as float32 for computing: torch accumulates half floats in float32."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def axis(x: np.ndarray, dim: int | list[int] | None) -> int | tuple[int, ...] | None:
    """A torch `dim` as a numpy `axis`; None and [] mean all, and 0-d arrays take dim 0."""
    if dim is None or x.ndim == 0:
        return None
    if isinstance(dim, int):
        return dim
    return tuple(dim) or None


def quiet(fn):
    """Run a numpy row without floating point warnings: torch gives NaN and inf silently."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with np.errstate(all='ignore'):
            return fn(*args, **kwargs)
    return run
