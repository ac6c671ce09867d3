"""`gt.autograd.functional`, torch's higher-level autograd API: `vjp`, `jvp`, `jacobian`,
`hessian`, `vhp` and `hvp` of a function of tensors, composed of `gt.autograd.grad` as
torch composes them. A Jacobian is one backward pass per output element, as torch's
default (`vectorize=False`) is; `vectorize=True` and `strategy='forward-mode'` give the
same numbers the same way (GT has no vmap or forward-mode AD). Inputs the function
ignores get zeros, or raise with `strict=True`, as in torch.
"""

from typing import Any, Callable

from gt import autograd
from gt.autograd import enable_grad
from gt.creation import zeros_like
from gt.functional import stack
from gt.tensor import Tensor

__all__ = ['vjp', 'jvp', 'jacobian', 'hessian', 'vhp', 'hvp']


def _as_tuple(value: Any, what: str, function: str) -> tuple[bool, tuple]:
    """Whether `value` was a tuple or list, and its tensors as a tuple."""
    if isinstance(value, (tuple, list)):
        values = tuple(value)
    else:
        values = (value,)
    for index, item in enumerate(values):
        if not isinstance(item, Tensor):
            raise TypeError(f'The {what} given to {function} must be either a Tensor or a '
                            f'tuple of Tensors but the value at index {index} has type '
                            f'{type(item)}.')
    return isinstance(value, (tuple, list)), values


