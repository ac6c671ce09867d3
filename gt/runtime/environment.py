"""GT's numeric environment variables, each with its default and least value: a malformed
or out-of-range one is refused by name.

`int(os.environ.get('GT_MAX_QUEUED', '64'))` met with `GT_MAX_QUEUED=lots` said only
"invalid literal for int() with base 10: 'lots'", from deep inside `import gt` (or from a
server that then never started), naming neither the variable nor what it wants. A number
of the wrong size failed later, or not at all: with `GT_WORKER_WINDOW=0` a script printed
its result and then never exited (killed after 120 s). The auto-started local server's
variables are checked in the client before it starts one (`check_all`), so a bad one is
one error there rather than a child process's traceback.
"""

import argparse
import math
import os
import re
import warnings
from collections.abc import Mapping

# name: (default, least). An integer has a `least`; a number (None there) is above 0, or
# at least 0 where ZERO_ALLOWED. GT_WORKER_THREADS has no default of its own: unset, a
# worker keeps torch's count (the auto-started server sets it, sharing the cores out).
VARIABLES: dict[str, tuple[int | float | None, int | None]] = {
    'GT_FRAGMENT_LIMIT': (256, 1),
    'GT_AUTO_SHARD_ELEMENTS': (262144, 1),
    'GT_WORKERS': (1, 1),
    'GT_WORKER_THREADS': (None, 1),
    'GT_MAX_QUEUED': (64, 0),
    'GT_WORKER_WINDOW': (4, 1),
    'GT_SHARED_WINDOW': (1, 1),
    'GT_HOTPATH_THRESHOLD': (2, 1),
    'GT_TIMEOUT': (10.0, None),
    'GT_STARTUP_TIMEOUT': (120.0, None),
    'GT_WEIGHT': (1.0, None),
    'GT_HEARTBEAT_TIMEOUT': (3.0, None),
    'GT_SESSION_TIMEOUT': (30.0, None),
    'GT_PEER_TIMEOUT': (300.0, None),
    'GT_EXPRESS_SECONDS': (0.002, None),
}
ZERO_ALLOWED = {'GT_EXPRESS_SECONDS'}  # 0 turns the express lane off
# Timeouts that must outlast the signs of life they wait for: a worker's heartbeat every
# 0.5 s and a client's ping every 1 s. GT_HEARTBEAT_TIMEOUT=0.01 lost every worker at each
# heartbeat, and every session's values with it.
FLOORS = {'GT_HEARTBEAT_TIMEOUT': (1.0, "twice a worker's heartbeat interval (0.5 s)"),
          'GT_TIMEOUT': (2.0, "twice a client's ping interval (1 s)"),
          # GT_SESSION_TIMEOUT=0.5 ended the session of an idle, live client.
          'GT_SESSION_TIMEOUT': (2.0, "twice a client's keep-alive interval (1 s)")}
SIZES = ('GT_MAX_MESSAGE_BYTES', 'GT_SESSION_MEMORY_LIMIT')  # bytes; unset or 0: no bound
UNITS = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}


def integer(name: str) -> int:
    """The integer in environment variable `name`, or its default when it is unset."""
    return int(value_of(name))


def number(name: str) -> float:
    """The number in environment variable `name`, or its default when it is unset."""
    return float(value_of(name))


def value_of(name: str) -> int | float:
    default, least = VARIABLES[name]
    raw = os.environ.get(name)
    if raw is None:
        return default
    kind = float if least is None else int
    try:
        value = kind(raw)
    except ValueError:
        _refuse(name, 'not an integer' if kind is int else 'not a number')
    if kind is int and value < least:
        _refuse(name, f'below {least}, the least it can be')
    if kind is float and not math.isfinite(value):
        _refuse(name, 'not a finite number')
    if kind is float and (value < 0 or value == 0 and name not in ZERO_ALLOWED):
        _refuse(name, 'negative' if value < 0 else 'not above 0')
    if name in FLOORS and value < FLOORS[name][0]:
        _refuse(name, f'below {FLOORS[name][0]:g} s, {FLOORS[name][1]}')
    return value


def size(name: str) -> int:
    """The byte size in environment variable `name` (see `size_argument`), 0 when unset."""
    try:
        return size_argument(os.environ.get(name, '0'))
    except argparse.ArgumentTypeError as error:
        raise ValueError(f'{name}: {error}') from None


