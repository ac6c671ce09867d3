"""Any torch function on GT tensors: recorded as a `torch_call` node, run by name.

`gt.einsum(...)`, `x.topk(3)`, `gt.nn.functional.pad(...)`, `torch.sin(x)` (through
`__torch_function__`) all land here when GT has no op of its own. The call is checked
against the allow-list, its output types come from running it on meta tensors, and it is
recorded lazily like any op; gradients come from `torch_vjp` (see
gt/ir/ops/torch_calls.py). Two kinds of call need the values:

- a result whose *shape* depends on them (`nonzero`, `unique`, `x[mask]`): a
  `torch_sizes` node measures it on the worker, the client fetches those few integers
  (one round trip), then records the call with its sizes and goes on recording. The
  worker runs the function twice (once to measure);
- a result that is not a tensor at all (`torch.equal`, `allclose`): its inputs are
  fetched and the function runs here, as `.item()` would.
"""

import functools
import operator
from typing import Any

import numpy as np
import torch

from gt import views
from gt.autograd import no_grad
from gt.autograd_function import Function
from gt.grad_mode import grad_mode
from gt.ir import torch_functions
from gt.ir.dtypes import FLOATING, INTEGRAL, TORCH_DTYPES
from gt.ir.ops import torch_calls
from gt.ir.ops.torch_calls import NeedsData, signature
from gt.ir.torch_arguments import encode, flatten, rebuild
from gt.runtime import client as connection
from gt.snapshot import Snapshot, gt_form
from gt.tensor import Tensor, apply
from gt.tensor_operators import OperatorMethods

IGNORED_KEYWORDS = ('device', 'pin_memory', 'layout')  # GT places tensors itself


def call(name: str, args: tuple, kwargs: dict) -> Any:
    """`recorded_call`, whose result aliases its first argument where torch's would
    (`x.diagonal()`, `x.narrow(...)`, `x.unbind()`: gt/views.py)."""
    result = recorded_call(name, args, kwargs)
    namespace, _, function = name.rpartition('.')
    # torch's and Tensor's view functions, and linalg's diagonal (not `F.unfold`, im2col).
    if (function in views.SCATTERS and args and isinstance(args[0], Tensor)
            and (namespace in ('torch', 'Tensor') or name == 'torch.linalg.diagonal')):
        outputs = result if isinstance(result, tuple) else (result,)
        for output, value in enumerate(outputs):
            step = views.call_step(name, args[1:], kwargs,
                                   output if isinstance(result, tuple) else None)
            if step is not None and isinstance(value, Tensor):
                views.mark(value, args[0], step)
    return result


