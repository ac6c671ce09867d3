"""Keeping a compile's restores of torch's global generator state out of lent draws.

Dynamo, compiling in the worker's compile thread, saves torch's global generator state
before each compile and sets it back after (`torch.random.set_rng_state`,
`torch.cuda.set_rng_state`). A set landing in the middle of a draw lent that global
generator (gt.ir.borrowed_generator: rrelu, alpha_dropout; torch's kernels let go of
the interpreter lock) made the draw use Dynamo's old state instead of the session's:
other numbers than torch's for the same seed. So lent draws and those two setters take
one lock, installed by the worker's compiler before its first compile: a restore waits
for at most a draw. Dynamo's restore has no hook, so the setters are wrapped: the
worker's one patch of torch.
"""

import functools
import threading
from typing import Any

import torch

from gt.ir import borrowed_generator

LOCK = threading.RLock()  # reentrant: a lent function may itself set the global state


def guard_restores() -> None:
    """Make lent draws and torch's global state setters take `LOCK` (once per process)."""
    borrowed_generator.guard = LOCK
    for module in (torch.random, torch.cuda):
        setter = module.set_rng_state
        if not getattr(setter, '_gt_guarded', False):
            module.set_rng_state = _guarded(setter)


def _guarded(setter: Any) -> Any:
    @functools.wraps(setter)
    def set_rng_state(*args: Any, **kwargs: Any) -> Any:
        with LOCK:
            return setter(*args, **kwargs)

    set_rng_state._gt_guarded = True
    return set_rng_state
