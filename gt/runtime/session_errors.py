"""What a session's user sees fail (an op on a worker, memory, or a session that ended),
and what a worker warns of."""

import torch


class WorkerError(RuntimeError):
    """An op failed on a worker; the message names the op and where it was recorded."""


class OutOfMemoryError(WorkerError):
    """A session went past its memory limit on the server, or a worker could not allocate
    what an op needed; the session and the workers go on."""


class WorkerIndexError(WorkerError, IndexError):
    """An op failed on a worker with torch's IndexError (an embedding index out of range):
    a ported `except IndexError` still catches it."""


class WorkerValueError(WorkerError, ValueError):
    """An op failed on a worker with a ValueError."""


class WorkerTypeError(WorkerError, TypeError):
    """An op failed on a worker with a TypeError."""


class WorkerLinAlgError(WorkerError, torch.linalg.LinAlgError):
    """A linear-algebra op failed on a worker (not positive-definite, singular): a ported
    `except torch.linalg.LinAlgError` catches it where the value is fetched."""


class WorkerLost(RuntimeError):
    """Work that needs a lost worker (its values, or a worker at all) did not run: a
    cluster's state, not a bad argument, so not a ValueError."""


class CompileWarning(UserWarning):
    """A region of the session's programs did not compile on a worker, which runs it
    eagerly: same results, at eager speed. Told once per session and worker, at the
    session's next fetch from that worker (the worker's own stderr may be a remote
    machine's log)."""


# A worker's report `[None, None, WARNING, text]` is a CompileWarning, not a failure.
WARNING = 'warning'
# `[None, None, REVERTED, [[value id, failure report, told before], ...]]`: values that
# took back their old value, as they failed or were never made (gt.runtime.reverts); not
# a failure of its own.
REVERTED = 'reverted'


# `[None, None, WORKER_WARNING, [category name, text]]`: a Python warning raised while the
# session's program ran (gt.runtime.worker_warnings).
WORKER_WARNING = 'worker warning'
# `[None, None, FAILED, [value id, ...]]`: the values a run kept that failed, so that a
# client can drop a leaf's first gradient that did (gt.autograd.forget_failed_grads).
FAILED = 'failed values'
NOT_FAILURES = (WARNING, REVERTED, WORKER_WARNING, FAILED)


def failures(reports: list) -> int:
    """How many of a Fetched's reports are failures (not warnings or reverts)."""
    return sum(report[2] not in NOT_FAILURES for report in reports)

# The worker reports `ExceptionName: message`; these keep their kind at the user's line.
BY_KIND = {'IndexError': WorkerIndexError, 'ValueError': WorkerValueError,
           'TypeError': WorkerTypeError,
           torch.linalg.LinAlgError.__name__: WorkerLinAlgError}

OUT_OF_MEMORY = ('OutOfMemory', 'out of memory', "can't allocate memory", 'MemoryError',
                 'not enough memory')


class ClosedSessionError(RuntimeError):
    """A tensor of a session that ended (gt.connect() replaced it, or its connection was
    closed) was used: its values lived in that session and are gone."""


SESSION_ENDED = ("this tensor belongs to GT session {session}, which has ended (gt.connect() "
                 "opened a new one, or the connection was closed): its values are gone. Make "
                 "tensors after connecting, or copy them out with .numpy() before reconnecting")
