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


def satisfies(actual: Placement, needed: Placement) -> bool:
    """Whether a value placed `actual` can be used where `needed` is asked for as it is:
    the same placement, or whole copies on more workers than needed."""
    if actual == needed:
        return True
    return (isinstance(actual, Replicate) and isinstance(needed, Replicate)
            and set(needed.workers) <= set(actual.workers))


def chunk_bounds(size: int, parts: int, index: int) -> tuple[int, int]:
    """Rows `[start, stop)` of part `index` when `size` rows are cut as torch.chunk cuts them
    (and DTensor after it): parts of ceil(size / parts), the last ones short or empty."""
    step = -(-size // parts) if parts else 0
    return min(index * step, size), min((index + 1) * step, size)


def local_shape(shape: tuple[int, ...], placement: Placement, worker: int) -> tuple[int, ...]:
    """The shape of the part of a value that `worker` holds."""
    if not isinstance(placement, Shard):
        return shape
    start, stop = chunk_bounds(shape[placement.axis], len(placement.workers),
                               placement.workers.index(worker))
    return shape[:placement.axis] + (stop - start,) + shape[placement.axis + 1:]


def encode_placement(placement: Placement) -> list:
    """A msgpack-friendly form: `['R', workers]`, `['S', axis, workers]`, `['P', workers]`."""
    if isinstance(placement, Shard):
        return ['S', placement.axis, list(placement.workers)]
    return ['R' if isinstance(placement, Replicate) else 'P', list(placement.workers)]


def decode_placement(encoded: list) -> Placement:
    """The inverse of `encode_placement`; raises ValueError on anything else."""
    try:
        kind, *rest = encoded
        workers = tuple(int(w) for w in rest[-1])
        if kind == 'S' and len(rest) == 2 and isinstance(rest[0], int) and rest[0] >= 0:
            return Shard(rest[0], workers)
        if kind in ('R', 'P') and len(rest) == 1:
            return (Replicate if kind == 'R' else Partial)(workers)
    except (TypeError, ValueError):
        pass
    raise ValueError(f'not a placement: {encoded!r}')
