"""GT's intermediate representation: SSA graphs, the op table, and the tools around them.

Nothing here touches a socket, a thread or a GPU; the runtime and the passes build on it.
"""

from gt.ir.graph import Graph, Node, TensorType, Value
from gt.ir.interpret import interpret
from gt.ir.ops import OPS, OpDef
from gt.ir.placement import Partial, Placement, Replicate, Shard
from gt.ir.printer import format_graph, format_placements
from gt.ir.verify import VerifyError, verify, verify_placements

__all__ = [
    'Graph', 'Node', 'TensorType', 'Value', 'interpret', 'OPS', 'OpDef', 'Partial', 'Placement',
    'Replicate', 'Shard', 'format_graph', 'format_placements', 'VerifyError', 'verify',
    'verify_placements',
]
