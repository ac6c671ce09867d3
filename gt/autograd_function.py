"""`gt.autograd.Function`: torch's custom autograd functions, on GT's tape.

`apply` runs the user's `forward` under no_grad, as torch does, so its ops leave no tape
nodes; when an input requires grad (in grad mode), one `FunctionNode` stands for the
call, and its gradient rule, which `backward()` calls as it calls an op's, runs the
user's `backward`. Tapes holding one run their rules each time (no backward replay).
"""

import functools
import inspect
import warnings
import weakref
from typing import Any, Callable, NamedTuple

from gt.autograd import FLOATING, FUNCTION, TapeNode, retain_grad
from gt.grad_mode import grad_mode, no_grad
from gt.tensor import Tensor, apply, creation, wrap

FREED = ('Trying to backward through the graph a second time (or directly access saved '
         'tensors after they have already been freed). Saved intermediate values of the graph '
         'are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if '
         'you need to backward through the graph a second time or if you need to access saved '
         'tensors after calling backward.')


class FunctionCtx:
    """torch's `ctx`: what `forward` (or `setup_context`) leaves for `backward`. Any
    other attribute the user sets stays on it."""

    to_save: tuple = ()
    dirty_tensors: tuple = ()
    non_differentiable: tuple = ()
    materialize_grads = True
    needs_input_grad: tuple = ()
    _node: weakref.ref | None = None  # the call's tape node, once taped

    def save_for_backward(self, *tensors: Any) -> None:
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Kept for a `jvp`, as torch keeps them; GT has no forward-mode AD to call one."""
        for tensor in tensors:
            if not (isinstance(tensor, Tensor) or tensor is None):
                raise AssertionError('save_for_forward expects all arguments to be tensors; '
                                     'you should save non-tensors as attributes on ctx.')
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        if self._node is None:  # not taped: nothing to differentiate, the tuple as given
            return tuple(self.to_save)
        node = self._node()
        if node is None or node.freed:
            raise RuntimeError(FREED)
        return node.unpack_saved()


class Function:
    """torch.autograd.Function: subclass it with static `forward(ctx, *args)` and
    `backward(ctx, *grads)` (or `forward(*args)` and `setup_context(ctx, inputs,
    output)`), then call `apply(*args)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f'{type(self)} should not be instantiated. Methods on autograd functions '
                      'are all static, so you should invoke them on the class itself.',
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError('Legacy autograd function with non-static forward method is '
                           'deprecated. Please use new-style autograd function with static '
                           'forward method. (Example: https://pytorch.org/docs/stable/'
                           'autograd.html#torch.autograd.Function)')

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError('You must implement the forward function for custom '
                                  'autograd.Function.')

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        raise NotImplementedError('setup_context is not implemented.')

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError('You must implement either the backward or vjp method for '
                                  'your custom autograd.Function to use it with backward mode '
                                  'AD.')

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        from gt.fallback import gt_operands  # gt.fallback imports this module

        args = gt_operands(*args)  # a torch tensor (a batch's labels) joins GT
        separate = cls.setup_context is not Function.setup_context
        if separate:  # setup_context sees every argument, defaults too, as torch's does
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        taped = grad_mode.enabled and any(ctx.needs_input_grad)
        before = [_Argument(a, a._id, a._type, a.grad_fn, a.requires_grad)
                  if isinstance(a, Tensor) else None for a in args]
        with no_grad():
            if separate:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        for index, tensor in enumerate(ctx.to_save):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f'save_for_backward can only save variables, but argument '
                                f'{index} is of type {type(tensor).__name__}')
        if not taped:
            return output
        return _tape(cls, ctx, before, output)


class _Argument(NamedTuple):
    """A tensor argument as it was before `forward` ran (it may update it in place)."""

    tensor: Tensor
    value_id: int
    value_type: Any
    grad_fn: Any
    requires_grad: bool


def _tape(function: type, ctx: FunctionCtx, before: list, output: Any) -> Any:
    """Put the call on the tape: the outputs get a `FunctionNode` as their grad_fn."""
    results = list(output) if isinstance(output, tuple) else [output]
    dirty = {id(tensor) for tensor in ctx.dirty_tensors}
    _check_in_place(function, before, results, dirty)
    routes, inputs = [], []
    for position, argument in enumerate(before):
        if argument is not None and argument.requires_grad:
            routes.append(position)
            inputs.append(_prior(argument) if id(argument.tensor) in dirty else argument.tensor)
    arguments = {id(argument.tensor) for argument in before if argument is not None}
    non_differentiable = {id(tensor) for tensor in ctx.non_differentiable}
    outputs, slots, differentiable = [], [], []
    for slot, value in enumerate(results):
        if not isinstance(value, Tensor):
            continue  # numbers, None: passed through, and given no gradient
        differentiable.append(value._type.dtype in FLOATING and id(value) not in non_differentiable)
        if id(value) not in dirty and (id(value) in arguments or value.requires_grad
                                       or any(value is other for other in outputs)):
            # an input returned as is (torch returns a view of it), a tensor returned
            # twice or one with a history of its own: the node's output is a new tensor
            value = results[slot] = _alias(value)
        outputs.append(value)
        slots.append(slot)
    saved = []
    for tensor in ctx.to_save:
        if tensor is None:
            saved.append(None)
            continue
        output_index = next((i for i, out in enumerate(outputs) if out is tensor), None)
        if output_index is not None:
            tensor = _alias(tensor)  # the node must not hold its own output: no cycle
        saved.append((len(inputs), output_index))
        inputs.append(tensor)
    vars(ctx).pop('to_save', None)  # the node holds them now, and frees them with the tape
    node = FunctionNode(function, ctx, [argument is not None for argument in before], routes,
                        inputs, outputs, slots, len(results), differentiable, saved)
    for tensor, flag in zip(outputs, differentiable):
        if flag:
            tensor.requires_grad, tensor.grad_fn = True, node
            if tensor._retained:  # a dirty input that retains its grad: now this node's
                retain_grad(tensor)
    ctx._node = weakref.ref(node)
    return tuple(results) if isinstance(output, tuple) else results[0]


def _check_in_place(function: type, before: list, results: list, dirty: set) -> None:
    """torch's checks of inputs marked dirty, and GT's own: an input with history that
    `forward` rebound in place, unmarked, would lose its gradient."""
    for position, argument in enumerate(before):
        if argument is None:
            continue
        if id(argument.tensor) in dirty:
            if argument.requires_grad and argument.grad_fn is None:
                raise RuntimeError('a leaf Variable that requires grad has been used in an '
                                   'in-place operation.')
            if not any(value is argument.tensor for value in results):
                raise RuntimeError('Some elements marked as dirty during the forward method '
                                   'were not returned as output. The inputs that are modified '
                                   'inplace must all be outputs of the Function.')
        elif argument.tensor._id != argument.value_id and argument.grad_fn is not None:
            raise RuntimeError(f'{function.__name__}.forward updated input {position} in '
                               'place without ctx.mark_dirty(): its gradient would be lost; '
                               'mark it dirty and return it')


class _Prior(Tensor):
    """A dirty input's value from before `forward` updated it, through which the tape
    reaches that value's history. The update released the value: this names it for the
    walk and does not own it."""

    __slots__ = ()

    def __del__(self) -> None:
        pass


def _prior(argument: _Argument) -> Tensor:
    tensor = argument.tensor
    prior = wrap(argument.value_id, argument.value_type, tensor._client, object.__new__(_Prior))
    prior.requires_grad, prior.grad_fn = argument.requires_grad, argument.grad_fn
    return prior


def _alias(tensor: Tensor) -> Tensor:
    """A new tensor of the same value: a cast to its own dtype, which the worker's
    `Tensor.to` answers without copying."""
    with no_grad():
        return apply('cast', [tensor], dtype=tensor._type.dtype)


class FunctionNode(TapeNode):
    """One `Function.apply` on the tape. `inputs` holds the arguments that require grad
    (their positions in `routes`), then the tensors saved for backward (`saved`: their
    positions there, and which output each is), so a walk frees them and an in-place
    update of one after the call raises, as for an op's inputs. The outputs are the
    forward's tensors (`slots`: their places in its result of `count`), then aliases of
    saved outputs that a taped backward read (`aliases`: which output each stands for)."""

    __slots__ = ('function', 'ctx', 'tensors', 'routes', 'slots', 'count', 'differentiable',
                 'saved', 'aliases')

    def __init__(self, function: type, ctx: FunctionCtx, tensors: list[bool], routes: list[int],
                 inputs: list, outputs: list, slots: list[int], count: int,
                 differentiable: list[bool], saved: list) -> None:
        super().__init__(FUNCTION, inputs, outputs, {'function': function.__name__})
        self.function, self.ctx, self.tensors, self.routes = function, ctx, tensors, routes
        self.slots, self.count, self.differentiable = slots, count, differentiable
        self.saved, self.aliases = saved, []

    def name(self) -> str:
        return self.shown_as or f'{self.function.__name__}Backward'

    def gradient(self, emit: Callable, inputs: list, grads: list, function: str) -> list:
        """The rule `backward()` calls: the user's backward on the output gradients (zeros
        for missing ones unless ctx.set_materialize_grads(False)), checked as torch checks
        it, as one gradient per argument that requires grad."""
        grads = list(grads)
        for extra, index in enumerate(self.aliases, start=len(self.slots)):
            if grads[extra] is not None:
                grads[index] = grads[extra] if grads[index] is None else \
                    emit('add', grads[index], grads[extra])
        arguments: list = [None] * self.count
        for index, slot in enumerate(self.slots):
            grad = grads[index]
            if grad is None and self.ctx.materialize_grads:
                value_type = self.output_types[index]
                grad = creation('zeros', value_type.shape, value_type.dtype)
            arguments[slot] = grad
        result = _user_backward(self.function)(self.ctx, *arguments)
        return self._input_grads(result if isinstance(result, tuple) else (result,), inputs)

    def _input_grads(self, result: tuple, inputs: list) -> list:
        expected = len(self.tensors)
        if len(result) > expected and all(grad is None for grad in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(f'function {self.name()} returned an incorrect number of '
                               f'gradients (expected {expected}, got {len(result)})')
        for position, (grad, is_tensor) in enumerate(zip(result, self.tensors)):
            if grad is None:
                continue
            if not is_tensor:
                raise RuntimeError(f'function {self.name()} returned a gradient different than '
                                   f'None at position {position + 1}, but the corresponding '
                                   'forward input was not a Variable')
            if not isinstance(grad, Tensor):
                kind = type(grad)
                name = kind.__name__ if kind.__module__ == 'builtins' else \
                    f'{kind.__module__}.{kind.__name__}'
                raise RuntimeError(f'expected Variable or None (got {name})')
        grads = []
        for position, tensor in zip(self.routes, inputs):
            grad = result[position]
            if grad is not None and not _expandable(tensor._type.shape, grad._type.shape):
                raise RuntimeError(f'Function {self.name()} returned an invalid gradient at index '
                                   f'{position} - got {list(grad._type.shape)} but expected '
                                   f'shape compatible with {list(tensor._type.shape)}')
            grads.append(grad)
        return grads

    def unpack_saved(self) -> tuple:
        """`ctx.saved_tensors`. In a taped backward (create_graph), a saved output comes
        back as an alias with this node as its grad_fn, so its second derivative does."""
        unpacked = []
        for entry in self.saved:
            if entry is None:
                unpacked.append(None)
                continue
            position, output = entry
            tensor = self.inputs[position]
            if output is not None and grad_mode.enabled and self.differentiable[output]:
                tensor = _alias(tensor)
                tensor.requires_grad, tensor.grad_fn = True, self
                self.output_ids.append(tensor._id)
                self.output_types.append(tensor._type)
                self.aliases.append(output)
            unpacked.append(tensor)
        return tuple(unpacked)


def _user_backward(function: type) -> Callable:
    """The function's `backward`, or its `vjp` (torch's other name for it)."""
    overrides_backward = function.backward is not Function.backward
    overrides_vjp = function.vjp is not Function.vjp
    if overrides_backward and overrides_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                           'allowed. You should only implement one of them.')
    return function.vjp if overrides_vjp else function.backward


def _expandable(shape: tuple, grad_shape: tuple) -> bool:
    """Whether `shape` broadcasts to `grad_shape`, so the gradient sums back to it."""
    if len(shape) > len(grad_shape):
        return False
    return all(size in (1, grad_size) for size, grad_size in
               zip(reversed(shape), reversed(grad_shape)))


def once_differentiable(backward: Callable) -> Callable:
    """torch's decorator of a `backward` that is not differentiable itself: it runs under
    no_grad, and with create_graph its results lead to a node that raises when a second
    derivative reaches it (GT walks every node reached, so it raises where torch may
    drop that term)."""

    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with no_grad():
            outputs = backward(ctx, *grads)
        if not grad_mode.enabled or not any(isinstance(grad, Tensor) and grad.requires_grad
                                            for grad in grads):
            return outputs
        results = outputs if isinstance(outputs, tuple) else (outputs,)
        return _DelayedError.apply(*[_requiring_grad(result) for result in results])

    return wrapper


def _requiring_grad(value: Any) -> Any:
    if not isinstance(value, Tensor) or value._type.dtype not in FLOATING:
        return value
    value = _alias(value)
    value.requires_grad = True
    return value


class _DelayedError(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, *values: Any) -> tuple:
        return values

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise RuntimeError('trying to differentiate twice a function that was marked with '
                           '@once_differentiable')
