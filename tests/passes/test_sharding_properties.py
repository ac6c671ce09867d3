"""The property that sharding must never break: random op chains on randomly placed inputs,
over 1 to 4 workers, give the values the unsharded graph gives (run with torch)."""

import hypothesis.strategies as st
import pytest
import torch
from graph_builder import GraphBuilder
from hypothesis import HealthCheck, given, settings
from simulate import run_sharded, run_whole

from gt.ir import Partial, Replicate, Shard
from gt.passes import PipelineOptions
from gt.passes.propagate_placements import propagate_placements, searched


@st.composite
def placements(draw, shape, workers, partial_ok=True):
    chosen = tuple(sorted(draw(st.sets(st.sampled_from(workers), min_size=1))))
    kinds = ['R'] + [axis for axis in range(len(shape))] + (['P'] if partial_ok else [])
    kind = draw(st.sampled_from(kinds))
    if isinstance(kind, int):
        return Shard(kind, chosen)
    return Partial(chosen) if kind == 'P' else Replicate(chosen)


# Each step takes the current value (2-D, shape [rows, cols]) and the builder.
def _pointwise(b, x, other):
    return b.emit('add', b.emit('relu', x), other)


def _scale(b, x, other):
    return b.emit('mul', x, b.number(0.5))


def _matmul(b, x, other):
    square = b.emit('matmul', x, b.emit('transpose', other, dim0=0, dim1=1))
    return b.emit('matmul', square, other)


def _sum_rows(b, x, other):
    return b.emit('expand', b.emit('sum', x, dim=[0], keepdim=True), shape=list(x.shape))


def _mean_cols(b, x, other):
    return b.emit('sub', x, b.emit('mean', x, dim=[1], keepdim=True))


def _softmax(b, x, other):
    return b.emit('softmax', x, dim=1)


def _max(b, x, other):
    return b.emit('maximum', x, b.emit('amax', x, dim=[0], keepdim=True))


def _reshape(b, x, other):
    rows, cols = x.shape
    flat = b.emit('reshape', x, shape=[rows * cols])
    return b.emit('reshape', b.emit('exp', b.emit('neg', flat)), shape=[rows, cols])


def _cat_slice(b, x, other):
    both = b.emit('cat', x, other, dim=1)
    return b.emit('getitem', both, index=[['slice', None, None, None],
                                          ['slice', 0, x.shape[1], None]])


def _where(b, x, other):
    return b.emit('where', b.emit('gt', x, other), x, b.emit('mul', other, b.number(2.0)))


def _check_chain(builder: GraphBuilder, x, other, steps, options: PipelineOptions) -> None:
    """Apply `steps` in turn from x, keep every result, and compare the sharded run with
    the whole one on random data."""
    value, kept = x, []
    for step in steps:
        value = step(builder, value, other)
        kept.append(value)
    graph = builder.graph(*kept)
    inputs = [torch.randn(x.shape, generator=torch.Generator().manual_seed(seed))
              for seed in (0, 1)]
    expected = run_whole(graph, inputs, literals=builder.literals)
    actual, placed = run_sharded(graph, options, inputs, literals=builder.literals)
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, equal_nan=True,
                                   msg=lambda m: f'{m}\n{placed}')


STEPS = [_pointwise, _scale, _matmul, _sum_rows, _mean_cols, _softmax, _max, _reshape,
         _cat_slice, _where]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_chains_equal_torch_on_any_placement(data):
    count = data.draw(st.integers(1, 4), label='workers')
    workers = tuple(range(count))
    rows, cols = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 5))
    builder = GraphBuilder()
    x = builder.input((rows, cols), data.draw(placements((rows, cols), workers)))
    other = builder.input((rows, cols), data.draw(placements((rows, cols), workers)))
    steps = data.draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=5))
    _check_chain(builder, x, other, steps, PipelineOptions(workers, data.draw(
        st.sampled_from(workers))))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_draws_and_creations_do_not_depend_on_placement(data):
    """Created values (auto-sharded or in a signal scope, uneven shards included) equal
    torch's for the same seed, however they are placed."""
    count = data.draw(st.integers(1, 4), label='workers')
    workers = tuple(range(count))
    rows = data.draw(st.integers(1, 9))
    axis = data.draw(st.integers(0, 1))
    scope_workers = tuple(sorted(data.draw(st.sets(st.sampled_from(workers), min_size=1))))
    builder = GraphBuilder()
    scope = data.draw(st.sampled_from([None, 'layer']))
    drawn = builder.emit('randn', shape=[rows, 3], dtype='float32', scope=scope)
    noise = builder.emit('rand', shape=[rows, 3], dtype='float32')
    steps = builder.emit('arange', shape=[rows], dtype='float32', start=1.0, step=0.5,
                         scope=scope)
    filled = builder.emit('full', shape=[rows, 3], dtype='float32', value=2.0, scope=scope)
    column = builder.emit('reshape', steps, shape=[rows, 1])
    total = builder.emit('add', builder.emit('mul', drawn, filled), column)
    graph = builder.graph(total, noise, builder.emit('sum', total, dim=None, keepdim=False))
    options = PipelineOptions(workers, 0, configs=(('layer', axis, scope_workers),),
                              auto_shard_elements=data.draw(st.sampled_from([None, 1])))
    expected = run_whole(graph, [], literals=builder.literals)
    actual, placed = run_sharded(graph, options, [], literals=builder.literals)
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=lambda m: f'{m}\n{placed}')


# Steps on a 3-D value [batch, rows, cols] and a 3-D other of the same shape.
def _batched_matmul(b, x, other):
    square = b.emit('matmul', x, b.emit('transpose', other, dim0=1, dim1=2))
    return b.emit('matmul', square, other)