def recorded_call(name: str, args: tuple, kwargs: dict) -> Any:
    """Record torch function `name` on `args` and `kwargs`; return what torch would.
    `torch.f(x, ...)` with a GT tensor `x` whose class has a method `f` of its own (a
    row) is `x.f(...)`: torch's functions and methods share their signatures."""
    torch_functions.resolve(name)
    kwargs = {k: v for k, v in kwargs.items() if k not in IGNORED_KEYWORDS}
    out = kwargs.pop('out', None)
    if out is not None:
        return written_out(recorded_call(name, args, kwargs), out, name)
    namespace_name, _, attribute = name.rpartition('.')
    if namespace_name == 'torch' and args and isinstance(args[0], Tensor):
        own = _own_method(attribute)
        if own is not None:
            return own(*args, **kwargs)
    if kwargs.get('generator') is not None:
        return _drawn_here(name, args, kwargs)
    kwargs.pop('generator', None)
    requires_grad = bool(kwargs.pop('requires_grad', False))
    args, writes_input = _without_inplace(name, args, kwargs)
    inputs: list[Tensor] = []
    positions: dict[int, int] = {}

    def tensor_index(value: Any) -> int | None:
        if isinstance(value, (torch.Tensor, np.ndarray)):
            from gt.creation import tensor
            value = tensor(value)
        if not isinstance(value, Tensor):
            return None
        if id(value) not in positions:
            positions[id(value)] = len(inputs)
            inputs.append(value)
        return positions[id(value)]

    wire_args = [encode(arg, tensor_index) for arg in args]
    wire_kwargs = {key: encode(value, tensor_index) for key, value in kwargs.items()}
    types = tuple(tensor._type for tensor in inputs)
    random = torch_functions.draws(name, kwargs)
    try:
        found = signature(name, types, wire_args, wire_kwargs, factory=not inputs)
    except NeedsData:
        return _run_here(name, args, kwargs, inputs, writes_input)
    if random and found.types is None and not writes_input:
        counted = _counts_as_numbers(args, kwargs)
        if counted is not None:  # `multinomial(p, lengths[0])`: torch reads the count too
            counted_args, counted_kwargs = counted
            return recorded_call(name, counted_args,
                                 dict(counted_kwargs, requires_grad=requires_grad))
    if not flatten(found.skeleton):
        if torch_functions.in_place(name):
            raise TypeError(f'{name} updates no tensor')
        return found.skeleton  # metadata: is_floating_point, size, dim...
    attrs = dict(fn=name, args=wire_args, kwargs=wire_kwargs)
    if name in torch_calls.GRAD_MODE_KERNELS and grad_mode.enabled:
        attrs['grad_enabled'] = True
    if random:
        tracked = grad_mode.enabled and any(t.requires_grad for t in inputs)
        if not tracked:
            outputs = apply('torch_random', inputs, **attrs)
        elif _draws_without_gradient(name, found.dtypes):
            with no_grad():
                outputs = apply('torch_random', inputs, **attrs)
        elif name in ZERO_GRADIENT_DRAWS and not (name.endswith('bernoulli') and (
                len(args) > 1 or 'p' in kwargs)):
            outputs = _DrawnWithZeroGradient.apply(
                lambda: apply('torch_random', inputs, **attrs), *inputs)
        else:
            raise NotImplementedError(
                f'{name}: GT has no gradient for this random torch function it runs by name; '
                'use GT\'s own form (gt.nn.functional.dropout) or call it under gt.no_grad()')
    elif not inputs:
        outputs = apply('torch_factory', [], **attrs)
    elif found.types is None:
        sizes = apply('torch_sizes', inputs, **attrs).tolist()
        outputs = apply('torch_call', inputs, sizes=sizes, **attrs)
    else:
        outputs = apply('torch_call', inputs, **attrs)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    if any(output.grad_fn is not None for output in outputs):
        _untrack_constant_outputs(name, found, inputs, wire_args, wire_kwargs, outputs)
    if torch_functions.in_place(name) or writes_input:
        target = inputs[wire_args[0][1]]
        target._rebind(outputs[0])
        return None if name.endswith('__setitem__') else target
    if requires_grad:
        for output in outputs:
            output.requires_grad_()
    return rebuild(found.skeleton, iter(outputs))


# id(signature) -> (that signature, {which inputs require grad: which outputs torch
# makes require grad, or None where meta tensors cannot tell}). A call's memoized
# signature stands for its function, types and arguments, whose key is costly to build
# again (a conv2d's took a third of its recording).
_requiring_outputs: dict[int, tuple[Any, dict]] = {}
REQUIRING_KEPT = 16384


def _untrack_constant_outputs(name: str, found: Any, inputs: list[Tensor], args: list,
                              kwargs: dict, outputs: list[Tensor]) -> None:
    """torch makes an output require grad only where it depends on an input that does
    (`broadcast_tensors(a, b)` with `a` alone requiring grad: the first output alone;
    `x.new_zeros(3)`: none). The tape node holds all of a call's outputs, so the others
    leave it here, as torch says on meta tensors that require grad as these inputs do."""
    entry = _requiring_outputs.get(id(found))
    if entry is None or entry[0] is not found:
        if len(_requiring_outputs) >= REQUIRING_KEPT:
            _requiring_outputs.clear()
        entry = _requiring_outputs[id(found)] = (found, {})
    requiring = tuple([tensor.requires_grad for tensor in inputs])
    answers = entry[1]
    if requiring not in answers:
        answers[requiring] = _torch_requiring(name, inputs, requiring, args, kwargs)
    answer = answers[requiring]
    if answer is None or len(answer) != len(outputs):
        return  # no answer: every floating output keeps the gradient the tape gives it
    for output, requires in zip(outputs, answer):
        if not requires:
            output.requires_grad, output.grad_fn = False, None


def _torch_requiring(name: str, inputs: list[Tensor], requiring: tuple[bool, ...],
                     args: list, kwargs: dict) -> tuple[bool, ...] | None:
    tensors = [torch.empty(tensor._type.shape, dtype=TORCH_DTYPES[tensor._type.dtype],
                           device='meta').requires_grad_(requires)
               for tensor, requires in zip(inputs, requiring)]
    try:
        with torch.enable_grad():
            result = torch_calls.call(name, tensors, args, kwargs)
    except Exception:  # noqa: BLE001 - no meta kernel, or one that needs the values
        return None
    return tuple(output.requires_grad for output in flatten(result))


