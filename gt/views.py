"""Views: tensors that alias another tensor, as torch's views share its storage.

A GT value never changes (the graph is SSA): an in-place op rebinds its tensor to a new
value. Torch's views (`x[1:3]`, `x.t()`, `x.view(6)`, `x.diagonal()`, `x.chunk(2)[0]`)
share their base's storage, so a write through a view changes the base and every other
view of it, and a write to the base shows through every view. Initialization code
relies on it (`lstm.bias_ih_l0.data[3:6].fill_(1.0)`, `w[0].zero_()` under no_grad), and
without it those writes were lost with no error.

So a view remembers its base (weakly: a view must not keep a large base's value alive
on the worker after the script dropped it) and the steps from the base to it. A write
to a view is put back into the base, step by step in reverse (`setitem` for an index,
the inverse permutation for a transpose, `torch.diagonal_scatter` for a diagonal...),
the base is rebound to that value, and the base's other live views are recomputed from
it; a write to the base recomputes its live views. These are ordinary recorded ops, so
autograd sees them (a write through a view of a tensor that requires grad gives the
base the gradient torch gives). A view whose base is gone is a tensor of its own.

Writes through an `expand`ed view are refused, as torch refuses them. `reshape` and
`flatten` alias only where torch's would (the strides allow a view), `contiguous()` of a
view that is not contiguous copies, as torch's does, and `stride()`, `storage_offset()`
and `is_contiguous()` answer as torch's would, from the same view of a meta tensor.
"""

import weakref
from contextlib import nullcontext
from typing import Any, Callable, NamedTuple

import torch

from gt.autograd import no_grad
from gt.grad_mode import grad_mode


class Step(NamedTuple):
    """One view op: `take(parent)` makes the view, `put(parent, view)` the parent with the
    view's elements replaced, and `layout(meta)`
    the same view of a meta tensor, whose strides are torch's. `take` and `put` record
    plain ops, never views of their own: they run while a base's views are walked."""

    take: Callable[[Any], Any]
    put: Callable[[Any, Any], Any]
    layout: Callable[[torch.Tensor], torch.Tensor]
    expands: bool = False  # several of the view's elements are one of the parent's
    detaches: bool = False  # `detach()`: autograd does not see a write through it


class View:
    """What a view aliases: its base (weakly), the base's shape, the steps from it, and
    the tape node of the first step (whose input is the base), if it has one."""

    __slots__ = ('base', 'base_shape', 'base_dtype', 'steps', 'node', '_layout')

    def __init__(self, base: Any, steps: tuple, node: Any) -> None:
        self.base = weakref.ref(base)
        self.base_shape = base._type.shape
        self.base_dtype = base.dtype  # a view of its bits as another dtype may change sizes
        self.steps = steps
        self.node = node
        self._layout: torch.Tensor | None = None

    def layout(self) -> torch.Tensor:
        """A meta tensor with the view's sizes, strides and offset in its base, as torch
        would have them (worked out when first asked: only stride(), is_contiguous(),
        and reshaping a view need it)."""
        if self._layout is None:
            meta = torch.empty(self.base_shape, dtype=self.base_dtype, device='meta')
            for step in self.steps:
                meta = step.layout(meta)
            self._layout = meta
        return self._layout


PRUNE_FROM = 64  # a base's list of views drops the dead at each power of two from here
EXPAND_WRITE = ('unsupported operation: more than one element of the written-to tensor '
                'refers to a single memory location. Please clone() the tensor before '
                'performing the operation.')
LEAF_WRITE = ('a view of a leaf tensor that requires grad is being used in an in-place '
              'operation; wrap the update in gt.no_grad()')


def mark(view: Any, source: Any, step: Step) -> Any:
    """Make `view` (just computed from `source` by `step`) a view of `source`'s base."""
    parent = source._view
    base = source if parent is None else parent.base()
    if base is None:  # the source's base is gone: the source is the base now
        base, parent = source, None
    steps = (step,) if parent is None else (*parent.steps, step)
    view._view = View(base, steps, view.grad_fn if parent is None else parent.node)
    views = base._views
    if views is None:
        views = base._views = []
    views.append(weakref.ref(view))
    count = len(views)
    if count >= PRUNE_FROM and count & (count - 1) == 0:
        # `row = data[i]` in a loop: the views die, their references must not pile up.
        views[:] = [reference for reference in views if reference() is not None]
    return view


