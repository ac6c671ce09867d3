"""propagate_placements: give every value a placement.

Requires graph inputs that carry placements. Ensures every node output has one: values
made from nothing (creation ops) live on the session's home worker; an op's result lives
where its inputs live. Until sharding rules arrive, a session's values share one worker.

    before:  %0: f32[4] = randn(...)          after:  %0: f32[4]<R@w1> = randn(...)
             %1: f32[4] = relu(%0)                    %1: f32[4]<R@w1> = relu(%0)
"""

from gt.ir import Graph, Node, Replicate, Value
from gt.passes.options import PipelineOptions


def propagate_placements(graph: Graph, options: PipelineOptions) -> Graph:
    home = Replicate((options.home_worker,))
    placed: dict[int, Value] = {id(value): value for value in graph.inputs}
    nodes = []
    for node in graph.nodes:
        inputs = tuple(placed[id(value)] for value in node.inputs)
        placements = {value.placement for value in inputs} or {home}
        if len(placements) != 1:
            raise ValueError(f'{node.op}: inputs live on different workers: {placements}')
        (placement,) = placements
        outputs = tuple(value.placed(placement) for value in node.outputs)
        placed.update((id(old), new) for old, new in zip(node.outputs, outputs))
        nodes.append(Node(node.op, inputs, outputs, node.attrs, node.scope, node.note,
                          node.location))
    outputs = tuple(placed[id(value)] for value in graph.outputs)
    return Graph(graph.inputs, tuple(nodes), outputs, graph.name)
