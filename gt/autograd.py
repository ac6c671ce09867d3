"""Tape autograd with PyTorch's semantics.

Recording an op on tensors that require grad adds a `TapeNode` that names the op and
holds its inputs. `backward()` walks the tape in reverse and calls each op's gradient
rule from the op table; the rules emit ordinary ops, so gradients are more nodes in the
same lazy graph and a whole training step stays one fragment. Gradients are summed over
broadcast dimensions and accumulate into leaves' `.grad`, as in torch.
"""

import itertools
import weakref
from typing import Any, Callable

from gt import anomaly_mode, post_accumulate_hooks, signal
from gt.anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: F401 (torch's place)
from gt.grad_fn_names import backward_name
from gt.grad_mode import (  # noqa: F401 (gt.autograd is where callers find them)
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from gt.grad_mode import grad_mode as grad_state  # gt.autograd.grad_mode: the module
from gt.ir import OPS

_sequence = itertools.count()
# The tape nodes recorded, weakly, oldest first, for gt.debug.print_tape(): a plain list
# of references (a WeakValueDictionary cost a microsecond per taped op), from which the
# dead are dropped whenever it has doubled, so the tape still dies with its tensors.
live_nodes: list[weakref.ref] = []
_prune_at = 1024


class TapeNode:
    """One recorded op: its inputs (kept alive for the backward pass), attrs, and the
    ids and types of the values it made. Outputs are not referenced, so no cycles form."""

    __slots__ = ('op', 'inputs', 'input_ids', 'attrs', 'output_ids', 'output_types',
                 'sequence', 'freed', 'backward_signal', 'hooks', 'retained', 'shown_as',
                 '__weakref__')

    def __init__(self, op: str, inputs: list, outputs: list, attrs: dict):
        self.op = op
        self.inputs = list(inputs)
        self.input_ids = [t._id for t in inputs]  # to notice inputs updated in place later
        reference = weakref.ref(self)
        for tensor in inputs:
            if tensor.grad_fn is None:  # what hand_over finds when the tensor is written
                readers = tensor._readers
                if readers is None:
                    tensor._readers = [reference]
                else:
                    readers.append(reference)
                    if len(readers) >= 64 and len(readers) & (len(readers) - 1) == 0:
                        readers[:] = [r for r in readers if r() is not None]
        self.attrs = attrs
        self.shown_as: str | None = None  # a loss's own name (gt.grad_fn_names.name_loss)
        self.output_ids = [out._id for out in outputs]
        self.output_types = [out._type for out in outputs]
        self.sequence = next(_sequence)
        self.freed = False
        # The signal whose config places this op's gradient ops (pipeline parallelism);
        # None: they run where their inputs, the forward values, live.
        self.backward_signal = signal.current_backward()
        self.hooks: dict[int, list] = {}  # output index -> its tensor's hooks
        # output index -> its tensor, weakly, if it called retain_grad(): its .grad is
        # the output's gradient after the hooks, as in torch
        self.retained: dict[int, weakref.ref] = {}
        live_nodes.append(reference)
        if len(live_nodes) >= _prune_at:
            _prune_live_nodes()
        if anomaly_mode.enabled:
            anomaly_mode.note_forward(self)  # shown if its gradient turns out NaN

    def __repr__(self) -> str:
        return f'<{self.name()} object at {id(self):#x}>'

    def name(self) -> str:
        """torch's `grad_fn.name()`: `MulBackward0` (torch numbers the backward of each
        overload of an op; GT's ops have one, the first); see gt/grad_fn_names.py."""
        if self.shown_as is not None:
            return self.shown_as
        return backward_name(self.op, self.attrs, self.inputs)

    @property
    def next_functions(self) -> tuple:
        """torch's: for each input, what made it (gt/grad_fn_links.py)."""
        from gt.grad_fn_links import next_function

        return tuple(next_function(tensor) for tensor in self.inputs)


def hand_over(tensor: Any, candidates: list) -> Any:
    """Before `tensor` takes another value: the tape nodes that read it get a stand-in
    owning its old value and history, which is what their rules must read (`s = h.sum()`
    before `h.add_(1)`, which torch allows where the rule saved no input; a leaf's
    gradient still goes to the leaf). Those are the `candidates` that read it (an
    in-place op's own node: `h += x` reads h) and, for a tensor with history, the nodes
    recorded since its value was made; one without history remembers its readers.
    Returns the stand-in, or None when no node reads the old value, which may then be
    released."""
    readers = [node for node in candidates
               if node is not None and any(t is tensor for t in node.inputs)]
    if tensor.grad_fn is not None:
        made = tensor.grad_fn.sequence
        for reference in reversed(live_nodes):  # recorded in order: newest first
            node = reference()
            if node is None:
                continue
            if node.sequence <= made:
                break
            if any(t is tensor for t in node.inputs):
                readers.append(node)
    elif tensor._readers is not None:
        for reference in tensor._readers:
            node = reference()
            if node is not None and not node.freed and node not in readers \
                    and any(t is tensor for t in node.inputs):
                readers.append(node)
        tensor._readers = None
    if not readers:
        return None
    old = tensor._stand_in()
    for node in readers:
        node.inputs = [old if t is tensor else t for t in node.inputs]
    return old


def next_sequence() -> int:
    """A number above every tape node's so far and below every later one's: where a
    region of the tape starts (gt.utils.checkpoint)."""
    return next(_sequence)


def _prune_live_nodes() -> None:
    global _prune_at
    live_nodes[:] = [reference for reference in live_nodes if reference() is not None]
    _prune_at = max(1024, 2 * len(live_nodes))


def record(op: str, inputs: list, outputs: list, attrs: dict) -> None:
    """Called for ops on tensors that require grad, with grad mode on."""
    if OPS[op].grad is None:
        return  # comparisons, argmax, casts to integers...: results carry no gradient
    node = TapeNode(op, inputs, outputs, attrs)
    for out in outputs:
        if out._type.dtype in FLOATING:
            out.requires_grad = True
            out.grad_fn = node


def set_requires_grad(tensor: Any, requires_grad: bool) -> None:
    if not tensor.is_leaf and not requires_grad:
        raise RuntimeError('you can only change requires_grad flags of leaf tensors; '
                           'use .detach() to get a tensor without gradients')
    if requires_grad and tensor._type.dtype not in FLOATING:
        raise RuntimeError(f'only floating point tensors can require gradients, not '
                           f'{tensor._type.dtype}')
    tensor.requires_grad = requires_grad


def _seed(root: Any, gradient: Any) -> tuple[Any, bool]:
    """The gradient backpropagation starts from, and whether the caller gave it."""
    from gt.tensor import as_tensor, emit

    if gradient is None:
        if root.numel() != 1:
            raise RuntimeError(f'backward() without a gradient works only on scalar outputs; '
                               f'this tensor has shape {list(root.shape)}: pass '
                               f'gradient= of that shape')
        backward_signal = None if root.grad_fn is None else root.grad_fn.backward_signal
        if backward_signal is None:
            return emit('ones', shape=list(root._type.shape), dtype=root._type.dtype), False
        with signal.context(backward_signal):  # made where the first rule will read it
            return emit('ones', shape=list(root._type.shape), dtype=root._type.dtype), False
    gradient = as_tensor(gradient, like=root)
    if tuple(gradient.shape) != tuple(root.shape):
        raise RuntimeError(f'backward(): gradient has shape {list(gradient.shape)} but the '
                           f'tensor has shape {list(root.shape)}')
    if gradient._type.dtype != root._type.dtype:
        gradient = emit('cast', gradient, dtype=root._type.dtype)  # as torch casts it
    return gradient, True


def _propagate(roots: list, gradients: list, retain_graph: bool, create_graph: bool,
               targets: list | None) -> dict[int, Any]:
    """Walk the tape back from `roots`. Without `targets`, accumulate into leaves'
    `.grad`; with them, return {id(target): gradient} and touch no `.grad`."""
    from gt.tensor import emit

    assigned: set[int] = set()  # tensors that are some leaf's .grad already
    grads: dict[tuple[int, int], Any] = {}
    arrived: dict[int, list] = {}  # id(leaf) -> [leaf, its gradient summed so far]
    collected: dict[int, Any] = {}
    wanted = None if targets is None else {id(t) for t in targets}
    mode = enable_grad() if create_graph else no_grad()
    with mode:
        seeds = [_seed(root, gradient) for root, gradient in zip(roots, gradients)]
    with mode:
        starts = []
        for root, (gradient, given) in zip(roots, seeds):
            if given:
                # The caller's tensor must not become a .grad itself: an in-place update
                # of one would change the other.
                assigned.add(id(gradient))
            if root.grad_fn is None:
                _arrive(root, gradient, arrived)
                continue
            key = (id(root.grad_fn), root.grad_fn.output_ids.index(root._id))
            grads[key] = gradient if key not in grads else emit('add', grads[key], gradient)
            starts.append(root.grad_fn)
        nodes = _reachable(starts)
        for node in nodes:
            if node.freed:
                raise RuntimeError(
                    'trying to backward through the graph a second time (or directly access '
                    'saved tensors after they have already been freed): pass '
                    'retain_graph=True to the first backward() to keep it')
            for tensor, saved_id in zip(node.inputs, node.input_ids):
                if tensor._id != saved_id:
                    raise RuntimeError(
                        f'an input of {node.op} (recorded as {node.name()}) was modified by an '
                        'in-place operation after it was used; its gradient cannot be computed')
        for root in roots:
            if root.grad_fn is not None and id(root) in (wanted or ()):
                key = (id(root.grad_fn), root.grad_fn.output_ids.index(root._id))
                _collect(root, grads[key], assigned, collected, wanted)
        with anomaly_mode.checking_gradients():
            for node in nodes:
                _step(node, grads, assigned, emit, collected, wanted, arrived)
        for leaf, gradient in arrived.values():
            _deliver(leaf, gradient, assigned, collected, wanted)
        if not retain_graph:
            _free(nodes)
    return collected


def _free(nodes: list[TapeNode]) -> None:
    """A walked tape lets go of the values it kept (a second walk raises)."""
    for node in nodes:
        node.freed = True
        node.inputs = node.input_ids = []


def _step(node: TapeNode, grads: dict, assigned: set, emit: Callable, collected: dict,
          wanted: set | None, arrived: dict) -> None:
    outputs = [grads.pop((id(node), index), None) for index in range(len(node.output_ids))]
    if node.hooks:
        outputs = [_hooked(node.hooks.get(index), grad) if grad is not None else None
                   for index, grad in enumerate(outputs)]
    if node.retained and wanted is None:
        for index, reference in node.retained.items():
            tensor = reference()
            if tensor is not None and outputs[index] is not None and tensor.grad_fn is node \
                    and tensor._id == node.output_ids[index]:  # not rebound in place since
                _accumulate(tensor, outputs[index], assigned)
    if all(grad is None for grad in outputs):
        return
    if node.op == FUNCTION:  # a gt.autograd.Function's node: the user's backward is the rule
        rule = node.gradient
    else:
        if grad_state.enabled and not OPS[node.op].grad_of_grad:
            name = node.attrs.get('fn', node.op)  # a torch function run by name, or a row
            raise NotImplementedError(f'create_graph: GT cannot differentiate the second '
                                      f'derivative of {name} again: it gives first and '
                                      f'second derivatives')
        rule = OPS[node.op].grad
    if node.backward_signal is None:
        _apply_rule(node, rule, outputs, grads, assigned, emit, collected, wanted, arrived)
    else:
        # The rule's ops and what undoes broadcasting and sums its gradients all go where
        # the backward config says (a bias's gradient is mostly such a sum).
        with signal.context(node.backward_signal):
            _apply_rule(node, rule, outputs, grads, assigned, emit, collected, wanted,
                        arrived)


def _apply_rule(node: TapeNode, rule: Callable, outputs: list, grads: dict, assigned: set,
                emit: Callable, collected: dict, wanted: set | None, arrived: dict) -> None:
    """Run `node`'s gradient rule on its outputs' gradients; send each input's on."""
    input_grads = rule(emit, node.inputs, outputs, **node.attrs)
    for index, (tensor, grad) in enumerate(zip(node.inputs, input_grads)):
        if grad is None or not tensor.requires_grad:
            continue
        grad = sum_to_shape(grad, tuple(tensor._type.shape), emit)
        if grad._type.dtype != tensor._type.dtype:
            grad = emit('cast', grad, dtype=tensor._type.dtype)
        if anomaly_mode.enabled:
            anomaly_mode.produced(node, index, grad)
        if tensor.grad_fn is None:
            _arrive(tensor if tensor._leaf_of is None else tensor._leaf_of, grad, arrived)
            continue
        key = (id(tensor.grad_fn), tensor.grad_fn.output_ids.index(tensor._id))
        grads[key] = grad if key not in grads else emit('add', grads[key], grad)
        if wanted is not None and id(tensor) in wanted:
            _collect(tensor, grad, assigned, collected, wanted)


def _arrive(leaf: Any, grad: Any, arrived: dict) -> None:
    """One part of a leaf's gradient (one per use of the leaf), summed before delivery."""
    from gt.tensor import emit

    entry = arrived.get(id(leaf))
    if entry is None:
        arrived[id(leaf)] = [leaf, grad]
    else:
        entry[1] = emit('add', entry[1], grad)


def _deliver(leaf: Any, grad: Any, assigned: set, collected: dict, wanted: set | None) -> None:
    """A leaf's whole gradient: through its hooks once, as torch's AccumulateGrad, then
    into `.grad` (or the results of grad())."""
    grad = _hooked(leaf._hooks, grad)
    if wanted is None:
        _accumulate(leaf, grad, assigned)
        post_accumulate_hooks.run(leaf)
    elif id(leaf) in wanted:
        _add_to(collected, leaf, grad)


def _collect(tensor: Any, grad: Any, assigned: set, collected: dict, wanted: set | None) -> None:
    """One more part of a non-leaf's gradient, for retain_grad() or grad()'s results."""
    if wanted is None:
        _accumulate(tensor, grad, assigned)
    elif id(tensor) in wanted:
        _add_to(collected, tensor, grad)


def _add_to(collected: dict, tensor: Any, grad: Any) -> None:
    from gt.tensor import emit

    key = id(tensor)
    collected[key] = grad if key not in collected else emit('add', collected[key], grad)


def _hooked(hooks: list | None, grad: Any) -> Any:
    """`grad` passed through the tensor's hooks in order; a hook returning None keeps it.
    A replacement of another size or dtype is refused, as torch refuses it: the gradient
    of the wrong shape would otherwise broadcast into the leaves."""
    for hook in hooks or ():
        replaced = hook(grad)
        if replaced is not None:
            if replaced.shape != grad.shape:
                raise RuntimeError(f'hook {_name(hook)!r} has changed the size of value')
            if replaced.dtype != grad.dtype:
                raise RuntimeError(f'hook {_name(hook)!r} has changed the type of value '
                                   f'(was {grad.dtype} got {replaced.dtype})')
            grad = replaced
    return grad


def _name(hook: Callable) -> str:
    return getattr(hook, '__name__', type(hook).__name__)


def retain_grad(tensor: Any) -> None:
    """`tensor.retain_grad()`: a non-leaf's .grad is filled in by backward(), after its
    hooks (a leaf's always is); an in-place update calls it again for the new value."""
    if not tensor.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if tensor.grad_fn is None:
        return  # a leaf's .grad is kept anyway; torch's retains_grad stays False
    tensor._retained = True
    index = tensor.grad_fn.output_ids.index(tensor._id)
    tensor.grad_fn.retained[index] = weakref.ref(tensor)


def register_hook(tensor: Any, hook: Callable, prepend: bool = False) -> 'RemovableHandle':
    """`tensor.register_hook(hook)`: `hook(grad)` runs when the tensor's gradient is
    computed and may return a replacement, as in torch (`prepend`: before the others)."""
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is None:
        if tensor._hooks is None:
            tensor._hooks = []
        hooks = tensor._hooks
    else:
        index = tensor.grad_fn.output_ids.index(tensor._id)
        hooks = tensor.grad_fn.hooks.setdefault(index, [])
    hooks.insert(0, hook) if prepend else hooks.append(hook)
    return RemovableHandle(hooks, hook)


class RemovableHandle:
    def __init__(self, hooks: list, hook: Callable):
        self.hooks, self.hook = hooks, hook

    def remove(self) -> None:
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)

    def __enter__(self) -> 'RemovableHandle':
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.remove()


def first_grad(tensor: Any, grad: Any) -> None:
    """`tensor.grad = grad` where it had none. If `grad` fails on its worker (the loss
    did), the leaf has no gradient again once the client hears of it, as torch's
    backward that raised left it (gt.runtime.reverts). Else a loop that zeroes
    gradients after fetching the loss added every later gradient into the failed one."""
    tensor._grad = grad
    key = id(tensor)
    if key not in _leaves_with_grads:
        _leaves_with_grads[key] = weakref.ref(tensor, lambda _: _leaves_with_grads.pop(key, None))


# Leaves given a gradient, held weakly: `forget_failed_grads` looks through them.
_leaves_with_grads: dict[int, weakref.ref] = {}


def forget_failed_grads(failed: Callable[[int], bool]) -> None:
    """A fetch told of failures (`failed(value id)`): each leaf whose gradient failed, or
    was never made, has none again (see `first_grad`)."""
    for reference in list(_leaves_with_grads.values()):
        tensor = reference()
        grad = None if tensor is None else tensor._grad
        if grad is not None and grad._id is not None and failed(grad._id):
            tensor._grad = None


def _accumulate(tensor: Any, grad: Any, assigned: set) -> None:
    """Add `grad` into `tensor.grad`; each leaf gets a tensor object of its own, since an
    in-place update of one leaf's grad must not change another's. A leaf's is added in
    place, as torch's AccumulateGrad does without create_graph, so a reference to it
    (`g = w.grad` before a second backward) sees the sum."""
    from gt.tensor import emit

    if tensor._grad is None:
        if id(grad) in assigned:
            grad = emit('cast', grad, dtype=grad._type.dtype)
        if grad.ndim >= 2:
            # Laid out as a fresh tensor, as torch's AccumulateGrad keeps a leaf's gradient
            # (in the layout of its leaf, which a worker's values have): a transposed view
            # (attention's `q.transpose(1, 2) @ k`) summed in another order later.
            grad = emit('contiguous', grad)
        assigned.add(id(grad))
        first_grad(tensor, grad)
    elif tensor.grad_fn is None and not grad_state.enabled:
        tensor._grad._rebind(emit('add', tensor._grad, grad))
    else:
        tensor._grad = emit('add', tensor._grad, grad)


def _reachable(starts: list[TapeNode]) -> list[TapeNode]:
    """Nodes reachable from `starts`, latest first: a reverse topological order, since a
    node is always recorded after the nodes that made its inputs."""
    seen = {id(start): start for start in starts}
    stack = list(starts)
    while stack:
        node = stack.pop()
        for tensor in node.inputs:
            parent = tensor.grad_fn
            if parent is not None and id(parent) not in seen:
                seen[id(parent)] = parent
                stack.append(parent)
    return sorted(seen.values(), key=lambda node: node.sequence, reverse=True)


def sum_to_shape(grad: Any, shape: tuple[int, ...], emit: Callable) -> Any:
    """Undo broadcasting: sum `grad` over the dims that broadcasting added or stretched."""
    grad_shape = tuple(grad._type.shape)
    if grad_shape == shape:
        return grad
    extra = len(grad_shape) - len(shape)
    dims = list(range(extra))
    dims += [extra + axis for axis, size in enumerate(shape)
             if size == 1 and grad_shape[extra + axis] != 1]
    if dims:
        grad = emit('sum', grad, dim=dims, keepdim=True)
    return emit('reshape', grad, shape=list(shape))


FLOATING = frozenset({'float16', 'bfloat16', 'float32', 'float64'})
# The op of a gt.autograd.Function's tape node (gt/autograd_function.py): no row of the
# table, since the node's gradient is the user's backward, and its forward left no node.
FUNCTION = 'custom_function'
assert FUNCTION not in OPS


def __getattr__(name: str) -> Any:
    """What lives in modules that import gt.tensor, which imports this one:
    `backward` and `grad` (gt/autograd_entry.py),
    `gt.autograd.Variable` (torch's legacy wrapper, gt/legacy_types.py), `Function` and
    `FunctionCtx` (gt/autograd_function.py), `gradcheck`/`gradgradcheck`
    (gt/gradcheck.py), and torch.autograd's submodules (gt/autograd_submodules.py)."""
    import importlib

    homes = {'Variable': 'gt.legacy_types', 'Function': 'gt.autograd_function',
             'FunctionCtx': 'gt.autograd_function', 'gradcheck': 'gt.gradcheck',
             'gradgradcheck': 'gt.gradcheck', 'backward': 'gt.autograd_entry',
             'grad': 'gt.autograd_entry'}
    if name in homes:
        return getattr(importlib.import_module(homes[name]), name)
    if name in ('function', 'functional', 'grad_mode', 'graph', 'forward_ad'):
        return importlib.import_module('gt.autograd_submodules').SUBMODULES[name]
    raise AttributeError(f"module 'gt.autograd' has no attribute {name!r}")
