"""The lazy Tensor: every operation records a node and returns at once.

Shapes and dtypes are inferred when the op is recorded, so a mistake raises at the
user's line. Values are only computed when something needs them (`.data`, `.numpy()`,
`.item()`, `print`, `bool()`); in-place operators rebind the tensor to a new value.
"""

import warnings
from typing import Any

import numpy as np
import torch

from gt import (
    autograd,
    autograd_entry,
    grad_assignment,
    post_accumulate_hooks,
    signal,
    tensor_offsets,
    views,
)
from gt.grad_mode import grad_mode
from gt.ir import OPS, TensorType, dtypes
from gt.ir.dtypes import FLOATING, TORCH_DTYPES, number_operand_dtype, python_number
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops.creation import check_literal
from gt.plain_attrs import plain_attrs
from gt.runtime import client as connection
from gt.runtime import ownership
from gt.runtime.interrupts import release_when_collected
from gt.signal import current_scope
from gt.tensor_device import DeviceMethods
from gt.tensor_math import MathMethods
from gt.tensor_operators import OperatorMethods
from gt.tensor_shapes import ShapeMethods
from gt.tensor_values import ValueMethods


class Tensor(ValueMethods, MathMethods, ShapeMethods, OperatorMethods, DeviceMethods):
    # NumPy defers to the tensor's reflected operators (`np.float32(0.99) * x` is a
    # Tensor, not an array of x's fetched values), as it does for torch's.
    __array_priority__ = 1000
    __slots__ = ('_id', '_type', '_client', 'requires_grad', '_grad', 'grad_fn', '_retained',
                 '_hooks', '_view', '_views', '_readers', '__weakref__')
    _copies_grad = True  # by copy.deepcopy
    _leaf_of = None  # a LeafStandIn's leaf

    def __init__(self, *data: Any, **placement: Any):
        """torch's legacy constructor: `gt.Tensor([1, 2])` (data, in the default dtype),
        `gt.Tensor(2, 3)` (a shape) or `gt.Tensor()`. GT itself makes tensors with `wrap`."""
        self._id = None  # until the value exists: a failed construction releases nothing
        from gt.legacy_types import construct

        source = construct(dtypes.default_float(), data, placement)
        wrap(source._id, source._type, source._client, self)
        source._id = None  # the value is this tensor's alone

    __del__ = release_when_collected

    # ---- properties ------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return torch.Size(self._type.shape)

    @property
    def dtype(self) -> torch.dtype:
        return TORCH_DTYPES[self._type.dtype]

    @property
    def ndim(self) -> int:
        return len(self._type.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize * self.numel()

    @property
    def retains_grad(self) -> bool:
        return bool(self._retained)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self) -> 'Tensor | None':
        if self._grad is None and self.grad_fn is not None and not self._retained:
            warnings.warn(
                'the .grad of a non-leaf tensor is not filled in by backward(); call '
                '.retain_grad() on it first if you want it (as in PyTorch)', stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: 'Tensor | None') -> None:
        self._grad = value if value is None else grad_assignment.checked(self, value)

    def dim(self) -> int:
        return len(self._type.shape)

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self._type.shape[dim]

    def numel(self) -> int:
        count = 1
        for size in self._type.shape:
            count *= size
        return count

    nelement = numel

    def is_floating_point(self) -> bool:
        return self._type.dtype in FLOATING

    def __len__(self) -> int:
        if not self._type.shape:
            raise TypeError('len() of a 0-d tensor')
        return self._type.shape[0]

    def __iter__(self):
        if not self._type.shape:
            raise TypeError('iteration over a 0-d tensor')  # at iter(), as torch's
        return map(self.__getitem__, range(self._type.shape[0]))

    def __hash__(self) -> int: return id(self)

    # ---- arithmetic ------------------------------------------------------------------
    def __add__(self, other):
        if type(other) is Tensor:  # the commonest case, on the shortest path
            return apply_binary('add', self, other)
        return binary('add', self, other)

    def _rebind(self, new: 'Tensor', uniform: bool = False) -> 'Tensor':
        """Make `new`'s value this tensor's: an in-place op. Through a view it is a write
        into the base too, and the base's views follow (gt/views.py). `uniform`: every
        element gets one value (`fill_`), which may go through an expanded view."""
        self._check_writable()
        base = None if self._view is None else views.before_write(self, new, uniform)
        if self._views is not None and new._type != self._type:
            views.forget(self)  # a new shape or dtype: not a write its views would see
        self._take(new)
        if base is not None:
            views.write_back(self, base)
        elif self._views is not None:
            views.refresh(self)
        return self

    def _check_writable(self) -> None:
        if self.requires_grad and self.is_leaf and grad_mode.enabled:
            raise RuntimeError('a leaf tensor that requires grad cannot be updated in place; '
                               'wrap the update in gt.no_grad()')

    def _stand_in(self) -> 'Tensor':
        """A new tensor that owns this one's value and history, for tape nodes that read
        it, before this one takes another value (`autograd.hand_over`)."""
        if self.grad_fn is None and self.requires_grad:
            old = wrap(self._id, self._type, self._client, _new_object(LeafStandIn))
            old._leaf_of = self
        else:
            old = wrap(self._id, self._type, self._client)
        old.requires_grad, old.grad_fn = self.requires_grad, self.grad_fn
        return old

    def _replace(self, new: 'Tensor') -> 'Tensor':
        """Rebind to `new` without writing: `t_()`, `unsqueeze_()`, `p.data = value`. The
        tensor stops aliasing what it did, and aliases what `new` does."""
        self._check_writable()
        views.forget(self)
        self._take(new)
        views.adopt(self, new)
        return self

    _kept_to_go_back = False  # a Parameter's are, to go back to (gt.runtime.reverts)

    def _take(self, new: 'Tensor', readers: tuple = ()) -> None:
        """Rebind to `new`'s value, with its autograd history. The old value goes to the
        tape nodes that read it (`readers` and those autograd finds), or is released."""
        if new.grad_fn is None and self.grad_fn is not None and new._type == self._type:
            new = _untracked_write(self, new)
        dropped = autograd.hand_over(self, [new.grad_fn, *readers]) is None
        client, old = self._client, self._id
        if old is not None and (new._type is self._type or new._type == self._type):
            dropped = client.reverts.rebinding(client, old, new._id, dropped,
                                               self._kept_to_go_back)
        if dropped:
            client.release(old)
        if new.grad_fn is not None:
            self.requires_grad = True
        elif self.grad_fn is not None:
            self.requires_grad = False  # a non-leaf rebound to a new shape or dtype
        self._id, self._type, self.grad_fn = new._id, new._type, new.grad_fn
        new._id = None
        if self._retained:
            if self.grad_fn is None:
                self._retained = False
            else:
                autograd.retain_grad(self)

    # ---- the rest of torch -----------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        """A torch Tensor method GT has no op for runs by name (gt/fallback.py)."""
        from gt import fallback
        return fallback.method(self, name)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        """`torch.sin(x)`, `F.pad(x, ...)` on GT tensors record GT ops, as gt.sin(x) does."""
        from gt import fallback
        return fallback.torch_function(func, args, kwargs or {})

    # ---- autograd --------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        autograd_entry.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        return autograd.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        return post_accumulate_hooks.register(self, hook)

    def __deepcopy__(self, memo: dict) -> 'Tensor':
        """`copy.deepcopy(model)` (an EMA or target network, a best-so-far snapshot): a
        tensor of the same class with a copy of the value, made on the worker, and of
        `.grad` (a Parameter's is not copied: torch's Parameter copies value and
        requires_grad only); as in torch, only leaves can be copied."""
        if not self.is_leaf:
            raise RuntimeError('Only Tensors created explicitly by the user (graph leaves) '
                               'support the deepcopy protocol at the moment')
        with autograd.no_grad():
            value = self.clone()
        copied = wrap(value._id, value._type, value._client, object.__new__(type(self)))
        value._id = None  # the clone's value is the copy's alone
        copied.requires_grad = self.requires_grad
        memo[id(self)] = copied
        if self._grad is not None and self._copies_grad:
            copied._grad = self._grad.__deepcopy__(memo)
        return copied

    def __copy__(self) -> 'Tensor':
        return self.__deepcopy__({})

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled (torch.save, pickle, multiprocessing) as its value, a CPU torch.Tensor:
        a GT tensor names a value of this session on a worker, which another process or
        a later run cannot reach. A forked child cannot fetch its parent's values: the
        pickle raises when loaded (a DataLoader worker's result raises in the parent)."""
        if self._client.pid != ownership.process_id():
            return ownership.refuse_parents, (self._client.pid,)
        return self._value().requires_grad_(self.requires_grad and self.is_leaf) \
            .__reduce_ex__(protocol)

    def detach(self) -> 'Tensor':
        """The same values with no history, sharing them as torch's shares storage: no
        copy is made, and a write through either shows in the other (gt/views.py)."""
        return views.mark(views.DETACH.take(self), self, views.DETACH)

    def detach_(self) -> 'Tensor':
        """No history from now on; what was recorded from it keeps it (`h.detach_()`
        between a forward and its backward, in truncated BPTT)."""
        if self._view is not None and self.grad_fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self.grad_fn is not None:
            alias = views.DETACH.take(self)  # the same value under a second id, no copy
            if autograd.hand_over(self, []) is not None:  # readers keep the old id
                self._id, alias._id = alias._id, None
        self.grad_fn, self.requires_grad = None, False
        return self

    def requires_grad_(self, requires_grad: bool = True) -> 'Tensor':
        autograd.set_requires_grad(self, requires_grad)
        return self

    def retain_grad(self) -> None:
        autograd.retain_grad(self)



def _untracked_write(tensor: Tensor, new: Tensor) -> Tensor:
    """`new`'s values with `tensor`'s history: a write that autograd does not see (under
    no_grad, through `detach()` or `.data`), after which torch keeps the grad_fn."""
    with autograd.enable_grad():
        return apply('untracked_write', [tensor, new])


# ---- recording ops -------------------------------------------------------------------------
# Type rules, memoized by op, input types and (hashable) attrs: loops apply the same ops
# to the same types. Type rules are pure, so a remembered answer is the answer.
_inferred: dict[tuple, tuple] = {}
INFERRED_KEPT = 65536  # shapes that vary forever (say, sequence lengths) must not grow it


def _remember(key: tuple, types: tuple) -> None:
    if len(_inferred) >= INFERRED_KEPT:
        _inferred.clear()
    _inferred[key] = types


def forget_inferred_types() -> None:
    """The default dtype changed (gt.set_default_dtype): an integer's true quotient, a
    float range or a Python float's tensor has a new type."""
    _inferred.clear()
    _last_binary.clear()
    _literal_dtypes.clear()


_new_object = object.__new__


class LeafStandIn(Tensor):
    """Holds a leaf's old value for the tape nodes that read it before it was written
    (autograd.hand_over); their gradients still go to the leaf, as torch's do."""

    __slots__ = ('_leaf_of',)


def wrap(value_id: int, type_: TensorType, client: Any, tensor: Tensor | None = None) -> Tensor:
    """The Tensor naming value `value_id` of `client`'s session: how GT makes every
    tensor (`tensor`, when given, is an allocated Tensor or subclass to fill in)."""
    if tensor is None:
        tensor = _new_object(Tensor)
    tensor._id = value_id
    tensor._type = type_
    tensor._client = client
    tensor.requires_grad = False
    tensor._grad = None
    tensor.grad_fn = None
    tensor._retained = False
    tensor._hooks = None  # a leaf's gradient hooks (a non-leaf's live on its tape node)
    tensor._view = None  # what it is a view of (gt/views.py)
    tensor._views = None  # weak references to its views
    tensor._readers = None  # without history: weak references to the tape nodes reading it
    return tensor


def _infer(op: str, input_types: tuple, attrs: dict) -> tuple:
    try:
        return OPS[op].infer(input_types, **attrs)
    except ValueError as error:
        if isinstance(error, RuntimeError):
            raise
        raise InvalidOpError(*error.args) from None


def apply(op: str, inputs: list[Tensor], **attrs: Any) -> Any:
    """Record `op` on `inputs`; return the result tensor (or a list of them)."""
    input_types = tuple([t._type for t in inputs])
    if attrs:
        try:
            # Types too: 1, 1.0 and True are equal as keys but not as clamp bounds.
            key = (op, input_types, tuple(attrs.items()), tuple(map(type, attrs.values())))
            types = _inferred.get(key)
        except TypeError:  # a list among the attrs: not hashable, so not memoized
            key, types = None, None
    else:
        key = (op, input_types, (), ())
        types = _inferred.get(key)
    if types is None:
        try:
            types = _infer(op, input_types, attrs)
        except (InvalidOpError, TypeError):
            plain = plain_attrs(attrs)  # `x.sum(gt.tensor(1))`: its dim as torch takes it
            if plain is attrs:
                raise
            attrs, key, types = plain, None, _infer(op, input_types, plain)  # not remembered
        if key is not None:
            _remember(key, types)
    if inputs:
        client = inputs[0]._client
    else:  # a tensor made here: placed by the signal open, if any
        client, scope = connection.current(), current_scope()
        if scope is not None:
            signal.check_created(scope, types[0].shape, [w['index'] for w in client.workers])
    for tensor in inputs:
        if tensor._client is not client:
            ownership.refuse_mixed_sessions(client, tensor._client)
    first = client.record(op, [t._id for t in inputs], attrs, len(types), current_scope())
    if len(types) == 1:
        result = wrap(first, types[0], client)
        outputs = [result]
    else:
        result = outputs = [wrap(first + k, t, client) for k, t in enumerate(types)]
    if grad_mode.enabled:
        for tensor in inputs:
            if tensor.requires_grad:
                autograd.record(op, inputs, outputs, attrs)
                break
    return result


# Each binary op's last input types and result types. A loop applies an op to the same
# type objects again and again (a result's type is the memo's own object), and checking
# identity costs less than hashing the nested key: measured, 110 ns of an add's 1.45 us.
_last_binary: dict[str, tuple] = {}


def apply_binary(op: str, left: Tensor, right: Tensor) -> Tensor:
    """`apply` for the commonest case, two tensors and no attributes, kept lean because
    elementwise loops run through it."""
    left_type, right_type = left._type, right._type
    last = _last_binary.get(op)
    if last is not None and last[0] is left_type and last[1] is right_type:
        types = last[2]
    else:
        key = (op, (left_type, right_type), (), ())
        types = _inferred.get(key)
        if types is None:
            types = _infer(op, (left_type, right_type), {})
            _remember(key, types)
        _last_binary[op] = (left_type, right_type, types)
    client = left._client
    if right._client is not client:
        ownership.refuse_mixed_sessions(client, right._client)
    out = wrap(client.record_binary(op, left._id, right._id, current_scope()), types[0], client)
    if (left.requires_grad or right.requires_grad) and grad_mode.enabled:
        autograd.record(op, [left, right], [out], {})
    return out


def emit(op: str, *operands: Any, **attrs: Any) -> Any:
    """Record `op` on tensors or numbers; what gradient rules and gt.nn build with."""
    like = None
    for operand in operands:
        if isinstance(operand, Tensor):
            like = operand
            break
    return apply(op, [x if type(x) is Tensor else as_tensor(x, like) for x in operands],
                 **attrs)


def creation(op: str, shape: tuple[int, ...], dtype: str, requires_grad: bool = False,
             **attrs: Any) -> Tensor:
    result = apply(op, [], shape=list(shape), dtype=dtype, **attrs)
    if requires_grad:
        result.requires_grad_()
    return result


def binary(op: str, left: Any, right: Any) -> Tensor:
    if type(left) is not Tensor or type(right) is not Tensor:
        tensor = left if isinstance(left, Tensor) else right
        number = right if tensor is left else left
        if op == 'sub' and isinstance(number, bool):
            raise InvalidOpError('subtraction with a bool is not supported; use ~ or logical_not')
        if (op == 'pow_number' and isinstance(number, int) and number < 0
                and tensor._type.dtype not in FLOATING):
            raise RuntimeError('integers to negative integer powers are not allowed')
        if type(number) is int:
            number = dtypes.operand_int(op, number, tensor._type.dtype)
            left, right = (tensor, number) if tensor is left else (number, tensor)
        offset = ((op == 'add' or (op == 'sub' and tensor is left))
                  and tensor_offsets.counts(tensor, number))
        left, right = as_tensor(left, tensor, op), as_tensor(right, tensor, op)
        if offset:
            result = apply_binary(op, left, right)
            tensor_offsets.note(result, tensor, number if op == 'add' else -number)
            return result
    return apply_binary(op, left, right)


def as_tensor(value: Any, like: Tensor | None = None, op: str | None = None) -> Tensor:
    """A Tensor for `value`. A Python number becomes a 0-d constant in the dtype that op
    `op` with tensor `like` computes in, which is how torch treats a number operand."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.generic):
        value = python_number(value)  # `np.float32(0.99) * x`: a number, as torch has it
    if isinstance(value, (bool, int, float)) and like is not None:
        key = (like._type.dtype, bool(like._type.shape), type(value), op == 'div')
        dtype = _literal_dtypes.get(key) or _literal_dtypes.setdefault(
            key, number_operand_dtype(value, *key[:2], key[3]))
        check_literal('scalar', value, dtype)
        # What apply('scalar', ...) would record, without inferring a type per literal
        # (each has its own slot, so none would be remembered).
        client = like._client
        attrs = {'dtype': dtype, 'slot': client.add_literal(value)}
        return wrap(client.record('scalar', [], attrs, 1, current_scope()),
                    _SCALAR_TYPES[dtype], client)
    from gt.creation import tensor

    return tensor(value)


_literal_dtypes: dict[tuple, str] = {}
_SCALAR_TYPES = {dtype: TensorType((), dtype) for dtype in TORCH_DTYPES}
