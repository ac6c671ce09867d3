"""Type rules refuse what torch refuses, with a message naming the op and the shapes.

For each case the type rule must raise the given error (these messages reach users at
their line), and the torch row must fail too on real tensors of those types.
"""

import re

import pytest
import torch
from op_check import wire

from gt.ir import OPS, TensorType

f32, i64, b8 = 'float32', 'int64', 'bool'
LAYER_NORM = {'normalized_shape': [3], 'eps': 1e-5, 'weight': False, 'bias': False}
BACKWARD = {'normalized_shape': [3], 'weight': False, 'output_mask': [True, False, True]}
NLL = {'ignore_index': -100, 'weight': False}

CASES = [
    ('add', [((2, 3), f32), ((4, 3), f32)], {}, ValueError,
     'add: shapes [2, 3] and [4, 3] cannot be broadcast together'),
    ('mul', [((2, 3), f32), ((2,), f32)], {}, ValueError, 'mul: shapes [2, 3] and [2]'),
    ('sub', [((2,), b8), ((2,), i64)], {}, RuntimeError, 'sub: not supported for bool'),
    ('pow', [((2,), b8), ((2,), b8)], {}, RuntimeError, 'pow: not supported for bool'),
    ('remainder', [((2,), b8), ((), b8)], {}, RuntimeError, 'remainder'),
    ('where', [((2,), i64), ((2,), f32), ((2,), f32)], {}, RuntimeError,
     'where: the condition must be a bool tensor, got int64'),
    ('where', [((3,), b8), ((2,), f32), ((2,), f32)], {}, ValueError, 'where: shapes [3]'),
    ('neg', [((2,), b8)], {}, RuntimeError, 'neg: not supported for bool'),
    ('abs', [((2,), b8)], {}, RuntimeError, 'abs'),
    ('relu', [((2,), b8)], {}, RuntimeError, 'relu'),
    ('gelu', [((2,), i64)], {'approximate': 'none'}, RuntimeError,
     'gelu: expected a floating point tensor, got int64'),
    ('gelu', [((2,), f32)], {'approximate': 'exact'}, ValueError, "approximate must be 'none'"),
    ('clamp', [((2,), f32)], {'min': None, 'max': None}, ValueError,
     'clamp: at least one of min and max'),
    ('clamp', [((2,), b8)], {'min': True, 'max': None}, RuntimeError, 'clamp'),
    ('clamp', [((2,), 'int8')], {'min': None, 'max': 1000}, ValueError,
     'clamp: bound 1000 cannot be converted to int8'),
    ('cast', [((2,), f32)], {'dtype': 'float128'}, TypeError, "cast: unknown dtype 'float128'"),
    ('matmul', [((2, 3), f32), ((4, 5), f32)], {}, ValueError,
     'matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)'),
    ('matmul', [((3,), f32), ((4,), f32)], {}, ValueError, 'cannot be multiplied (3 != 4)'),
    ('matmul', [((2, 3), i64), ((3, 4), f32)], {}, RuntimeError,
     'matmul: expected both arguments to have the same dtype, got int64 and float32'),
    ('matmul', [((), f32), ((3,), f32)], {}, ValueError, 'at least 1 dimension'),
    ('matmul', [((2, 2, 3), f32), ((4, 3, 5), f32)], {}, ValueError,
     'matmul: the batch dimensions of shapes [2, 2, 3] and [4, 3, 5]'),
    ('matmul', [((2, 2), b8), ((2, 2), b8)], {}, RuntimeError, 'matmul: not supported for bool'),
    ('reshape', [((2, 3), f32)], {'shape': [4, 2]}, ValueError,
     'reshape: shape [4, 2] is invalid for input of shape [2, 3]'),
    ('reshape', [((2, 3), f32)], {'shape': [-1, -1]}, ValueError, 'only one dimension can be -1'),
    ('reshape', [((0, 3), f32)], {'shape': [-1, 0]}, ValueError, 'is invalid for input'),
    ('reshape', [((2, 3), f32)], {'shape': [-2, -3]}, ValueError, 'is invalid for input'),
    ('transpose', [((2, 3), f32)], {'dim0': 0, 'dim1': 2}, IndexError,
     'transpose: Dimension out of range (expected to be in range of [-2, 1], but got 2)'),
    ('permute', [((2, 3), f32)], {'dims': [0, 0]}, ValueError, 'not a permutation'),
    ('permute', [((2, 3), f32)], {'dims': [0]}, ValueError, 'not a permutation'),
    ('unsqueeze', [((2, 3), f32)], {'dim': 3}, IndexError,
     'unsqueeze: Dimension out of range (expected to be in range of [-3, 2], but got 3)'),
    ('squeeze', [((1, 2), f32)], {'dim': [0, -2]}, ValueError, 'names a dimension twice'),
    ('expand', [((2, 3), f32)], {'shape': [4, 3]}, ValueError,
     'expand: cannot expand shape [2, 3] to [4, 3]'),
    ('expand', [((2, 3), f32)], {'shape': [-1, 2, 3]}, ValueError, 'cannot expand'),
    ('expand', [((2, 3), f32)], {'shape': [3]}, ValueError, 'fewer than'),
    ('cat', [((2, 3), f32), ((3, 3), f32)], {'dim': 1}, ValueError,
     'cat: shapes [[2, 3], [3, 3]] must match except in dimension 1'),
    ('cat', [((2, 3), f32), ((2, 3, 1), f32)], {'dim': 0}, ValueError, 'must match'),
    ('cat', [((), f32), ((), f32)], {'dim': 0}, ValueError, 'zero-dimensional'),
    ('cat', [((2, 3), f32)], {'dim': 2}, ValueError, 'cat: Dimension out of range'),
    ('stack', [((2, 3), f32), ((3, 2), f32)], {'dim': 0}, ValueError, 'equal size'),
    ('split', [((2, 3), f32)], {'sizes': [1, 1], 'dim': 1}, ValueError,
     'split: sizes [1, 1] must be non-negative and sum to 3'),
    ('split', [((), f32)], {'sizes': [1], 'dim': 0}, ValueError, 'at least one dimension'),
    ('sum', [((2, 3), f32)], {'dim': 3, 'keepdim': False}, IndexError,
     'sum: Dimension out of range (expected to be in range of [-2, 1], but got 3)'),
    ('sum', [((2, 3), f32)], {'dim': [0, -2], 'keepdim': False}, ValueError, 'twice'),
    ('mean', [((2, 3), i64)], {'dim': None, 'keepdim': False}, RuntimeError,
     'mean: expected a floating point tensor, got int64'),
    ('mean', [((2, 3), b8)], {'dim': 0, 'keepdim': False}, RuntimeError, 'mean'),
    ('var', [((2, 3), i64)], {'dim': None, 'correction': 1, 'keepdim': False}, RuntimeError, 'var'),
    ('std', [((2, 3), f32)], {'dim': -3, 'correction': 1, 'keepdim': False}, ValueError,
     'std: Dimension out of range'),
    ('amax', [((0, 3), f32)], {'dim': 0, 'keepdim': False}, ValueError,
     'amax: cannot reduce over a dimension of size 0'),
    ('amin', [((0, 3), f32)], {'dim': None, 'keepdim': False}, ValueError, 'size 0'),
    ('max_dim', [((0, 3), f32)], {'dim': 0, 'keepdim': False}, ValueError, 'size 0'),
    ('min_dim', [((2, 3), f32)], {'dim': 2, 'keepdim': False}, ValueError, 'out of range'),
    ('argmax', [((2,), b8)], {'dim': None, 'keepdim': False}, RuntimeError, 'argmax'),
    ('argmin', [((0, 3), f32)], {'dim': None, 'keepdim': False}, ValueError, 'empty tensor'),
    ('softmax', [((2, 3), i64)], {'dim': 1}, RuntimeError, 'softmax: expected a floating point'),
    ('log_softmax', [((2, 3), f32)], {'dim': 2}, IndexError, 'log_softmax: Dimension out'),
    ('getitem', [((3, 4), f32)], {'index': [['int', 5]]}, IndexError,
     'getitem: index 5 is out of bounds for dimension 0 with size 3'),
    ('getitem', [((3, 4), f32)], {'index': [['int', 0], ['int', -5]]}, IndexError,
     'index -5 is out of bounds for dimension 1 with size 4'),
    ('getitem', [((3, 4), f32)], {'index': [['int', 0]] * 3}, IndexError, 'too many indices'),
    ('getitem', [((), f32)], {'index': [['int', 0]]}, IndexError, 'too many indices'),
    ('getitem', [((3, 4), f32)], {'index': [['slice', None, None, -1]]}, ValueError,
     'step must be greater than zero'),
    ('setitem', [((3, 4), f32), ((3,), f32)], {'index': [['int', 0]]}, ValueError,
     'setitem: a value of shape [3] cannot be assigned to an indexed region of shape [4]'),
    ('setitem', [((3, 4), f32), ((2, 1, 4), f32)], {'index': [['int', 0]]}, ValueError,
     'cannot be assigned'),
    ('gather', [((3, 4), f32), ((3, 2), f32)], {'dim': 1}, RuntimeError,
     'gather: expected an int32 or int64 index tensor, got float32'),
    ('gather', [((3, 4), f32), ((3,), i64)], {'dim': 1}, ValueError, 'as many dimensions'),
    ('gather', [((3, 4), f32), ((4, 1), i64)], {'dim': 1}, ValueError, 'larger than'),
    ('scatter_add', [((3, 4), f32), ((3, 2), i64), ((3, 2), 'float64')], {'dim': 1},
     RuntimeError, 'scatter_add: expected the source to have dtype float32'),
    ('scatter_add', [((3, 4), f32), ((3, 2), i64), ((3, 1), f32)], {'dim': 1}, ValueError,
     'no larger than the source'),
    ('embedding', [((5,), f32), ((2,), i64)], {}, ValueError, 'embedding: weight must be 2-D'),
    ('embedding', [((5, 3), f32), ((2,), 'int16')], {}, RuntimeError, 'int32 or int64'),
    ('index_add', [((3, 4), f32), ((1, 2), i64), ((3, 2), f32)], {'dim': 1}, ValueError,
     'index_add: the index must be 1-D'),
    ('index_add', [((3, 4), f32), ((2,), i64), ((2, 2), f32)], {'dim': 1}, ValueError,
     'index_add: source of shape [2, 2] must have shape [3, 2]'),
    ('index_add', [((3, 4), f32), ((2,), i64), ((3, 2), i64)], {'dim': 1}, RuntimeError, 'dtype'),
    ('layer_norm', [((2, 3), f32)], LAYER_NORM | {'normalized_shape': [4]}, ValueError,
     'layer_norm: normalized_shape [4] does not match the last dims of an input of shape '
     '[2, 3]'),
    ('layer_norm', [((2, 3), f32)], LAYER_NORM | {'normalized_shape': []}, ValueError,
     'layer_norm: normalized_shape must name at least one dimension'),
    ('layer_norm', [((2, 3), i64)], LAYER_NORM, RuntimeError,
     'layer_norm: expected a floating point tensor, got int64'),
    ('layer_norm', [((2, 3), f32), ((4,), f32)], LAYER_NORM | {'weight': True}, ValueError,
     'layer_norm: the weight of shape [4] must have the normalized shape [3]'),
    ('layer_norm_backward', [((2, 3), f32), ((2, 3), f32), ((2, 1), f32), ((2, 1), f32)],
     BACKWARD | {'normalized_shape': [4]}, ValueError,
     'layer_norm_backward: normalized_shape [4] does not match'),
    ('softmax_backward', [((2, 3), f32), ((2, 4), f32)], {'dim': 1}, ValueError,
     'softmax_backward: the gradient'),
    ('log_softmax_backward', [((2, 3), i64), ((2, 3), i64)], {'dim': 1}, RuntimeError,
     'log_softmax_backward: expected a floating point tensor'),
    ('nll_loss_forward', [((4, 3), f32), ((5,), i64)], NLL, ValueError,
     'nll_loss_forward: input of shape [4, 3] needs a target of shape [4], got [5]'),
    ('nll_loss_forward', [((4, 3), f32), ((4,), i64), ((2,), f32)], NLL | {'weight': True},
     ValueError, 'needs one entry per class (3)'),
    ('nll_loss_forward', [((), f32), ((), i64)], NLL, ValueError, 'need a class dimension'),
    ('folded_mm', [((2, 3, 4), f32), ((2, 5, 6), f32)], {}, ValueError,
     'folded_mm: expected operands of 2 or more dims with the same leading dims, got shapes '
     '[2, 3, 4] and [2, 5, 6]'),
    ('folded_mm', [((2, 3), f32), ((2, 4), 'float64')], {}, RuntimeError, 'same dtype'),
    ('addcmul', [((2, 3), f32), ((4,), f32), ((2, 3), f32)], {'value': 1}, ValueError,
     'addcmul'),
    ('lerp', [((2, 3), f32), ((2, 3), f32), ((2, 4), f32)], {}, ValueError, 'lerp'),
]

