"""`gt.autocast` and `gt.amp.GradScaler` (also under `gt.cuda.amp`; gt/grad_scaler.py):
mixed-precision boilerplate that ported scripts carry.

GT runs ops in the dtypes it is given and does not cast per op. On a machine without CUDA
torch disables CUDA autocasting with a warning and runs the script in full precision; a
GT client has no CUDA (gt/cuda.py), so it behaves that way here, and for CPU
autocasting too (saying so). A script that wants half precision casts its model and
inputs (`model.bfloat16()`), which GT runs as given.
"""

import functools
import warnings
from typing import Any, Callable

from gt.grad_scaler import GradScaler  # noqa: F401 (torch's place: torch.amp)


def custom_fwd(fwd: Callable | None = None, *, device_type: str = 'cuda',
               cast_inputs: Any = None) -> Any:
    """torch's decorator for a custom autograd Function's forward: `cast_inputs` casts
    only inside an autocast region, which GT never enters (above), so the forward runs as
    written, as torch's does outside autocast."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str = 'cuda') -> Any:
    """torch's: the backward runs in the forward's autocast state, here none."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd


def is_autocast_available(device_type: str) -> bool:
    """False: GT does not autocast (above), so code that asks first skips it."""
    return False


class autocast:
    def __init__(self, device_type: str = 'cuda', dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if enabled:
            warnings.warn(f'gt.autocast: GT does not autocast ({device_type!r}); ops run in '
                          'the dtypes of their inputs (cast the model, e.g. '
                          'model.bfloat16(), for half precision)', stacklevel=2)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        pass

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)
        return wrapper
