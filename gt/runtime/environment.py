"""Numbers GT reads from its environment variables: a malformed one is refused by name.

`int(os.environ.get('GT_MAX_QUEUED', '64'))` met with `GT_MAX_QUEUED=lots` said only
"invalid literal for int() with base 10: 'lots'", from deep inside `import gt` (or from a
server that then never started), naming neither the variable nor what it wants.
"""

import os


def integer(name: str, default: int) -> int:
    """The integer in environment variable `name`, or `default` when it is unset."""
    return _parse(name, default, int, 'an integer')


def number(name: str, default: float) -> float:
    """The number in environment variable `name`, or `default` when it is unset."""
    return _parse(name, default, float, 'a number')


def _parse(name: str, default, kind: type, wanted: str):
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f'{name}={raw!r} is not {wanted}; unset it for the default, '
                         f'{default}') from None
