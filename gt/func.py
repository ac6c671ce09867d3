"""`gt.func` (torch.func): `functional_call`, a module run with other parameters for one
call (gt/nn/utils/stateless.py). torch.func's transforms (`vmap`, `grad`, `jacrev`)
trace a function through torch's dispatcher, which GT's recorded ops do not pass
through; asking for one says so."""

from typing import Any

from gt.nn.utils.stateless import functional_call


def __getattr__(name: str) -> Any:
    raise AttributeError(f'GT has no gt.func.{name}: torch.func\'s transforms need torch\'s '
                         'dispatcher, which GT tensors do not go through (functional_call is '
                         'here; gt.autograd.grad computes gradients)')


__all__ = ['functional_call']
