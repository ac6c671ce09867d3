"""torch.autograd's submodule paths under gt.autograd, which is a module, not a package:
`from gt.autograd.function import once_differentiable`, `import gt.autograd.functional`,
`gt.autograd.grad_mode`, `gt.autograd.graph` (its `save_on_cpu`), and `forward_ad`,
which GT does not have, refusing by name at first use rather than failing to import.
"""

import contextlib
import sys
import types
import warnings
from typing import Any, Iterator

from gt import autograd_function, autograd_functional, grad_mode


@contextlib.contextmanager
def save_on_cpu(pin_memory: bool = False, device_type: str = 'cuda') -> Iterator[None]:
    """Accepted, changing nothing but saying so: what backward needs stays on the
    workers, in their memory; moving it to the client would cost a round trip each."""
    warnings.warn('gt.autograd.graph.save_on_cpu: GT keeps the values backward needs on '
                  'the workers; nothing is moved', stacklevel=3)
    yield


def _refusing(name: str, why: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def __getattr__(attribute: str) -> Any:
        if attribute.startswith('__'):
            raise AttributeError(attribute)
        raise AttributeError(f'GT has no {name}.{attribute}: {why}')
    module.__getattr__ = __getattr__
    return module


graph = _refusing('gt.autograd.graph', 'saved-tensor hooks and graph nodes are torch '
                  "autograd's; GT's tape keeps each op's inputs itself (save_on_cpu is "
                  'accepted)')
graph.save_on_cpu = save_on_cpu
forward_ad = _refusing('gt.autograd.forward_ad', 'GT has no forward-mode AD; '
                       'gt.func.jvp and gt.autograd.functional.jvp give the same numbers by '
                       'the double-backward trick')

SUBMODULES = {'function': autograd_function, 'functional': autograd_functional,
              'grad_mode': grad_mode, 'graph': graph, 'forward_ad': forward_ad}


def register() -> None:
    """Called once by `import gt`. `gt.autograd.gradcheck` is the function, as in torch;
    `from gt.autograd.gradcheck import GradcheckError` reads the module."""
    from gt import gradcheck

    for name, module in {**SUBMODULES, 'gradcheck': gradcheck}.items():
        sys.modules[f'gt.autograd.{name}'] = module
