"""How far a client may run ahead of the workers: at most `MAX_QUEUED` of its fragments
wait at the dispatcher (GT_MAX_QUEUED, 64; 0 for no bound).

Recording is lazy, so a loop that never looks at a value (one that logs once an epoch)
records steps faster than the workers run them, and each waited at the dispatcher with
its data: measured, 6000 steps of a small MLP left 1563 queued, whose objects made the
dispatcher's garbage collections take up to 124 ms, and a loop uploading a batch a step
would hold every batch in the dispatcher's memory. As a GPU's launch queue makes a torch
script wait when it is full, a GT client waits here.

Every `MAX_QUEUED // 2` fragments the client sends a Mark, which the dispatcher answers
(Marked) once every fragment before it has gone to the workers; before the next Mark it
waits for the answer to the last. So the dispatcher holds at most `MAX_QUEUED` fragments
of a session (2 at least), and a client that is not that far ahead never waits: its
answer came long ago, read beside some other reply or now.
"""

from collections import deque
from typing import Callable

from gt.runtime import environment

MAX_QUEUED = environment.integer('GT_MAX_QUEUED')


class Pacer:
    """`send_mark(number)` sends Mark(number); `wait_marked(number)` returns once its
    answer has come, having called `marked` for it and for any before it. Marks are
    numbered apart from requests: they are not the client's requests but its pace."""

    def __init__(self, send_mark: Callable[[int], None],
                 wait_marked: Callable[[int], None]) -> None:
        self.send_mark = send_mark
        self.wait_marked = wait_marked
        self.every = max(1, MAX_QUEUED // 2) if MAX_QUEUED > 0 else 0
        self.since_mark = 0
        self.marks_sent = 0
        self.unanswered: deque[int] = deque()  # Marks sent and not answered yet, in order

    def sent(self) -> None:
        """A fragment went to the dispatcher."""
        if not self.every:
            return
        self.since_mark += 1
        if self.since_mark < self.every:
            return
        self.since_mark = 0
        if self.unanswered:
            self.wait_marked(self.unanswered[0])
        self.marks_sent += 1
        self.send_mark(self.marks_sent)
        self.unanswered.append(self.marks_sent)

    def marked(self, number: int) -> None:
        """The dispatcher answered Mark `number` (the answers come in order)."""
        while self.unanswered and self.unanswered[0] <= number:
            self.unanswered.popleft()
