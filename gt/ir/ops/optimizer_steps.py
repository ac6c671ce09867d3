"""Adam's update of one parameter as one node: `adam_step`.

It runs the torch kernels that GT's ops ran one node each, in the same order on the same
operands (torch's single-tensor Adam: the weight decay, `lerp` of the first moment,
`mul` and `addcmul` of the second, the maximum for AMSGrad, `sqrt`, `div`, `add`, and
the parameter's `addcdiv`), so the bits are the same as before and torch's. As
ten nodes a parameter, an LSTM model's step with AdamW (7 parameters) was 148 nodes for
the client to record, the dispatcher to plan and the worker to run; it is 85.

Operands: the parameter, its gradient, the first and second moments, the running maximum
of the second (`amsgrad`), the weight decay's number (`decay`: 'decoupled' multiplies
the parameter by it, 'l2' adds it times the parameter to the gradient), then the 0-d
numbers `1 - beta1`, `beta2`, the negated step size, the second bias correction's
square root and `eps` (each as the 0-d operand gt.optim makes of it, so that a step's
structure stays the same as they change). Results: the parameter, the moments and the
maximum (`amsgrad`).
"""

import torch

from gt.ir.ops.fused import torch_addcdiv, torch_addcmul, torch_lerp
from gt.ir.ops.opdef import OpDef
from gt.ir.ops.torch_calls import numpy_row
from gt.ir.sharding import pointwise
from gt.ir.type_rules import require_floating

DECAYS = (None, 'decoupled', 'l2')
NUMBERS = 5  # 1 - beta1, beta2, -step size, bias correction 2's square root, eps


def _tensor_count(amsgrad: bool) -> int:
    """The parameter, its gradient, the moments, and the maximum with AMSGrad."""
    return 4 + bool(amsgrad)


def _check_attrs(amsgrad, decay, one_minus_beta2) -> None:
    if not isinstance(amsgrad, bool) or decay not in DECAYS:
        raise ValueError(f'adam_step: amsgrad must be a bool and decay one of {DECAYS}, got '
                         f'{amsgrad!r} and {decay!r}')
    if isinstance(one_minus_beta2, bool) or not isinstance(one_minus_beta2, (int, float)):
        raise ValueError(f'adam_step: one_minus_beta2 must be a number, got '
                         f'{one_minus_beta2!r}')


def _adam_step_type(types, amsgrad, decay, one_minus_beta2):
    _check_attrs(amsgrad, decay, one_minus_beta2)
    count = _tensor_count(amsgrad)
    expected = count + (decay is not None) + NUMBERS
    if len(types) != expected:
        raise ValueError(f'adam_step: expected {expected} operands, got {len(types)}')
    require_floating('adam_step', *types)
    param = types[0]
    if any(t != param for t in types[1:count]):
        raise ValueError(f'adam_step: the parameter {param}, its gradient and its moments '
                         f'must be alike, got {", ".join(map(str, types[:count]))}')
    if any(t.shape for t in types[count:]):
        raise ValueError('adam_step: the numbers must be 0-d')
    return (param,) * (count - 1)


def _adam_step(*tensors, amsgrad, decay, one_minus_beta2):
    count = _tensor_count(amsgrad)
    param, grad, exp_avg, exp_avg_sq, *maximum = tensors[:count]
    numbers = list(tensors[count:])
    if decay == 'decoupled':
        param = torch.mul(param, numbers.pop(0))
    elif decay == 'l2':
        grad = torch_addcmul(grad, param, numbers.pop(0), 1)
    one_minus_beta1, beta2, negative_step, correction, eps = numbers
    exp_avg = torch_lerp(exp_avg, grad, one_minus_beta1)
    exp_avg_sq = torch_addcmul(torch.mul(exp_avg_sq, beta2), grad, grad, one_minus_beta2)
    largest = torch.maximum(maximum[0], exp_avg_sq) if amsgrad else exp_avg_sq
    denominator = torch.add(torch.div(torch.sqrt(largest), correction), eps)
    param = torch_addcdiv(param, exp_avg, denominator, negative_step)
    return (param, exp_avg, exp_avg_sq, largest) if amsgrad else (param, exp_avg, exp_avg_sq)


ROWS = [
    OpDef('adam_step', _adam_step_type, _adam_step, numpy_row(_adam_step), shard=pointwise()),
]
