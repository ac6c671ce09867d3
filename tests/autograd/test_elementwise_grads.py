"""Gradients of the elementwise ops against torch, with broadcasting, Python-number
operands, ties and mixed dtypes: 'add', 'sub', 'mul', 'div', 'pow', 'pow_number' (a
number exponent), 'maximum', 'minimum',
'remainder', 'where', 'neg', 'abs', 'relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt',
'gelu', 'clamp' and 'cast'."""

import numpy as np
import pytest
import torch
from check import check_vs_torch, lib

BROADCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((1,), ())]


@pytest.mark.parametrize('shapes', BROADCAST, ids=str)
@pytest.mark.parametrize('name, fn', [
    ('add', lambda a, b: a + b),
    ('sub', lambda a, b: a - b),
    ('mul', lambda a, b: a * b),
    ('div', lambda a, b: a / (b * b + 0.5)),
    ('maximum', lambda a, b: a.maximum(b)),
    ('minimum', lambda a, b: a.minimum(b)),
    ('where', lambda a, b: lib(a).where(a > b, a, b * 2)),
])
def test_binary(name, fn, shapes):
    check_vs_torch(fn, *shapes)


def test_pow_base_and_exponent():
    check_vs_torch(lambda a, b: a ** b, (3, 4), (4,), positive=True)
    check_vs_torch(lambda a, b: a.pow(b), (2, 3), (2, 3), positive=True)


def test_pow_with_numbers():
    check_vs_torch(lambda a: a ** 2 + a ** 3.5 + a ** 0 + a ** -1.5, (3, 4), positive=True)
    check_vs_torch(lambda a: 2 ** a + 0.5 ** a, (3, 4))
    check_vs_torch(lambda a: a ** 2, (5,))  # negative bases, integer exponent


def test_pow_at_zero_base_and_zero_exponent():
    base = np.array([0.0, 0.0, 1.5, 0.0, 2.0])
    exponent = np.array([0.0, 2.0, 0.0, 0.5, 1.0])
    check_vs_torch(lambda a, b: a ** b, data=[base, exponent])


def test_numbers_on_either_side():
    check_vs_torch(lambda a: 1 - a * 3 + 2 / (a * a + 1) - a / 4 + (5 + a), (3, 2))


def test_remainder():
    check_vs_torch(lambda a, b: a % (b.abs() + 0.5), (3, 4), (4,))
    check_vs_torch(lambda a: a % 0.7, (6,))


def test_ties_of_maximum_and_minimum_split_the_gradient():
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 0.0, 3.0, 5.0])
    check_vs_torch(lambda x, y: x.maximum(y) * 3 + x.minimum(y), data=[a, b])
    check_vs_torch(lambda x: x.maximum(x), data=[a])


def test_where_with_numbers_and_broadcast_condition():
    check_vs_torch(lambda a, b: lib(a).where(b > 0, a, 0.0), (2, 3), (3,))
    check_vs_torch(lambda a: lib(a).where(a < 0, 1.5, a), (4,))


def test_mixed_dtypes_give_each_input_its_own_dtype():
    def fn(a, b):
        return a.float() * b + a.float().double() * 2

    check_vs_torch(fn, (3,), (3,))
    check_vs_torch(lambda a, b: a.float() + b, (2, 3), (3,))


def _gelu(x, approximate):
    if isinstance(x, torch.Tensor):
        return torch.nn.functional.gelu(x, approximate=approximate)
    return x.gelu(approximate=approximate)


