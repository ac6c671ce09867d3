"""`gt.compile`: torch.compile's spelling for GT's own compiling.

A GT session's work reaches the workers as whole programs, which they compile once hot
(`GT_AUTO_COMPILE=1`). `model = torch.compile(model)` in a ported script asks for that:
it turns hot-program compiling on for the session, with the backend it names (none: the
server's, else inductor). A model comes back as torch's does, wrapped in an
`OptimizedModule` whose `_orig_mod` it is (so state_dict keys carry torch's `_orig_mod.`
prefix, and checkpoints of compiled models load both ways); a function comes back
itself. What compiles is every hot program of the session, not only the model's. torch's
arguments are checked as torch checks them (`mode=` and `options=` are left to GT), and
`disable=True` returns the model as it is, compiling nothing, as torch's does. A
GT_COMPILE, GT_AUTO_COMPILE or GT_COMPILE_BACKEND the environment sets wins.
"""

import warnings
from typing import Any, Callable

from gt.nn.module import Module
from gt.runtime import client as connection
from gt.runtime.compile_settings import BACKENDS, check_backend

MODES = ('default', 'reduce-overhead', 'max-autotune-no-cudagraphs', 'max-autotune')


def _check_mode(mode: str) -> None:
    """torch's check of a mode not in MODES: its own list, which changes between its
    versions (Inductor's import takes a second or two, so only for an unusual mode)."""
    from torch._inductor import list_mode_options

    known = list(list_mode_options())
    if mode not in known:
        raise RuntimeError(f'Unrecognized mode={mode}, should be one of: {", ".join(known)}')


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | None = None, mode: str | None = None,
            options: dict | None = None, disable: bool = False) -> Any:
    """Turn on compiling of this session's hot programs; return a module wrapped as
    torch's is, or a function unchanged (as a decorator, with or without arguments)."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           'specified at the same time.')
    if mode is not None and mode not in MODES:
        _check_mode(mode)
    backend = _backend(backend)
    if disable:
        return _returning_itself if model is None else model
    connection.current().wish_compiled(backend)
    if model is None:
        return _returning_itself
    return OptimizedModule(model) if isinstance(model, Module) else model


class InvalidBackend(RuntimeError):
    """torch's error class for a backend name it does not know (a RuntimeError)."""


def _backend(backend: Any) -> str | None:
    """The backend name GT compiles with, or None for the server's. A callable (a custom
    backend of torch's) cannot run on the workers, which compile GT's programs, not the
    script's frames: warned of, and the server's is used, as a model still compiles."""
    if backend is None or isinstance(backend, str) and backend in BACKENDS:
        return backend
    if callable(backend):
        warnings.warn(f'gt.compile: a callable backend ({getattr(backend, "__name__", backend)})'
                      f' cannot run on GT\'s workers; compiling with the server\'s backend '
                      f'(one of {", ".join(BACKENDS)} may be named)', stacklevel=3)
        return None
    try:
        check_backend(backend, 'gt.compile: backend')
    except ValueError as error:
        raise InvalidBackend(str(error)) from None
    return backend


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
