"""`gt.compile`: torch.compile's spelling for GT's own compiling.

A GT session's work reaches the workers as whole programs, which they compile once hot
(`GT_AUTO_COMPILE=1`). `model = torch.compile(model)` in a ported script asks for that:
it turns hot-program compiling on for the session, with the backend it names, and
returns the model (or function) itself. What compiles is every hot program of the
session, not only the model's; `mode=` and torch's other options are accepted and left
to GT. A GT_COMPILE, GT_AUTO_COMPILE or GT_COMPILE_BACKEND the environment sets wins.
"""

from typing import Any, Callable

from gt.runtime import client as connection
from gt.runtime.compile_settings import check_backend


def compile(model: Any = None, *, backend: str = 'inductor', **options: Any) -> Any:
    """Turn on compiling of this session's hot programs; return `model` unchanged (as a
    decorator, with or without arguments, return the decorated function)."""
    check_backend(backend, 'gt.compile: backend')
    connection.current().wish_compiled(backend)
    if model is None:
        return _returning_itself
    return model


def _returning_itself(function: Callable) -> Callable:
    return function
