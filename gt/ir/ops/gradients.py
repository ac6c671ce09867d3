"""Helpers shared by the gradient rules of the op table (the `grad=` of each row).

A rule is `rule(emit, inputs, grads, **attrs) -> list`, one gradient (or None) per input;
it builds gradients with `emit(op, *operands, **attrs)`, so they are ops of the table too.
Rules recompute what they need from the inputs: the tape keeps no outputs.
"""

from typing import Any, Callable

from gt.ir.type_rules import normalize_dims, numel, reduced_shape

Emit = Callable[..., Any]


def wanted(tensor: Any) -> bool:
    """Whether an input takes a gradient. Rules skip the others (Python-number constants,
    index tensors) rather than emit ops nobody reads; inputs without the flag count."""
    return getattr(tensor, 'requires_grad', True)


def zeros_like(emit: Emit, tensor: Any) -> Any:
    return emit('zeros', shape=list(tensor.shape), dtype=tensor._type.dtype)


def zeros_of(emit: Emit, shape: tuple[int, ...], like: Any) -> Any:
    return emit('zeros', shape=list(shape), dtype=like._type.dtype)


def reshaped(emit: Emit, tensor: Any, shape: tuple[int, ...]) -> Any:
    """`tensor` with `shape`, emitting nothing when it has it already."""
    if tuple(tensor.shape) == tuple(shape):
        return tensor
    return emit('reshape', tensor, shape=list(shape))


def kept_dims(emit: Emit, grad: Any, shape: tuple[int, ...], dim: Any, keepdim: bool) -> Any:
    """The gradient of a reduction over `dim` of a tensor of `shape`, reshaped as if the
    reduction had kept its dims, so that it broadcasts against the input."""
    if keepdim:
        return grad
    dims = normalize_dims('grad', dim, len(shape))
    return reshaped(emit, grad, reduced_shape(tuple(shape), dims, True))


def expanded(emit: Emit, grad: Any, shape: tuple[int, ...], dim: Any, keepdim: bool) -> Any:
    """The gradient of a reduction, copied back over every element that was reduced."""
    grad = kept_dims(emit, grad, shape, dim, keepdim)
    if tuple(grad.shape) == tuple(shape):
        return grad
    return emit('expand', grad, shape=list(shape))


def reduced_count(shape: tuple[int, ...], dim: Any) -> int:
    """How many elements each output of a reduction over `dim` sums."""
    dims = normalize_dims('grad', dim, len(shape))
    return numel([shape[axis] for axis in dims])


def masked(emit: Emit, keep: Any, grad: Any) -> Any:
    """`grad` where `keep`, else 0 (a select, as torch's rules use, so inf*0 gives no NaN).
    The zero has grad's dtype: a bare 0.0 would be float32 and, beside a 0-d half `grad`,
    promote the result."""
    return emit('where', keep, grad, zeros_of(emit, (), grad))


def passed_through(emit: Emit, inputs: list, grads: list, **attrs: Any) -> list:
    """The rule of an op that copies its one input: the gradient passes as it is."""
    return [grads[0]]