def _without_inplace(name: str, args: tuple, kwargs: dict) -> tuple[tuple, bool]:
    """`F.leaky_relu(x, inplace=True)` writes its result into `x`: GT records the pure
    call and rebinds `x` to its result, as for `x.add_(y)`. Updates `kwargs`; returns
    the positional arguments and whether the input is written."""
    position = torch_functions.inplace_position(name)
    if position is None or not args or not isinstance(args[0], Tensor):
        return args, False
    if kwargs.get('inplace'):
        kwargs['inplace'] = False
        return args, True
    if len(args) > position and args[position]:
        return (*args[:position], False, *args[position + 1:]), True
    return args, False


# Draws whose gradient is none (an index: REINFORCE's `multinomial(probs, 1)`) or zero
# (`bernoulli(p)`): from probabilities that require grad, they are drawn as they are.
UNDIFFERENTIATED_DRAWS = frozenset({'multinomial', 'bernoulli'})


def _drawn_here(name: str, args: tuple, kwargs: dict) -> Any:
    """A draw from a `torch.Generator` the script made (`randperm(n, generator=g)` for a
    reproducible split): that generator lives in this process, so the call runs here on
    the fetched inputs and advances it exactly as torch would; the result is uploaded,
    and an in-place draw (`x.normal_(generator=g)`) rebinds its tensor to it."""
    if not isinstance(kwargs['generator'], torch.Generator):
        raise TypeError(f'{name}: generator= must be a torch.Generator, got '
                        f'{type(kwargs["generator"]).__name__}')
    requires_grad = bool(kwargs.pop('requires_grad', False))
    inputs: list[Tensor] = []
    _collect_tensors((args, kwargs), inputs)
    if grad_mode.enabled and any(t.requires_grad for t in inputs):
        if name.rsplit('.', 1)[-1] not in UNDIFFERENTIATED_DRAWS:
            raise NotImplementedError(f'{name}: GT has no gradient for a draw from a '
                                      'torch.Generator; call it under gt.no_grad()')
        with no_grad():
            return _run_here(name, args, kwargs, inputs)
    result = _run_here(name, args, kwargs, inputs)  # which writes an in-place draw's tensor
    if requires_grad and not torch_functions.in_place(name):
        result.requires_grad_()
    return result


def _collect_tensors(item: Any, found: list[Tensor]) -> None:
    if isinstance(item, Tensor):
        if all(t is not item for t in found):
            found.append(item)
    elif isinstance(item, dict):
        _collect_tensors(list(item.values()), found)
    elif isinstance(item, (list, tuple)):
        for element in item:
            _collect_tensors(element, found)


def _run_here(name: str, args: tuple, kwargs: dict, inputs: list[Tensor],
              writes_input: bool = False) -> Any:
    """Fetch the inputs and run the function in this process, for results that are not
    tensors of a shape meta tensors can tell. A call that writes its first argument
    (`x[mask_0d] = v`, Wishart's resampling of a singular draw) writes the fetched copy,
    which the GT tensor then takes: the write had been lost."""
    values = connection.current().fetch([t._id for t in inputs]) if inputs else []
    local = {id(tensor): value for tensor, value in zip(inputs, values)}

    def swap(item: Any) -> Any:
        if isinstance(item, Tensor):
            return local[id(item)]
        if isinstance(item, (list, tuple)) and type(item) in (list, tuple):
            return type(item)(swap(x) for x in item)
        return item

    result = torch_functions.resolve(name)(*swap(list(args)),
                                           **{key: swap(value) for key, value in kwargs.items()})
    writes = torch_functions.in_place(name) or writes_input
    if not writes and not flatten(result):
        return result
    if grad_mode.enabled and any(t.requires_grad for t in inputs):
        raise NotImplementedError(f'{name}: GT cannot differentiate a function it has to run '
                                  'outside the cluster (no shape rule in torch for it)')
    from gt.creation import tensor
    if writes:
        target = args[0]
        target._rebind(tensor(result if writes_input else local[id(target)]))
        return None if name.endswith('__setitem__') else target
    return rebuild(result, iter([tensor(t) for t in flatten(result)]))


def function(name: str) -> Any:
    """A Python function that records torch function `name` (for module `__getattr__`)."""
    torch_functions.resolve(name)

    @functools.wraps(torch_functions.resolve(name))
    def recorded(*args: Any, **kwargs: Any) -> Any:
        return call(name, args, kwargs)
    return recorded


