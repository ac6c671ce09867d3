"""What `tensor.data` returns: a CPU copy of a GT tensor's value, as a torch.Tensor.

In torch, `p.data` shares `p`'s storage, so `p.data.zero_()`, `p.data.normal_(0, 0.02)`
or `p.data.mul_(0.9).add_(q.data, alpha=0.1)` (initialization, moving averages) change
`p`, untracked by autograd. A GT value lives on a worker, so a Snapshot passes an
in-place call on to the tensor it was taken from (recorded under no_grad, as GT's own
op or by name) and then copies the new value back into itself: both change, as in
torch, at the cost of a round trip each. A view of a Snapshot (`p.data[3:6]`,
`p.data.t()`, `p.data.chunk(4)[1]`) is one too: it remembers the calls that made it, and
a write through it makes the same view of the GT tensor and writes there (gt/views.py
carries it into the tensor), so `lstm.bias_ih_l0.data[3:6].fill_(1.0)` sets the forget
gate's bias as in torch. Everything else (reading, arithmetic, `.numpy()`, printing,
saving) is a plain torch.Tensor's.
"""

import copy
import weakref
from typing import Any

import torch

# torch functions whose result shares its first argument's storage, and that GT tensors
# have by the same name: a write through such a result reaches the GT tensor.
VIEW_FUNCTIONS = frozenset({
    '__getitem__', 'view', 'view_as', 'reshape', 'flatten', 'unflatten', 't', 'transpose',
    'permute', 'swapaxes', 'swapdims', 'movedim', 'moveaxis', 'diagonal', 'narrow',
    'select', 'unsqueeze', 'squeeze', 'expand', 'expand_as', 'chunk', 'split', 'unbind'})


class Snapshot(torch.Tensor):
    _owner: Any = None  # a weak reference to the GT tensor the value came from
    _root: Any = None  # for a view: the Snapshot of the whole value, whose storage it shares
    _path: tuple = ()  # for a view: (function, arguments, keywords, output) calls from it

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
            result = func(*args, **kwargs)  # results are plain tensors, views aside
        if name in VIEW_FUNCTIONS and args and isinstance(args[0], Snapshot):
            return _views_of(args[0], name, args[1:], kwargs, result)
        return result

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
            target = owner
            for function, view_args, view_kwargs, output in self._path:
                target = getattr(target, function)(
                    *(_gt_form(arg) for arg in view_args),
                    **{key: _gt_form(value) for key, value in view_kwargs.items()})
                target = target if output is None else target[output]
            call(f'Tensor.{name}', (target, *args), kwargs)
        with torch._C.DisableTorchFunctionSubclass():
            (self if self._root is None else self._root).copy_(owner._value())
        return None if name == '__setitem__' else self

    def __format__(self, format_spec: str) -> str:
        """`f'{loss.data:.4f}'`: torch formats a 0-d tensor as its number only when its
        class is exactly torch.Tensor, so a Snapshot formats as one."""
        return self.as_subclass(torch.Tensor).__format__(format_spec)

    def __repr__(self, **kwargs: Any) -> str:
        return repr(self.as_subclass(torch.Tensor))

    def __deepcopy__(self, memo: dict) -> torch.Tensor:
        """A copy is a tensor of its own (`best = copy.deepcopy(model.state_dict())`):
        writing into it must not reach the GT tensor."""
        return copy.deepcopy(self.as_subclass(torch.Tensor), memo)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Saved as a plain tensor, so torch.load(weights_only=True) reads it anywhere."""
        return self.as_subclass(torch.Tensor).__reduce_ex__(protocol)


def _views_of(source: Snapshot, name: str, args: tuple, kwargs: dict, result: Any) -> Any:
    """`result` of view function `name` on `source`, its tensors as Snapshots that write
    through to `source`'s GT tensor (a tuple for chunk, split and unbind)."""
    def view(value: Any, output: int | None) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        made = value.as_subclass(Snapshot)
        made._owner = source._owner
        made._root = source if source._root is None else source._root
        made._path = (*source._path, (name, args, kwargs, output))
        return made
    if isinstance(result, (tuple, list)):
        return tuple(view(value, output) for output, value in enumerate(result))
    return view(result, None)


def _gt_form(value: Any) -> Any:
    """Another tensor's .data stands for that tensor (no upload of its copy)."""
    if isinstance(value, Snapshot) and value._owner is not None and value._owner() is not None:
        return value._owner()
    if isinstance(value, Snapshot):
        return value.as_subclass(torch.Tensor)
    return value


def snapshot(value: torch.Tensor, owner: Any, hold: bool = True) -> Snapshot:
    """`value` as `owner`'s `.data`. It holds the tensor as torch's `.data` holds its
    storage: the tensor is often a temporary (`conv.weight.data.normal_()` on a
    parametrized weight, `emb.weight[0].data.zero_()`), and the write must still happen,
    on the cluster, and reach a view's base. (Its tape is no weight to carry: backward
    frees what the nodes kept.) `hold=False` (state_dict's values, which must not keep
    a model alive) refers to the tensor weakly."""
    taken = value.as_subclass(Snapshot)
    taken._owner = (lambda: owner) if hold else weakref.ref(owner)
    return taken