# Refused by the type rules, where torch's kernels would run (a cast target), fail
# unhelpfully or need a check of their own.
STRICTER = [
    ('layer_norm', [((2, 3), f32), ((3,), 'float64')], LAYER_NORM | {'weight': True},
     RuntimeError, 'layer_norm: the weight has dtype float64; the input has float32'),
    ('layer_norm_backward', [((2, 3), f32), ((2, 3), f32), ((2, 1), f32), ((2, 1), f32)],
     BACKWARD | {'output_mask': [True, True, False]}, ValueError,
     "layer_norm_backward: the weight's gradient needs the weight"),
    ('layer_norm_backward', [((2, 3), f32), ((2, 3), f32), ((2, 1), f32), ((2, 1), f32)],
     BACKWARD | {'output_mask': [False, False, False]}, ValueError, 'at least one True'),
    ('layer_norm_backward', [((2, 3), f32), ((2, 3), f32), ((2, 3), f32), ((2, 1), f32)],
     BACKWARD, ValueError, 'layer_norm_backward: the mean must be'),
    ('nll_loss_forward', [((4, 3), f32), ((4,), f32)], NLL, RuntimeError,
     'nll_loss_forward: expected int64 (or int32) class indices, got float32'),
    ('folded_mm', [((3,), f32), ((3,), f32)], {}, ValueError, '2 or more dims'),
    # torch promotes mixed dtypes; GT's optimizers never mix them, so the rows refuse to.
    ('addcmul', [((2, 3), f32), ((2, 3), 'float64'), ((2, 3), f32)], {'value': 1}, RuntimeError,
     'addcmul: expected operands of one dtype, got float32, float64, float32'),
    ('addcmul', [((2, 3), 'int64'), ((2, 3), 'int64'), ((2, 3), 'int64')], {'value': 1},
     RuntimeError, 'addcmul: expected a floating point tensor, got int64'),
    ('addcmul', [((2, 3), f32), ((2, 3), f32), ((2, 3), f32)], {'value': 'x'}, TypeError,
     "addcmul: value must be a number, got 'x'"),
    ('lerp', [((2, 3), f32), ((2, 3), f32), ((2, 3), 'float64')], {}, RuntimeError,
     'lerp: expected operands of one dtype'),
]


