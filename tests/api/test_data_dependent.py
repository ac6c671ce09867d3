"""Calls whose result sizes depend on the values (`x[mask]`, `nonzero`, `argwhere`,
`masked_select`, `unique`): GT knows their ranks and dtypes from the call (gt.ir.data_dependent),
as torch's results have them, and a script that uses them never imports torch._dynamo."""

import itertools
import warnings

import pytest
import torch
from api_check import array, assert_same, pair
from gt_test_support import run_script

import gt
from gt.ir.data_dependent import RULES, known
from gt.ir.dtypes import DTYPE_NAMES, TORCH_DTYPES
from gt.ir.graph import TensorType
from gt.ir.ops.torch_calls import call

SHAPES = [(), (5,), (4, 3), (2, 3, 4)]
DTYPES = [torch.float32, torch.int64, torch.bool, torch.float16]


def _type(shape, dtype) -> TensorType:
    return TensorType(shape, DTYPE_NAMES[dtype])


def _cases():
    """(function, input types, wire args, kwargs) over shapes and dtypes, masks included."""
    for shape, dtype in itertools.product(SHAPES, DTYPES):
        source = _type(shape, dtype)
        for fn in ('torch.nonzero', 'Tensor.nonzero', 'torch.argwhere', 'Tensor.argwhere'):
            yield fn, (source,), [['T', 0]], {}
        yield 'torch.nonzero', (source,), [['T', 0]], {'as_tuple': True}
        for inverse, counts in itertools.product((False, True), repeat=2):
            for fn in ('torch.unique', 'Tensor.unique'):
                yield fn, (source,), [['T', 0]], {'return_inverse': inverse,
                                                  'return_counts': counts}
        yield 'torch.unique', (source,), [['T', 0]], {'dim': 0}
        for leading in range(len(shape) + 1):
            mask = _type(shape[:leading], torch.bool)
            yield 'Tensor.__getitem__', (source, mask), [['T', 0], ['T', 1]], {}
            yield 'torch.masked_select', (source, mask), [['T', 0], ['T', 1]], {}
        yield 'Tensor.__getitem__', (source, _type(shape, torch.int64)), [['T', 0], ['T', 1]], {}
        yield 'Tensor.__getitem__', (source, _type((7,), torch.bool)), [['T', 0], ['T', 1]], {}


def _real(types: tuple) -> list:
    """Tensors of these types, with values that select some elements and not others."""
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(t.shape, generator=generator).gt(0).to(TORCH_DTYPES[t.dtype])
            for t in types]


@pytest.mark.parametrize('fn, types, args, kwargs', list(_cases()),
                         ids=lambda case: str(case))
def test_the_rules_agree_with_torch(fn, types, args, kwargs):
    assert fn in RULES
    found = known(fn, types, args, kwargs)
    try:
        result = call(fn, _real(types), args, kwargs)
    except Exception:  # torch refuses the call: so must the rule, leaving it to fake tensors
        assert found is None
        return
    if found is None:  # not sure: fake tensors decide (as_tuple, non-bool indices)
        return
    ranks, dtypes, skeleton = found
    outputs = list(result) if isinstance(result, tuple) else [result]
    assert isinstance(skeleton, tuple) == isinstance(result, tuple)
    assert ranks == tuple(t.dim() for t in outputs)
    assert dtypes == tuple(DTYPE_NAMES[t.dtype] for t in outputs)
    skeletons = list(skeleton) if isinstance(skeleton, tuple) else [skeleton]
    assert [(t.dim(), t.dtype) for t in skeletons] == [(t.dim(), t.dtype) for t in outputs]


