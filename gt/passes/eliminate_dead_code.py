"""eliminate_dead_code: drop nodes whose results nobody uses.

Requires a verified graph. Ensures every remaining node has effects, draws random
numbers (an unused draw still advances the generator, so `manual_seed` reproduces torch's
sequence), or defines a value that a later node or the graph's outputs use. Values the
client freed before the flush are not outputs, so whole temporary chains disappear here.

    before:  %0 = exp(%a0)        after:  %0 = relu(%a0)
             %1 = relu(%a0)               return %0
             return %1
"""

from gt.ir import OPS, Graph


def eliminate_dead_code(graph: Graph, options: object = None) -> Graph:
    live = {id(value) for value in graph.outputs}
    kept = []
    for node in reversed(graph.nodes):
        row = OPS[node.op]
        if row.effects or row.random or any(id(value) in live for value in node.outputs):
            kept.append(node)
            live.update(id(value) for value in node.inputs)
    if len(kept) == len(graph.nodes):
        return graph
    return graph.replace(nodes=tuple(reversed(kept)))
