"""fold_transposes: compute a transposed product as the product of transposes.

Requires a verified graph. Ensures no node transposes the last two dims of a matmul that
nothing else uses: `(a @ b)^T` becomes `b^T @ a^T`, where a transpose of a transpose is
its input. A linear layer's weight gradient comes out of its rules as `(x^T @ g)^T`, a
transposed view that the optimizer's update then reads across its rows, which is slow;
folded, it is `g^T @ x`, contiguous, the product torch's own linear backward computes.
The same holds for `folded_mm` (a^T b over a batch's rows), whose transpose swaps its
operands. Only matrix products fold, as torch's mm backward does (it computes a
column-major operand's gradient transposed): its bmm backward never does, and folded,
`q @ k.transpose(-2, -1)`'s gradient took other bits (every hand-written attention's).

    before:  %0 = transpose(%a0, dim0=0, dim1=1)     after:  %0 = transpose(%a1, dim0=0, dim1=1)
             %1 = matmul(%0, %a1)                            %1 = matmul(%0, %a0)
             %2 = transpose(%1, dim0=0, dim1=1)              return %1
             return %2
"""

from collections import Counter

from gt.ir import Graph, Node, Value

NOTE = 'fold_transposes: (a @ b)^T as b^T @ a^T'


def _swaps_last_two(node: Node) -> bool:
    """A transpose of the last two dims of a value of two or more dims, or the permute
    that does the same (a matrix's `.T`)."""
    rank = len(node.inputs[0].shape) if node.inputs else 0
    if node.op == 'permute':
        order = [dim % rank for dim in node.attrs['dims']] if rank else []
        return rank >= 2 and order == [*range(rank - 2), rank - 1, rank - 2]
    if node.op != 'transpose':
        return False
    return rank >= 2 and {node.attrs['dim0'] % rank, node.attrs['dim1'] % rank} == {rank - 2,
                                                                                     rank - 1}


def fold_transposes(graph: Graph, options: object = None) -> Graph:
    producers = {id(value): node for node in graph.nodes for value in node.outputs}
    uses = Counter(id(value) for node in graph.nodes for value in node.inputs)
    uses.update(id(value) for value in graph.outputs)
    nodes: list[Node] = []
    for node in graph.nodes:
        product = producers.get(id(node.inputs[0])) if node.inputs else None
        if (_swaps_last_two(node) and product is not None and product.op == 'folded_mm'
                and uses[id(product.outputs[0])] == 1):
            nodes.append(Node('folded_mm', product.inputs[::-1], node.outputs, {},
                              product.scope, NOTE, product.location))
            continue
        if (not _swaps_last_two(node) or product is None or product.op != 'matmul'
                or uses[id(product.outputs[0])] != 1
                or any(len(operand.shape) != 2 for operand in product.inputs)):
            nodes.append(node)
            continue
        left, right = product.inputs

        def transposed(value: Value) -> Value:
            maker = producers.get(id(value))
            if maker is not None and _swaps_last_two(maker):
                return maker.inputs[0]
            shape = value.shape[:-2] + (value.shape[-1], value.shape[-2])
            result = Value(shape, value.dtype)
            nodes.append(Node('transpose', (value,), (result,), {'dim0': -2, 'dim1': -1},
                              product.scope, NOTE, product.location))
            return result

        operands = (transposed(right), transposed(left))
        nodes.append(Node('matmul', operands, node.outputs, {}, product.scope, NOTE,
                          product.location))
    if len(nodes) == len(graph.nodes) and all(a is b for a, b in zip(nodes, graph.nodes)):
        return graph
    return graph.replace(nodes=tuple(nodes))
