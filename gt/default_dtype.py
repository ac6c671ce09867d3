"""`gt.set_default_dtype`: the floating dtype tensors take when none is given.

As in torch, it is the process's: the client sets torch's own default (so its type rules
and the meta kernels it works types out with follow), and tells the dispatcher with its
session's settings (`Configure`). The dispatcher works each fragment's types out again
under the default it was recorded under, and writes that default into the worker
programs, which run under it (gt.ir.dtypes.default_float_as). Work recorded before the
change is sent first, so every fragment has one default.
"""

import warnings
from typing import Any

import torch

from gt.ir.dtypes import DTYPE_NAMES, FLOATING
from gt.runtime import client as runtime_client
from gt.tensor import forget_inferred_types


def set_default_dtype(dtype: Any) -> None:
    """torch.set_default_dtype: float32, float64, float16 or bfloat16."""
    if not isinstance(dtype, torch.dtype) or DTYPE_NAMES.get(dtype) not in FLOATING:
        torch.set_default_dtype(dtype)  # torch's own TypeError for what it refuses
        raise TypeError(f'GT has no default dtype {dtype}')  # one torch takes, GT has not
    if dtype is torch.get_default_dtype():
        return
    client = runtime_client.connected()
    if client is not None:
        client.flush()  # what was recorded so far is worked out under the old default
        client.default_dtype_changed()
    torch.set_default_dtype(dtype)
    forget_inferred_types()


def set_default_tensor_type(kind: Any) -> None:
    """torch's older spelling, deprecated there as here: `gt.set_default_tensor_type(
    gt.DoubleTensor)`, or a name ('torch.DoubleTensor', 'torch.cuda.FloatTensor'), sets
    the default dtype (GT places tensors itself)."""
    warnings.warn('torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please '
                  'use torch.set_default_dtype() and torch.set_default_device() as '
                  'alternatives.', UserWarning, stacklevel=2)
    if isinstance(kind, str):
        kind = getattr(torch, kind.rsplit('.', 1)[-1], None)
    dtype = getattr(kind, 'dtype', None)
    if not isinstance(dtype, torch.dtype) or not hasattr(kind, '__name__'):
        raise TypeError(f'invalid type object: {kind!r}')
    if DTYPE_NAMES.get(dtype) not in FLOATING:
        raise TypeError('only floating-point types are supported as the default type')
    set_default_dtype(dtype)
