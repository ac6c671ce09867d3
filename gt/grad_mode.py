"""Grad mode: whether ops recorded now go on the autograd tape (`no_grad`,
`enable_grad`, `set_grad_enabled`, `inference_mode`), per thread as in torch."""

import functools
import threading
from typing import Any, Callable


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

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return function(*args, **kwargs)
        return wrapper


class no_grad:
    """Ops recorded inside record no tape (optimizer updates, evaluation)."""

    def __enter__(self) -> None:
        self.previous, grad_mode.enabled = grad_mode.enabled, False

    def __exit__(self, *exc: Any) -> None:
        grad_mode.enabled = self.previous

    def __call__(self, function: Callable) -> Callable:
        mode = type(self)  # enable_grad decorates too

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with mode():
                return function(*args, **kwargs)
        return wrapper


class inference_mode(no_grad):
    """torch's inference_mode is no_grad plus tensors that can never join autograd; GT
    keeps no such tensors apart, so it is no_grad (`inference_mode(False)`: no change)."""

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

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return function(*args, **kwargs)
        return wrapper


class enable_grad(no_grad):
    def __enter__(self) -> None:
        self.previous, grad_mode.enabled = grad_mode.enabled, True
