"""Which worker sends which part of a value to which, to turn one placement into another.

This is the arithmetic behind every communication op (all_gather, all_reduce,
reduce_scatter, all_to_all, shard, transfer): one general plan, so that the runtime needs
no algorithm per collective. A receiver assembles its pieces in source-worker order, by
concatenation along the source's shard axis or by summing partial terms, so every worker
that assembles the same part gets bitwise the same result.
"""

from dataclasses import dataclass

from gt.ir.placement import Partial, Placement, Replicate, Shard, chunk_bounds

# A region is a tuple of (axis, start, stop) cuts in the holder's local coordinates.
Region = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class Piece:
    sender: int
    region: Region  # of the sender's local part


@dataclass(frozen=True)
class Assembly:
    """How `receiver` builds its part: from `pieces`, joined by `combine`."""

    receiver: int
    pieces: tuple[Piece, ...]
    combine: str  # 'single', 'cat' (along `axis`) or 'sum'
    axis: int | None = None


def _target_cut(target: Placement, shape: tuple[int, ...], receiver: int):
    if isinstance(target, Shard):
        start, stop = chunk_bounds(shape[target.axis], len(target.workers),
                                   target.workers.index(receiver))
        return (target.axis, start, stop)
    return None


def plan_exchange(source: Placement, target: Placement,
                  shape: tuple[int, ...]) -> tuple[Assembly, ...]:
    """For each worker of `target`, the pieces it needs and how to join them."""
    if isinstance(target, Partial):
        raise ValueError('values are never moved into a partial placement')
    assemblies = []
    for receiver in target.workers:
        cut = _target_cut(target, shape, receiver)
        wanted: Region = (cut,) if cut else ()
        if isinstance(source, Replicate):
            holders = source.workers
            sender = receiver if receiver in holders else holders[
                target.workers.index(receiver) % len(holders)]
            assemblies.append(Assembly(receiver, (Piece(sender, wanted),), 'single'))
        elif isinstance(source, Partial):
            pieces = tuple(Piece(sender, wanted) for sender in source.workers)
            assemblies.append(Assembly(receiver, pieces, 'sum'))
        else:
            assemblies.append(_from_shards(source, cut, shape, receiver))
    return tuple(assemblies)


def _from_shards(source: Shard, cut, shape: tuple[int, ...], receiver: int) -> Assembly:
    axis = source.axis
    low, high = (cut[1], cut[2]) if cut and cut[0] == axis else (0, shape[axis])
    pieces = []
    for index, sender in enumerate(source.workers):
        start, stop = chunk_bounds(shape[axis], len(source.workers), index)
        begin, end = max(start, low), min(stop, high)
        if begin >= end:
            continue
        region = [(axis, begin - start, end - start)]
        if cut and cut[0] != axis:
            region.append(cut)
        pieces.append(Piece(sender, tuple(region)))
    return Assembly(receiver, tuple(pieces), 'single' if len(pieces) == 1 else 'cat', axis)
