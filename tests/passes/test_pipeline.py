"""The passes on small hand-built graphs: each keeps the numbers, verifies, and does its job."""

import pytest
import torch

from gt.ir import Graph, Node, Replicate, Shard, Value, interpret, verify
from gt.passes import PIPELINE, PipelineOptions, lower, run_pipeline
from gt.passes.eliminate_dead_code import eliminate_dead_code
from gt.passes.propagate_placements import propagate_placements

OPTIONS = PipelineOptions(workers=(0, 1), home_worker=1)


def small_graph() -> tuple[Graph, list]:
    x = Value((2, 3), 'float32', Replicate((1,)))
    w = Value((3, 4), 'float32', Replicate((1,)))
    dead = Value((2, 3), 'float32')
    y = Value((2, 4), 'float32')
    z = Value((2, 4), 'float32')
    nodes = (
        Node('exp', (x,), (dead,), location=0),
        Node('matmul', (x, w), (y,), location=1),
        Node('relu', (y,), (z,), location=2),
    )
    return Graph((x, w), nodes, (z,)), [torch.randn(2, 3), torch.randn(3, 4)]


def test_every_pass_keeps_the_numbers_and_verifies():
    graph, inputs = small_graph()
    expected = interpret(graph, inputs)
    for compiler_pass in PIPELINE:
        graph = verify(compiler_pass(graph, OPTIONS))
        torch.testing.assert_close(interpret(graph, inputs), expected)


def test_eliminate_dead_code_drops_unused_nodes_but_keeps_effects():
    graph, _ = small_graph()
    after = eliminate_dead_code(graph)
    assert [node.op for node in after.nodes] == ['matmul', 'relu']
    seed = Node('manual_seed', (), (), {'seed': 0})
    with_effect = graph.replace(nodes=(seed,) + graph.nodes)
    assert eliminate_dead_code(with_effect).nodes[0] is seed


def test_eliminate_dead_code_returns_the_same_graph_when_nothing_is_dead():
    graph, _ = small_graph()
    clean = eliminate_dead_code(graph)
    assert eliminate_dead_code(clean) is clean


def test_propagate_placements_puts_created_values_on_the_home_worker():
    created = Value((4,), 'float32')
    graph = Graph((), (Node('randn', (), (created,), {'shape': [4], 'dtype': 'float32'}),),
                  (created,))
    after = propagate_placements(graph, OPTIONS)
    assert after.outputs[0].placement == Replicate((1,))
    assert graph.outputs[0].placement is None  # the input graph is untouched


def test_pipeline_dump_golden(capsys):
    graph, _ = small_graph()
    after = run_pipeline(graph, OPTIONS, dump=True, check=True)
    assert str(after) == '\n'.join([
        'graph fragment(%a0: f32[2,3]<R@w1>, %a1: f32[3,4]<R@w1>) {',
        '  %0: f32[2,4]<R@w1> = matmul(%a0, %a1)',
        '  %1: f32[2,4]<R@w1> = relu(%0)',
        '  return %1',
        '}',
    ])
    assert '// after eliminate_dead_code' in capsys.readouterr().out


def test_lower_gives_each_worker_its_nodes_and_keeps_locations():
    graph, inputs = small_graph()
    placed = run_pipeline(graph, OPTIONS)
    programs = lower(placed, OPTIONS)
    assert list(programs) == [1]
    program = programs[1].graph
    assert programs[1].inputs == (0, 1) and programs[1].outputs == (0,)
    assert [node.location for node in program.nodes] == [1, 2]
    torch.testing.assert_close(interpret(verify(program), inputs), interpret(graph, inputs))


def test_a_value_check_runs_on_each_shard_without_moves_and_stays_in_the_program():
    """`check_between` (binary_cross_entropy's probabilities) has no outputs: nothing keeps
    it alive but its effect, and each worker checks the rows it holds."""
    probabilities = Value((4, 3), 'float32', Shard(0, (0, 1)))
    check = Node('check_between', (probabilities,), (),
                 {'low': 0.0, 'high': 1.0, 'message': 'out of [0, 1]'}, location=5)
    placed = run_pipeline(Graph((probabilities,), (check,), ()), OPTIONS)
    programs = lower(placed, OPTIONS)
    assert sorted(programs) == [0, 1]
    for worker, program in programs.items():
        assert [node.op for node in program.graph.nodes] == ['check_between']
        rows = torch.rand(2, 3)
        assert interpret(verify(program.graph), [rows]) == []
        with pytest.raises(RuntimeError, match=r'out of \[0, 1\]'):
            interpret(program.graph, [rows + 1])
