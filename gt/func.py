"""`gt.func` (torch.func): `functional_call`, a module run with other parameters for one
call (gt/nn/utils/stateless.py), and the function transforms `grad`, `grad_and_value`,
`vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian`, `vmap` and `stack_module_state`, composed
of GT's tape (gt/func_transforms.py). The rest of torch.func (`functionalize`,
`linearize`, ...) reshapes torch's own dispatch; asking for it says so."""

from typing import Any

from gt.func_transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    stack_module_state,
    vjp,
    vmap,
)
from gt.nn.utils.stateless import functional_call


def __getattr__(name: str) -> Any:
    raise AttributeError(f'GT has no gt.func.{name}: it transforms torch\'s own dispatch, '
                         'which GT tensors do not go through (gt.func has functional_call, '
                         'grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap and '
                         'stack_module_state)')


__all__ = ['functional_call', 'grad', 'grad_and_value', 'vjp', 'jvp', 'jacrev', 'jacfwd',
           'hessian', 'vmap', 'stack_module_state']
