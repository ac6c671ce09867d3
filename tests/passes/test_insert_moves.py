"""propagate_placements, insert_moves and lower on small hand-built graphs, with golden
dumps: the placements each rule picks, the moves it takes, and the per-worker programs."""

import torch
from expecttest import assert_expected_inline
from graph_builder import GraphBuilder
from simulate import run_sharded, run_whole

from gt.ir import Partial, Replicate, Shard, format_graph, verify_placements
from gt.passes import PipelineOptions, lower, run_pipeline

TWO = PipelineOptions(workers=(0, 1), home_worker=0)


def test_data_parallel_step_all_reduces_only_the_weight_gradient():
    b = GraphBuilder()
    x = b.input((8, 4), Shard(0, (0, 1)))
    w = b.input((4, 3), Replicate((0, 1)))
    y = b.emit('matmul', x, w)
    grad_w = b.emit('matmul', b.emit('transpose', x, dim0=0, dim1=1), y)
    step = b.emit('sub', w, b.emit('mul', b.number(0.1), grad_w))
    placed = run_pipeline(b.graph(y, step), TWO, check=True)
    assert_expected_inline(str(placed), """\
graph fragment(%a0: f32[8,4]<S0@w0,w1>, %a1: f32[4,3]<R@w0,w1>) {
  %0: f32[8,3]<S0@w0,w1> = matmul(%a0, %a1)
  %1: f32[4,8]<S1@w0,w1> = transpose(%a0, dim0=0, dim1=1)
  %2: f32[4,3]<P:sum@w0,w1> = matmul(%1, %0)
  %3: f32[]<R@w0,w1> = scalar(dtype=float32, slot=0)
  %4: f32[4,3]<P:sum@w0,w1> = mul(%3, %2)
  %5: f32[4,3]<R@w0,w1> = all_reduce(%4)              # inserted by insert_moves
  %6: f32[4,3]<R@w0,w1> = sub(%a1, %5)
  return %0, %6
}""")


def test_lowered_programs_have_local_shapes_and_paired_moves():
    b = GraphBuilder()
    x = b.input((5, 2), Shard(0, (0, 1)))
    total = b.emit('sum', b.emit('relu', x), dim=[0], keepdim=False)
    zeros = b.emit('zeros', shape=[6, 2], dtype='float32')
    placed = run_pipeline(b.graph(total, zeros),
                          PipelineOptions((0, 1), 1, auto_shard_elements=1), check=True)
    programs = lower(placed, PipelineOptions((0, 1), 1, auto_shard_elements=1))
    assert_expected_inline('\n'.join(format_graph(p.graph) for _, p in sorted(programs.items())),
                           """\
graph worker0(%a0: f32[3,2]<S0@w0,w1>) {
  %0: f32[3,2]<S0@w0,w1> = relu(%a0)
  %1: f32[2]<P:sum@w0,w1> = sum(%0, dim=[0], keepdim=False)
  %2: f32[3,2]<S0@w0,w1> = zeros(shape=[3,2], dtype=float32)
  return %1, %2
}
graph worker1(%a0: f32[2,2]<S0@w0,w1>) {
  %0: f32[2,2]<S0@w0,w1> = relu(%a0)
  %1: f32[2]<P:sum@w0,w1> = sum(%0, dim=[0], keepdim=False)
  %2: f32[3,2]<S0@w0,w1> = zeros(shape=[3,2], dtype=float32)
  return %1, %2
}""")


def test_pipeline_stages_transfer_between_disjoint_workers():
    """A signal on workers 2,3 reading a value sharded on 0,1 gets it sent across."""
    b = GraphBuilder()
    hidden = b.input((4, 2), Shard(0, (0, 1)))
    out = b.emit('tanh', hidden, scope='stage_2')
    options = PipelineOptions((0, 1, 2, 3), 0, configs=(('stage_2', 0, (2, 3)),))
    inputs = [torch.randn(4, 2)]
    actual, placed = run_sharded(b.graph(out), options, inputs)
    assert [node.op for node in placed.nodes] == ['transfer', 'tanh']
    assert placed.outputs[0].placement == Shard(0, (2, 3))
    torch.testing.assert_close(actual[0], run_whole(b.graph(out), inputs)[0])


def test_a_value_moved_once_serves_every_later_user():
    b = GraphBuilder()
    x = b.input((4, 4), Partial((0, 1)))
    first = b.emit('exp', x)
    second = b.emit('relu', x)
    placed = run_pipeline(b.graph(first, second), TWO, check=True)
    assert [node.op for node in placed.nodes] == ['all_reduce', 'exp', 'relu']