def _tensor(shape, dtype):
    return torch.zeros(shape, dtype=getattr(torch, dtype))


@pytest.mark.parametrize('op, inputs, attrs, error, message', CASES,
                         ids=[f'{case[0]}-{case[4][:30]}' for case in CASES])
def test_type_rule_refuses_what_torch_refuses(op, inputs, attrs, error, message):
    attrs = wire(attrs)
    types = tuple(TensorType(shape, dtype) for shape, dtype in inputs)
    with pytest.raises(error, match=re.escape(message)):
        OPS[op].infer(types, **attrs)
    # A dtype torch's kernels cannot take is a RuntimeError there too (NotImplementedError
    # is one); GT's other refusals may name the problem in a different class than torch.
    refusals = (RuntimeError, IndexError, ValueError, TypeError, KeyError)
    with pytest.raises(RuntimeError if error is RuntimeError else refusals):
        OPS[op].torch(*(_tensor(shape, dtype) for shape, dtype in inputs), **attrs)


@pytest.mark.parametrize('op, inputs, attrs, error, message', STRICTER,
                         ids=[f'{case[0]}-{case[4][:30]}' for case in STRICTER])
def test_type_rules_stricter_than_torchs_kernels(op, inputs, attrs, error, message):
    types = tuple(TensorType(shape, dtype) for shape, dtype in inputs)
    with pytest.raises(error, match=re.escape(message)):
        OPS[op].infer(types, **wire(attrs))