def requires_grad_as_torch(tensor: Any) -> bool:
    """torch's `requires_grad` of `tensor`: a view of a tensor that requires grad, made
    under no_grad (not by `detach`), says True there, and torch.matmul chooses its
    kernel by that (GT records such a view without grad)."""
    if tensor.requires_grad:
        return True
    view = tensor._view
    base = None if view is None else view.base()
    return base is not None and base.requires_grad and \
        not any(step.detaches for step in view.steps)


def is_contiguous_view(tensor: Any) -> bool:
    """Whether `tensor` is laid out as a fresh tensor of its shape would be (only a view
    may not be)."""
    return tensor._view is None or tensor._view.layout().is_contiguous()


def strides(tensor: Any) -> tuple[int, ...]:
    if tensor._view is None:
        return torch.empty(tensor._type.shape, device='meta').stride()
    return tensor._view.layout().stride()


def storage_offset(tensor: Any) -> int:
    return 0 if tensor._view is None else tensor._view.layout().storage_offset()


def reshape_aliases(tensor: Any, shape: list[int]) -> bool:
    """Whether torch's `reshape` of `tensor` to `shape` would be a view (a copy where
    the strides allow none)."""
    if tensor._view is None:
        return True
    try:
        tensor._view.layout().view(shape)
    except RuntimeError:
        return False
    return True


def before_write(tensor: Any, new: Any, uniform: bool) -> Any:
    """Called before `tensor` is rebound to `new`; returns the base a write through the
    view must go back to, or None. A rebinding that changes shape or dtype (`t_()`,
    `.data = other`, a module's `.to(dtype)`) is not a write: the view stops aliasing.
    `uniform`: the write gives every element one value (`fill_`, `zero_`), which torch
    allows through an expanded view too."""
    view = tensor._view
    if new._type != tensor._type:
        forget(tensor)
        return None
    base = view.base()
    if base is None:
        tensor._view = None
        return None
    if not uniform and any(step.expands for step in view.steps):
        raise RuntimeError(EXPAND_WRITE)
    if grad_mode.enabled and base.requires_grad and base.grad_fn is None \
            and not any(step.detaches for step in view.steps):
        raise RuntimeError(LEAF_WRITE)
    return base


def write_back(tensor: Any, base: Any) -> None:
    """Put `tensor`'s new value (it is a view of `base`) into `base` and rebind it; the
    base's other views follow.

    The tape nodes that read the base to make its live views, and the put and take
    here, get the base's old value, which is what they read (`autograd.hand_over`)."""
    view = tensor._view
    # Through a detach() anywhere on the way, autograd sees none of the write (`h[1:3]
    # .detach().zero_()`): the base keeps its history, its gradient going to the old value.
    with no_grad() if any(step.detaches for step in view.steps) else nullcontext():
        parents = [base]
        for step in view.steps[:-1]:
            parents.append(step.take(parents[-1]))
        value = tensor
        for step, parent in zip(reversed(view.steps), reversed(parents)):
            value = step.put(parent, value)
    readers = [parents[1].grad_fn if len(parents) > 1 else None]
    for reference in base._views or ():
        other = reference()
        if other is not None and other._view is not None:
            readers.append(other._view.node)
    base._take(value, readers)
    refresh(base, tensor)


def refresh(base: Any, written: Any = None) -> None:
    """Recompute `base`'s live views (all but `written`, which has its value) from its
    value; views that died are dropped from its list."""
    live = []
    for reference in base._views:
        view = reference()
        if view is None or view._view is None or view._view.base() is not base:
            continue
        live.append(reference)
        if view is not written:
            value = base
            for step in view._view.steps:
                value = step.take(value)
            view._take(value)
    base._views = live or None


