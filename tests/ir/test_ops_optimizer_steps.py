"""The 'adam_step' row (gt/ir/ops/optimizer_steps.py) against torch.optim's single-tensor
Adam and AdamW (`foreach=False`): three steps of a parameter, each the row on the
parameter, its gradient, the moments (and AMSGrad's maximum) and the step's numbers,
equal to torch's parameter and state after its step, to the bit; the type rule refuses
operands that do not fit."""

import pytest
import torch
from op_check import check_op, tensor

from gt.ir import OPS, TensorType

# (torch optimizer, its options, the row's decay)
VARIANTS = [
    ('Adam', {}, None),
    ('Adam', {'weight_decay': 0.1}, 'l2'),
    ('Adam', {'weight_decay': 0.1, 'amsgrad': True}, 'l2'),
    ('AdamW', {'weight_decay': 0.1}, 'decoupled'),
    ('AdamW', {'weight_decay': 0.1, 'amsgrad': True, 'betas': (0.8, 0.9)}, 'decoupled'),
]


def number(value: float, dtype: torch.dtype) -> torch.Tensor:
    """A Python number as gt.optim passes it: a 0-d tensor of the parameter's dtype, or
    float32 beside half and bfloat16 parameters."""
    if dtype in (torch.float16, torch.bfloat16):
        dtype = torch.float32
    return torch.tensor(value, dtype=torch.float64).to(dtype)


# (4, 5) lies in the scalar loop of torch's half kernels, (8, 16) in their vector body.
@pytest.mark.parametrize('shape', [(4, 5), (8, 16)], ids=str)
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16], ids=str)
@pytest.mark.parametrize('variant', VARIANTS, ids=lambda v: f'{v[0]}-{v[2]}-'
                         f'{"amsgrad" if v[1].get("amsgrad") else "plain"}')
def test_adam_step_is_torchs_single_tensor_update(variant, dtype, shape):
    name, options, decay = variant
    lr, eps = 3e-3, 1e-8
    beta1, beta2 = options.get('betas', (0.9, 0.999))
    amsgrad = options.get('amsgrad', False)
    weight_decay = options.get('weight_decay', 0.0)
    param = torch.nn.Parameter(tensor(shape, dtype))
    optimizer = getattr(torch.optim, name)([param], lr=lr, eps=eps, foreach=False, **options)
    mine = param.detach().clone()
    moments = [torch.zeros_like(mine) for _ in range(3 if amsgrad else 2)]
    for step in range(1, 4):
        grad = tensor(shape, dtype)
        operands = [mine, grad, *moments]
        if decay == 'decoupled':
            operands.append(number(1 - lr * weight_decay, dtype))
        elif decay == 'l2':
            operands.append(number(weight_decay, dtype))
        operands += [number(value, dtype) for value in (
            1 - beta1, beta2, -lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5, eps)]
        param.grad = grad.clone()
        optimizer.step()
        state = optimizer.state[param]
        expected = [param.detach(), state['exp_avg'], state['exp_avg_sq']]
        if amsgrad:
            expected.append(state['max_exp_avg_sq'])
        attrs = {'amsgrad': amsgrad, 'decay': decay, 'one_minus_beta2': 1 - beta2}
        check_op('adam_step', operands, attrs, tuple(t.clone() for t in expected))
        mine, moments = expected[0].clone(), [t.clone() for t in expected[1:]]


def _types(*shapes, dtype='float32'):
    return tuple(TensorType(shape, dtype) for shape in shapes)


PLAIN = {'amsgrad': False, 'decay': None, 'one_minus_beta2': 0.001}


@pytest.mark.parametrize('types, attrs, message', [
    (_types((3,), (3,), (3,), (3,), (), (), (), ()), PLAIN, 'expected 9 operands'),
    (_types((3,), (4,), (3,), (3,), (), (), (), (), ()), PLAIN, 'must be alike'),
    (_types((3,), (3,), (3,), (3,), (), (), (2,), (), ()), PLAIN, 'must be 0-d'),
    (_types((3,), (3,), (3,), (3,), (), (), (), (), (), dtype='int64'), PLAIN, 'floating'),
    (_types((3,), (3,), (3,), (3,), (), (), (), (), ()), dict(PLAIN, decay='l1'),
     'decay one of'),
    (_types((3,), (3,), (3,), (3,), (), (), (), (), ()), dict(PLAIN, one_minus_beta2='x'),
     'must be a number'),
])
def test_type_rule_refuses(types, attrs, message):
    with pytest.raises(ValueError, match=message):
        OPS['adam_step'].infer(types, **attrs)