def size_argument(text: str) -> int:
    """`4096`, `512M`, `8G` (binary units; a trailing B or iB is allowed) as bytes."""
    match = re.fullmatch(r'\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*', str(text), re.I)
    if match is None:
        raise argparse.ArgumentTypeError(f'not a size: {text!r} (try 4096, 512M or 8G)')
    return int(float(match[1]) * UNITS[match[2].upper()])


# On/off variables, read by `switch`. GT_AUTO_SHARD=false used to leave auto-sharding on
# (only 0 turned it off), and GT_BACKWARD_REPLAY likewise, while GT_COMPILE=false turned
# compiling off: one reading for all of them, and a word none of them knows is refused.
SWITCHES = ('GT_AUTO_SHARD', 'GT_BACKWARD_REPLAY', 'GT_COMPILE', 'GT_AUTO_COMPILE',
            'GT_VERBOSE', 'GT_DEBUG_CLIENT', 'GT_DEBUG_DISPATCHER', 'GT_DEBUG_WORKER',
            'GT_DEBUG_COMPILE')
ON, OFF = ('1', 'true', 'yes', 'on'), ('0', 'false', 'no', 'off')


def switch(name: str, default: bool | None = False,
           environ: Mapping[str, str] | None = None) -> bool | None:
    """Environment variable `name` as on or off: 1, true, yes, on or 0, false, no, off (in
    any case); `default` when it is unset or empty. Any other value is refused by name."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or not raw.strip():
        return default
    word = raw.strip().lower()
    if word in ON or word in OFF:
        return word in ON
    raise ValueError(f'{name}={raw!r} is neither on nor off: use 1 or 0 (or true/false, '
                     'yes/no, on/off), or unset it for the default')


# Variables that name one of a few settings, the default first.
CHOICES = {'GT_THREAD_TUNING': ('checked', 'compiled', 'all', '0')}


# Variables of the original documents that GT's lazy design has no use for: set, they
# are named as ignored rather than silently changing nothing.
SUPERSEDED = {'GT_WORKER_BATCH_SIZE': 'a worker gets whole programs, one message per '
                                      'fragment, so there is no batch of ops to size'}


def check_all() -> None:
    """Refuse any of the variables that is set but malformed or out of range; say which
    set variables are ignored."""
    for name, why in SUPERSEDED.items():
        if os.environ.get(name, '1') != '1':  # 1, the seeds' default, changed nothing either
            warnings.warn(f'{name} is ignored: {why}', stacklevel=2)
    for name in VARIABLES:
        value_of(name)
    for name in SIZES:
        size(name)
    for name in SWITCHES:
        switch(name)
    for name, allowed in CHOICES.items():
        if os.environ.get(name, allowed[0]) not in allowed:
            raise ValueError(f'{name}={os.environ[name]!r} is not one of '
                             f'{", ".join(allowed)}; unset it for the default, {allowed[0]}')
    log = os.environ.get('GT_INSTRUCTION_LOG')
    problem = log and unwritable(log)
    if problem:
        raise ValueError(f'GT_INSTRUCTION_LOG={log!r} cannot be written: {problem}')


def unwritable(path: str) -> str | None:
    """Why the instruction log cannot be written at `path`, or None (the dispatcher
    starts it afresh; this only probes)."""
    try:
        open(path, 'a').close()
    except OSError as error:
        return error.strerror
    return None


def _refuse(name: str, problem: str):
    default = VARIABLES[name][0]
    raise ValueError(f'{name}={os.environ[name]!r} is {problem}; unset it for the default'
                     + ('' if default is None else f', {default}')) from None


# A session's weight divides the worker time it is charged: one near 0 (5e-324) made its
# charge infinite, and the scheduler's clock with it, for every session after it.
WEIGHTS = (1e-6, 1e6)


def hello_weight(value: object) -> float:
    """A session's weight from its Hello (what any client may send): a number within
    WEIGHTS, else 1."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and \
            WEIGHTS[0] <= value <= WEIGHTS[1]:
        return float(value)
    return 1.0


def weight(given: float | None) -> float:
    """A session's share of the workers: `given`, else GT_WEIGHT, else 1."""
    chosen = number('GT_WEIGHT') if given is None else float(given)
    if not WEIGHTS[0] <= chosen <= WEIGHTS[1]:
        raise ValueError(f'a session weight must be between {WEIGHTS[0]:g} and '
                         f'{WEIGHTS[1]:g}, got {chosen}')
    return chosen
