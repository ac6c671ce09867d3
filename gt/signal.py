"""Signal scopes: names that ops are recorded under, kept on a per-thread stack.

The dispatcher's passes read a node's scope to apply the sharding config of that name.
"""

import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from gt import config
from gt.runtime import environment


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[str] = []
        self.backward: list[str | None] = []  # each scope's explicit backward signal


_scopes = _Scopes()
# Scopes open in any thread. Every op asks for its scope, and most scripts never open
# one, so the common case must not pay for a thread-local lookup.
_open_anywhere = 0
# `+=` on a global is not atomic across threads; a lost update could hide an open scope.
_open_anywhere_lock = threading.Lock()
_warned: set[str] = set()  # signals without a config already named under GT_VERBOSE


def current_scope() -> str | None:
    if not _open_anywhere:
        return None
    stack = _scopes.stack
    return stack[-1] if stack else None


def current_backward() -> str | None:
    """The signal that places gradients of ops recorded now: the innermost scope's
    `backward`, else its config's `backward_signal`."""
    if not _open_anywhere or not _scopes.stack:
        return None
    explicit = _scopes.backward[-1]
    if explicit is not None:
        return explicit
    found = config.get_config(_scopes.stack[-1])
    return found.backward_signal if found is not None else None


def enter(name: str, backward: str | None = None) -> None:
    global _open_anywhere
    if not isinstance(name, str) or not name:
        raise TypeError(f'a signal name must be a non-empty string, got {name!r}')
    if backward is not None and (not isinstance(backward, str) or not backward):
        raise TypeError(f'a backward signal name must be a non-empty string, got {backward!r}')
    if name not in _warned and config.get_config(name) is None and \
            environment.switch('GT_VERBOSE'):
        _warned.add(name)
        print(f'gt: signal {name!r} has no config; ops in it run unsharded', file=sys.stderr)
    _scopes.stack.append(name)
    _scopes.backward.append(backward)
    with _open_anywhere_lock:
        _open_anywhere += 1


def exit(name: str | None = None) -> None:
    global _open_anywhere
    stack = _scopes.stack
    if not stack:
        raise RuntimeError('gt.signal.exit() without a matching gt.signal.enter()')
    if name is not None and stack[-1] != name:
        raise RuntimeError(f'gt.signal.exit({name!r}) but the innermost signal is {stack[-1]!r}')
    stack.pop()
    _scopes.backward.pop()
    with _open_anywhere_lock:
        _open_anywhere -= 1


@contextmanager
def context(name: str, backward: str | None = None) -> Iterator[None]:
    """Ops recorded inside are placed by signal `name`'s config; their gradient ops by
    `backward`'s (default: the config's `backward_signal`)."""
    enter(name, backward)
    try:
        yield
    finally:
        exit(name)


def tensor(x: Any, name: str) -> Any:
    """A copy of `x` placed by signal `name`'s config (sharded, say); `x` stays as it was."""
    from gt.tensor import apply

    with context(name):
        return apply('distribute', [x])