@pytest.mark.parametrize('dtype', [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize('name, fn', [
    ('neg', lambda x: -x),
    ('abs', lambda x: x.abs()),
    ('relu', lambda x: x.relu()),
    ('sigmoid', lambda x: x.sigmoid()),
    ('tanh', lambda x: x.tanh()),
    ('exp', lambda x: x.exp()),
    ('log', lambda x: (x * x + 0.1).log()),
    ('sqrt', lambda x: (x * x + 0.1).sqrt()),
    ('gelu none', lambda x: _gelu(x, 'none')),
    ('gelu tanh', lambda x: _gelu(x, 'tanh')),
    ('clamp', lambda x: x.clamp(-0.5, 0.7)),
    ('clamp min', lambda x: x.clamp(min=-0.2)),
    ('clamp max', lambda x: x.clamp(max=0.1)),
    ('sin', lambda x: x.sin()),
    ('cos', lambda x: x.cos()),
    ('tan', lambda x: (x * 0.5).tan()),
    ('asin', lambda x: (x.tanh() * 0.9).asin()),
    ('acos', lambda x: (x.tanh() * 0.9).acos()),
    ('atan', lambda x: x.atan()),
    ('sinh', lambda x: x.sinh()),
    ('cosh', lambda x: x.cosh()),
    ('asinh', lambda x: x.asinh()),
    ('acosh', lambda x: (x * x + 1.5).acosh()),
    ('atanh', lambda x: (x.tanh() * 0.9).atanh()),
    ('log1p', lambda x: (x * x).log1p()),
    ('expm1', lambda x: x.expm1()),
    ('log2', lambda x: (x * x + 0.1).log2()),
    ('log10', lambda x: (x * x + 0.1).log10()),
    ('erf', lambda x: x.erf()),
    ('erfc', lambda x: x.erfc()),
    ('rsqrt', lambda x: (x * x + 0.5).rsqrt()),
    ('reciprocal', lambda x: (x * x + 0.5).reciprocal()),
    ('floor', lambda x: x.floor() * x),
    ('ceil', lambda x: x.ceil() * x),
    ('trunc', lambda x: x.trunc() * x),
    ('round', lambda x: x.round() * x + (x * 10).round(decimals=1)),
    ('sign', lambda x: x.sign() * x),
])
def test_unary(name, fn, dtype):
    check_vs_torch(fn, (4, 5), dtype=dtype)


def test_tanh_backward_differentiates_again():
    """'tanh_backward' (tanh's gradient) has a gradient of its own: second derivatives."""
    import gt
    x = gt.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    tx = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    (first,) = gt.autograd.grad(x.tanh().sum(), x, create_graph=True)
    (t_first,) = torch.autograd.grad(tx.tanh().sum(), tx, create_graph=True)
    (second,) = gt.autograd.grad((first * first).sum(), x)
    (t_second,) = torch.autograd.grad((t_first * t_first).sum(), tx)
    torch.testing.assert_close(second.data, t_second)


def test_relu_backward_differentiates_again():
    """'relu_backward' (relu's gradient, torch's threshold_backward) has gradients: the
    same mask for the cotangent, zero for the input."""
    import gt
    values = [0.3, -1.2, 2.0, 0.0, -4.0]
    x = gt.tensor(values, dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = gt.autograd.grad((x.relu() * x).sum(), x, create_graph=True)
    (t_first,) = torch.autograd.grad((tx.relu() * tx).sum(), tx, create_graph=True)
    (second,) = gt.autograd.grad((first * first).sum(), x)
    (t_second,) = torch.autograd.grad((t_first * t_first).sum(), tx)
    torch.testing.assert_close(second.data, t_second)


@pytest.mark.parametrize('approximate', ['none', 'tanh'])
def test_gelu_backward_differentiates_again(approximate):
    """'gelu_backward' has gradients for the cotangent and the input: second derivatives
    of gelu, exact and tanh-approximated, as torch's."""
    import gt
    values = [0.3, -1.2, 2.0, 0.0, -4.0]
    x = gt.tensor(values, dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = gt.autograd.grad(_gelu(x, approximate).sum(), x, create_graph=True)
    (t_first,) = torch.autograd.grad(torch.nn.functional.gelu(tx, approximate=approximate).sum(),
                                     tx, create_graph=True)
    (second,) = gt.autograd.grad((first * first * x).sum(), x)
    (t_second,) = torch.autograd.grad((t_first * t_first * tx).sum(), tx)
    torch.testing.assert_close(second.data, t_second)


def test_fused_multiply_adds_differentiate_as_torchs():
    """'addcmul', 'addcdiv' and 'lerp' (the optimizers' fused updates), broadcasting
    included."""
    from gt.tensor import Tensor, apply

    def addcmul(x, a, b):
        if isinstance(x, Tensor):
            return apply('addcmul', [x, a, b], value=-0.5)
        return torch.addcmul(x, a, b, value=-0.5)

    def lerp(start, end, weight):
        if isinstance(start, Tensor):
            return apply('lerp', [start, end, weight])
        return torch.lerp(start, end, weight)

    def addcdiv(x, a, b, value):
        if isinstance(x, Tensor):
            return apply('addcdiv', [x, a, b, value])
        return x + value * a / b  # torch's addcdiv takes its value as a number only

    check_vs_torch(addcmul, (3, 4), (4,), (3, 1))
    check_vs_torch(addcdiv, (3, 4), (4,), (3, 1), ())
    check_vs_torch(lerp, (3, 4), (3, 4), ())
    check_vs_torch(lerp, (3, 4), (1, 4), (3, 4))


def test_unary_at_kinks():
    """Where torch picks a subgradient: relu and abs at 0, clamp at its bounds (inclusive),
    gelu at 0 and far out."""
    data = np.array([-2.0, -0.5, 0.0, 0.5, 1.0, -0.0, 3.0, -30.0, 30.0])
    check_vs_torch(lambda x: x.relu() + x.abs() * 2, data=[data])
    check_vs_torch(lambda x: x.clamp(-0.5, 0.5) + x.clamp(min=0.0) * 3, data=[data])
    check_vs_torch(lambda x: x.clamp(1.0, 0.0), data=[data])  # min > max: max wins
    check_vs_torch(lambda x: _gelu(x, 'none') + _gelu(x, 'tanh') * 3, data=[data])


def test_unary_of_0d_tensors():
    check_vs_torch(lambda x: x.exp() * x.tanh() - x.relu(), ())


def test_casts():
    check_vs_torch(lambda x: x.float() * 3, (3, 4))
    check_vs_torch(lambda x: x.double().half().float(), (3,), dtype=torch.float32)
    check_vs_torch(lambda x: x.clone() * x, (3,))


def test_casts_to_integers_have_no_gradient():
    check_vs_torch(lambda x: (x * 3).long(), (3, 4))
    check_vs_torch(lambda x: (x > 0, x.to(torch.int32), x.bool()), (5,))