def namespace(prefix: str, module_globals: dict):
    """A module `__getattr__` that serves the torch functions under `prefix`, keeping
    each in the module once made, so the next lookup is a plain attribute."""
    def __getattr__(attribute: str) -> Any:
        name = f"{prefix.replace('torch', 'gt', 1)}.{attribute}"
        if attribute.startswith('_'):
            raise AttributeError(f'GT has no {name}')
        try:
            torch_functions.resolve(f'{prefix}.{attribute}')
        except ValueError as refusal:
            raise AttributeError(f"GT has no {name}: {str(refusal).split(': ', 1)[1]}") from None
        made = module_globals[attribute] = function(f'{prefix}.{attribute}')
        return made
    return __getattr__


def is_method(attribute: str) -> bool:
    """Whether `method` finds `attribute`: an in-place form of a method GT has, or a
    torch Tensor method GT runs by name."""
    if attribute.endswith('_') and not attribute.endswith('__') \
            and _own_method(attribute[:-1]) is not None:
        return True
    return not attribute.startswith('_') and torch_functions.exists(f'Tensor.{attribute}')


def method(tensor: Tensor, attribute: str) -> Any:
    """`tensor.attribute` for a torch Tensor method GT has no op for. The in-place form of
    a method GT has (`x.sin_()`, `x.relu_()`) rebinds `x` to the method's result."""
    name = f'Tensor.{attribute}'
    if attribute.endswith('_') and not attribute.endswith('__'):
        own = _own_method(attribute[:-1])
        if own is not None:
            def rebinding(*args: Any, **kwargs: Any) -> Tensor:
                return tensor._assign(own(tensor, *args, **kwargs))
            rebinding.__name__ = attribute
            return rebinding
    if attribute.startswith('_') or not torch_functions.exists(name):
        raise AttributeError(f"'Tensor' object has no attribute '{attribute}'")

    def bound(*args: Any, **kwargs: Any) -> Any:
        return call(name, (tensor, *args), kwargs)
    bound.__name__ = attribute
    return bound


def torch_function(func: Any, args: tuple, kwargs: dict) -> Any:
    """What `torch.<func>(gt_tensor, ...)` does: GT's own op where it has one, else the
    fallback; a function GT does not run gets the fetched values instead (`torch.tensor`)."""
    name = torch_functions.name_of(func)
    operator = getattr(func, '__name__', '')
    if args and type(args[0]) is torch.Tensor and _writes_first(operator):
        # torch_tensor.copy_(gt_tensor), `r += g`: the torch tensor changes, as in torch.
        values = _materialized(args), {k: _materialized(v) for k, v in kwargs.items()}
        return func(*values[0], **values[1])
    if name is None and operator.startswith('__') and (
            operator in Tensor.__dict__ or operator in OperatorMethods.__dict__):
        # torch_tensor + gt_tensor: the torch tensor joins GT as data.
        return getattr(Tensor, operator)(*joined(args), **kwargs)
    if name is None:
        values = _materialized(args), {k: _materialized(v) for k, v in kwargs.items()}
        return func(*values[0], **values[1])
    native = _native(name)
    if native is not None:
        # GT's own function takes GT tensors: `torch_tensor @ gt_tensor` reached
        # MathMethods.matmul with the torch tensor as `self`, and recursed.
        return native(*joined(args), **{k: joined_one(v) for k, v in kwargs.items()})
    return call(name, args, kwargs)


def joined(values: tuple | list) -> tuple:
    """`values` with each torch tensor among them (or in a list or tuple of them) made a
    GT tensor, as data sent along: a torch tensor meeting a GT one joins GT."""
    return tuple(joined_one(value) for value in values)


def gt_operands(*values: Any) -> tuple:
    """`values`, the torch tensors among them (a DataLoader's batch) joined to GT as data;
    as they are when there are none (the usual case, checked cheaply)."""
    for value in values:
        if isinstance(value, torch.Tensor):
            return joined(values)
    return values


def joined_one(value: Any) -> Any:
    if isinstance(value, Snapshot):
        value = gt_form(value)  # a `.data` stands for its GT tensor
    if isinstance(value, torch.Tensor):
        from gt.creation import tensor
        return tensor(value)
    if type(value) in (list, tuple) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(joined_one(v) for v in value)
    return value


IN_PLACE_OPERATORS = frozenset({
    '__setitem__', '__iadd__', '__isub__', '__imul__', '__itruediv__', '__ifloordiv__',
    '__imod__', '__ipow__', '__imatmul__', '__iand__', '__ior__', '__ixor__', '__ilshift__',
    '__irshift__'})


