"""`Module`'s casts and placement: `to`, `float`/`double`/`half`/`bfloat16`, `type`,
`cuda`/`cpu` (GT places tensors itself) and `share_memory` (refused), as a mixin."""

from typing import TYPE_CHECKING, Any

import torch

from gt.autograd import no_grad
from gt.tensor import Tensor

if TYPE_CHECKING:
    from gt.nn.module import Module


class CastMethods:
    def to(self, *args: Any, **kwargs: Any) -> 'Module':
        """`to(device)`, `to(dtype)`, `to(device, dtype)` or `to(tensor)`, as in torch;
        returns self. A device ('cuda', 'cpu', 'gt', a torch.device or an index) changes
        nothing: GT places tensors itself, on the workers the dispatcher chooses. A dtype,
        which must be floating, casts the floating parameters and buffers (and gradients)
        in place, so optimizers made afterwards see the new tensors, as in torch."""
        dtype = kwargs.get('dtype')
        for arg in [*args, kwargs.get('device'), kwargs.get('tensor')]:
            if isinstance(arg, torch.dtype):
                dtype = arg
            elif isinstance(arg, (Tensor, torch.Tensor)):
                dtype = arg.dtype
            elif isinstance(arg, str) and arg.split(':')[0] != 'gt':
                torch.device(arg)  # a misspelt device raises, as in torch
            elif not (arg is None or isinstance(arg, (str, int, torch.device))):
                raise TypeError(f'to() received an invalid argument {arg!r}; expected a '
                                'device, a dtype or a tensor')
        if dtype is not None:
            if not dtype.is_floating_point:
                raise TypeError(f'nn.Module.to only accepts floating point dtypes, but got '
                                f'desired dtype={dtype}')
            self._cast_floating(dtype)
        return self

    def _cast_floating(self, dtype: torch.dtype) -> None:
        with no_grad():
            for tensor in [*self.parameters(), *self.buffers()]:
                if tensor.dtype.is_floating_point and tensor.dtype != dtype:
                    tensor._rebind(tensor.to(dtype))
                    grad = tensor._grad
                    if grad is not None and grad.dtype != dtype:
                        grad._rebind(grad.to(dtype))

    def type(self, dst_type: Any) -> 'Module':
        """Every parameter and buffer cast to `dst_type` (a dtype), as torch's does."""
        for tensor in [*self.parameters(), *self.buffers()]:
            with no_grad():
                tensor._replace(tensor.to(dst_type))
        return self

    def float(self) -> 'Module': return self.to(torch.float32)
    def double(self) -> 'Module': return self.to(torch.float64)
    def half(self) -> 'Module': return self.to(torch.float16)
    def bfloat16(self) -> 'Module': return self.to(torch.bfloat16)

    def cuda(self, device: Any = None) -> 'Module':
        """Returns self: GT places tensors itself (see `to`)."""
        return self

    def cpu(self) -> 'Module':
        """Returns self: GT places tensors itself (see `to`)."""
        return self

    def share_memory(self) -> 'Module':
        """Refused, naming why: torch's Hogwild moves the weights into memory that the
        processes it starts share, and GT's live on the cluster, in this process's
        session, which a process started from this one cannot reach."""
        raise RuntimeError('share_memory: GT tensors live on the cluster, in this process\'s '
                           'session; a process started from this one cannot reach them '
                           '(make its model in the process, or train in this one)')
