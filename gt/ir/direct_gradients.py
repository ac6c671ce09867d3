"""Gradients of torch functions run by name that torch's backward kernels give directly,
without recomputing the call: `torch_vjp` (gt/ir/ops/torch_call_gradients.py) otherwise
reruns the call under autograd on the worker.

Convolutions (`conv1d/2d/3d`, `conv_transpose1d/2d/3d`, in torch.nn.functional and
torch) are most of a CNN's work, and their recomputed forward was a third of the
gradient's: a conv2d of 32x16x16x16 by 3x3 took 5.2 ms through autograd against 3.1 ms
through `aten.convolution_backward`, the kernel autograd itself calls, with the same bits.
A call these do not cover (padding given as 'same' or 'valid', a tensor passed twice)
returns None, and the gradient is recomputed as for any call.
"""

from typing import Any, Callable

import torch

from gt.ir.torch_arguments import decode_call, is_tensor_input

ORDER = {
    'conv': ('input', 'weight', 'bias', 'stride', 'padding', 'dilation', 'groups'),
    'conv_transpose': ('input', 'weight', 'bias', 'stride', 'padding', 'output_padding',
                       'groups', 'dilation'),
}
DEFAULTS = {'bias': None, 'stride': 1, 'padding': 0, 'dilation': 1, 'groups': 1,
            'output_padding': 0}


def _spread(value: Any, n: int) -> list[int] | None:
    """An int or a sequence of ints as n ints; None for anything else ('same')."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n
    if isinstance(value, (list, tuple)) and len(value) == n and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


def _convolution(kind: str, n: int) -> Callable[..., Any]:
    transposed = kind == 'conv_transpose'

    def gradients(primals: list, cotangents: tuple, args: list, kwargs: dict,
                  wants: list) -> list | None:
        if len(cotangents) != 1 or not args or not is_tensor_input(args[0]):
            return None
        positional, keywords = decode_call(args, kwargs, primals)
        bound = dict(DEFAULTS, **dict(zip(ORDER[kind], positional)), **keywords)
        input, weight, bias = bound['input'], bound['weight'], bound['bias']
        if not isinstance(input, torch.Tensor) or input.dim() != n + 2:
            return None  # unbatched: torch's function adds the batch axis itself
        shapes = [_spread(bound[key], n) for key in ('stride', 'padding', 'dilation',
                                                      'output_padding')]
        if any(shape is None for shape in shapes) or not isinstance(bound['groups'], int):
            return None
        slots = {id(tensor): index for index, tensor in enumerate(primals)}
        roles = [slots.get(id(t)) for t in (input, weight, bias) if t is not None]
        if len(set(roles)) != len(roles) or None in roles:
            return None  # a tensor in two roles, or one that is not an input
        stride, padding, dilation, output_padding = shapes
        mask = [role in wants for role in roles] + [False] * (3 - len(roles))
        found = torch.ops.aten.convolution_backward(
            cotangents[0], input, weight, None if bias is None else list(bias.shape),
            stride, padding, dilation, transposed, output_padding, bound['groups'], mask)
        by_input = dict(zip(roles, found))
        return [by_input[index] for index in wants]
    return gradients


DIRECT: dict[str, Callable[..., Any]] = {
    f'{namespace}{kind}{n}d': _convolution(kind, n)
    for namespace in ('torch.nn.functional.', 'torch.') for kind in ORDER for n in (1, 2, 3)}
