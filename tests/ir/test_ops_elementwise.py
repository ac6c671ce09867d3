"""Elementwise rows (binary, unary, where) against torch: values, shapes, dtypes, and the
numpy rows against the torch rows."""

import pytest
import torch
from op_check import check_op, tensor

from gt.ir.ops.fused import addcdiv_composed

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, u8, b8 = torch.int64, torch.int32, torch.uint8, torch.bool

BINARY = ['add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum', 'floor_divide',
          'remainder', 'eq', 'ne', 'gt', 'lt', 'ge', 'le', 'logical_and', 'logical_or']
# Pairs of (shape, dtype): same shapes, broadcasting, mixed dtypes, 0-d operands.
OPERANDS = [
    (((2, 3), f32), ((2, 3), f32)),
    (((2, 1, 3), f32), ((4, 3), f32)),
    (((2, 3), i64), ((3,), i64)),
    (((2, 3), i64), ((2, 3), f32)),
    (((2, 3), f32), ((), f64)),
    (((), i64), ((2, 3), i32)),
    (((4,), u8), ((4,), i64)),
    (((3,), f16), ((3,), f32)),
    (((3,), bf16), ((3,), bf16)),
    (((2, 3), b8), ((2, 3), b8)),
    (((2, 3), b8), ((3,), i64)),
    (((5,), f64), ((5,), i32)),
    (((0, 3), f32), ((3,), f32)),
]
# Ops torch refuses for these operand dtypes (the type rule's errors are tested elsewhere).
REFUSED = {'sub': {b8}, 'pow': {(b8, b8)}, 'floor_divide': {(b8, b8)},
           'remainder': {(b8, b8)}}


def _operands(op, first, second):
    (sa, da), (sb, db) = first, second
    a = tensor(sa, da)
    if op in ('div', 'floor_divide', 'remainder') and not db.is_floating_point:
        b = tensor(sb, db, low=1, high=5)  # torch raises on integer division by zero
    elif op == 'pow' and not db.is_floating_point:
        b = tensor(sb, db, low=0, high=3)  # and on negative integer powers
    else:
        b = tensor(sb, db)
    return a, b


def _refused(op, da, db):
    rule = REFUSED.get(op, set())
    return (b8 in rule and b8 in (da, db)) or (da, db) in rule


@pytest.mark.parametrize('first, second', OPERANDS, ids=lambda o: f'{list(o[0])}{o[1]}')
@pytest.mark.parametrize('op', BINARY)
def test_binary(op, first, second):
    if _refused(op, first[1], second[1]):
        pytest.skip('torch refuses these dtypes')
    a, b = _operands(op, first, second)
    check_op(op, [a, b], {}, getattr(torch, op)(a, b))
    if op not in ('div', 'floor_divide', 'remainder', 'pow'):  # b was drawn as a divisor
        check_op(op, [b, a], {}, getattr(torch, op)(b, a))


@pytest.mark.parametrize('number', [2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.5, 0.0])
@pytest.mark.parametrize('dtype', [f32, f64], ids=str)
def test_pow_number_is_torchs_number_form(number, dtype):
    """A Python-number exponent reaches the worker as a 0-d host tensor; torch computes
    `x ** 2` as x * x and `x ** 0.5` as sqrt(x) for a number only, so `pow_number` passes
    the number. `pow`, of a script's 0-d tensor, is torch's tensor form."""
    base = tensor((1000,), dtype).abs() + 0.1
    exponent = torch.tensor(number, dtype=dtype)
    check_op('pow_number', [base, exponent], {}, torch.pow(base, number))
    check_op('pow', [base, exponent], {}, torch.pow(base, exponent))


def test_div_is_true_division():
    a, b = torch.tensor([7, -7]), torch.tensor([2, 2])
    check_op('div', [a, b], {}, torch.tensor([3.5, -3.5]))


def test_comparisons_compare_in_the_promoted_dtype():
    a, b = torch.tensor([1, 2]), torch.tensor([1.5, 2.0])
    check_op('lt', [a, b], {}, torch.tensor([True, False]))
    check_op('eq', [a, b], {}, torch.tensor([False, True]))


BITWISE = ['bitwise_and', 'bitwise_or', 'bitwise_xor']
INTEGRAL_OPERANDS = [(((2, 3), i64), ((2, 3), i64)), (((2, 3), i32), ((3,), u8)),
                     (((2, 3), b8), ((2, 3), b8)), (((4,), u8), ((), i64))]


