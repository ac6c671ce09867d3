"""Fetching, with a step's message, the value the script fetched after the last step.

A training loop that prints its loss (`total += loss.item()`) after `optimizer.step()`
fetched it in a message of its own: the step's program had gone at `step()`, and the
fetch waited for all of it, the backward pass and the update included, plus a round
trip. Loops repeat, so when the script fetches values of a fragment it sent without a
fetch, the client remembers their places in it; the next fragment that defines as many
values asks for the values at the same places. The worker answers as soon as they exist
(gt.runtime.early_reply), and the script's fetch finds the answer waiting, or waits
for it, sending nothing. A guess the script does not take costs the answer's bytes; its
errors are raised at the next fetch, as they would have been. One guess is out at a
time.
"""

from typing import Any


class Prefetch:
    def __init__(self) -> None:
        self.sent_plain: tuple[int, int] | None = None  # (base, values) of the last flush
        self.pattern: tuple[int, tuple[int, ...]] | None = None  # (values, places fetched)
        self.request: int | None = None  # the guess's request, until its answer is taken
        self.ids: tuple[int, ...] = ()
        self.answer: tuple[Any, list] | None = None  # (Fetched, frames) once it came

    def guess(self, base: int, count: int, dropped: set) -> list[int]:
        """The ids to fetch with a fragment defining `count` values from `base`, sent
        without a fetch; [] when the last such fragment was not fetched from, or a guess
        is out."""
        self.sent_plain = (base, count)
        if self.request is not None or self.pattern is None or self.pattern[0] != count:
            return []
        ids = [base + place for place in self.pattern[1]]
        return [] if any(value_id in dropped for value_id in ids) else ids

    def sent(self, request: int, ids: list[int]) -> None:
        if ids:
            self.request, self.ids, self.answer = request, tuple(ids), None

    def learn(self, value_ids: list[int]) -> None:
        """A fetch the guess did not cover: remember its places when every value came from
        the last fragment sent without a fetch."""
        if self.sent_plain is not None:
            base, count = self.sent_plain
            if all(base <= value_id < base + count for value_id in value_ids):
                self.pattern = (count, tuple(value_id - base for value_id in value_ids))
            else:
                self.pattern = None
        self.sent_plain = None

    def covers(self, value_ids: list[int]) -> bool:
        return self.request is not None and all(v in self.ids for v in value_ids)

    def keep(self, message: Any, frames: list) -> bool:
        """Keep a Fetched that answers the guess; False for any other."""
        if self.request is None or getattr(message, 'request', None) != self.request:
            return False
        self.answer = (message, frames)
        return True

    def take(self) -> tuple[tuple[int, ...], Any, list]:
        """The guess's ids and answer (the caller waited for it); no guess is out after."""
        ids, (message, frames) = self.ids, self.answer
        self.request, self.ids, self.answer = None, (), None
        return ids, message, frames
