"""The max pooling rows (gt/ir/ops/pooling.py) against torch: 'max_pooled' is the values
torch's pooling found, and 'max_pool_backward' is torch's gradient from the indices, to
the bit, over 1, 2 and 3 spatial dims, batched or not, with ties (ReLU'd input: torch
gives a window's gradient to its first maximum); their type rules refuse indices,
gradients and attrs that do not fit the pooling."""

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, tensor

from gt.ir import OPS, TensorType

f32, f64, bf16 = torch.float32, torch.float64, torch.bfloat16


def _attrs(dims, kernel, stride, padding, dilation, ceil_mode):
    return dict(dims=dims, kernel_size=kernel, stride=stride, padding=padding,
                dilation=dilation, ceil_mode=ceil_mode)


# (input shape, attrs)
CASES = [
    ((2, 3, 10), _attrs(1, [3], [2], [1], [1], False)),
    ((3, 9), _attrs(1, [2], [2], [0], [2], True)),
    ((4, 3, 9, 9), _attrs(2, [3, 3], [2, 2], [1, 1], [1, 1], False)),
    ((3, 8, 7), _attrs(2, [2, 3], [1, 2], [0, 1], [2, 1], True)),
    ((2, 2, 5, 6, 7), _attrs(3, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], True)),
    ((2, 4, 6, 5), _attrs(3, [3, 2, 2], [1, 2, 1], [1, 0, 1], [1, 1, 2], False)),
]


def case_id(case) -> str:
    shape, attrs = case
    return f"{attrs['dims']}d-{'x'.join(map(str, shape))}"


def pooled(x, attrs):
    """torch's values and indices, from the function gt.nn runs by name."""
    pool = getattr(F, f"max_pool{attrs['dims']}d")
    return pool(x, attrs['kernel_size'], attrs['stride'], attrs['padding'], attrs['dilation'],
                ceil_mode=attrs['ceil_mode'], return_indices=True)


@pytest.mark.parametrize('dtype', [f32, f64, bf16], ids=str)
@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_max_pooled_is_torchs_values(case, dtype):
    shape, attrs = case
    x = tensor(shape, dtype)
    values, indices = pooled(x, attrs)
    check_op('max_pooled', [x, values, indices], attrs, values)


@pytest.mark.parametrize('dtype', [f32, f64, bf16], ids=str)
@pytest.mark.parametrize('case', CASES, ids=case_id)
def test_max_pool_backward_is_torchs_gradient(case, dtype):
    shape, attrs = case
    x = tensor(shape, dtype).clamp(min=0).requires_grad_()  # windows of zeros tie
    values, indices = pooled(x, attrs)
    gradient = tensor(tuple(values.shape), dtype)
    (expected,) = torch.autograd.grad(values, x, gradient)
    check_op('max_pool_backward', [gradient, x.detach(), indices], attrs, expected)


def _types(*pairs):
    return tuple(TensorType(shape, dtype) for shape, dtype in pairs)


POOL_2x2 = _attrs(2, [2, 2], [2, 2], [0, 0], [1, 1], False)


@pytest.mark.parametrize('op, types, attrs, message', [
    ('max_pooled', _types(((1, 2, 4, 4), 'float32'), ((1, 2, 2, 2), 'float32'),
                          ((1, 2, 2, 2), 'int32')), POOL_2x2, 'must be int64'),
    ('max_pooled', _types(((1, 2, 4, 4), 'float32'), ((1, 2, 3, 2), 'float32'),
                          ((1, 2, 2, 2), 'int64')), POOL_2x2, r'the values .* pooled shape'),
    ('max_pooled', _types(((1, 2, 4, 4), 'float32'), ((1, 2, 2, 2), 'float64'),
                          ((1, 2, 2, 2), 'int64')), POOL_2x2, 'must be float32'),
    ('max_pooled', _types(((1, 2, 4, 4), 'int64'), ((1, 2, 2, 2), 'int64'),
                          ((1, 2, 2, 2), 'int64')), POOL_2x2, 'floating'),
    ('max_pooled', _types(((4, 4), 'float32'), ((2, 2), 'float32'), ((2, 2), 'int64')),
     POOL_2x2, 'takes 3-d or 4-d input'),
    ('max_pooled', _types(((1, 2, 4, 4), 'float32'), ((1, 2, 2, 2), 'float32'),
                          ((1, 2, 2, 2), 'int64')),
     dict(POOL_2x2, kernel_size=[2]), 'kernel_size must be 2 ints'),
    ('max_pooled', _types(((1, 2, 4, 4), 'float32'), ((1, 2, 2, 2), 'float32'),
                          ((1, 2, 2, 2), 'int64')),
     dict(POOL_2x2, kernel_size=[5, 5], stride=[5, 5]), 'too small'),
    ('max_pool_backward', _types(((1, 2, 3, 2), 'float32'), ((1, 2, 4, 4), 'float32'),
                                 ((1, 2, 2, 2), 'int64')), POOL_2x2, r'the gradient .* pooled'),
    ('max_pool_backward', _types(((1, 2, 2, 2), 'float32'), ((1, 2, 4, 4), 'float32'),
                                 ((1, 2, 2, 2), 'float32')), POOL_2x2, 'must be int64'),
])
def test_type_rules_refuse(op, types, attrs, message):
    with pytest.raises(ValueError, match=message):
        OPS[op].infer(types, **attrs)
