"""Where a value lives: replicated on workers, sharded along an axis, or a pending sum.

These mirror PyTorch DTensor's placements. Workers are named by their index in the
dispatcher's worker list; a placement is part of a value's type in the printed IR.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Replicate:
    workers: tuple[int, ...]

    def __str__(self) -> str:
        return f'R@{_names(self.workers)}'


@dataclass(frozen=True, slots=True)
class Shard:
    axis: int
    workers: tuple[int, ...]

    def __str__(self) -> str:
        return f'S{self.axis}@{_names(self.workers)}'


@dataclass(frozen=True, slots=True)
class Partial:
    """Each worker holds a term; the value is their sum."""

    workers: tuple[int, ...]

    def __str__(self) -> str:
        return f'P:sum@{_names(self.workers)}'


Placement = Replicate | Shard | Partial


def _names(workers: tuple[int, ...]) -> str:
    return ','.join(f'w{worker}' for worker in workers)