def forget(tensor: Any) -> None:
    """`tensor` no longer aliases anything, nor is aliased: it and its views part."""
    tensor._view = None
    for reference in tensor._views or ():
        view = reference()
        if view is not None and view._view is not None and view._view.base() is tensor:
            view._view = None
    tensor._views = None


def adopt(tensor: Any, new: Any) -> None:
    """`tensor` took `new`'s value: it is the view `new` was, in its place."""
    view = new._view
    base = None if view is None else view.base()
    if base is not None:
        tensor._view = view
        base._views.append(weakref.ref(tensor))
    new._view = None


# ---- the steps ------------------------------------------------------------------------------
def _detached(value: Any) -> Any:
    from gt.tensor import apply

    with no_grad():
        return apply('detach', [value])


# `x.detach()`: the same values under a second name on the worker, no copy; a write
# through either reaches the other, autograd seeing neither (gt.ir.ops.aliases).
DETACH = Step(take=_detached, put=lambda parent, view: _detached(view),
              layout=lambda meta: meta, detaches=True)


def index_step(index: list) -> Step:
    """A basic index (ints, slices, None, ...), in the getitem op's form."""
    from gt.tensor import apply

    key = tuple(_index_item(item) for item in index)
    return Step(lambda parent: apply('getitem', [parent], index=index),
                lambda parent, view: apply('setitem', [parent, view], index=index),
                lambda meta: meta[key])


def tensor_select_step(dim: int, index: Any) -> Step:
    """`x[t]` for a 0-d integer tensor `t`, which torch takes as the int it holds (a
    select, a view): the value stays on the workers, so the element is gathered there
    and put back with `where` on its position."""
    from gt.tensor import apply, binary, creation

    def position(parent: Any) -> Any:  # a negative index counts from the end, as an int's
        size = parent._type.shape[dim]
        return apply('where', [binary('lt', index, 0), binary('add', index, size), index])

    def broadcast_shape(parent: Any) -> list[int]:
        shape = list(parent._type.shape)
        shape[dim] = 1
        return shape

    def take(parent: Any) -> Any:
        shape = broadcast_shape(parent)
        at = apply('reshape', [position(parent)], shape=[1] * len(shape))
        picked = apply('gather', [parent, apply('expand', [at], shape=shape)], dim=dim)
        return apply('reshape', [picked], shape=shape[:dim] + shape[dim + 1:])

    def put(parent: Any, view: Any) -> Any:
        shape = [1] * parent.ndim
        shape[dim] = parent._type.shape[dim]
        places = apply('reshape', [creation('arange', (shape[dim],), 'int64', start=0,
                                            step=1)], shape=shape)
        values = apply('reshape', [view], shape=broadcast_shape(parent))
        return apply('where', [apply('eq', [places, position(parent)]), values, parent])

    # The layout's offset is the first element's (the index is not known here); its
    # sizes and strides, what is_contiguous() and reshape read, are the select's.
    return Step(take, put, lambda meta: meta.select(dim, 0))


