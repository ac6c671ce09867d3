"""`gt.compile`: torch.compile's spelling for GT's own compiling.

A GT session's work reaches the workers as whole programs, which they compile once hot
(`GT_AUTO_COMPILE=1`). `model = torch.compile(model)` in a ported script asks for that:
it turns hot-program compiling on for the session, with the backend it names. A model
comes back as torch's does, wrapped in an `OptimizedModule` whose `_orig_mod` it is (so
state_dict keys carry torch's `_orig_mod.` prefix, and checkpoints of compiled models
load both ways); a function comes back itself. What compiles is every hot program of the
session, not only the model's; `mode=` and torch's other options are accepted and left
to GT. A GT_COMPILE, GT_AUTO_COMPILE or GT_COMPILE_BACKEND the environment sets wins.
"""

from typing import Any, Callable

from gt.nn.module import Module
from gt.runtime import client as connection
from gt.runtime.compile_settings import check_backend


def compile(model: Any = None, *, backend: str = 'inductor', **options: Any) -> Any:
    """Turn on compiling of this session's hot programs; return a module wrapped as
    torch's is, or a function unchanged (as a decorator, with or without arguments)."""
    check_backend(backend, 'gt.compile: backend')
    connection.current().wish_compiled(backend)
    if model is None:
        return _returning_itself
    return OptimizedModule(model) if isinstance(model, Module) else model


class OptimizedModule(Module):
    """torch.compile's wrapper: calls, and attributes it lacks, go to `_orig_mod`."""

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            original = self.__dict__.get('_modules', {}).get('_orig_mod')
            if original is None:
                raise
            return getattr(original, name)


def _returning_itself(function: Callable) -> Callable:
    return function
