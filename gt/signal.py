"""Signal scopes: names that ops are recorded under, kept on a per-thread stack.

The dispatcher's passes read a node's scope to apply the sharding config of that name.
"""

import contextlib
import difflib
import os
import sys
import threading
import warnings
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
_warned: set[str] = set()  # signals without a config already named
_judged: dict[str, tuple] = {}  # unconfigured names not named, and under which settings
# How alike a name must be to a configured one to be taken for a misspelling of it.
MISSPELLING_CUTOFF = 0.8
_entered: set[str] = set()  # signals entered in this process: their configs are checked
_warned_absent: set[str] = set()  # signals already said to name absent workers
_warned_unsplit: set[str] = set()  # signals already said to have made a tensor whole
_GT_FILES = (os.path.dirname(os.path.abspath(__file__)), contextlib.__file__)


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
    _note_unconfigured(name, f'signal {name!r}', 'ops in it run unsharded')
    found = config.get_config(name)
    if backward is not None:
        _note_unconfigured(backward, f'backward signal {backward!r} (of {name!r})',
                           'gradient ops in it run unsharded', owner=name)
    elif found is not None and found.backward_signal is not None:
        # A config that names a backward signal means to place the gradients there.
        _note_unconfigured(found.backward_signal,
                           f'backward signal {found.backward_signal!r}, named by the config of '
                           f'{name!r},',
                           'gradient ops in it run unsharded', always=True, owner=name)
    if name not in _entered:
        _entered.add(name)
        from gt.runtime import client

        if client.connected() is not None:
            warn_of_absent_workers([w['index'] for w in client.connected().workers])
    _scopes.stack.append(name)
    _scopes.backward.append(backward)
    with _open_anywhere_lock:
        _open_anywhere += 1


def _note_unconfigured(name: str, subject: str, consequence: str, always: bool = False,
                       owner: str | None = None) -> None:
    """Say once that signal `name` has no config: when `always` (a config's `backward:`
    names it), when it looks like a misspelling of a configured one (`layr1`), and else
    only under GT_VERBOSE (a signal may name ops for the instruction log and the
    timeline alone). `owner`: the signal whose backward it is, never suggested."""
    verbose = environment.switch('GT_VERBOSE')
    judged = (config.version(), verbose, always)  # scopes open every step: judge a name once
    if name in _warned or _judged.get(name) == judged or config.get_config(name) is not None:
        return
    _judged[name] = judged
    candidates = [known for known in config.names() if known != owner]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=MISSPELLING_CUTOFF)
    if always or close or verbose:
        _warned.add(name)
        hint = f' (did you mean {close[0]!r}?)' if close else ''
        print(f'gt: {subject} has no config; {consequence}{hint}', file=sys.stderr)


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


def warn_of_absent_workers(live: list[int]) -> None:
    """Once per signal entered (and the signals placing its gradients): a config naming
    workers that are not live runs on those of its workers that are, or unsharded. Said
    at the user's line, and not for configs the script never uses (an example's file
    names four workers for any number)."""
    names = set(_entered)
    names |= {found.backward_signal for found in map(config.get_config, _entered)
              if found is not None and found.backward_signal}
    for name in sorted(names - _warned_absent):
        found = config.get_config(name)
        workers = found.shard.workers if found is not None and found.shard else None
        missing = [w for w in workers or () if w not in live]
        if missing:
            _warned_absent.add(name)
            warnings.warn(
                f'signal {name!r} names worker(s) {missing}, which are not among the live '
                f'workers {live}; it runs on those of its workers that are (or unsharded). '
                'Workers are numbered as they join, and a restarted worker gets a new '
                'number: gt.debug.print_worker_stats() lists them',
                stacklevel=_user_stacklevel())


def check_created(name: str, shape: tuple[int, ...], live: list[int]) -> None:
    """Under GT_VERBOSE, once per signal: a tensor made under it that its axis cannot
    split (no such axis, or fewer entries than workers) is copied whole to its workers.
    Numbers (0-d) are left out: they are never split."""
    if not shape or name in _warned_unsplit or not environment.switch('GT_VERBOSE'):
        return
    found = config.get_config(name)
    if found is None or found.shard is None:
        return
    axis = found.shard.axis
    workers = [w for w in found.shard.workers or live if w in live]
    if axis < len(shape) and shape[axis] >= len(workers):
        return
    _warned_unsplit.add(name)
    why = (f'has no axis {axis}' if axis >= len(shape) else
           f'has {shape[axis]} entries on axis {axis} for {len(workers)} workers')
    print(f'gt: signal {name!r} shards on axis {axis}, but a tensor of shape {list(shape)} '
          f"made under it {why}: it is copied whole to each of the signal's workers",
          file=sys.stderr)


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel, from its caller here, of the first frame outside GT."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_GT_FILES):
        frame, level = frame.f_back, level + 1
    return level
