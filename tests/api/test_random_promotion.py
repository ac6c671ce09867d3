"""Hypothesis: a binary op on two operands of random dtypes and broadcastable shapes (or a
tensor and a Python number, on either side) gives torch's dtype, shape and values, or
raises where torch raises."""

import operator

import torch
from api_check import assert_like_torch, made
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gt

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
# Numbers that every dtype holds, so the known scalar-casting bugs stay out of the way.
NUMBERS = [0, 1, 2, 0.5, 2.5, True, False]
OPS = {
    'add': operator.add, 'sub': operator.sub, 'mul': operator.mul, 'div': operator.truediv,
    'eq': operator.eq, 'lt': operator.lt, 'ge': operator.ge,
    'maximum': lambda a, b: a.maximum(b),
    'where': lambda a, b: (gt if isinstance(a, gt.Tensor) else torch).where(b != 0, a, b),
}


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcast_pair(draw):
    shape = draw(shapes)
    other = list(shape[draw(st.integers(0, len(shape))):])
    other = tuple(1 if draw(st.booleans()) else size for size in other)
    return (shape, other) if draw(st.booleans()) else (other, shape)


@SETTINGS
@given(st.sampled_from(sorted(OPS)), st.sampled_from(DTYPES), st.sampled_from(DTYPES),
       broadcast_pair())
def test_tensor_op_tensor(name, left_dtype, right_dtype, shapes):
    if name == 'sub' and torch.bool in (left_dtype, right_dtype):
        return  # torch refuses; test_errors covers it
    (a, ta), (b, tb) = made(shapes[0], left_dtype), made(shapes[1], right_dtype, nonzero=True)
    assert_like_torch(OPS[name], (a, b), (ta, tb))


@SETTINGS
@given(st.sampled_from(sorted(set(OPS) - {'where', 'maximum'})), st.sampled_from(DTYPES),
       st.sampled_from(NUMBERS), shapes, st.booleans())
def test_tensor_op_number(name, dtype, number, shape, number_first):
    if name == 'sub' and (dtype == torch.bool or isinstance(number, bool)):
        return  # see test_subtracting_a_python_bool_raises
    got, want = made(shape, dtype, nonzero=True)
    fn = OPS[name]
    if number_first:
        assert_like_torch(lambda x: fn(number, x), (got,), (want,))
    else:
        assert_like_torch(lambda x: fn(x, number), (got,), (want,))
