"""Status and debug messages, on stderr, only when asked for; by default GT prints
nothing but errors (`error`: a lost worker, say, which an operator must hear of).

`GT_VERBOSE=1` prints start-up and connection messages; `GT_DEBUG_CLIENT`,
`GT_DEBUG_DISPATCHER`, `GT_DEBUG_WORKER` and `GT_DEBUG_COMPILE` (each `=1`) turn on one
component's debug messages. Each line names the component and the wall-clock time, so
lines from the client, dispatcher and workers interleave: `[gt dispatcher
12:03:44.123] session 0 fragment 0: planned in 0.44 ms ...`. The switches are read
once per process, so a silent call site costs one dictionary lookup.
"""

import sys
import time
from typing import Callable

from gt.runtime import environment

COMPONENTS = ('client', 'dispatcher', 'worker', 'compile')
_on = {component: environment.switch(f'GT_DEBUG_{component.upper()}')
       for component in COMPONENTS}
_on['verbose'] = environment.switch('GT_VERBOSE')


def debug(component: str, message: str | Callable[[], str]) -> None:
    """Print `message` (or what it returns, so costly text is built only when printed)
    if `GT_DEBUG_<COMPONENT>=1`."""
    if _on[component]:
        _print(component, message() if callable(message) else message)


def verbose(component: str, message: str) -> None:
    """A start-up or connection message, printed with GT_VERBOSE=1 or the component's
    debug switch."""
    if _on['verbose'] or _on.get(component):
        _print(component, message)


def error(component: str, message: str) -> None:
    """Something broke that the process lives through: always printed."""
    _print(component, message)


def _print(component: str, text: str) -> None:
    now = time.time()
    stamp = f'{time.strftime("%H:%M:%S", time.localtime(now))}.{int(now % 1 * 1000):03d}'
    print(f'[gt {component} {stamp}] {text}', file=sys.stderr, flush=True)