def _writes_first(operator: str) -> bool:
    """Whether torch's method `operator` writes into its first argument."""
    return operator in IN_PLACE_OPERATORS or (
        operator.endswith('_') and not operator.endswith('__'))


def _materialized(item: Any) -> Any:
    if isinstance(item, Tensor):
        return item.data
    if type(item) in (list, tuple):
        return type(item)(_materialized(x) for x in item)
    return item


# Draws whose gradient torch defines as zeros for every input (sampling, not
# reparameterized); bernoulli's with a `p` argument it does not define.
ZERO_GRADIENT_DRAWS = frozenset({'torch.normal', 'torch.bernoulli', 'Tensor.bernoulli',
                                 'torch.poisson'})


class _DrawnWithZeroGradient(Function):
    """A draw whose inputs require grad, with torch's gradient for them: zeros (normal's
    mean and std, bernoulli's probabilities, poisson's rates); the sample is tracked, so
    a loss through it differentiates as in torch."""

    @staticmethod
    def forward(ctx: Any, draw: Any, *tensors: Tensor) -> Any:
        ctx.inputs = [(tuple(t.shape), t.dtype) for t in tensors]
        return draw()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        from gt.creation import zeros  # gt.creation imports this module

        return (None, *(zeros(shape, dtype=dtype) if needed else None for (shape, dtype), needed
                        in zip(ctx.inputs, ctx.needs_input_grad[1:])))


def _draws_without_gradient(name: str, dtypes: tuple) -> bool:
    """Whether torch's draw gives no gradient, whatever its inputs: integer samples
    (`multinomial(probs, 1)` in a policy's action choice, `randint_like`) and the `_like`
    draws, which read only their input's shape."""
    return name.endswith('_like') or all(dtype not in FLOATING for dtype in dtypes)


def _counts_as_numbers(args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """`args` and `kwargs` with each one-element integer GT tensor as the number it holds
    (fetched), as torch reads such a count through `__index__`; None if there is none. A
    random draw whose result's shape depends on its inputs' values cannot be measured
    first (measuring would draw), so its counts are read here instead."""
    def number(value: Any) -> Any:
        if isinstance(value, Tensor) and value.ndim == 0 and value._type.dtype in INTEGRAL:
            return operator.index(value)
        return value

    counted = tuple(map(number, args)), {key: number(value) for key, value in kwargs.items()}
    changed = any(a is not b for a, b in zip(counted[0], args)) or any(
        counted[1][key] is not kwargs[key] for key in kwargs)
    return counted if changed else None


def _own_method(attribute: str) -> Any:
    """GT Tensor's own method `attribute` (not one served by the fallback), or None. A
    property (`real`) is served as a function of the tensor (`torch.real(x)`)."""
    for owner in Tensor.__mro__[:-1]:
        if attribute in owner.__dict__:
            found = owner.__dict__[attribute]
            return found.fget if isinstance(found, property) else getattr(Tensor, attribute)
    return None


def _native(name: str) -> Any:
    import gt
    import gt.nn.functional

    namespace_name, _, attribute = name.rpartition('.')
    if namespace_name == 'Tensor':
        return _own_method(attribute)
    module = {'torch': gt, 'torch.nn.functional': gt.nn.functional}.get(namespace_name)
    if module is not None and attribute in module.__dict__:
        return module.__dict__[attribute]
    return None


def written_out(result: Any, out: Any, name: str) -> Any:
    """torch's `out=`: the result copied into `out` (a GT tensor of its shape and dtype,
    as the tensors tutorial's `torch.matmul(t, t.T, out=y3)` gives, or a `.data`, written
    through: Stable-Baselines3's `torch.add(t.data, p.data, alpha=tau, out=t.data)`), which
    is returned."""
    if not isinstance(out, (Tensor, Snapshot)) or not isinstance(result, Tensor):
        raise TypeError(f'{name}: out= takes one GT tensor, for a function returning one; '
                        f'got {type(out).__name__}')
    if out.shape != result.shape:
        raise RuntimeError(f'{name}: out= has shape {list(out.shape)}, and the result '
                           f'{list(result.shape)}; GT does not resize it, as torch would: '
                           'give one of the result\'s shape, or use the result')
    if out.dtype != result.dtype:
        raise RuntimeError(f"{name}: result type {result.dtype} can't be cast to the desired "
                           f'output type {out.dtype}')
    return out.copy_(result)
