"""Signal scopes: names that ops are recorded under, kept on a per-thread stack.

The dispatcher's passes read a node's scope to apply the sharding config of that name.
"""

import threading
from contextlib import contextmanager
from typing import Iterator


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[str] = []


_scopes = _Scopes()
# Scopes open in any thread. Every op asks for its scope, and most scripts never open
# one, so the common case must not pay for a thread-local lookup.
_open_anywhere = 0


def current_scope() -> str | None:
    if not _open_anywhere:
        return None
    stack = _scopes.stack
    return stack[-1] if stack else None


def enter(name: str) -> None:
    global _open_anywhere
    if not isinstance(name, str) or not name:
        raise TypeError(f'a signal name must be a non-empty string, got {name!r}')
    _scopes.stack.append(name)
    _open_anywhere += 1


def exit(name: str | None = None) -> None:
    global _open_anywhere
    stack = _scopes.stack
    if not stack:
        raise RuntimeError('gt.signal.exit() without a matching gt.signal.enter()')
    if name is not None and stack[-1] != name:
        raise RuntimeError(f'gt.signal.exit({name!r}) but the innermost signal is {stack[-1]!r}')
    stack.pop()
    _open_anywhere -= 1


@contextmanager
def context(name: str) -> Iterator[None]:
    enter(name)
    try:
        yield
    finally:
        exit(name)
