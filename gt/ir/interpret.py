"""The reference interpreter: run a graph with the op table's torch (or numpy) rows."""

from typing import Any

from gt.ir.graph import Graph
from gt.ir.ops import OPS


def interpret(
    graph: Graph, inputs: list[Any], context: Any = None, engine: str = 'torch'
) -> list[Any]:
    env = {id(value): array for value, array in zip(graph.inputs, inputs, strict=True)}
    for node in graph.nodes:
        row = OPS[node.op]
        run = getattr(row, engine)
        args = [env[id(value)] for value in node.inputs]
        takes_context = row.takes_context
        result = run(context, *args, **node.attrs) if takes_context else run(*args, **node.attrs)
        results = (result,) if len(node.outputs) == 1 else result or ()
        for value, array in zip(node.outputs, results):
            env[id(value)] = array
    return [env[id(value)] for value in graph.outputs]