def _prepared(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs the function's graph starts from: a differentiable alias when the caller
    wants a graph through them, else detached copies that require grad."""
    return tuple(item.view_as(item) if create_graph and item.requires_grad
                 else item.detach().requires_grad_() for item in inputs)


def _outputs(function: Callable, inputs: tuple, name: str) -> tuple[bool, tuple]:
    with enable_grad():
        result = function(*inputs)
    return _as_tuple(result, 'outputs of the user-provided function', name)


INDEPENDENT = ('The output of the user-provided function is independent of input {index}. '
               'This is not allowed in strict mode.')
CONSTANT_JACOBIAN = (
    'While computing the hessian, found that the jacobian of the user-provided function '
    'with respect to input {index} is independent of the input. This is not allowed in '
    'strict mode. You should ensure that your function is twice differentiable and that '
    'the jacobian depends on the inputs (this would be violated by a linear function for '
    'example).')


def _grads(outputs: tuple, inputs: tuple, grad_outputs: tuple, create_graph: bool,
           strict: bool, message: str = INDEPENDENT) -> tuple:
    """d(outputs)/d(inputs) against `grad_outputs`; zeros (or strict's error, `message`)
    where an input does not reach the outputs."""
    pairs = [(out, grad) for out, grad in zip(outputs, grad_outputs) if out.requires_grad]
    found = (None,) * len(inputs)
    if pairs:
        found = autograd.grad([out for out, _ in pairs], list(inputs),
                              [grad for _, grad in pairs], retain_graph=True,
                              create_graph=create_graph, allow_unused=True)
    results = []
    for index, (grad, item) in enumerate(zip(found, inputs)):
        if grad is None:
            if strict:
                raise RuntimeError(message.format(index=index))
            grad = zeros_like(item)
        results.append(grad)
    return tuple(results)


def _finished(values: tuple, create_graph: bool) -> tuple:
    return values if create_graph else tuple(value.detach() for value in values)


def _vectors(v: Any, targets: tuple, targets_tuple: bool, name: str, target: str) -> tuple:
    """`v`, checked against the tensors it multiplies (`target` names them); None for a
    single one-element target is 1."""
    if v is None:
        if targets_tuple or targets[0].numel() != 1:
            raise RuntimeError(f'The vector v can only be None if the {target} a single '
                               'Tensor with a single element.')
        return (targets[0].new_ones(targets[0].shape),)
    _, vectors = _as_tuple(v, 'v', name)
    if len(vectors) != len(targets):
        if targets_tuple:
            raise RuntimeError(f'v is a tuple of invalid length: should be {len(targets)} '
                               f'but got {len(vectors)}.')
        raise RuntimeError('The given v should contain a single Tensor.')
    for index, (vector, other) in enumerate(zip(vectors, targets)):
        if vector.shape != other.shape:
            entry = f'Entry {index} in ' if targets_tuple else ''
            raise RuntimeError(f'{entry}v has invalid size: should be {other.shape} but got '
                               f'{vector.shape}.')
    return vectors


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """`func(inputs)` and the vector-Jacobian product `v^T J`."""
    is_tuple, inputs = _as_tuple(inputs, 'inputs', 'vjp')
    inputs = _prepared(inputs, create_graph)
    outputs_tuple, outputs = _outputs(func, inputs, 'vjp')
    vectors = _vectors(v, outputs, outputs_tuple, 'vjp', 'user-provided function returns')
    grads = _grads(outputs, inputs, vectors, create_graph, strict)
    outputs, grads = _finished(outputs, create_graph), _finished(grads, create_graph)
    return (outputs if outputs_tuple else outputs[0]), (grads if is_tuple else grads[0])


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """`func(inputs)` and the Jacobian-vector product `J v`, by the double-backward
    trick (differentiating a vector-Jacobian product in the vector), as torch does."""
    is_tuple, inputs = _as_tuple(inputs, 'inputs', 'jvp')
    inputs = _prepared(inputs, create_graph)
    vectors = _vectors(v, inputs, is_tuple, 'jvp', 'input to the user-provided function is')
    outputs_tuple, outputs = _outputs(func, inputs, 'jvp')
    with enable_grad():
        dummies = tuple(zeros_like(out).requires_grad_() for out in outputs)
        grad_inputs = _grads(outputs, inputs, dummies, True, strict)
        grads = _grads(grad_inputs, dummies, vectors, create_graph, strict)
    outputs, grads = _finished(outputs, create_graph), _finished(grads, create_graph)
    return (outputs if outputs_tuple else outputs[0]), (grads if outputs_tuple else grads[0])


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = 'reverse-mode') -> Any:
    """The Jacobian of `func` at `inputs`: for one tensor in and one out, a tensor of
    shape output.shape + input.shape; tuples of them for tuples."""
    if strategy not in ('forward-mode', 'reverse-mode'):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         'Hint: If your function has more outputs than inputs, '
                         '"forward-mode" tends to be more performant. Otherwise, prefer to '
                         'use "reverse-mode".')
    is_tuple, inputs = _as_tuple(inputs, 'inputs', 'jacobian')
    inputs = _prepared(inputs, create_graph)
    outputs_tuple, outputs = _outputs(func, inputs, 'jacobian')
    rows = []  # per output, per input: its Jacobian block
    for index, out in enumerate(outputs):
        message = (f'Output {index} of the user-provided function is independent of '
                   'input {index}. This is not allowed in strict mode.')
        blocks = jacobian_blocks(out, inputs, lambda picked: _grads(
            (picked,), inputs, (picked.new_ones(()),), create_graph, strict, message))
        rows.append(_finished(tuple(blocks), create_graph))
    if not outputs_tuple:
        return rows[0] if is_tuple else rows[0][0]
    return tuple(row if is_tuple else row[0] for row in rows)


def jacobian_blocks(out: Tensor, inputs: tuple | list, gradients: Callable) -> list:
    """d(out)/d(input) for each input, of shape out.shape + input.shape: one backward
    pass per element of `out` (`gradients(element)`: that element's, one per input),
    as torch's Jacobian without vmap. gt.func's jacrev shares it."""
    flat = out.reshape(-1)
    rows = [gradients(flat[element]) for element in range(flat.numel())]
    return [(stack([row[position] for row in rows], 0) if rows
             else item.new_zeros((0, *item.shape))).reshape(*out.shape, *item.shape)
            for position, item in enumerate(inputs)]


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = 'reverse-mode') -> Any:
    """The Hessian of a scalar `func` at `inputs`: shape input.shape + input.shape, or
    a tuple of tuples over pairs of inputs."""
    is_tuple, as_tuple = _as_tuple(inputs, 'inputs', 'hessian')

    def gradient(*values: Tensor) -> Any:
        scalar = _scalar(func(*values), 'hessian')
        return _first_derivatives(scalar, values, strict)

    result = jacobian(gradient, as_tuple, create_graph=create_graph, strict=strict,
                      strategy=outer_jacobian_strategy)
    return result if is_tuple else result[0][0]


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """`func(inputs)` (a scalar) and the vector-Hessian product `v^T H`."""
    return _hessian_product(func, inputs, v, create_graph, strict, 'vhp', transposed=False)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """`func(inputs)` (a scalar) and the Hessian-vector product `H v`, by the
    double-backward trick as torch computes it (the same numbers as `vhp` for a
    symmetric Hessian, up to rounding)."""
    return _hessian_product(func, inputs, v, create_graph, strict, 'hvp', transposed=True)


def _hessian_product(func: Callable, inputs: Any, v: Any, create_graph: bool,
                     strict: bool, name: str, transposed: bool) -> tuple:
    """`v^T H`: the gradient's vector-Jacobian product; `H v` (`transposed`): that
    product's own, in dummy vectors, differentiated in them."""
    is_tuple, inputs = _as_tuple(inputs, 'inputs', name)
    inputs = _prepared(inputs, create_graph)
    vectors = _vectors(v, inputs, is_tuple, name, 'input to the user-provided function is')
    with enable_grad():
        output = _scalar(func(*inputs), name)
        first = _first_derivatives(output, inputs, strict)
        if transposed:
            dummies = tuple(zeros_like(item).requires_grad_() for item in inputs)
            back = _grads(first, inputs, dummies, True, strict)
            second = _grads(back, dummies, vectors, create_graph, strict)
        else:
            second = _grads(first, inputs, vectors, create_graph, strict)
    second = _finished(second, create_graph)
    return _finished((output,), create_graph)[0], (second if is_tuple else second[0])


def _scalar(result: Any, name: str) -> Tensor:
    if not isinstance(result, Tensor):
        raise RuntimeError(f'The function given to {name} should return a single Tensor')
    if result.numel() != 1:
        raise RuntimeError(f'The Tensor returned by the function given to {name} should '
                           'contain a single element')
    return result


def _first_derivatives(output: Tensor, inputs: tuple, strict: bool) -> tuple:
    """The gradient of a scalar, with a graph; `strict` refuses one that is constant (a
    second derivative would be zero, or undefined)."""
    first = _grads((output,), inputs, (output.new_ones(output.shape),), True, False)
    for index, grad in enumerate(first):
        if strict and not grad.requires_grad:
            raise RuntimeError(CONSTANT_JACOBIAN.format(index=index))
    return first
