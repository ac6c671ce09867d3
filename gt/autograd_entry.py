"""torch.autograd's entry points, `backward` and `grad`, with torch's signatures, over
the tape walk in gt/autograd.py (`gt.autograd.backward` and `gt.autograd.grad` are these).

`backward` takes one tensor or several (their gradients summed into the leaves), seeds
from `grad_tensors`, and with `inputs` accumulates into those tensors' `.grad` alone.
`grad` returns the gradients instead; `is_grads_batched` runs it once per row of the
`grad_outputs` and stacks the results (torch vectorizes this with vmap: same numbers)."""

from typing import Any

import torch

from gt import anomaly_mode, backward_replay
from gt.autograd import _accumulate, _free, _propagate, _reachable
from gt.grad_mode import enable_grad, no_grad


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None,
             inputs: Any = None) -> None:
    """Accumulate the gradients of `tensors` into the leaves' `.grad` (or `inputs`')."""
    roots = _listed(tensors)
    gradients = grad_tensors if grad_tensors is not None else grad_variables
    gradients = _listed(gradients) if gradients is not None else [None] * len(roots)
    if len(gradients) != len(roots):
        raise RuntimeError(f'backward: got {len(roots)} tensors and {len(gradients)} '
                           'gradients')
    for index, root in enumerate(roots):
        if not root.requires_grad:
            raise RuntimeError(f'element {index} of tensors does not require grad and does '
                               'not have a grad_fn (did you forget requires_grad=True, or '
                               'call backward() under no_grad?)')
    keep = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        _into_inputs(roots, gradients, keep, create_graph, _listed(inputs))
        return
    root, gradient = roots[0], gradients[0]
    # Anomaly mode checks what each rule gives: a replay runs no rule.
    if len(roots) > 1 or create_graph or root.grad_fn is None \
            or not backward_replay.ENABLED or anomaly_mode.enabled:
        _propagate(roots, gradients, keep or create_graph, create_graph, None)
        return
    nodes = _reachable([root.grad_fn])
    if backward_replay.backward(root, gradient, nodes, lambda: _propagate(
            [root], [gradient], keep, False, None)) and not keep:
        _free(nodes)


def _into_inputs(roots: list, gradients: list, keep: bool, create_graph: bool,
                 inputs: list) -> None:
    """`backward(inputs=...)`: the gradients reach those tensors' `.grad` and no other's."""
    if not inputs:
        raise RuntimeError('`inputs` argument to `backward()` cannot be empty.')
    found = _propagate(roots, gradients, keep, create_graph, inputs)
    assigned: set = set()
    with enable_grad() if create_graph else no_grad():
        for tensor in inputs:
            gradient = found.get(id(tensor))
            if gradient is not None:
                _accumulate(tensor, gradient, assigned)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """torch.autograd.grad: the gradients of `outputs` with respect to `inputs`, returned,
    not accumulated; with `create_graph` recorded on the tape, so they differentiate
    again; with `materialize_grads` an unused input's is zeros, not None. `only_inputs`
    is torch's deprecated flag, which changes nothing."""
    if materialize_grads and allow_unused is False:
        raise ValueError('Expected allow_unused to be True or not passed when '
                         'materialize_grads=True, but got: allow_unused=False.')
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    outputs, inputs = _listed(outputs), _listed(inputs)
    if not inputs:
        raise RuntimeError('`inputs` argument to `grad()` cannot be empty.')
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _listed(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f'grad: {len(grad_outputs)} grad_outputs for {len(outputs)} outputs')
    for kind, tensors, what in (('output', outputs, 'require grad and has no grad_fn'),
                                ('input', inputs, 'require grad')):
        for index, tensor in enumerate(tensors):
            if not tensor.requires_grad:
                raise RuntimeError(f'grad: {kind} {index} does not {what}')
    keep = create_graph if retain_graph is None else retain_graph
    if is_grads_batched:
        return _batched(outputs, inputs, list(grad_outputs), keep, create_graph, allow_unused,
                        materialize_grads)
    found = _propagate(outputs, list(grad_outputs), keep, create_graph, inputs)
    results = []
    for index, tensor in enumerate(inputs):
        gradient = found.get(id(tensor))
        if gradient is None and not allow_unused:
            raise RuntimeError(f'grad: input {index} was not used to compute the outputs; '
                               'pass allow_unused=True if that is intended')
        if gradient is None and materialize_grads:
            gradient = tensor.new_zeros(tensor.shape)
        results.append(gradient)
    return tuple(results)


def _batched(outputs: list, inputs: list, grad_outputs: list, keep: bool, create_graph: bool,
             allow_unused: bool, materialize_grads: bool) -> tuple:
    """`is_grads_batched`: each grad_output's first dimension is a batch of cotangents."""
    from gt.functional import stack

    if any(g is None for g in grad_outputs):
        raise RuntimeError('grad: is_grads_batched=True needs every grad_output')
    rows = grad_outputs[0].shape[0]
    per_row = [grad(outputs, inputs, [g[row] for g in grad_outputs],
                    retain_graph=keep or row < rows - 1, create_graph=create_graph,
                    allow_unused=allow_unused, materialize_grads=materialize_grads)
               for row in range(rows)]
    return tuple(None if found[0] is None else stack(found)
                 for found in zip(*per_row)) if per_row else ()


def _listed(tensors: Any) -> list:
    """One tensor (or None) as a list of it; any other iterable (`model.parameters()`, a
    dict's values) listed, as torch's `tuple(inputs)` does. A tensor iterates over its
    rows, so it is checked first."""
    from gt.tensor import Tensor  # which imports this module

    if tensors is None or isinstance(tensors, (Tensor, torch.Tensor)):
        return [tensors]
    return list(tensors)
