"""torch's global generator, lent to a session's draw by name, and kept from a compile's
restores meanwhile.

A torch function without a `generator=` argument (rrelu, alpha_dropout, gumbel_softmax)
draws from torch's default generator on its device, so a session's draw by name runs
with that generator holding the session's state (`lent_to`). Dynamo, compiling in the
worker's compile thread, saves the global state before each compile and sets it back
after (`torch.random.set_rng_state`, `torch.cuda.set_rng_state`). A set landing in the
middle of a lent draw (torch's kernels let go of the interpreter lock) made the draw use
Dynamo's old state instead of the session's: other numbers than torch's for the same
seed. So lent draws and those two setters take one lock (`guard_restores`, installed by
the worker's compiler before its first compile): a restore waits for at most a draw.
"""

import contextlib
import functools
import threading
from typing import Any, Iterator

import torch

LOCK = threading.RLock()  # reentrant: a lent function may itself set the global state


@contextlib.contextmanager
def lent_to(generator: torch.Generator) -> Iterator[None]:
    """For the block, torch's default generator on `generator`'s device draws in its place:
    it takes `generator`'s state, which takes the default's after."""
    if generator.device.type == 'cuda':
        default = torch.cuda.default_generators[generator.device.index or 0]
    else:
        default = torch.default_generator
    with LOCK:
        saved = default.get_state()
        default.set_state(generator.get_state())
        try:
            yield
        finally:
            generator.set_state(default.get_state())
            default.set_state(saved)


def guard_restores() -> None:
    """Make torch's global state setters, which Dynamo's compiles call, wait for a lent
    draw to end (once per process)."""
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
