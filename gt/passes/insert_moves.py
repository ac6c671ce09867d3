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
from gt.passes.options import PipelineOptions

NOTE = 'inserted by insert_moves'


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
                    moved[key] = value.placed(needed)
                    nodes.append(Node(move_name(value.placement, needed), (value,),
                                      (moved[key],), {}, node.scope, NOTE, node.location,
                                      (value.placement,)))
                value = moved[key]
            inputs.append(value)
        if tuple(inputs) != node.inputs:
            node = Node(node.op, tuple(inputs), node.outputs, node.attrs, node.scope,
                        node.note, node.location, node.input_placements)
        nodes.append(node)
    if len(nodes) == len(graph.nodes):
        return graph
    return graph.replace(nodes=tuple(nodes))