def _permute_back(b, x, other):
    turned = b.emit('permute', b.emit('tanh', x), dims=[2, 0, 1])
    return b.emit('add', b.emit('permute', turned, dims=[1, 2, 0]), other)


def _unsqueeze_squeeze(b, x, other):
    return b.emit('squeeze', b.emit('unsqueeze', x, dim=1), dim=1)


def _stack_split(b, x, other):
    stacked = b.emit('stack', x, other, dim=1)
    first, second = b.emit('split', stacked, sizes=[1, 1], dim=1)
    return b.emit('sub', b.emit('squeeze', first, dim=1), b.emit('squeeze', second, dim=1))


def _index_and_expand(b, x, other):
    """x + x[:, 0] broadcast back over the rows, through None-indexing and expand."""
    first_row = b.emit('getitem', x, index=[['slice', None, None, None], ['int', 0], ['none']])
    return b.emit('add', x, b.emit('expand', first_row, shape=list(x.shape)))


def _reductions(b, x, other):
    spread = b.emit('var', x, dim=[2], correction=0, keepdim=True)
    top, _ = b.emit('max_dim', x, dim=1, keepdim=True)
    return b.emit('add', b.emit('sub', x, top), spread)


def _gather_rows(b, x, other):
    batch, rows, cols = x.shape
    index = b.emit('cast', b.emit('floor_divide', b.emit('abs', b.emit('mul', other, b.number(
        2.0))), b.number(1.0)), dtype='int64')
    index = b.emit('remainder', index, b.number(cols, 'int64'))
    return b.emit('gather', x, index, dim=2)


def _softmax_last(b, x, other):
    return b.emit('log_softmax', b.emit('add', x, other), dim=2)


def _layer_norm(b, x, other):
    """layer_norm over the last dim and its backward (with `other` as the cotangent): rows
    sharded on a batch axis stay, the weight's and bias's gradients are partial sums."""
    cols = x.shape[2]
    weight = b.emit('getitem', other, index=[['int', 0], ['int', 0]])
    bias = b.emit('getitem', other, index=[['int', -1], ['int', -1]])
    out, mean, rstd = b.emit('layer_norm', x, weight, bias, normalized_shape=[cols], eps=1e-5,
                             weight=True, bias=True)
    dx, dweight, dbias = b.emit('layer_norm_backward', other, x, mean, rstd, weight,
                                normalized_shape=[cols], weight=True,
                                output_mask=[True, True, True])
    return b.emit('add', b.emit('add', out, dx), b.emit('mul', dweight, dbias))


def _softmax_gradients(b, x, other):
    y = b.emit('softmax_backward', other, b.emit('softmax', x, dim=1), dim=1)
    log_y = b.emit('log_softmax', x, dim=2)
    return b.emit('add', y, b.emit('log_softmax_backward', other, log_y, dim=2))


def _nll_loss(b, x, other):
    """x as (N, C, d) log-probabilities, classes from `other`'s first row."""
    first = b.emit('getitem', other, index=[['slice', None, None, None], ['int', 0]])
    target = b.emit('cast', b.emit('floor_divide', b.emit('abs', b.emit('mul', first, b.number(
        2.0))), b.number(1.0)), dtype='int64')
    target = b.emit('remainder', target, b.number(x.shape[1], 'int64'))
    total, weight = b.emit('nll_loss_forward', b.emit('log_softmax', x, dim=1), target,
                           ignore_index=-100, weight=False)
    return b.emit('add', x, b.emit('div', total, weight))


def _folded_mm(b, x, other):
    return b.emit('matmul', x, b.emit('folded_mm', x, other))


STEPS_3D = [_batched_matmul, _permute_back, _unsqueeze_squeeze, _stack_split,
            _index_and_expand, _reductions, _gather_rows, _softmax_last, _layer_norm,
            _softmax_gradients, _nll_loss, _folded_mm]


# A worker's shard may be empty; torch then warns that its variance has no degrees of freedom.
@pytest.mark.filterwarnings('ignore:.*degrees of freedom is <= 0')
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_3d_chains_equal_torch_on_any_placement(data):
    count = data.draw(st.integers(1, 4), label='workers')
    workers = tuple(range(count))
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(3))
    builder = GraphBuilder()
    x = builder.input(shape, data.draw(placements(shape, workers)))
    other = builder.input(shape, data.draw(placements(shape, workers, partial_ok=False)))
    steps = data.draw(st.lists(st.sampled_from(STEPS_3D), min_size=1, max_size=4))
    _check_chain(builder, x, other, steps, PipelineOptions(workers, data.draw(
        st.sampled_from(workers))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_workers_shortcut_places_every_op_as_the_search_does(data):
    """On one worker, with no signal, propagate_placements skips the search: each op's
    outputs, the placements it needs and its attrs must be what the search gives."""
    three_d = data.draw(st.booleans())
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(3 if three_d else 2))
    builder = GraphBuilder()
    x, other = (builder.input(shape, Replicate((0,))) for _ in range(2))
    value, kept = x, []
    for step in data.draw(st.lists(st.sampled_from(STEPS_3D if three_d else STEPS),
                                   min_size=1, max_size=5)):
        value = step(builder, value, other)
        kept.append(value)
    graph = builder.graph(*kept)
    options = PipelineOptions((0,), 0)
    quick, full = propagate_placements(graph, options), searched(graph, options)

    def placed(result):
        return ([(node.op, [value.placement for value in node.outputs],
                  node.input_placements, node.attrs) for node in result.nodes],
                [value.placement for value in result.outputs])
    assert placed(quick) == placed(full)