def test_the_idioms_match_torch():
    x, tx = pair(array((6, 5), low=-3, high=4))
    rows, trows = pair(array((6,), dtype=torch.bool))
    assert_same(x[x > 0], tx[tx > 0])
    assert_same(x[rows], tx[trows])
    assert_same(x[x > 100] + 1, tx[tx > 100] + 1)  # empty, and recording goes on
    assert_same(gt.nonzero(x > 0), torch.nonzero(tx > 0))
    assert_same((x > 1).nonzero(), (tx > 1).nonzero())
    assert_same(gt.argwhere(x < 0), torch.argwhere(tx < 0))
    assert_same(x.masked_select(x > 1) * 2, tx.masked_select(tx > 1) * 2)
    assert_same(gt.masked_select(x, rows[:, None]), torch.masked_select(tx, trows[:, None]))
    assert_same(x.unique(), tx.unique())
    for got, want in zip(gt.unique(x, return_inverse=True, return_counts=True),
                         torch.unique(tx, return_inverse=True, return_counts=True)):
        assert_same(got, want)


def test_a_mask_of_the_wrong_shape_is_torchs_index_error():
    x, mask = gt.ones(4, 3), gt.ones(5, dtype=torch.bool)
    with pytest.raises(IndexError, match='mask'):
        x[mask]
    assert x.sum().item() == 12.0  # the session goes on


def test_a_script_using_them_never_imports_torch_dynamo():
    result = run_script("""
        import sys
        import gt
        x = gt.randn(50, 4)
        picked = x[x > 0]
        values, counts = (x > 0).unique(return_counts=True)
        print(picked.shape == (int((x > 0).sum()),), gt.nonzero(x > 1).shape[1],
              gt.masked_select(x, x < 0).dim(), int(counts.sum()),
              'torch._dynamo' in sys.modules)
        """)
    assert result.returncode == 0, result.explain()
    assert result.stdout.split() == ['True', '2', '1', '200', 'False'], result.explain()


def test_a_byte_mask_selects_as_torchs_with_its_warning():
    """torch takes a uint8 index tensor as a mask and warns that it is deprecated; its
    meta kernel, which GT works types out with, refused one."""
    got, want = pair(array((4, 3)))
    mask = torch.tensor([1, 0, 1, 1], dtype=torch.uint8)
    with pytest.warns(UserWarning, match='indexing with dtype torch.uint8') as caught:
        selected = got[gt.tensor(mask)]
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning, match='indexing with dtype torch.uint8'):
        want_selected = want[mask]
    assert_same(selected, want_selected)


def byte_mask_writes(module):
    """(name, key, value) writes through a uint8 mask, made alike by `module`."""
    mask = module.tensor([1, 0], dtype=module.uint8)
    return [('lone mask, number', mask, 5.0), ('mask and a slice', (mask, slice(None)), 5),
            ('None and the mask', (None, mask), 1.0), ('0-d value', mask, module.tensor(7.0)),
            ('one-element value', mask, module.tensor([7.0])),
            ('two masks', (mask, mask), 5.0), ('mask and longs', (mask, module.tensor([0])), 5.0),
            ('rows', mask, module.tensor([3.0, 4.0]))]


@pytest.mark.parametrize('index', range(len(byte_mask_writes(torch))),
                         ids=[name for name, _, _ in byte_mask_writes(torch)])
def test_a_write_through_a_byte_mask_is_torchs_at_the_call(index):
    """torch fills through a lone uint8 mask with masked_fill_, which refuses it at the
    call (GT's meta kernel did not: the write failed on the worker, at the next fetch);
    the other writes take it as a bool mask, with the deprecation warning."""
    _, want_key, want_value = byte_mask_writes(torch)[index]
    _, key, value = byte_mask_writes(gt)[index]
    got, want = pair(array((2, 2)))
    try:
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter('always')
            want[want_key] = want_value
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match='only supports boolean masks') as caught:
            got[key] = value
        assert str(caught.value) == str(error)
    else:
        assert 'indexing with dtype torch.uint8' in str(theirs[0].message)
        with pytest.warns(UserWarning, match='indexing with dtype torch.uint8') as caught:
            got[key] = value
        assert caught[0].filename == __file__
    assert_same(got, want)