def tensor_slice_step(dim: int, start: Any, length: int) -> Step:
    """`x[i:i + length]` for a 0-d integer tensor `i` (gt.tensor_offsets): the elements are
    gathered at `i`, `i + 1`, ... on the workers and put back with `where`. torch clamps
    a slice that runs past either end of the dimension, to a length that depends on `i`;
    here such positions make the gather fail when the program runs, naming the index
    that is out of range, rather than a shape GT could not know."""
    from gt.tensor import apply, binary, creation

    def shaped(positions: Any, ndim: int, size: int) -> Any:  # along dim, 1 elsewhere
        shape = [1] * ndim
        shape[dim] = size
        return positions if ndim == 1 else apply('reshape', [positions], shape=shape)

    def spread(index: Any, shape: list[int]) -> Any:
        return index if list(index._type.shape) == shape else apply('expand', [index],
                                                                   shape=shape)

    def take(parent: Any) -> Any:
        shape = list(parent._type.shape)
        shape[dim] = length
        steps = creation('arange', (length,), 'int64', start=0, step=1)
        at = shaped(binary('add', steps, start), len(shape), length)
        return apply('gather', [parent, spread(at, shape)], dim=dim)

    def put(parent: Any, view: Any) -> Any:
        if length == 0:  # `x[i:i] = v` writes nothing: the parent's values, as a new value
            return apply('cast', [parent], dtype=parent._type.dtype)
        size = parent._type.shape[dim]
        places = creation('arange', (size,), 'int64', start=0, step=1)
        within = shaped(binary('sub', places, start), parent.ndim, size)  # place in the slice
        inside = apply('logical_and', [binary('ge', within, 0), binary('lt', within, length)])
        source = apply('clamp', [within], min=0, max=max(length - 1, 0))
        shape = list(parent._type.shape)
        values = apply('gather', [view, spread(source, shape)], dim=dim)
        return apply('where', [inside, values, parent])

    # As for a select, the layout's offset is the first element's.
    return Step(take, put, lambda meta: meta.narrow(dim, 0, length))


def reshape_step(shape: list[int], layout: Callable | None = None) -> Step:
    """Any view that only regroups elements in order: view, unsqueeze, squeeze, flatten
    (`layout`: the op on a meta tensor, when it is not `view`)."""
    from gt.tensor import apply

    return Step(lambda parent: apply('reshape', [parent], shape=shape),
                lambda parent, view: apply('reshape', [view], shape=list(parent.shape)),
                layout or (lambda meta: _viewed(meta, shape)))


def permute_step(dims: list[int]) -> Step:
    """transpose, permute, movedim, swapaxes: an order of the parent's dims."""
    inverse = [0] * len(dims)
    for position, dim in enumerate(dims):
        inverse[dim] = position
    from gt.tensor import apply

    return Step(lambda parent: apply('permute', [parent], dims=dims),
                lambda parent, view: apply('permute', [view], dims=inverse),
                lambda meta: meta.permute(dims))


def expand_step(source_shape: tuple[int, ...], shape: list[int]) -> Step:
    """`expand`: a write puts back the first of the elements that share one."""
    from gt.tensor import apply

    added = len(shape) - len(source_shape)
    first = [['int', 0]] * added + [
        ['slice', 0, 1, None] if size == 1 and wide != 1 else ['slice', None, None, None]
        for size, wide in zip(source_shape, shape[added:])]
    return Step(lambda parent: apply('expand', [parent], shape=shape),
                lambda parent, view: apply('getitem', [view], index=first),
                lambda meta: meta.expand(shape), expands=True)


def call_step(name: str, args: tuple, kwargs: dict, output: int | None) -> Step | None:
    """The step of a view torch function GT runs by name (`x.diagonal()`, `torch.narrow`,
    `x.unbind()[k]`: `output` picks one of a tuple result), or None for other functions."""
    from gt.fallback import recorded_call

    function = name.rpartition('.')[2]
    scatter = SCATTERS.get(function)
    if scatter is None:
        return None
    bound = _bind(function, args, kwargs)
    if bound is None:
        return None
    if name == 'torch.linalg.diagonal':  # the last two dims unless told otherwise
        bound = {'dim1': -2, 'dim2': -1, **bound}

    def take(parent: Any) -> Any:
        result = recorded_call(name, (parent, *args), dict(kwargs))
        return result if output is None else result[output]

    def layout(meta: torch.Tensor) -> torch.Tensor:
        result = getattr(meta, function)(*args, **kwargs)
        return result if output is None else result[output]
    # Overlapping windows share elements, as an expanded view does: writes are refused.
    overlaps = function == 'unfold' and bound['step'] < bound['size']
    return Step(take, lambda parent, view: scatter(parent, view, output, **bound), layout,
                expands=overlaps)


def _bind(function: str, args: tuple, kwargs: dict) -> dict | None:
    """The arguments of view function `function` by name, or None if they do not fit."""
    names = SIGNATURES[function]
    if len(args) > len(names) or any(key not in names for key in kwargs):
        return None
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


