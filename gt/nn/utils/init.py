"""torch.nn.utils.skip_init: a module made without initializing its parameters. GT has
no uninitialized values, so they are initialized, but under a forked random state: the
script's later draws are torch's, as if nothing had been drawn."""

import inspect
from typing import Any

from gt.nn.module import Module
from gt.random import fork_rng


def skip_init(module_cls: Any, *args: Any, **kwargs: Any) -> Any:
    if not (inspect.isclass(module_cls) and issubclass(module_cls, Module)):
        raise RuntimeError(f'Expected a Module; got {module_cls}')
    if 'device' not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    with fork_rng():
        return module_cls(*args, **kwargs)
