"""The gradients of a torch function run by name (`torch_call`, gt/ir/ops/torch_calls.py).

`torch_vjp` is the vector-Jacobian product of the same call for the inputs in `wants`,
given cotangents for its floating outputs. `torch_vjp_grad` is the gradient of that, for
the primals and cotangents in `second`, given cotangents for its gradients: what a
gradient penalty through a convolution or an LSTM differentiates (`create_graph=True`).
Each order more is `torch_vjp_grad` again, with one more list of inputs in `higher`
(`torch.autograd.functional.hvp` differentiates a second derivative again).

Both rerun the call under torch's autograd engine on the worker, on copies of the inputs
made out of inference mode (inference tensors can be neither saved for backward nor
updated in place), except where gt.ir.direct_gradients knows torch's backward kernel
(convolutions): then `torch_vjp` skips the rerun. Not by `torch.func.vjp`: its transform
wraps every op of the call, and a call of many small ops (torch.lstm over a sequence)
took 2.6x as long through it. Neither is traced for a compiled region (`traced=False`):
torch.export refused `torch.func.vjp`, and aot_eager refuses `requires_grad_` on the
inference tensors it traces with, so they run between the regions around them.
"""

import torch

from gt.ir import by_name_sharding
from gt.ir.direct_gradients import DIRECT
from gt.ir.dtypes import FLOATING
from gt.ir.ops.gradients import wanted, zeros_like
from gt.ir.ops.opdef import OpDef
from gt.ir.ops.torch_calls import call, numpy_row, output_types, scattered, sized
from gt.ir.torch_arguments import flatten


def _indices(name: str, what: str, indices, count: int) -> None:
    if (not isinstance(indices, (list, tuple)) or not indices
            or any(not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < count
                   for i in indices)):
        raise ValueError(f'{name}: {what} {indices!r} names no inputs (it has {count})')


def _vjp_type(types, fn, args, kwargs, n_inputs, wants, differentiable, sizes=None):
    primals, cotangents = types[:n_inputs], types[n_inputs:]
    outputs = output_types(fn, primals, args, kwargs, sizes)
    _indices('torch_vjp', 'wants', wants, n_inputs)
    if (not isinstance(differentiable, (list, tuple))
            or any(not isinstance(i, int) or not 0 <= i < len(outputs) for i in differentiable)
            or [outputs[i] for i in differentiable] != list(cotangents)):
        raise ValueError(f'torch_vjp: the cotangents do not match the outputs of {fn}')
    for index in wants:
        if primals[index].dtype not in FLOATING:
            raise TypeError(f'torch_vjp: input {index} of {fn} is not floating point')
    return tuple(primals[index] for index in wants)


def _vjp_grad_type(types, fn, args, kwargs, n_inputs, wants, differentiable, second,
                   higher=(), sizes=None):
    split = n_inputs + len(differentiable) if isinstance(differentiable, (list, tuple)) else 0
    grads = _vjp_type(types[:split], fn, args, kwargs, n_inputs, wants, differentiable, sizes)
    if not isinstance(higher, (list, tuple)):
        raise ValueError(f'torch_vjp_grad: higher must list the inputs of each order, got '
                         f'{higher!r}')
    for name, targets in (('second', second), *(('higher', level) for level in higher)):
        _indices('torch_vjp_grad', name, targets, split)
        for index in targets:
            if types[index].dtype not in FLOATING:
                raise TypeError(f'torch_vjp_grad: input {index} of {fn} is not floating '
                                'point')
        if tuple(types[split:split + len(grads)]) != grads:
            raise ValueError(f'torch_vjp_grad: the cotangents do not match the gradients of '
                             f'{fn}')
        split += len(grads)
        grads = tuple(types[index] for index in targets)
    if split != len(types):
        raise ValueError(f'torch_vjp_grad: {len(types) - split} inputs too many for {fn}')
    return grads


def _first_order(fn, args, kwargs, primals, cotangents, wants, differentiable,
                 create_graph: bool) -> list:
    """The gradients of the inputs in `wants` (None where there is none), whose leaves
    `primals` already require grad."""
    outputs = flatten(call(fn, primals, args, kwargs))
    # An output that does not depend on the chosen inputs contributes nothing.
    pairs = [(outputs[i], c) for i, c in zip(differentiable, cotangents)
             if outputs[i].requires_grad]
    if not pairs:
        return [None] * len(wants)
    return list(torch.autograd.grad([o for o, _ in pairs], [primals[i] for i in wants],
                                    [c for _, c in pairs], allow_unused=True,
                                    create_graph=create_graph))


