"""`gt.autograd.gradcheck` and `gradgradcheck`: a function's gradients (GT's autograd:
its rules, or a custom Function's backward) against finite differences, as torch's
checks them, for the custom-Function tutorials and tests that call them.

Every perturbed evaluation and every Jacobian row is recorded lazily and fetched in one
round trip. The inputs are never written: each perturbation is a copy passed in their
place. Failures raise torch's `GradcheckError` (a RuntimeError) naming the output and
input whose Jacobians differ, or return False with `raise_exception=False`.
"""

import warnings
from typing import Any, Callable

import torch
from torch.autograd.gradcheck import GradcheckError

from gt import autograd
from gt.grad_mode import no_grad
from gt.runtime import client as connection
from gt.tensor import Tensor


def _tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _outputs(func: Callable, inputs: tuple) -> tuple:
    return tuple(out for out in _tuple(func(*inputs))
                 if isinstance(out, Tensor) and out.dtype.is_floating_point)


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **unused: Any) -> bool:
    """Whether `func`'s analytical Jacobians (by backward) match its numerical ones
    (central differences with step `eps`) for every input that requires grad. This is
    torch's slow mode; its other options (`fast_mode`, the batched and forward-AD
    checks) are accepted and leave it so."""
    inputs = _tuple(inputs)
    wanted = [index for index, item in enumerate(inputs)
              if isinstance(item, Tensor) and item.requires_grad]
    if not wanted:
        raise ValueError('gradcheck expects at least one input tensor to require gradient, '
                         'but none of them have requires_grad=True.')
    for index in wanted:
        if inputs[index].dtype != torch.float64:
            warnings.warn(f'Input #{index} requires gradient and is not a double precision '
                          'floating point or complex. This check will likely fail if all the '
                          'inputs are not of double precision floating point or complex. ',
                          stacklevel=2)
    outputs = _outputs(func, inputs)
    rows = []  # per output, per element: the gradients of each wanted input
    for out in outputs:
        flat = out.reshape(-1)
        for element in range(flat.numel()):
            grads = autograd.grad(flat[element], [inputs[i] for i in wanted],
                                  retain_graph=True, allow_unused=True) \
                if flat.requires_grad else (None,) * len(wanted)
            rows.append([inputs[i].new_zeros(inputs[i].shape) if g is None else g
                         for g, i in zip(grads, wanted)])
    differences = []  # per wanted input, per element: each output's central difference
    for index in wanted:
        for element in range(inputs[index].numel()):
            sides = []
            for step in (eps, -eps):
                moved = inputs[index].detach().clone()
                with no_grad():
                    moved.view(-1)[element] += step
                moved.requires_grad_()  # func may differentiate (gradgradcheck's does)
                sides.append(_outputs(func, (*inputs[:index], moved, *inputs[index + 1:])))
            differences.append([(plus.detach() - minus.detach()) / (2 * eps)
                                for plus, minus in zip(*sides)])
    fetched = _fetch([grad for row in rows for grad in row]
                     + [part for parts in differences for part in parts])
    return _compare(outputs, [inputs[i] for i in wanted], wanted, fetched, atol, rtol,
                    raise_exception)


def _fetch(tensors: list) -> list[torch.Tensor]:
    client = connection.current()
    return [value.double() for value in client.fetch([t._id for t in tensors])] \
        if tensors else []


def _compare(outputs: tuple, inputs: list, positions: list, fetched: list, atol: float,
             rtol: float, raise_exception: bool) -> bool:
    analytical_count = sum(out.numel() for out in outputs) * len(inputs)
    analytical, numerical = fetched[:analytical_count], fetched[analytical_count:]
    for out_index, out in enumerate(outputs):
        first_row = sum(o.numel() for o in outputs[:out_index])
        for in_index, (item, position) in enumerate(zip(inputs, positions)):
            got = torch.stack([analytical[(first_row + row) * len(inputs) + in_index]
                               .reshape(-1) for row in range(out.numel())], 1) \
                if out.numel() else torch.zeros(item.numel(), 0, dtype=torch.float64)
            start = sum(i.numel() for i in inputs[:in_index])
            want = torch.stack([numerical[(start + element) * len(outputs) + out_index]
                                .reshape(-1) for element in range(item.numel())], 0) \
                if item.numel() else torch.zeros(0, out.numel(), dtype=torch.float64)
            if not torch.allclose(got, want, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f'Jacobian mismatch for output {out_index} with respect '
                                     f'to input {position},\nnumerical:{want}\n'
                                     f'analytical:{got}\n')
    return True


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True,
                  **unused: Any) -> bool:
    """`gradcheck` of `func`'s gradients (with `create_graph`) against random
    `grad_outputs` in [-1, 1), or those given: its second derivatives."""
    from gt.creation import rand_like

    inputs = _tuple(inputs)
    if grad_outputs is None:
        grad_outputs = tuple((rand_like(out.detach()) * 2 - 1).requires_grad_()
                             for out in _outputs(func, inputs))
    grad_outputs = _tuple(grad_outputs)
    count = len(grad_outputs)

    def gradients(*args: Any) -> tuple:
        given, cotangents = args[:-count], args[-count:]
        outputs = _outputs(func, given)
        wanted = [item for item in given if isinstance(item, Tensor) and item.requires_grad]
        found = autograd.grad(list(outputs), wanted, list(cotangents), create_graph=True,
                              allow_unused=True)
        return tuple(grad for grad in found if grad is not None)

    return gradcheck(gradients, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
