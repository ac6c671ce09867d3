"""An op's attributes as GT's type rules and wire take them: Python numbers. torch takes a
one-element integer tensor (or a NumPy integer, which GT's dims take as they are)
wherever it takes an int, through `__index__`: `x.sum(torch.tensor(1))`, a dim a
computation gave. GT's rules refuse a tensor there, so an op they refuse is tried once
more with its attributes made plain (gt.tensor.apply): ops whose attributes are plain,
nearly all, pay nothing.
"""

import operator
from typing import Any

import numpy as np

PLAIN = (int, float, bool, str, type(None))


def plain_attrs(attrs: dict) -> dict:
    """`attrs` with such numbers as Python numbers; `attrs` itself if none is."""
    changed = None
    for name, value in attrs.items():
        plain = _plain(value)
        if plain is not value:
            changed = dict(attrs) if changed is None else changed
            changed[name] = plain
    return attrs if changed is None else changed


def _plain(value: Any) -> Any:
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, (list, tuple)):
        items = [_plain(item) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, '__index__') and hasattr(value, 'dtype'):  # a tensor of one integer
        try:
            return operator.index(value)
        except (TypeError, RuntimeError, ValueError):
            return value
    return value
