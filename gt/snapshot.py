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
gate's bias as in torch; so does `p.data[i] += 1`, an in-place operator, and
`torch.add(a.data, b.data, out=a.data)`. Where another tensor's `.data` (or a view of
it) is an operand of such a write, it stands for that tensor (or the same view of it),
with no upload of its copy. A call that also takes a GT tensor (`w.data[index]` with
a GT index) is left to GT, as that tensor's. Everything else (reading, arithmetic,
`.numpy()`, printing, saving) is a plain torch.Tensor's.
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
        from gt.fallback import IN_PLACE_OPERATORS

        kwargs = kwargs or {}
        name = getattr(func, '__name__', '')
        writes_self = name in IN_PLACE_OPERATORS or (
            name.endswith('_') and not name.endswith('__'))
        if writes_self and args and isinstance(args[0], Snapshot):
            return args[0]._write_through(name, args[1:], kwargs)
        out = kwargs.get('out')
        if isinstance(out, Snapshot):  # `torch.add(a.data, b.data, out=a.data)`
            result = func(*(gt_form(arg) for arg in args),
                          **{key: gt_form(value) for key, value in kwargs.items()
                             if key != 'out'})
            out._write_through('copy_', (result,), {})
            return out
        if _any_gt_tensor(args) or _any_gt_tensor(kwargs.values()):
            return NotImplemented  # the GT tensor's __torch_function__ takes the call
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)  # results are plain tensors, views aside
        if name in VIEW_FUNCTIONS and args and isinstance(args[0], Snapshot):
            return _views_of(args[0], name, args[1:], kwargs, result)
        return result

    def _write_through(self, name: str, args: tuple, kwargs: dict) -> Any:
        from gt.autograd import no_grad
        from gt.fallback import IN_PLACE_OPERATORS, call

        owner = self._owner() if self._owner is not None else None
        if owner is None:
            raise RuntimeError(f'{name}: the GT tensor this .data came from is gone, so there '
                               'is nothing to update')
        args = tuple(gt_form(arg) for arg in args)
        kwargs = {key: gt_form(value) for key, value in kwargs.items()}
        with no_grad():
            target = _walked(owner, self._path)
            if name in IN_PLACE_OPERATORS:  # `p.data[i] += 1`
                getattr(target, name)(*args, **kwargs)
            else:
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
    storage = source.untyped_storage().data_ptr()

    def view(value: Any, output: int | None) -> Any:
        if not isinstance(value, torch.Tensor) or value.untyped_storage().data_ptr() != storage:
            return value  # `p.data[[0, 2]]`, a reshape that copied: torch's copy, no view
        made = value.as_subclass(Snapshot)
        made._owner = source._owner
        made._root = source if source._root is None else source._root
        made._path = (*source._path, (name, args, kwargs, output))
        return made
    if isinstance(result, (tuple, list)):
        return tuple(view(value, output) for output, value in enumerate(result))
    return view(result, None)


def _walked(owner: Any, path: tuple) -> Any:
    """The GT tensor a view's path makes of `owner` (recorded under no_grad)."""
    target = owner
    for function, view_args, view_kwargs, output in path:
        target = getattr(target, function)(
            *(gt_form(arg) for arg in view_args),
            **{key: gt_form(value) for key, value in view_kwargs.items()})
        target = target if output is None else target[output]
    return target


def gt_form(value: Any) -> Any:
    """Another tensor's .data stands for that tensor, and a view of it for the same view
    of the tensor (no upload of its copy)."""
    if isinstance(value, Snapshot) and value._owner is not None and value._owner() is not None:
        from gt.autograd import no_grad

        with no_grad():
            return _walked(value._owner(), value._path)
    if isinstance(value, Snapshot):
        return value.as_subclass(torch.Tensor)
    return value


def _any_gt_tensor(values: Any) -> bool:
    """Whether a GT tensor is among `values` (or in a list or tuple among them)."""
    from gt.tensor import Tensor

    return any(isinstance(value, Tensor) or (type(value) in (list, tuple) and any(
        isinstance(item, Tensor) for item in value)) for value in values)


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
