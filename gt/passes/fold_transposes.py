"""fold_transposes: compute a transposed `folded_mm` as the one with swapped operands.

Requires a verified graph. Ensures no node transposes a `folded_mm` that nothing else
uses: `folded_mm(x, g)^T` (a batched input's Linear weight gradient, x^T g over every
row of the batch, as the rules make it) becomes `folded_mm(g, x)`, contiguous, the
product torch's linear backward computes, where the transposed view would be read
across its rows by the optimizer's update. `folded_mm` comes only from gradient rules,
so no product the script wrote is computed otherwise. A matrix product's gradient takes
torch's layout in its own rule (`linalg._mm_grad`): folding `(a @ b)^T` here changed
the bits of a script's own `(x @ w.T).T`, and folding batched products those of every
hand-written attention's gradient.

    before:  %0 = folded_mm(%x, %g)                  after:  %1 = folded_mm(%g, %x)
             %1 = transpose(%0, dim0=0, dim1=1)              return %1
             return %1
"""

from collections import Counter

from gt.ir import Graph, Node

NOTE = 'fold_transposes: folded_mm(a, b)^T as folded_mm(b, a)'


def _swaps_matrix(node: Node) -> bool:
    """A transpose of a matrix's two dims, or the permute that is one (`.T`)."""
    if not node.inputs or len(node.inputs[0].shape) != 2:
        return False
    if node.op == 'permute':
        return [dim % 2 for dim in node.attrs['dims']] == [1, 0]
    return node.op == 'transpose' and {node.attrs['dim0'] % 2, node.attrs['dim1'] % 2} == {0, 1}


def fold_transposes(graph: Graph, options: object = None) -> Graph:
    producers = {id(value): node for node in graph.nodes for value in node.outputs}
    uses = Counter(id(value) for node in graph.nodes for value in node.inputs)
    uses.update(id(value) for value in graph.outputs)
    nodes: list[Node] = []
    for node in graph.nodes:
        product = producers.get(id(node.inputs[0])) if node.inputs else None
        if (_swaps_matrix(node) and product is not None and product.op == 'folded_mm'
                and uses[id(product.outputs[0])] == 1):
            nodes.append(Node('folded_mm', product.inputs[::-1], node.outputs, {},
                              product.scope, NOTE, product.location))
        else:
            nodes.append(node)
    if len(nodes) == len(graph.nodes) and all(a is b for a, b in zip(nodes, graph.nodes)):
        return graph
    return graph.replace(nodes=tuple(nodes))
