"""Who may use a client: the process that made it, and one thread at a time.

A client inherited through fork cannot use its parent's socket or reach its parent's
values, so recording on it raises at once, naming the usual cause (the child gets a
session of its own). Two threads waiting on one socket each took the other's reply and
both waited forever: the second to flush or wait is told instead."""

import functools
import os
import threading
from typing import Any, Callable

_process_id = os.getpid()  # kept current across forks: os.getpid() is a system call


def process_id() -> int:
    return _process_id


def _forked() -> None:
    global _process_id
    _process_id = os.getpid()


os.register_at_fork(after_in_child=_forked)


def disown(client: object) -> None:
    """In a forked child: ops on `client`'s tensors raise where they are recorded, so a
    DataLoader worker's error reaches its parent (one at pickling left the parent
    waiting forever)."""
    client.record = client.record_binary = functools.partial(refuse_parents, client.pid)


def refuse_parents(parent: int, *_: object, **__: object) -> int:
    raise RuntimeError(
        f'this GT tensor belongs to the session of process {parent}; a forked child of it '
        "(a DataLoader worker, say) cannot reach that session's values. "
        "Make the tensors in the child (a Dataset's __getitem__ can), or load with "
        "num_workers=0: indexing GT tensors is lazy, so loader processes gain nothing")


def refuse_mixed_sessions(one: Any, other: Any) -> None:
    """Value ids are per session: an op on tensors of two sessions would read the wrong
    values, so it raises, naming the ended session when one has ended, and the usual
    cause when one is a forked parent's (a DataLoader worker's transform with a mean
    made in the script)."""
    from gt.ir.invalid_op import InvalidOpError
    from gt.runtime.session_errors import SESSION_ENDED, ClosedSessionError

    for client in (one, other):
        if client.closed:
            raise ClosedSessionError(SESSION_ENDED.format(session=client.session))
        if client.pid != _process_id:
            refuse_parents(client.pid)
    raise InvalidOpError(f'this op mixes tensors of GT sessions {one.session} and '
                         f'{other.session}; a tensor lives in the session that made it')


def one_thread_at_a_time(method: Callable) -> Callable:
    """A Client method that talks to the server: a second thread calling one while the
    first is inside one raises. A fetch is guarded whole, from its request to its reply;
    reentrant for the thread inside (a fetch flushes, a flush may wait)."""
    @functools.wraps(method)
    def guarded(client: Any, *args: Any, **kwargs: Any) -> Any:
        if not client.conversation.acquire(blocking=False):
            raise RuntimeError(
                f'GT client: {threading.current_thread().name} used the connection while '
                'another thread was using it. A client records and fetches from one thread '
                'at a time: guard GT calls with a lock of your own, or use GT from one '
                'thread')
        try:
            return method(client, *args, **kwargs)
        finally:
            client.conversation.release()
    return guarded
