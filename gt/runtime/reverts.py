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

from collections import OrderedDict
from typing import Any, Callable

from gt.ir.placement import Replicate
from gt.runtime.session_errors import REVERTED

WATCHED_KEPT = 8192  # values whose going back the client undoes more of (`watch`)


class Reverts:
    """The pairs a client sends with its next message, flat: `[new, old, new, old, ...]`,
    and what else to undo when a worker says a value went back."""

    __slots__ = ('pairs', 'replaced', 'first_values', 'watched')

    def __init__(self) -> None:
        self.pairs: list[int] = []
        self.replaced: dict[int, int] = {}  # a value made since the last flush: what it replaced
        # Values made since the last flush that are state (a buffer, an optimizer's): kept
        # when first replaced, as a parameter's are (Tensor._take)
        self.first_values: set[int] = set()
        self.watched: OrderedDict[int, Callable[[], None]] = OrderedDict()

    def rebinding(self, client: Any, old: int, new: int, old_dropped: bool,
                  kept: bool) -> bool:
        """A tensor takes value `new` in place of `old` (Tensor._take): note what it goes
        back to if `new` fails; return whether `old` is still to be released now. A value
        of a parameter (`kept`), buffer or optimizer state made since the last flush (the
        model made, or loaded, in the first step's message) is kept for that until the
        message has run, so that each update goes back only if it failed."""
        base = client.pending.base
        if old_dropped and old >= base and (kept or old in self.first_values):
            client.releases.append(old)
            self.first_values.add(new)
            old_dropped = False
        self.rebound(old, new, old_dropped, base)
        return old_dropped

    def rebound(self, old: int, new: int, old_dropped: bool, base: int) -> None:
        """A tensor took value `new` in place of `old`; `old_dropped`: nothing else holds
        `old`. Values made since the last flush (ids from `base` on) that nothing keeps
        never reach a worker, so a chain of rebindings within one flush (`x.mul_(2)
        .add_(y)`, a loop of in-place adds) is one pair, back to the value before it."""
        if old >= base and old_dropped:
            origin = self.replaced.pop(old, -1)
            if origin < 0:
                return  # made and replaced since the last flush: nothing to go back to
            pairs = self.pairs
            if pairs[-2] == old:  # the chain's last link: this one takes its place
                pairs[-2] = new
                self.replaced[new] = origin
                return
            old = origin
        if new >= base:
            self.replaced[new] = old
        self.pairs += (new, old)

    def take(self) -> list[int]:
        """The pairs for the message about to go; the flush starts a new chain."""
        pairs, self.pairs = self.pairs, []
        if self.replaced:
            self.replaced = {}
        if self.first_values:
            self.first_values = set()
        return pairs

    def state(self, value_id: int | None) -> None:
        """`value_id` is state: kept when first replaced (`first_values`)."""
        if value_id is not None:
            self.first_values.add(value_id)

    def watch(self, value_id: int, undo: Callable[[], None]) -> None:
        """Call `undo` if a worker says `value_id` went back (gt.optim.failed_steps: a
        step count). Only the latest are kept: a step's own are reported at the next
        fetch that reaches its worker."""
        watched = self.watched
        watched[value_id] = undo
        if len(watched) > WATCHED_KEPT:
            watched.popitem(last=False)

    def undo(self, errors: list) -> None:
        """What a fetch's reports (`[None, None, REVERTED, [[value id, ...], ...]]`) say
        went back: undo the rest of it."""
        for error in errors:
            if error[2] == REVERTED:
                for value_id, *_ in error[3]:
                    undo = self.watched.pop(value_id, None)
                    if undo is not None:
                        undo()


def malformed(releases: Any, pairs: Any) -> str | None:
    """Why a Submit's releases or pairs cannot be taken (garbage on the socket), if so."""
    for name, ids in (('releases', releases), ('reverts', pairs)):
        if type(ids) is not list or not all(type(value_id) is int for value_id in ids):
            return f'malformed {name}: not a list of value ids'
    return 'malformed reverts: not pairs' if len(pairs) % 2 else None


def by_worker(held: dict, pairs: list[int]) -> dict[int, list[int]]:
    """On the dispatcher: the pairs each worker applies, where both values are held
    alike (`held`: the session's `value id -> (shape, dtype, placement)`), or `new` is
    whole on some of the workers `old` is whole on (a data-parallel weight's update,
    made on its home worker, from a weight copied to every worker since): those go
    back. A worker that holds `new` but not `old`, or other pieces of it, would go back
    alone. (The update's pair was dropped, so a worker lost mid-step left the weight
    failed for good.)"""
    workers: dict[int, list[int]] = {}
    for index in range(0, len(pairs), 2):
        new, old = pairs[index], pairs[index + 1]
        now, then = held.get(new), held.get(old)
        if now is None or then is None or now[:2] != then[:2]:
            continue
        if now[2] == then[2] or (type(now[2]) is Replicate and type(then[2]) is Replicate
                                 and set(now[2].workers) <= set(then[2].workers)):
            for worker in now[2].workers:
                workers.setdefault(worker, []).extend((new, old))
    return workers


def revive(session: Any, base: int, pairs: list[int]) -> dict[int, list[int]]:
    """On the dispatcher, after refusing a fragment (none of the values it makes, from
    `base` on, exist: past the session's memory limit, say): each `new` it made takes
    `old`'s value where `old` is held, as torch's model is left as it was by an
    out-of-memory error its script catches. Returns the pairs each worker applies; the
    client hears of the values revived with the next reply."""
    workers: dict[int, list[int]] = {}
    revived = []
    for index in range(0, len(pairs), 2):
        new, old = pairs[index], pairs[index + 1]
        entry = session.values.get(old)
        if new >= base and entry is not None and new not in session.values:
            session.hold(new, entry)
            revived.append([new, None, False])
            for worker in entry[2].workers:
                workers.setdefault(worker, []).extend((new, old))
    if revived:
        session.errors.append([None, None, REVERTED, revived])
    return workers


def apply(values: dict, pairs: list[int], failed: type, told: set | tuple) -> list:
    """On a worker, after a run: each `new` that failed, or was never made (`revive`),
    and whose `old` is held takes `old`'s value, in order (a chain whose links are all
    kept goes back link by link). Returns `[new, failure report, told before]` of each
    that failed and went back, for the client (`REVERTED`): a failure this worker's
    fetches already told of (`told`, keyed by fragment and op) reached an update since,
    from a value the failed step left behind."""
    gone_back = []
    for index in range(0, len(pairs), 2):
        now = values.get(pairs[index])
        if now is None or type(now) is failed:
            before = values.get(pairs[index + 1])
            if before is not None and type(before) is not failed:
                values[pairs[index]] = before
                if now is not None:
                    report = now.report
                    gone_back.append([pairs[index], report, (report[0], report[1]) in told])
    return gone_back


def note_told(told: set, errors: list) -> None:
    """A fetch took `errors`: the failures among them, and those behind its reverts,
    are told."""
    for error in errors:
        if error[2] == REVERTED:
            told.update((report[0], report[1]) for _, report, _ in error[3] if report)
        elif error[0] is not None and error[1] is not None:
            told.add((error[0], error[1]))
