"""`gt.cpu`: torch.cpu's questions and spellings (`torch.cpu.is_available()`, the older
`torch.cpu.amp.autocast(...)`). The client's CPU is always there; GT's work runs on the
workers, so `synchronize()` waits for it as gt.cuda's does, for timing code."""

import functools
import types

from gt import amp as _amp
from gt.cuda import synchronize as _synchronize

amp = types.ModuleType('gt.cpu.amp', "torch.cpu.amp's spelling: autocast for 'cpu'.")
amp.autocast = functools.partial(_amp.autocast, 'cpu')
amp.GradScaler = functools.partial(_amp.GradScaler, 'cpu')


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return 'cpu'


def set_device(device: object) -> None:
    """Accepted: there is one CPU device, as torch.cpu has it."""


def synchronize(device: object = None) -> None:
    """Wait until the work this script has sent has finished on every worker."""
    _synchronize(device)
