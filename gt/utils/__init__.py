"""`torch.utils` for scripts that `import gt as torch`: `torch.utils.data` is torch's own
module (its DataLoader batches GT tensors: gt/data_loading.py), under this name too;
`torch.utils.checkpoint` is gt.utils.checkpoint; any other submodule is torch's
(`torch.utils.tensorboard`)."""

import importlib
import sys
from typing import Any

import torch.utils.data as data

from gt.utils import checkpoint

# `import gt.utils.data` and `from gt.utils.data import DataLoader` look in sys.modules
# before they look for a file.
sys.modules[f'{__name__}.data'] = data


def __getattr__(name: str) -> Any:
    try:
        return importlib.import_module(f'torch.utils.{name}')
    except ModuleNotFoundError:
        raise AttributeError(f"module 'gt.utils' has no attribute {name!r}") from None


__all__ = ['checkpoint', 'data']