def _call(name: str, *args: Any) -> Any:
    """torch's `name` by name: a `*_scatter` function, or the inverse of a dim move."""
    from gt.fallback import recorded_call

    return recorded_call(f'torch.{name}', args, {})


def _method(name: str, tensor: Any, *args: Any) -> Any:
    """Tensor method `name` by name, recorded as a plain call (not a view)."""
    from gt.fallback import recorded_call

    return recorded_call(f'Tensor.{name}', (tensor, *args), {})


def _unfolded_put(parent: Any, view: Any, dimension: int, size: int, step: int) -> Any:
    """`parent` with the windows `parent.unfold(dimension, size, step)` took (which do not
    overlap) replaced by `view`'s."""
    if parent.ndim == 0:
        return _apply('reshape', view, shape=[])
    dim = dimension % parent.ndim
    windows = view.shape[dim]
    positions = (torch.arange(windows)[:, None] * step + torch.arange(size)).flatten()
    rows = _call('movedim', view, -1, dim + 1)
    shape = list(rows.shape)
    rows = _apply('reshape', rows, shape=shape[:dim] + [windows * size] + shape[dim + 2:])
    return _call('index_copy', parent, dim, positions, rows)


def _apply(op: str, view: Any, **attrs: Any) -> Any:
    from gt.tensor import apply

    return apply(op, [view], **attrs)


SIGNATURES = {
    'diagonal': ('offset', 'dim1', 'dim2'),
    'narrow': ('dim', 'start', 'length'),
    'select': ('dim', 'index'),
    'unbind': ('dim',),
    'movedim': ('source', 'destination'),
    'moveaxis': ('source', 'destination'),
    'swapaxes': ('axis0', 'axis1'),
    'swapdims': ('dim0', 'dim1'),
    'unflatten': ('dim', 'sizes'),
    'unfold': ('dimension', 'size', 'step'),
    'view': ('dtype',),  # a view of the bits as another dtype (Tensor.view of a shape is GT's)
}
# function -> (parent, new view, output index, **its arguments) -> the new parent
SCATTERS: dict[str, Callable] = {
    'diagonal': lambda parent, view, _, offset=0, dim1=0, dim2=1: _call(
        'diagonal_scatter', parent, view, offset, dim1, dim2),
    'narrow': lambda parent, view, _, dim, start, length: _call(
        'slice_scatter', parent, view, dim, start, start + length),
    'select': lambda parent, view, _, dim, index: _call(
        'select_scatter', parent, view, dim, index),
    'unbind': lambda parent, view, output, dim=0: _call(
        'select_scatter', parent, view, dim, output),
    'movedim': lambda parent, view, _, source, destination: _call(
        'movedim', view, destination, source),
    'moveaxis': lambda parent, view, _, source, destination: _call(
        'movedim', view, destination, source),
    'swapaxes': lambda parent, view, _, axis0, axis1: _apply(
        'transpose', view, dim0=axis0, dim1=axis1),
    'swapdims': lambda parent, view, _, dim0, dim1: _apply(
        'transpose', view, dim0=dim0, dim1=dim1),
    'unflatten': lambda parent, view, _, dim, sizes: _apply(
        'reshape', view, shape=list(parent.shape)),
    'unfold': lambda parent, view, _, **bound: _unfolded_put(parent, view, **bound),
    'view': lambda parent, view, _, dtype: _method('view', view, parent.dtype),
}


def _index_item(item: list) -> Any:
    """The Python index item a getitem attribute item stands for."""
    kind = item[0]
    if kind == 'int':
        return item[1]
    if kind == 'slice':
        return slice(*item[1:])
    return None if kind == 'none' else Ellipsis


def _viewed(meta: torch.Tensor, shape: list[int]) -> torch.Tensor:
    """`meta.view(shape)`; GT lets `view` regroup what torch's could not (its values have
    no strides), and that view is laid out afresh."""
    try:
        return meta.view(shape)
    except RuntimeError:
        return meta.reshape(shape).clone()
