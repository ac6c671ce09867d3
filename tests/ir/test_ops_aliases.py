"""The alias rows ('detach', 'untracked_write'): a value under a second name, placed as
its source is, with the same values and no copy (untracked_write's placement, that of
the value it replaces, is tested with copy_into's in test_ops_communication.py)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[1] / 'passes'))
from graph_builder import GraphBuilder  # noqa: E402
from simulate import run_sharded  # noqa: E402

from gt.ir import OPS, Replicate, Shard, TensorType  # noqa: E402
from gt.passes import PipelineOptions  # noqa: E402

PLACEMENTS = [Shard(0, (1, 2)), Shard(1, (0, 1, 2, 3)), Replicate((3,))]


@pytest.mark.parametrize('placement', PLACEMENTS, ids=str)
def test_detach_keeps_the_values_where_they_are(placement):
    builder = GraphBuilder()
    x = builder.input((8, 6), placement)
    detached = builder.emit('detach', x)
    value = torch.randn(8, 6)
    (result,), placed = run_sharded(builder.graph(detached), PipelineOptions((0, 1, 2, 3), 0),
                                    [value])
    assert [node.op for node in placed.nodes] == ['detach']
    assert placed.outputs[0].placement == placement
    torch.testing.assert_close(result, value, rtol=0, atol=0)


def test_aliases_share_the_memory_of_their_source():
    """No copy: worker values are never written in place, so they may share a tensor."""
    x, y = torch.randn(1000), torch.randn(1000)
    assert OPS['detach'].torch(x).data_ptr() == x.data_ptr()
    assert OPS['untracked_write'].torch(x, y).data_ptr() == y.data_ptr()


def test_untracked_write_refuses_a_source_of_another_type():
    with pytest.raises(ValueError, match='untracked_write'):
        OPS['untracked_write'].infer([TensorType((8, 6), 'float32'), TensorType((8, 5), 'float32')])
