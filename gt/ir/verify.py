"""The verifier: a graph is well formed when it is SSA, every use follows its definition,
and every node's output types are what the op table's type rule says."""

from gt.ir.graph import Graph
from gt.ir.ops import OPS
from gt.ir.placement import satisfies


class VerifyError(ValueError):
    pass


def verify(graph: Graph) -> Graph:
    """Raise VerifyError naming the first problem; return the graph unchanged when sound."""
    defined: set[int] = set()
    for value in graph.inputs:
        if id(value) in defined:
            raise VerifyError('graph input listed twice')
        defined.add(id(value))
    for position, node in enumerate(graph.nodes):
        where = f'node {position} ({node.op})'
        if node.op not in OPS:
            raise VerifyError(f'{where}: unknown op {node.op!r}')
        for value in node.inputs:
            if id(value) not in defined:
                raise VerifyError(f'{where}: uses a value before it is defined')
        try:
            expected = OPS[node.op].infer(tuple(v.type for v in node.inputs), **node.attrs)
        except (IndexError, TypeError, ValueError) as error:
            raise VerifyError(f'{where}: {error}') from None
        actual = tuple(v.type for v in node.outputs)
        if actual != tuple(expected):
            raise VerifyError(f'{where}: outputs typed {actual}, the op table says {expected}')
        for value in node.outputs:
            if id(value) in defined:
                raise VerifyError(f'{where}: redefines a value (not SSA)')
            defined.add(id(value))
    for value in graph.outputs:
        if id(value) not in defined:
            raise VerifyError('graph returns a value it never defines')
    return graph


def verify_placements(graph: Graph) -> Graph:
    """After insert_moves: every value is placed, and every node's inputs are placed as its
    sharding rule asked."""
    verify(graph)
    for position, node in enumerate(graph.nodes):
        where = f'node {position} ({node.op})'
        if any(value.placement is None for value in node.inputs + node.outputs):
            raise VerifyError(f'{where}: a value has no placement')
        for value, needed in zip(node.inputs, node.input_placements or ()):
            if not satisfies(value.placement, needed):
                raise VerifyError(f'{where}: an input is {value.placement}, the op needs '
                                  f'{needed}')
    return graph
