"""`torch.compiler` for scripts that `import gt as torch`: `torch.compiler.disable` on a
function that must not be traced, `torch.compiler.is_compiling()` to take a path only
eager code may take.

A GT client never runs under Dynamo: its ops are recorded, and the workers compile whole
recorded programs (gt/compiling.py). So a function marked `disable` is recorded as any
other, and `is_compiling()` is False in a GT script, as it is in an eager torch one.
"""

from typing import Any, Callable

from gt.compiling import compile  # noqa: F401 (torch.compiler.compile)


def disable(fn: Callable | None = None, recursive: bool = True, *,
            reason: str | None = None) -> Any:
    """`@disable`, `@disable(recursive=False)` or `disable(fn)`: `fn` as it is."""
    if fn is None:
        return lambda function: function
    return fn


def is_compiling() -> bool:
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False
