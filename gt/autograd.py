"""Tape autograd. Recording an op on tensors that require grad adds a tape entry that
names the op; `backward()` walks the tape and emits gradient ops from the op table's
gradient rules into the same lazy graph, so a training step stays one fragment."""

import threading
from contextlib import contextmanager
from typing import Any, Iterator


class _GradMode(threading.local):
    enabled = True


grad_mode = _GradMode()


def is_enabled() -> bool:
    return grad_mode.enabled


@contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    previous, grad_mode.enabled = grad_mode.enabled, bool(mode)
    try:
        yield
    finally:
        grad_mode.enabled = previous


def no_grad():
    return set_grad_enabled(False)


def enable_grad():
    return set_grad_enabled(True)


class TapeNode:
    """One recorded op: what to differentiate, and the tensors it read and made."""

    __slots__ = ('op', 'inputs', 'outputs', 'attrs', 'name', 'freed')

    def __init__(self, op: str, inputs: list, outputs: list, attrs: dict):
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.name = f'{op.capitalize()}Backward'
        self.freed = False

    def rebind_output(self, old: Any, new: Any) -> None:
        self.outputs = [new if out is old else out for out in self.outputs]


def record(op: str, inputs: list, outputs: list, attrs: dict) -> None:
    for tensor in inputs:
        if tensor.requires_grad:
            break
    else:
        return
    node = TapeNode(op, inputs, outputs, attrs)
    for out in outputs:
        out.requires_grad = True
        out.grad_fn = node


def set_requires_grad(tensor: Any, requires_grad: bool) -> None:
    if not tensor.is_leaf and not requires_grad:
        raise RuntimeError('requires_grad can only be turned off on leaf tensors; use detach()')
    tensor.requires_grad = requires_grad


def check_in_place(tensor: Any) -> None:
    """In-place updates rebind; nothing to check until gradients exist."""


def backward(tensor: Any, gradient: Any = None, retain_graph: bool = False) -> None:
    raise RuntimeError('backward() is not available yet')
