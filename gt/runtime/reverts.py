"""What a tensor goes back to when the value an in-place op gave it fails on a worker.

Torch raises at the failing op, so a training step whose forward fails leaves the model,
the optimizer's state and the running statistics as they were, and a script that catches
the error trains on. GT learns of a failure at the next fetch, after the step's update
ran on the failed values: every parameter the update rebound held a failed value, and
every later step failed with it. So each rebinding travels as a pair `(new, old)` in the
next message, and a worker that finds `new` failed gives it `old`'s value: the update did
not happen. Rebindings that do not depend on the failure still happen (torch stops at
the failing op; GT's error reaches the script at its next fetch).
"""

from typing import Callable

from gt.runtime.session_errors import REVERTED

WATCHED_KEPT = 8192  # values whose going back the client undoes more of (`watch`)


class Reverts:
    """The pairs a client sends with its next message, flat: `[new, old, new, old, ...]`,
    and what else to undo when a worker says a value went back."""

    __slots__ = ('pairs', 'replaced', 'watched')

    def __init__(self) -> None:
        self.pairs: list[int] = []
        self.replaced: dict[int, int] = {}  # a value made since the last flush: what it replaced
        self.watched: dict[int, Callable[[], None]] = {}

    def rebound(self, old: int, new: int, old_dropped: bool, base: int) -> None:
        """A tensor took value `new` in place of `old`; `old_dropped`: nothing else holds
        `old`. Values made since the last flush (ids from `base` on) that nothing keeps
        never reach a worker, so a chain of rebindings within one flush (Adam's
        `exp_avg_sq.mul_(b2).addcmul_(g, g)`) goes back to the value before the chain."""
        if old >= base:
            if old_dropped:
                old = self.replaced.get(old, -1)
                if old < 0:
                    return  # made and replaced since the last flush: nothing to go back to
        if new >= base:
            self.replaced[new] = old
        self.pairs += (new, old)

    def take(self) -> list[int]:
        """The pairs for the message about to go; the flush starts a new chain."""
        pairs, self.pairs = self.pairs, []
        if self.replaced:
            self.replaced = {}
        return pairs


    def watch(self, value_id: int, undo: Callable[[], None]) -> None:
        """Call `undo` if a worker says `value_id` went back (gt.optim.failed_steps: a
        step count). Only the latest are kept: a step's own are reported at the next
        fetch that reaches its worker."""
        watched = self.watched
        watched[value_id] = undo
        if len(watched) > WATCHED_KEPT:
            del watched[next(iter(watched))]

    def undo(self, errors: list) -> None:
        """What a fetch's reports (`[None, None, REVERTED, [[value id, report], ...]]`)
        say went back: undo the rest of it."""
        for error in errors:
            if error[2] == REVERTED:
                for value_id, _ in error[3]:
                    undo = self.watched.pop(value_id, None)
                    if undo is not None:
                        undo()


def by_worker(held: dict, pairs: list[int]) -> dict[int, list[int]]:
    """On the dispatcher: the pairs each worker applies, where both values are held
    alike (`held`: the session's `value id -> (shape, dtype, placement)`). A worker that
    holds `new` but not `old`, or other pieces of it, would go back alone."""
    workers: dict[int, list[int]] = {}
    for index in range(0, len(pairs), 2):
        new, old = pairs[index], pairs[index + 1]
        now = held.get(new)
        if now is not None and now == held.get(old):
            for worker in now[2].workers:
                workers.setdefault(worker, []).extend((new, old))
    return workers


def apply(values: dict, pairs: list[int], failed: type) -> list:
    """On a worker, after a run: each `new` that failed and whose `old` is held takes
    `old`'s value, in order (a chain whose links are all kept goes back link by link).
    Returns `[new, failure report]` of each, for the client (`REVERTED`)."""
    gone_back = []
    for index in range(0, len(pairs), 2):
        now = values.get(pairs[index])
        if type(now) is failed:
            before = values.get(pairs[index + 1])
            if before is not None and type(before) is not failed:
                values[pairs[index]] = before
                gone_back.append([pairs[index], now.report])
    return gone_back