@pytest.mark.parametrize('first, second', INTEGRAL_OPERANDS, ids=lambda o: f'{list(o[0])}{o[1]}')
@pytest.mark.parametrize('op', BITWISE)
def test_bitwise(op, first, second):
    a, b = tensor(*first), tensor(*second)
    check_op(op, [a, b], {}, getattr(torch, op)(a, b))
    (x,) = [tensor(*first)]
    check_op('bitwise_not', [x], {}, torch.bitwise_not(x))


UNARY = ['neg', 'abs', 'relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt', 'logical_not',
         'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh', 'atanh',
         'log1p', 'expm1', 'log2', 'log10', 'erf', 'erfc', 'rsqrt', 'reciprocal', 'floor',
         'ceil', 'trunc', 'round', 'sign']
NO_BOOL = {'neg', 'abs', 'relu', 'floor', 'ceil', 'trunc', 'round'}


@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16, i64, i32, b8], ids=str)
@pytest.mark.parametrize('op', UNARY)
def test_unary(op, dtype):
    """Values beyond some functions' domains (log of negatives, asin beyond 1) must give
    torch's NaNs too."""
    if op in NO_BOOL and dtype == b8:
        pytest.skip('torch refuses bool here')
    for shape in [(2, 3), (), (0, 2)]:
        x = tensor(shape, dtype)
        check_op(op, [x], {}, getattr(torch, op)(x))


@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
def test_tanh_backward_is_torchs_kernel(dtype):
    """tanh's gradient: torch's fused kernel, which separate ops match only to an ulp."""
    for shape in [(3, 5), (), (0, 2)]:
        gradient, output = tensor(shape, dtype), tensor(shape, dtype).tanh()
        check_op('tanh_backward', [gradient, output], {},
                 torch.ops.aten.tanh_backward(gradient, output))


@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
def test_relu_backward_is_torchs_kernel(dtype):
    """relu's gradient: torch's threshold_backward, a NaN input passing its gradient on."""
    for shape in [(3, 5), (), (0, 2)]:
        gradient, x = tensor(shape, dtype), tensor(shape, dtype)
        check_op('relu_backward', [gradient, x], {},
                 torch.ops.aten.threshold_backward(gradient, x, 0))
    x = torch.tensor([-1.0, 0.0, 2.0, float('nan')], dtype=dtype)
    gradient = torch.ones_like(x)
    check_op('relu_backward', [gradient, x], {}, torch.ops.aten.threshold_backward(gradient, x, 0))


@pytest.mark.parametrize('approximate', ['none', 'tanh'])
@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
def test_gelu_backward_is_torchs_kernel(dtype, approximate):
    """gelu's gradient: torch's kernel, whose slope separate ops match only to an ulp."""
    for shape in [(3, 5), (), (0, 2)]:
        gradient, x = tensor(shape, dtype), tensor(shape, dtype)
        check_op('gelu_backward', [gradient, x], {'approximate': approximate},
                 torch.ops.aten.gelu_backward(gradient, x, approximate=approximate))


FUSED_SHAPES = [((3, 5), (3, 5), (3, 5)), ((3, 5), (5,), ()), ((), (), ()), ((0, 2), (2,), ()),
                ((1, 5), (4, 1), (4, 5))]


