"""Checks of values that torch's kernels make and GT's compositions of them would not:
`check_between(x, low, high, message)` raises `message` where an element of x lies
outside [low, high] (or is NaN), as torch's binary_cross_entropy does for probabilities
outside [0, 1] ("forgot the sigmoid" gave NaN losses otherwise).

The value is only on the worker, so the check runs there and, like any op's failure, is
raised at the client's next fetch naming the line that recorded it. It has no outputs and
never joins a compiled region (it reads values on the host), but nothing depends on it
either, so it does not split a region; each worker checks its own shard.
"""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef


def _check_type(types: tuple, low: float, high: float, message: str) -> tuple[TensorType, ...]:
    if len(types) != 1:
        raise ValueError(f'check_between: expected one input, got {len(types)}')
    if not isinstance(message, str):
        raise ValueError(f'check_between: message must be a string, got {message!r}')
    return ()


def _torch_check(x: torch.Tensor, low: float, high: float, message: str) -> tuple:
    if not bool(((x >= low) & (x <= high)).all()):
        raise RuntimeError(message)
    return ()


def _numpy_check(x: np.ndarray, low: float, high: float, message: str) -> tuple:
    if not bool(np.all((x >= low) & (x <= high))):
        raise RuntimeError(message)
    return ()


def _each_shard(kinds: tuple, inputs: tuple, outputs: tuple, **attrs: object) -> tuple:
    """Each worker checks what it holds; partial sums must be summed first."""
    return tuple('R' if kind == 'P' else kind for kind in kinds), ()


ROWS = [
    OpDef('check_between', _check_type, _torch_check, _numpy_check, effects=True,
          shard=_each_shard, traced=False),
]
