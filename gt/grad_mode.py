"""Grad mode: whether ops recorded now go on the autograd tape (`no_grad`,
`enable_grad`, `set_grad_enabled`, `inference_mode`), per thread as in torch."""

import functools
import inspect
import threading
from typing import Any, Callable, Iterator


class _GradMode(threading.local):
    enabled = True
    inference = False  # inside inference_mode (which is no_grad here)


grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    return grad_mode.enabled


def is_inference_mode_enabled() -> bool:
    return grad_mode.inference


class set_grad_enabled:
    """`with gt.set_grad_enabled(False):`, or called plainly to set the mode, as in torch."""

    def __init__(self, mode: bool):
        self.mode, self.previous = bool(mode), grad_mode.enabled
        grad_mode.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        grad_mode.enabled = self.previous

    def __call__(self, function: Callable) -> Callable:
        grad_mode.enabled = self.previous  # as a decorator, it sets the mode per call only
        mode = self.mode
        return _decorated(function, lambda: set_grad_enabled(mode))


class no_grad:
    """Ops recorded inside record no tape (optimizer updates, evaluation). Also a
    decorator, with or without the call (`@gt.no_grad()`, `@gt.no_grad`), as in torch."""

    def __new__(cls, function: Callable | None = None) -> Any:
        made = super().__new__(cls)
        return made if function is None else made(function)

    def __enter__(self) -> None:
        self.previous, grad_mode.enabled = grad_mode.enabled, False

    def __exit__(self, *exc: Any) -> None:
        grad_mode.enabled = self.previous

    def __call__(self, function: Callable) -> Callable:
        return _decorated(function, type(self))  # enable_grad decorates too


class inference_mode(no_grad):
    """torch's inference_mode is no_grad plus tensors that can never join autograd; GT
    keeps no such tensors apart, so it is no_grad (`inference_mode(False)`: no change)."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # `@gt.inference_mode`, without the call
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.previous, self.previous_inference = grad_mode.enabled, grad_mode.inference
        if self.mode:
            grad_mode.enabled = False
        grad_mode.inference = bool(self.mode)

    def __exit__(self, *exc: Any) -> None:
        grad_mode.enabled, grad_mode.inference = self.previous, self.previous_inference

    def __call__(self, function: Callable) -> Callable:
        mode = self.mode
        return _decorated(function, lambda: inference_mode(mode))


class enable_grad(no_grad):
    def __enter__(self) -> None:
        self.previous, grad_mode.enabled = grad_mode.enabled, True


def _decorated(function: Callable, context: Callable[[], Any]) -> Callable:
    """`function` run under a fresh `context()` per call; a generator function's body
    under one each time it resumes (a sampling loop that yields its tokens), as torch
    decorates them, not only while the generator object is made."""
    if not inspect.isgeneratorfunction(function):
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with context():
                return function(*args, **kwargs)
        return wrapper

    @functools.wraps(function)
    def generator(*args: Any, **kwargs: Any) -> Iterator:
        inner = function(*args, **kwargs)
        resume, given = inner.send, None
        while True:
            try:
                with context():
                    produced = resume(given)
            except StopIteration as stop:
                return stop.value
            try:
                resume, given = inner.send, (yield produced)
            except GeneratorExit:
                with context():
                    inner.close()
                raise
            except BaseException as error:  # thrown in: the body may catch it
                resume, given = inner.throw, error
    return generator