@pytest.mark.parametrize('shapes', FUSED_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
def test_addcmul_is_torchs_kernel(dtype, shapes):
    """One rounding where `x + value * a * b` from separate ops takes several."""
    x, a, b = (tensor(shape, dtype) for shape in shapes)
    for value in (1, -0.01, 0.5):
        check_op('addcmul', [x, a, b], {'value': value}, torch.addcmul(x, a, b, value=value))


@pytest.mark.parametrize('shapes', FUSED_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
def test_lerp_is_torchs_kernel(dtype, shapes):
    start, end, weight = (tensor(shape, dtype) for shape in shapes)
    check_op('lerp', [start, end, weight], {}, torch.lerp(start, end, weight))


@pytest.mark.parametrize('shapes', FUSED_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
def test_addcdiv_is_torchs_kernel(dtype, shapes):
    """`x.addcdiv(a, b, value=number)`, the number a 0-d operand of its literal's dtype."""
    x, a = tensor(shapes[0], dtype), tensor(shapes[1], dtype)
    b = tensor(shapes[2], dtype).abs() + 0.5
    for number in (1.0, -0.01, 0.7071):
        value = torch.tensor(number, dtype=f64 if dtype == f64 else f32)
        check_op('addcdiv', [x, a, b, value], {}, x.addcdiv(a, b, value=number))


# Past the last full vector of torch's half kernels: (37,) and (5, 3) end in its scalar loop.
HALF_SHAPES = [(64,), (37,), (5, 3), (2055,)]


@pytest.mark.parametrize('shape', HALF_SHAPES, ids=str)
@pytest.mark.parametrize('dtype', [f16, bf16], ids=str)
def test_fused_rows_take_a_float32_number_beside_half_tensors(dtype, shape):
    """What torch's half optimizer steps compute from a Python number: `add_(g, alpha)`,
    `lerp(end, weight)` and `addcdiv(a, b, value)`, to the bit, in the vectorized body
    and the scalar tail alike; the number arrives as a float32 literal."""
    x, y, z = tensor(shape, dtype), tensor(shape, dtype), tensor(shape, dtype).abs() + 0.5
    for number in (-0.1, -0.0123, 3e-3, 0.9):
        scale = torch.tensor(number)
        check_op('addcmul', [x, y, scale], {'value': 1}, x.add(y, alpha=number))
        check_op('lerp', [x, y, scale], {}, torch.lerp(x, y, number))
        check_op('addcdiv', [x, y, z, scale], {}, x.addcdiv(y, z, value=number))
        # The path for devices where `.item()` would wait: the same bits.
        assert torch.equal(addcdiv_composed(x, y, z, scale), x.addcdiv(y, z, value=number))


@pytest.mark.parametrize('decimals', [1, 2, -1])
def test_round_to_decimals(decimals):
    x = tensor((3, 4)) * 100
    check_op('round', [x], {'decimals': decimals}, torch.round(x, decimals=decimals))


@pytest.mark.parametrize('dtype', [f32, f64, f16, bf16], ids=str)
@pytest.mark.parametrize('approximate', ['none', 'tanh'])
def test_gelu(approximate, dtype):
    x = tensor((3, 4), dtype) * 3
    check_op('gelu', [x], {'approximate': approximate},
             torch.nn.functional.gelu(x, approximate=approximate))


CLAMPS = [
    (f32, -0.5, 0.5), (f32, None, 0.0), (f32, 0.0, None), (f32, 1, 2),
    (i64, -1, 2), (i64, 0.5, None), (i64, -1, 2.5), (i32, None, 1), (b8, 0, None),
    (f16, -1.5, 1.5), (f32, 1.0, -1.0),
]


@pytest.mark.parametrize('dtype, low, high', CLAMPS)
def test_clamp(dtype, low, high):
    x = tensor((3, 4), dtype)
    check_op('clamp', [x], {'min': low, 'max': high}, torch.clamp(x, min=low, max=high))
    check_op('clamp', [x[0, 0]], {'min': low, 'max': high},
             torch.clamp(x[0, 0], min=low, max=high))


@pytest.mark.parametrize('source', [f32, f64, f16, i64, i32, u8, b8], ids=str)
@pytest.mark.parametrize('target', ['float32', 'float16', 'int64', 'int32', 'bool', 'float64'])
def test_cast(source, target):
    x = tensor((2, 3), source)
    check_op('cast', [x], {'dtype': target}, x.to(getattr(torch, target)))


def test_cast_to_bfloat16_torch_only():
    x = tensor((2, 3), f32)
    check_op('cast', [x], {'dtype': 'bfloat16'}, x.to(bf16))


WHERE = [
    ((2, 3), (2, 3), f32, (2, 3), f32),
    ((2, 1), (3,), i64, (1, 3), f32),
    ((), (2, 3), i32, (), i64),
    ((4,), (4,), b8, (4,), b8),
    ((2, 1, 1), (1, 3, 1), f16, (4,), f64),
]


@pytest.mark.parametrize('condition, sa, da, sb, db', WHERE)
def test_where(condition, sa, da, sb, db):
    c, a, b = tensor(condition, b8), tensor(sa, da), tensor(sb, db)
    check_op('where', [c, a, b], {}, torch.where(c, a, b))