def test_signal_configs_naming_absent_workers_use_those_present():
    b = GraphBuilder()
    made = b.emit('ones', shape=[4, 2], dtype='float32', scope='wide')
    options = PipelineOptions((0, 1), 0, configs=(('wide', 1, (1, 5, 7)),))
    placed = verify_placements(run_pipeline(b.graph(made), options))
    assert placed.outputs[0].placement == Shard(1, (1,))


def test_signal_tensor_copies_into_its_signals_placement():
    b = GraphBuilder()
    x = b.input((6, 2), Replicate((0,)))
    copy = b.emit('distribute', x, scope='data')
    options = PipelineOptions((0, 1, 2), 0, configs=(('data', 0, None),))
    inputs = [torch.randn(6, 2)]
    actual, placed = run_sharded(b.graph(copy), options, inputs)
    assert placed.outputs[0].placement == Shard(0, (0, 1, 2))
    assert [node.op for node in placed.nodes] == ['transfer', 'distribute']
    torch.testing.assert_close(actual[0], inputs[0])


def test_big_partial_sums_on_many_workers_all_reduce_in_two_steps():
    b = GraphBuilder()
    big = b.input((512, 256), Partial((0, 1, 2)))
    small = b.input((16, 4), Partial((0, 1, 2)))
    outputs = b.emit('exp', big), b.emit('exp', small)
    options = PipelineOptions((0, 1, 2), 0)
    inputs = [torch.randn(512, 256), torch.randn(16, 4)]
    actual, placed = run_sharded(b.graph(*outputs), options, inputs)
    assert [node.op for node in placed.nodes] == [
        'reduce_scatter', 'all_gather', 'exp', 'all_reduce', 'exp']
    for got, want in zip(actual, run_whole(b.graph(*outputs), inputs)):
        torch.testing.assert_close(got, want)


def test_draws_where_the_generator_is_behind_get_its_state_first():
    from gt.ir import Node
    from gt.passes import generator_holders_after

    b = GraphBuilder()
    small = b.emit('randn', shape=[3], dtype='float32')
    big = b.emit('randn', shape=[4, 2], dtype='float32', scope='wide')
    options = PipelineOptions((0, 1, 2), 1, configs=(('wide', 0, (0, 2)),),
                              generator_holders=(1,))
    placed = run_pipeline(b.graph(small, big), options, check=True)
    assert [str(n.outputs[0].placement) if n.outputs else (n.op, n.attrs)
            for n in placed.nodes] == [
        'R@w1', ('sync_generator', {'source': 1, 'targets': [0, 2]}), 'S0@w0,w2']
    assert generator_holders_after(placed, options) == (0, 2)
    seed = Node('manual_seed', (), (), {'seed': 1})
    seeded = b.graph(small, big).replace(nodes=(b.nodes[0], seed, b.nodes[1]))
    after_seed = run_pipeline(seeded, options)
    assert 'sync_generator' not in str(after_seed)  # every worker was seeded alike
    assert generator_holders_after(after_seed, options) == (0, 2)
    alone = b.graph(small).replace(nodes=b.graph(small).nodes[:1])
    assert generator_holders_after(run_pipeline(alone, options), options) == (1,)


def test_a_mean_over_the_sharded_axis_leaves_partial_sums_of_the_whole_mean():
    import numpy as np

    from gt.ir import OPS

    b = GraphBuilder()
    x = b.input((10, 3), Shard(0, (0, 1, 2)))
    mean = b.emit('mean', x, dim=None, keepdim=False)
    column = b.emit('mean', x, dim=[0], keepdim=True)
    graph = b.graph(mean, column)
    inputs = [torch.randn(10, 3)]
    actual, placed = run_sharded(graph, PipelineOptions((0, 1, 2), 0), inputs)
    assert [(n.outputs[0].placement, n.attrs.get('count')) for n in placed.nodes] == [
        (Partial((0, 1, 2)), 30), (Partial((0, 1, 2)), 10)]
    for got, want in zip(actual, run_whole(graph, inputs)):
        torch.testing.assert_close(got, want)
    part = inputs[0][:4]  # worker 0's rows: its term of the whole mean
    torch.testing.assert_close(OPS['mean'].torch(part, dim=None, keepdim=False, count=30),
                               part.sum() / 30)
    np.testing.assert_allclose(OPS['mean'].numpy(part.numpy(), dim=None, keepdim=False,
                                                 count=30), part.sum().item() / 30, rtol=1e-6)
