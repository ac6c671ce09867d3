"""Python warnings raised while a session's program runs on a worker go to that
session's client, which warns of them at the user's line under the script's own filters.

A call GT runs by name is torch's own Python, whose notes (a deprecated function, an
argument it ignores) a worker printed to its stderr, which an auto-started worker shares
with the script: `warnings.simplefilter('ignore')` in the script silenced the client's
copy only, and `simplefilter('error')` could not catch the worker's. Each is told once
per session; one outside any session's program (the worker's own) prints once.
"""

import threading
import warnings
from typing import Any

from gt.runtime.session_errors import WORKER_WARNING


class WorkerWarnings:
    def __init__(self) -> None:
        self.running = threading.local()  # .session: whose program this thread runs
        self.lock = threading.Lock()  # lanes run programs in threads of their own
        self.pending: dict[int, list] = {}  # per session: `[category name, text]` to tell
        self.told: dict[int | None, set] = {}  # per session (None: the worker's own)
        self.print_warning = warnings.showwarning

    def install(self) -> None:
        """Route the process's warnings through `show` (the worker's main calls this).
        Every occurrence reaches it, since each session is told once (a filter's
        'default' would tell only the first session); the kinds Python hides by default
        stay hidden, as they are in a script's own process."""
        warnings.showwarning = self.show
        warnings.simplefilter('always')
        for hidden in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                       ResourceWarning):
            warnings.filterwarnings('ignore', category=hidden)

    def run_for(self, session: int | None) -> None:
        """The calling thread now runs `session`'s program (None: no program)."""
        self.running.session = session

    def show(self, message: Any, category: type, filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        session = getattr(self.running, 'session', None)
        entry = (category.__name__, str(message))
        with self.lock:
            told = self.told.setdefault(session, set())
            if entry in told:
                return
            told.add(entry)
            if session is not None:
                self.pending.setdefault(session, []).append(list(entry))
                return
        self.print_warning(message, category, filename, lineno, file, line)

    def take(self, session: int) -> list[list]:
        """Reports `[None, None, WORKER_WARNING, [category name, text]]` for a fetch."""
        with self.lock:
            entries = self.pending.pop(session, [])
        return [[None, None, WORKER_WARNING, entry] for entry in entries]

    def end_session(self, session: int) -> None:
        with self.lock:
            self.pending.pop(session, None)
            self.told.pop(session, None)

    def forget_sessions(self) -> None:
        """The dispatcher restarted: session numbers will mean other sessions."""
        with self.lock:
            self.pending.clear()
            self.told = {None: self.told.get(None, set())}