def _materialized(grads, likes: list) -> tuple:
    """A gradient torch knows is zero comes back as None or a ZeroTensor (no storage)."""
    grads = tuple(torch.zeros_like(like) if g is None or g._is_zerotensor() else g.detach()
                  for g, like in zip(grads, likes))
    return grads[0] if len(grads) == 1 else grads


def _copies(tensors) -> list:
    return [t.clone() if isinstance(t, torch.Tensor) else t for t in tensors]


def _torch_vjp(*tensors, fn, args, kwargs, n_inputs, wants, differentiable, sizes=None):
    primals, cotangents = list(tensors[:n_inputs]), tensors[n_inputs:]
    direct = DIRECT.get(fn)
    found = direct(primals, cotangents, args, kwargs, wants) if direct else None
    if found is not None:  # torch's backward kernel, without rerunning the call
        return found[0] if len(found) == 1 else tuple(found)
    with torch.inference_mode(False), torch.enable_grad():
        primals, cotangents = _copies(primals), _copies(cotangents)
        for index in wants:
            primals[index].requires_grad_()
        grads = _first_order(fn, args, kwargs, primals, cotangents, wants, differentiable,
                             create_graph=False)
    return _materialized(grads, [primals[i] for i in wants])


def _torch_vjp_grad(*tensors, fn, args, kwargs, n_inputs, wants, differentiable, second,
                    higher=(), sizes=None):
    """The gradient of the gradient (`second`), and of that again for each of `higher`:
    each order differentiates the last, on every input before its own cotangents."""
    split = n_inputs + len(differentiable)
    levels = [second, *higher]
    with torch.inference_mode(False), torch.enable_grad():
        inputs = _copies(tensors)
        for index in set(wants).union(*levels):
            inputs[index].requires_grad_()
        grads = _first_order(fn, args, kwargs, inputs[:n_inputs], inputs[n_inputs:split],
                             wants, differentiable, create_graph=True)
        for depth, level in enumerate(levels):
            cotangents = inputs[split:split + len(grads)]
            split += len(grads)
            pairs = [(g, c) for g, c in zip(grads, cotangents)
                     if g is not None and g.requires_grad]
            targets = [inputs[i] for i in level]
            grads = torch.autograd.grad(
                [g for g, _ in pairs], targets, [c for _, c in pairs], allow_unused=True,
                create_graph=depth < len(levels) - 1) if pairs else [None] * len(targets)
    return _materialized(grads, targets)


def _vjp_grad(emit, inputs, grads, fn, args, kwargs, n_inputs, wants, differentiable,
              second=None, higher=(), sizes=None):
    """The gradient of a gradient, for the floating inputs that want one: of a
    `torch_vjp` (`second` None), the second order; of a `torch_vjp_grad`, one order more
    (hvp's double-backward trick differentiates a second derivative for its cotangent)."""
    targets = [i for i, tensor in enumerate(inputs)
               if wanted(tensor) and tensor._type.dtype in FLOATING]
    if not targets:
        return [None] * len(inputs)
    made_from = wants if second is None else higher[-1] if higher else second
    cotangents = [g if g is not None else zeros_like(emit, inputs[index])
                  for g, index in zip(grads, made_from)]
    orders = (dict(second=targets) if second is None
              else dict(second=second, higher=[*higher, targets]))
    attrs = dict(fn=fn, args=args, kwargs=kwargs, n_inputs=n_inputs, wants=wants,
                 differentiable=differentiable, **orders)
    return scattered(emit('torch_vjp_grad', *inputs, *cotangents, **attrs, **sized(sizes)),
                     targets, len(inputs))


ROWS = [
    OpDef('torch_vjp', _vjp_type, _torch_vjp, numpy_row(_torch_vjp), grad=_vjp_grad,
          shard=by_name_sharding.vjp_rule, traced=False),
    OpDef('torch_vjp_grad', _vjp_grad_type, _torch_vjp_grad, numpy_row(_torch_vjp_grad),
          grad=_vjp_grad, traced=False),
]
