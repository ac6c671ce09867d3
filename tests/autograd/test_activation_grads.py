"""The activations with kernels of their own (gt/ir/ops/activations.py), through
gt.nn.functional: values and gradients against torch's, in float64 and float32, and the
gradient of the gradient (the backward rows' second derivatives) against torch's
double backward."""

import pytest
import torch
from check import check_vs_torch

import gt
import gt.nn.functional as F

# (name, keyword arguments, the backward row its gradient is): torch.nn.functional's and
# gt.nn.functional's alike.
ACTIVATIONS = [
    ('silu', {}, 'silu_backward'), ('mish', {}, 'mish_backward'),
    ('hardswish', {}, 'hardswish_backward'), ('hardsigmoid', {}, 'hardsigmoid_backward'),
    ('leaky_relu', {'negative_slope': 0.2}, 'leaky_relu_backward'),
    ('elu', {'alpha': 0.7}, 'elu_backward'), ('selu', {}, 'elu_backward'),
    ('celu', {'alpha': 0.5}, 'elu_backward'),
    ('softplus', {'beta': 2.0, 'threshold': 3.0}, 'softplus_backward'),
    ('hardtanh', {'min_val': -0.5, 'max_val': 1.5}, 'hardtanh_backward'),
    ('relu6', {}, 'hardtanh_backward'),
]


def case_id(case) -> str:
    name, options, _ = case
    return name + ''.join(f',{k}={v}' for k, v in options.items())


def applied(name: str, options: dict, backward_row: str = ''):
    """`fn(x)`: the activation of x's own library, on 4x (past the kinks at -3, 3, 6)."""
    def fn(x):
        functional = F if isinstance(x, gt.Tensor) else torch.nn.functional
        return getattr(functional, name)(x * 4, **options)
    return fn


@pytest.mark.parametrize('dtype', [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize('case', ACTIVATIONS, ids=case_id)
def test_values_and_gradients_are_torchs(case, dtype):
    check_vs_torch(applied(*case), (4, 5), dtype=dtype)


@pytest.mark.parametrize('case', ACTIVATIONS, ids=case_id)
def test_the_gradient_differentiates_again_as_torchs(case):
    values = [0.3, -1.2, 2.0, 0.0, -4.0, 0.9, -0.6, 0.2]
    fn = applied(*case)
    x = gt.tensor(values, dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = gt.autograd.grad(fn(x).sum(), x, create_graph=True)
    (t_first,) = torch.autograd.grad(fn(tx).sum(), tx, create_graph=True)
    (second,) = gt.autograd.grad((first * first * x).sum(), x)
    if case[0] == 'hardsigmoid':
        # torch has no double backward for it; its slope is flat, so d/dx (s^2 x) = s^2.
        t_second = t_first.detach() ** 2
    else:
        (t_second,) = torch.autograd.grad((t_first * t_first * tx).sum(), tx)
    torch.testing.assert_close(second.data, t_second)


@pytest.mark.parametrize('case', ACTIVATIONS, ids=case_id)
def test_one_node_each_way_not_a_call_by_name(case):
    x = gt.randn(3, 4, requires_grad=True)
    applied(*case)(x).sum().backward()
    ir = gt.debug.dump_ir(show=False)
    assert f'= {case[2]}(' in ir, ir
    assert 'torch_call' not in ir and 'torch_vjp' not in ir, ir


def test_integer_inputs_get_torchs_answer():
    """Only floating tensors take the rows; torch computes relu6 on integers and refuses
    silu, and GT gives the same."""
    assert F.relu6(gt.arange(-3, 9)).tolist() == torch.nn.functional.relu6(
        torch.arange(-3, 9)).tolist()
    with pytest.raises(Exception, match="not implemented for 'Long'"):
        F.silu(gt.arange(3)).tolist()
    with pytest.raises(RuntimeError, match='alpha cannot be 0 for CELU'):
        F.celu(gt.randn(3), alpha=0.0).tolist()


def test_inplace_rebinds_the_input_as_torchs_does():
    x, tx = gt.tensor([-2.0, 0.5, 4.0]), torch.tensor([-2.0, 0.5, 4.0])
    F.leaky_relu(x, 0.1, inplace=True)
    torch.nn.functional.leaky_relu(tx, 0.1, inplace=True)
    torch.testing.assert_close(x.data, tx)
