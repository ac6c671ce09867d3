"""Signal scopes: names that ops are recorded under, kept on a per-thread stack.

The dispatcher's passes read a node's scope to apply the sharding config of that name.
"""

import threading
from contextlib import contextmanager
from typing import Iterator

_state = threading.local()


def _stack() -> list[str]:
    stack = getattr(_state, 'stack', None)
    if stack is None:
        stack = _state.stack = []
    return stack


def current_scope() -> str | None:
    stack = getattr(_state, 'stack', None)
    return stack[-1] if stack else None


def enter(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f'a signal name must be a non-empty string, got {name!r}')
    _stack().append(name)


def exit(name: str | None = None) -> None:
    stack = _stack()
    if not stack:
        raise RuntimeError('gt.signal.exit() without a matching gt.signal.enter()')
    if name is not None and stack[-1] != name:
        raise RuntimeError(f'gt.signal.exit({name!r}) but the innermost signal is {stack[-1]!r}')
    stack.pop()


@contextmanager
def context(name: str) -> Iterator[None]:
    enter(name)
    try:
        yield
    finally:
        exit(name)
