"""Anomaly detection for autograd, as torch's: `gt.autograd.detect_anomaly()`,
`gt.autograd.set_detect_anomaly(mode)`, `gt.is_anomaly_enabled()`.

In the mode, every gradient a backward pass's rules produce gets a NaN count beside it,
and the counts are fetched together when the rules have run (one round trip; none with
the mode off): the first op whose gradient holds a NaN, in the order the pass ran the
rules (torch's engine's order), is named in torch's RuntimeError, before any `.grad` is
written. Ops recorded in the mode keep the traceback of their forward call, shown then
in a warning, as torch shows it.
"""

import os
import sys
import threading
import traceback
import warnings
import weakref
from typing import Any

from gt.grad_mode import no_grad

# Read by gt.autograd for every taped op and every backward: plain module attributes.
# Process-wide, as torch's are.
enabled = False
nan_checked = True

_GT_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_forward_calls: 'weakref.WeakKeyDictionary[Any, traceback.StackSummary]' = \
    weakref.WeakKeyDictionary()  # tape node -> the user's frames that recorded it
_pass = threading.local()  # .checks: [(node, output index, NaN count)] of the running pass


def is_anomaly_enabled() -> bool:
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    return nan_checked


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """torch's `torch.set_anomaly_enabled`: turn the mode on or off."""
    global enabled, nan_checked
    enabled, nan_checked = bool(mode), bool(check_nan)


class detect_anomaly:
    """`with gt.autograd.detect_anomaly():` anomaly mode inside the block (it warns that
    the mode slows a program down, as torch's does)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.previous = (enabled, nan_checked)
        self.check_nan = check_nan
        warnings.warn('Anomaly Detection has been enabled. This mode will increase the runtime '
                      'and should only be enabled for debugging.', stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exception: Any) -> None:
        set_anomaly_enabled(*self.previous)


class set_detect_anomaly:
    """`gt.autograd.set_detect_anomaly(mode)` sets the mode; used as a context manager, it
    sets it for the block, as torch's does."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.previous = (enabled, nan_checked)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exception: Any) -> None:
        set_anomaly_enabled(*self.previous)


def note_forward(node: Any) -> None:
    """Keep the user's frames that recorded tape node `node` (GT's own left out)."""
    frames = [frame for frame in traceback.extract_stack()
              if not frame.filename.startswith(_GT_DIR)]
    _forward_calls[node] = traceback.StackSummary.from_list(frames)


class checking_gradients:
    """Around a backward pass's rules: in the mode (with NaN checks), raise torch's
    RuntimeError if a gradient `produced` in the block holds a NaN."""

    def __enter__(self) -> None:
        self.checks = None
        if enabled and nan_checked:
            self.outer = getattr(_pass, 'checks', None)  # a hook's backward has its own
            _pass.checks = self.checks = []

    def __exit__(self, kind: Any, *exception: Any) -> None:
        if self.checks is not None:
            _pass.checks = self.outer
            if kind is None:
                _raise_on_nan(self.checks)


def produced(node: Any, index: int, gradient: Any) -> None:
    """Node `node`'s rule gave `gradient` for its input `index`: check it for NaN."""
    checks = getattr(_pass, 'checks', None)
    if checks is not None:
        with no_grad():
            checks.append((node, index, (gradient != gradient).sum()))


def _raise_on_nan(checks: list) -> None:
    if not checks:
        return
    from gt.functional import stack  # gt.functional imports gt.tensor, which imports us

    with no_grad():
        counts = stack([count for _, _, count in checks]).tolist()
    for (node, index, _), count in zip(checks, counts):
        if count:
            name = function_name(node)
            forward = _forward_calls.get(node)
            if forward:
                warnings.warn(f'Error detected in {name}. Traceback of forward call that '
                              f'caused the error:\n{"".join(forward.format())}',
                              stacklevel=_user_level())
            raise RuntimeError(f"Function '{name}' returned nan values in its {index}th "
                               'output.')


def _user_level() -> int:
    """The stacklevel of the user's call into GT (backward(), gt.autograd.grad), for
    a warning from this module's caller."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_GT_DIR):
        frame, level = frame.f_back, level + 1
    return level


def function_name(node: Any) -> str:
    """torch's name for the backward of the op `node` recorded: a torch function run by
    name is named after that function (`Tensor.add` -> `AddBackward0`)."""
    if node.op == 'torch_call':
        name = node.attrs['fn'].rpartition('.')[2].strip('_')
        return ''.join(part.capitalize() for part in name.split('_')) + 'Backward0'
    return node.name()
