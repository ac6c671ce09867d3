"""`torch.random` for scripts that `import gt as torch`: seeding, and saving and restoring
the session's random state (gt/ir/ops/random_state.py) around a block with `fork_rng`."""

import contextlib
from typing import Any, Iterator

import torch

from gt.creation import get_rng_state, manual_seed, set_rng_state


def seed() -> int:
    """A fresh non-deterministic seed for the session, as torch.seed() picks one; returned."""
    chosen = torch.seed()
    manual_seed(chosen)
    return chosen


def initial_seed() -> int:
    """The seed the session was last seeded with (gt.manual_seed seeds torch's generator
    in this process with it too)."""
    return torch.initial_seed()


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = 'fork_rng',
             _devices_kw: str = 'devices', device_type: str = 'cuda') -> Iterator[None]:
    """Draws inside the block leave the session's random state as it was before it (the
    workers' generator and this process's); `devices` is GT's to choose, as devices are."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ['fork_rng', 'get_rng_state', 'initial_seed', 'manual_seed', 'seed',
           'set_rng_state']
