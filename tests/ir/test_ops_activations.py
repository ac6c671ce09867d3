"""The activation rows (gt/ir/ops/activations.py) against torch's functions and backward
kernels, to the bit, and against their numpy rows; their attrs are checked. torch's
SELU, CELU and ReLU6 are elu and hardtanh with constants: the rows give torch's values
for those too."""

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, one_node, tensor

from gt.ir import TensorType

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
aten = torch.ops.aten
SHAPES = [(3, 5), (), (0, 2)]
SELU = {'alpha': 1.6732632423543772848170429916717, 'scale': 1.0507009873554804934193349852946,
        'input_scale': 1.0}

# (torch function, row, backward row, attrs, torch's forward, torch's backward kernel).
CASES = [
    ('silu', 'silu', 'silu_backward', {}, F.silu, aten.silu_backward),
    ('mish', 'mish', 'mish_backward', {}, F.mish, aten.mish_backward),
    ('hardswish', 'hardswish', 'hardswish_backward', {}, F.hardswish, aten.hardswish_backward),
    ('hardsigmoid', 'hardsigmoid', 'hardsigmoid_backward', {}, F.hardsigmoid,
     aten.hardsigmoid_backward),
    ('leaky_relu', 'leaky_relu', 'leaky_relu_backward', {'negative_slope': 0.2},
     lambda x: F.leaky_relu(x, 0.2), lambda g, x: aten.leaky_relu_backward(g, x, 0.2, False)),
    ('elu', 'elu', 'elu_backward', {'alpha': 0.7, 'scale': 1.0, 'input_scale': 1.0},
     lambda x: F.elu(x, 0.7), lambda g, x: aten.elu_backward(g, 0.7, 1.0, 1.0, False, x)),
    ('selu', 'elu', 'elu_backward', SELU, F.selu,
     lambda g, x: aten.elu_backward(g, SELU['alpha'], SELU['scale'], 1.0, False, x)),
    ('celu', 'elu', 'elu_backward', {'alpha': 0.5, 'scale': 1.0, 'input_scale': 2.0},
     lambda x: F.celu(x, 0.5), lambda g, x: aten.elu_backward(g, 0.5, 1.0, 2.0, False, x)),
    ('softplus', 'softplus', 'softplus_backward', {'beta': 2.0, 'threshold': 3.0},
     lambda x: F.softplus(x, 2.0, 3.0), lambda g, x: aten.softplus_backward(g, x, 2.0, 3.0)),
    ('hardtanh', 'hardtanh', 'hardtanh_backward', {'min_val': -0.5, 'max_val': 1.5},
     lambda x: F.hardtanh(x, -0.5, 1.5), lambda g, x: aten.hardtanh_backward(g, x, -0.5, 1.5)),
    ('relu6', 'hardtanh', 'hardtanh_backward', {'min_val': 0.0, 'max_val': 6.0}, F.relu6,
     lambda g, x: aten.hardtanh_backward(g, x, 0.0, 6.0)),
]


@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
@pytest.mark.parametrize('case', CASES, ids=lambda case: case[0])
def test_forward_is_torchs(case, dtype):
    _, row, _, attrs, forward, _ = case
    for shape in SHAPES:
        x = tensor(shape, dtype) * 4  # past every kink: -3, 3, 6, the thresholds
        check_op(row, [x], attrs, forward(x))


@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
@pytest.mark.parametrize('case', CASES, ids=lambda case: case[0])
def test_backward_is_torchs_kernel(case, dtype):
    _, _, backward_row, attrs, _, backward = case
    for shape in SHAPES:
        gradient, x = tensor(shape, dtype), tensor(shape, dtype) * 4
        check_op(backward_row, [gradient, x], attrs, backward(gradient, x))


def test_the_kinks_are_torchs():
    """Exactly at the points where a slope changes, torch's kernels pick a side."""
    x = torch.tensor([-3.0, 3.0, 0.0, -0.5, 1.5, 6.0, 1.5, 20.0])
    gradient = torch.ones_like(x)
    for _, row, backward_row, attrs, forward, backward in CASES:
        check_op(row, [x], attrs, forward(x))
        check_op(backward_row, [gradient, x], attrs, backward(gradient, x))


@pytest.mark.parametrize('row, attrs, error, message', [
    ('silu', {}, RuntimeError, 'silu: expected a floating point tensor, got int64'),
    ('leaky_relu', {}, ValueError, r"expected attrs \['negative_slope'\]"),
    ('leaky_relu', {'negative_slope': True}, TypeError, 'negative_slope must be a finite number'),
    ('elu', {'alpha': 1.0, 'scale': float('nan'), 'input_scale': 1.0}, TypeError,
     'scale must be a finite number'),
    ('hardtanh', {'min_val': 2.0, 'max_val': 1.0}, ValueError,
     'min_val cannot be greater than max_val'),
])
def test_bad_inputs_and_attrs_are_named(row, attrs, error, message):
    dtype = 'int64' if row == 'silu' else 'float32'
    with pytest.raises(error, match=message):
        one_node(row, [TensorType((2,), dtype)], attrs)


def test_a_backward_takes_a_gradient_like_its_input():
    with pytest.raises(ValueError, match='silu_backward: the gradient'):
        one_node('silu_backward', [TensorType((2,), 'float32'), TensorType((3,), 'float32')], {})
