"""Which process this is, kept current across forks (os.getpid() is a system call), and
what a client inherited through fork does: it cannot use its parent's socket or reach its
parent's values, so recording on it raises at once, naming the usual cause."""

import functools
import os

_process_id = os.getpid()


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
