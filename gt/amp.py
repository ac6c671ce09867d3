"""`gt.autocast` and `gt.amp.GradScaler` (also under `gt.cuda.amp`): mixed-precision
boilerplate that ported scripts carry.

GT runs ops in the dtypes it is given and does not cast per op. On a machine without CUDA
torch disables CUDA autocasting and CUDA gradient scaling with a warning and runs the
script in full precision; a GT client has no CUDA (gt/cuda.py), so both behave that way
here, and CPU autocasting too (saying so). A script that wants half precision casts its
model and inputs (`model.bfloat16()`), which GT runs as given.
"""

import functools
import warnings
from typing import Any, Callable


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


class GradScaler:
    """torch's GradScaler as it behaves disabled: `scale(loss)` is the loss, `step`
    steps the optimizer, `update` does nothing, the scale is 1."""

    def __init__(self, device: str = 'cuda', init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if enabled:
            warnings.warn('gt.amp.GradScaler is enabled, but GT has no CUDA here (see '
                          'gt.cuda): disabling, as torch does without CUDA', stacklevel=2)

    def scale(self, outputs: Any) -> Any:
        return outputs

    def unscale_(self, optimizer: Any) -> None:
        pass

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: Any = None) -> None:
        pass

    def get_scale(self) -> float:
        return 1.0

    def is_enabled(self) -> bool:
        return False

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        pass
