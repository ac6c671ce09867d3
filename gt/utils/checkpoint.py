"""`torch.utils.checkpoint`: activation checkpointing, as GT runs it.

torch's checkpoint runs a function without keeping its intermediate activations and
runs it again in backward, trading compute for device memory. GT's tape keeps the
intermediates as values on the workers, and a rerun would draw its random ops afresh
(GT cannot restore the workers' generators to an earlier state), so GT runs the function
once, as it is: the same outputs and gradients as torch's checkpoint (tested), without
the memory saving.
"""

from typing import Any, Callable, Iterable


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Any = None, determinism_check: str = 'default',
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)` (torch's keywords are taken and have nothing to do)."""
    return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """The modules of `functions` (a Sequential, or a list of them) applied in turn."""
    modules: Iterable = functions.children() if hasattr(functions, 'children') else functions
    for module in modules:
        input = module(input)
    return input
