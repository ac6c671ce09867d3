"""insert_moves: make every op's inputs be where and how its sharding rule needs them.

Requires placed nodes (propagate_placements). Ensures each node's inputs have exactly the
placements in its `input_placements`, by inserting communication ops (rows of
gt.ir.ops.communication) before it; a value moved once is reused by later users. A whole
copy on a superset of the workers needs no move, and a shard of a whole copy that every
target worker holds is cut locally (`shard`, no traffic).

    before:  %1: f32[8,4]<S0@w0,w1> = relu(%a0)
             %2: f32[8,4]<R@w0,w1> = matmul(%1, %a1)            # needs %1 as R@w0,w1
    after:   %1: f32[8,4]<S0@w0,w1> = relu(%a0)
             %2: f32[8,4]<R@w0,w1> = all_gather(%1)             # inserted by insert_moves
             %3: f32[8,4]<R@w0,w1> = matmul(%2, %a1)
"""

from gt.ir import Graph, Node, Partial, Replicate, Shard, Value
from gt.ir.placement import Placement, satisfies
from gt.ir.type_rules import numel
from gt.passes.options import PipelineOptions

NOTE = 'inserted by insert_moves'
TWO_STEP_ELEMENTS = 65536  # 256 KiB of float32


def move_name(source: Placement, target: Placement) -> str:
    """The collective that a move between these placements amounts to."""
    if isinstance(source, Replicate) and set(target.workers) <= set(source.workers):
        return 'shard'
    if source.workers != target.workers:
        return 'transfer'
    if isinstance(source, Partial):
        return 'all_reduce' if isinstance(target, Replicate) else 'reduce_scatter'
    if isinstance(source, Shard):
        return 'all_gather' if isinstance(target, Replicate) else 'all_to_all'
    return 'transfer'


def _steps(value: Value, needed: Placement) -> list[Placement]:
    """The placements a move goes through. Big partial sums on more than two workers become
    whole copies in two steps, reduce_scatter then all_gather, as ring all-reduces do:
    each worker then sends 2(n-1)/n of the value instead of n-1 copies of it. Small ones
    take one step: there, the number of rounds of messages is what costs."""
    source = value.placement
    if (isinstance(source, Partial) and isinstance(needed, Replicate)
            and source.workers == needed.workers and len(source.workers) > 2
            and numel(value.shape) >= TWO_STEP_ELEMENTS
            and value.shape[0] >= len(source.workers)):
        return [Shard(0, source.workers), needed]
    return [needed]


def insert_moves(graph: Graph, options: PipelineOptions | None = None) -> Graph:
    moved: dict[tuple[int, Placement], Value] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        if not node.input_placements:
            nodes.append(node)
            continue
        inputs = []
        for value, needed in zip(node.inputs, node.input_placements):
            if not satisfies(value.placement, needed):
                key = (id(value), needed)
                if key not in moved:
                    source = value
                    for step in _steps(value, needed):
                        target = source.placed(step)
                        nodes.append(Node(move_name(source.placement, step), (source,),
                                          (target,), {}, node.scope, NOTE, node.location,
                                          (source.placement,)))
                        source = target
                    moved[key] = source
                value = moved[key]
            inputs.append(value)
        if tuple(inputs) != node.inputs:
            node = Node(node.op, tuple(inputs), node.outputs, node.attrs, node.scope,
                        node.note, node.location, node.input_placements)
        nodes.append(node)
    if len(nodes) == len(graph.nodes):
        return graph
    return graph.replace(nodes=tuple(nodes))
