"""torch's global generator, lent to a session's draw by name.

A torch function without a `generator=` argument (rrelu, alpha_dropout, gumbel_softmax)
draws from torch's default generator on its device, so a session's draw by name runs
with that generator holding the session's state (`lent_to`). While another thread may
set that global state meanwhile (a compile: gt.runtime.generator_guard), `guard` is a
lock that those sets take too; the IR takes no lock of its own.
"""

import contextlib
from typing import Any, Iterator

import torch

guard: Any = contextlib.nullcontext()  # held for a lent draw (see the docstring)


@contextlib.contextmanager
def lent_to(generator: torch.Generator) -> Iterator[None]:
    """For the block, torch's default generator on `generator`'s device draws in its place:
    it takes `generator`'s state, which takes the default's after."""
    if generator.device.type == 'cuda':
        default = torch.cuda.default_generators[generator.device.index or 0]
    else:
        default = torch.default_generator
    with guard:
        saved = default.get_state()
        default.set_state(generator.get_state())
        try:
            yield
        finally:
            generator.set_state(default.get_state())
            default.set_state(saved)
