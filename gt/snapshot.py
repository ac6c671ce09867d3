"""What `tensor.data` returns: a CPU copy of a GT tensor's value, as a torch.Tensor.

In torch, `p.data` shares `p`'s storage, so `p.data.zero_()`, `p.data.normal_(0, 0.02)`
or `p.data.mul_(0.9).add_(q.data, alpha=0.1)` (initialization, moving averages) change
`p`, untracked by autograd. A GT value lives on a worker, so a Snapshot passes an
in-place call on to the tensor it was taken from (recorded under no_grad, as GT's own
op or by name) and then copies the new value back into itself: both change, as in
torch, at the cost of a round trip each. Everything else (reading, arithmetic, `.numpy()`,
printing, saving) is a plain torch.Tensor's.
"""

import weakref
from typing import Any

import torch


class Snapshot(torch.Tensor):
    _owner: Any = None  # a weak reference to the GT tensor the value came from

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        kwargs = kwargs or {}
        name = getattr(func, '__name__', '')
        writes_self = name == '__setitem__' or (name.endswith('_') and not name.endswith('__'))
        if writes_self and args and isinstance(args[0], Snapshot):
            return args[0]._write_through(name, args[1:], kwargs)
        if isinstance(kwargs.get('out'), Snapshot):
            raise RuntimeError(f'{name}: out= cannot be the .data of a GT tensor; use the '
                               'result, or assign it with p.data = result')
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)  # results are plain tensors

    def _write_through(self, name: str, args: tuple, kwargs: dict) -> Any:
        from gt.autograd import no_grad
        from gt.fallback import call

        owner = self._owner() if self._owner is not None else None
        if owner is None:
            raise RuntimeError(f'{name}: the GT tensor this .data came from is gone, so there '
                               'is nothing to update')
        args = tuple(_gt_form(arg) for arg in args)
        kwargs = {key: _gt_form(value) for key, value in kwargs.items()}
        with no_grad():
            call(f'Tensor.{name}', (owner, *args), kwargs)
        with torch._C.DisableTorchFunctionSubclass():
            self.copy_(owner._value())
        return None if name == '__setitem__' else self

    def __format__(self, format_spec: str) -> str:
        """`f'{loss.data:.4f}'`: torch formats a 0-d tensor as its number only when its
        class is exactly torch.Tensor, so a Snapshot formats as one."""
        return self.as_subclass(torch.Tensor).__format__(format_spec)

    def __repr__(self, **kwargs: Any) -> str:
        return repr(self.as_subclass(torch.Tensor))

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Saved as a plain tensor, so torch.load(weights_only=True) reads it anywhere."""
        return self.as_subclass(torch.Tensor).__reduce_ex__(protocol)


def _gt_form(value: Any) -> Any:
    """Another tensor's .data stands for that tensor (no upload of its copy)."""
    if isinstance(value, Snapshot) and value._owner is not None and value._owner() is not None:
        return value._owner()
    if isinstance(value, Snapshot):
        return value.as_subclass(torch.Tensor)
    return value


def snapshot(value: torch.Tensor, owner: Any) -> Snapshot:
    taken = value.as_subclass(Snapshot)
    taken._owner = weakref.ref(owner)
    return taken
