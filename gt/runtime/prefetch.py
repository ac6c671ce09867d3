"""Fetching, with a step's message, the value the script fetched after the last step.

A training loop that prints its loss (`total += loss.item()`) after `optimizer.step()`
fetched it in a message of its own: the step's program had gone at `step()`, and the
fetch waited for all of it, the backward pass and the update included, plus a round
trip. Loops repeat, so when the script fetches values of a fragment it sent without a
fetch, the client remembers their places in it; the next fragment that defines as many
values asks for the values at the same places. The worker answers as soon as they exist
(gt.runtime.early_reply), and the script's fetch finds the answer waiting, or waits
for it, sending nothing. A guess the script does not take costs the answer's bytes (and
a split program on the worker); its errors are raised at the next fetch, as they would
have been. One guess is out at a time. A loop that fetches every k-th step is guessed
for at its k-th fragment after a fetch, and one that fetches two values of a step (the
loss, then an accuracy) for both: guessed at the next fragment and for one value, the
guesses went unused or alternated between the two.
"""

from typing import Any


class Prefetch:
    def __init__(self) -> None:
        self.sent_plain: tuple[int, int] | None = None  # (base, values) of the last flush
        self.pattern: tuple[int, tuple[int, ...]] | None = None  # (values, places fetched)
        self.period = 1  # flushes without a fetch from one fetch to the next, last seen
        self.flushes = 0  # flushes without a fetch since the last fetch
        self.request: int | None = None  # the guess's request, until its answer is taken
        self.ids: tuple[int, ...] = ()
        self.answer: tuple[Any, list] | None = None  # (Fetched, frames) once it came
        self.guessed_base: int | None = None  # the fragment the guess out is for
        self.used_base: int | None = None  # the fragment of the last guess a fetch used
        self.used = 0  # fetches a guess answered
        self.leftover: dict[int, Any] = {}  # a used guess's values not fetched yet

    def guess(self, base: int, count: int, dropped: set) -> list[int]:
        """The ids to fetch with a fragment defining `count` values from `base`, sent
        without a fetch; [] when the last such fragment was not fetched from, a guess
        is out, or the script fetches after more flushes than this one."""
        self.sent_plain = (base, count)
        self.flushes += 1
        self.leftover = {}
        if (self.request is not None or self.pattern is None or self.pattern[0] != count
                or self.flushes != self.period):
            return []
        ids = [base + place for place in self.pattern[1]]
        if any(value_id in dropped for value_id in ids):
            return []
        self.guessed_base = base
        return ids

    def sent(self, request: int, ids: list[int]) -> None:
        if ids:
            self.request, self.ids, self.answer = request, tuple(ids), None

    def learn(self, value_ids: list[int]) -> None:
        """A fetch the guess did not cover: remember its places when every value came from
        the last fragment sent without a fetch (with the places a used guess covered in
        it: a second value of the same step), and how many flushes came since the last
        fetch."""
        if self.sent_plain is not None:
            base, count = self.sent_plain
            if all(base <= value_id < base + count for value_id in value_ids):
                places = {value_id - base for value_id in value_ids}
                if self.used_base == base and self.pattern and self.pattern[0] == count:
                    places.update(self.pattern[1])
                else:
                    self.period = max(1, self.flushes)
                self.pattern = (count, tuple(sorted(places)))
            else:
                self.pattern = None
        self.sent_plain = None
        self.flushes = 0

    def covers(self, value_ids: list[int]) -> bool:
        if self.request is not None and all(v in self.ids for v in value_ids):
            self.used_base, self.flushes = self.guessed_base, 0
            self.used += 1
            return True
        return False

    def stash(self, values: dict, fetched: list[int]) -> None:
        """The used guess's values the fetch did not ask for: the step's next fetch (its
        accuracy after its loss) takes them without a round trip."""
        self.leftover = {key: value for key, value in values.items()
                         if key not in fetched and value is not None}

    def kept(self, value_ids: list[int]) -> list | None:
        """The values of a fetch the last used guess holds, or None."""
        if not value_ids or any(value_id not in self.leftover for value_id in value_ids):
            return None
        self.used += 1
        return [self.leftover.pop(value_id) for value_id in value_ids]

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