SOURCE_CASES = [
    ('zeros', {'shape': [2, -1], 'dtype': f32}, ValueError, 'zeros: sizes must be non-negative'),
    ('ones', {'shape': [2], 'dtype': 'complex64'}, TypeError, "ones: unknown dtype 'complex64'"),
    ('randn', {'shape': [2], 'dtype': i64}, RuntimeError, 'randn: expected a floating point'),
    ('rand', {'shape': [2], 'dtype': b8}, RuntimeError, 'rand: expected a floating point'),
    ('full', {'shape': [2], 'dtype': 'int8', 'value': 1000}, ValueError,
     'full: value 1000 cannot be converted to int8 without overflow'),
    ('full', {'shape': [2], 'dtype': 'float16', 'value': 1e6}, ValueError, 'overflow'),
    ('arange', {'shape': [3], 'dtype': i64, 'start': 0, 'step': 0}, ValueError,
     'arange: step must be nonzero'),
    ('arange', {'shape': [3, 1], 'dtype': i64, 'start': 0, 'step': 1}, ValueError,
     'one dimension'),
]


@pytest.mark.parametrize('op, attrs, error, message', SOURCE_CASES,
                         ids=[case[0] for case in SOURCE_CASES])
def test_source_type_rules_refuse_bad_attrs(op, attrs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        OPS[op].infer((), **wire(attrs))


def test_getitem_refuses_two_ellipses():
    # Deliberately stricter than torch, which accepts x[..., ...] but then misindexes
    # (x[..., ..., 0] raises for a [2, 3, 4] tensor); numpy refuses it too.
    with pytest.raises(ValueError, match='single ellipsis'):
        OPS['getitem'].infer((TensorType((3, 4), f32),), index=[['ellipsis'], ['ellipsis']])


def test_full_accepts_what_torch_accepts():
    # torch lets negative integers wrap into unsigned types, and infinities into floats.
    OPS['full'].infer((), shape=[2], dtype='uint8', value=-1)
    OPS['full'].infer((), shape=[2], dtype='float16', value=float('inf'))
    assert torch.full((2,), -1, dtype=torch.uint8).tolist() == [255, 255]
