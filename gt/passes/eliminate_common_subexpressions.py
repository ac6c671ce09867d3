"""eliminate_common_subexpressions: compute each distinct expression once.

Requires a verified graph. Ensures no two nodes apply the same op with the same attrs to
the same inputs, unless the op is random or has effects. Gradient rules recompute what
they need from a forward op's inputs (the tape keeps no outputs), so backward passes
repeat forward expressions; this pass folds them back together.

    before:  %0 = exp(%a0)           after:  %0 = exp(%a0)
             %1 = exp(%a0)                   %1 = mul(%0, %0)
             %2 = mul(%0, %1)                return %1
             return %2
"""

from typing import Any

from gt.ir import OPS, Graph, Node, Value


def _frozen(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return tuple((key, _frozen(item)) for key, item in value.items())
    return (type(value), value)  # keeps 1, 1.0 and True apart


def eliminate_common_subexpressions(graph: Graph, options: object = None) -> Graph:
    replaced: dict[int, Value] = {}
    seen: dict[tuple, Node] = {}
    nodes = []
    for node in graph.nodes:
        inputs = tuple(replaced.get(id(value), value) for value in node.inputs)
        row = OPS[node.op]
        if not (row.effects or row.random):
            key = (node.op, tuple(id(value) for value in inputs), _frozen(node.attrs))
            earlier = seen.get(key)
            if earlier is not None:
                replaced.update(zip(map(id, node.outputs), earlier.outputs))
                continue
        if inputs != node.inputs:
            node = Node(node.op, inputs, node.outputs, node.attrs, node.scope, node.note,
                        node.location)
        if not (row.effects or row.random):
            seen[key] = node
        nodes.append(node)
    if len(nodes) == len(graph.nodes):
        return graph
    outputs = tuple(replaced.get(id(value), value) for value in graph.outputs)
    return Graph(graph.inputs, tuple(nodes), outputs, graph.name)
