"""`torch.nn.modules` under GT's name, for the code that reaches torch's classes through
it: `isinstance(m, nn.modules.batchnorm._BatchNorm)` to freeze batch norms, `from
torch.nn.modules.conv import _ConvNd`, a checkpoint's `safe_globals` list.

Each of torch's submodules (`batchnorm`, `conv`, `loss`, ...) is mirrored by one holding
GT's classes of the same names, private bases included. A name GT has no class for is
left out: torch's class there would make every such isinstance test False in silence.
`utils` keeps torch's tuple helpers (`_pair`, `_ntuple`), which custom layers import and
which take no tensors, and `module` has GT's hooks on every module
(`register_module_forward_hook` and the rest).
"""

import sys
import types

import torch.nn.modules as _torch_modules

from gt.nn import module_hooks

TUPLE_HELPERS = ('_ntuple', '_single', '_pair', '_triple', '_quadruple', '_reverse_repeat_tuple')
# torch.nn.modules.module's hooks on every module (gt/nn/module_hooks.py).
GLOBAL_HOOKS = ('register_module_forward_pre_hook', 'register_module_forward_hook',
                'register_module_full_backward_pre_hook', 'register_module_full_backward_hook')


def _gt_classes() -> dict:
    """Every class defined in gt.nn's modules, by name."""
    classes = {}
    for name, module in list(sys.modules.items()):
        if name.startswith('gt.nn.') and module is not None:
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__.startswith('gt.nn.'):
                    classes.setdefault(value.__name__, value)
    return classes


def _mirror() -> None:
    package = sys.modules[__name__]
    classes = _gt_classes()
    for name, torch_module in vars(_torch_modules).items():
        if not (isinstance(torch_module, types.ModuleType)
                and torch_module.__name__ == f'{_torch_modules.__name__}.{name}'):
            continue
        mirror = types.ModuleType(f'{__name__}.{name}', torch_module.__doc__)
        for attribute, value in vars(torch_module).items():
            if isinstance(value, type) and attribute in classes:
                setattr(mirror, attribute, classes[attribute])
                setattr(package, attribute, classes[attribute])
            elif name == 'utils' and attribute in TUPLE_HELPERS:
                setattr(mirror, attribute, value)
            elif name == 'module' and attribute in GLOBAL_HOOKS:
                setattr(mirror, attribute, getattr(module_hooks, attribute))
        sys.modules[mirror.__name__] = mirror
        setattr(package, name, mirror)


_mirror()
