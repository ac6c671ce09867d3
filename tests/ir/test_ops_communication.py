"""The move rows ('shard', 'all_gather', 'all_reduce', 'reduce_scatter', 'all_to_all',
'transfer') and 'distribute', run by worker threads exchanging real pieces through the
runtime's Mover: every worker ends with exactly its torch.chunk part of the value (or all
of it), for even and uneven shards, on 1 to 4 workers."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / 'passes'))
from graph_builder import GraphBuilder  # noqa: E402
from simulate import run_sharded  # noqa: E402

from gt.ir import Partial, Replicate, Shard  # noqa: E402
from gt.passes import PipelineOptions  # noqa: E402

MOVES = [
    ('shard', Replicate((0, 1, 2)), Shard(1, (0, 2))),
    ('all_gather', Shard(0, (0, 1, 2)), Replicate((0, 1, 2))),
    ('all_reduce', Partial((0, 1)), Replicate((0, 1))),
    ('reduce_scatter', Partial((0, 1, 2)), Shard(0, (0, 1, 2))),
    ('all_to_all', Shard(0, (0, 1, 2, 3)), Shard(1, (0, 1, 2, 3))),
    ('transfer', Shard(1, (0, 1)), Shard(0, (2, 3))),
    ('transfer', Replicate((3,)), Replicate((0, 1))),
    ('transfer', Partial((0, 1)), Shard(1, (1, 2, 3))),
]


@pytest.mark.parametrize('name, source, target', MOVES,
                         ids=[f'{m[0]}-{m[1]}-{m[2]}' for m in MOVES])
@pytest.mark.parametrize('shape', [(7, 5), (4, 9), (12, 8)])
def test_each_move_delivers_each_worker_its_part(name, source, target, shape):
    from gt.passes.insert_moves import move_name

    assert move_name(source, target) == name
    builder = GraphBuilder()
    x = builder.input(shape, source)
    moved = builder.emit('distribute', x, scope='target')
    axis = target.axis if isinstance(target, Shard) else 99  # 99: too short, so replicated
    options = PipelineOptions((0, 1, 2, 3), 0, configs=(('target', axis, target.workers),))
    value = torch.randn(shape)
    (result,), placed = run_sharded(builder.graph(moved), options, [value])
    assert [node.op for node in placed.nodes] == [name, 'distribute']
    assert placed.outputs[0].placement == target
    torch.testing.assert_close(result, value, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('op', ['copy_into', 'untracked_write'])  # the latter: aliases.py
@pytest.mark.parametrize('destination', [Shard(0, (1, 2)), Shard(1, (0, 1, 2, 3)),
                                         Replicate((3,)), Partial((0, 1))])
def test_a_write_takes_the_sources_values_and_the_destinations_placement(op, destination):
    builder = GraphBuilder()
    old = builder.input((8, 6), destination)
    new = builder.input((8, 6), Replicate((0,)))
    copied = builder.emit(op, old, new)
    values = [torch.randn(8, 6), torch.randn(8, 6)]
    (result,), placed = run_sharded(builder.graph(copied), PipelineOptions((0, 1, 2, 3), 0),
                                    values)
    expected = destination if not isinstance(destination, Partial) else Replicate((0, 1))
    assert placed.outputs[0].placement == expected
    torch.testing.assert_close(result, values[1])


@pytest.mark.parametrize('holders', [(0,), (2, 3), None])
def test_sync_generator_brings_workers_that_are_behind_in_step(holders):
    """Workers outside `holders` have drawn something the session's sequence did not; the
    'sync_generator' the pipeline inserts gives them the canonical state first."""
    builder = GraphBuilder()
    drawn = builder.emit('randn', shape=[8, 3], dtype='float32', scope='all')
    options = PipelineOptions((0, 1, 2, 3), 0, configs=(('all', 0, None),),
                              generator_holders=holders)
    (result,), placed = run_sharded(builder.graph(drawn), options, [])
    syncs = [node for node in placed.nodes if node.op == 'sync_generator']
    assert len(syncs) == (0 if holders is None else 1)
    torch.testing.assert_close(result, torch.randn(8, 3, generator=torch.Generator().manual_seed(
        1234)))
