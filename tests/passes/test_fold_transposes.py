"""fold_transposes on hand-built graphs: a transposed `folded_mm` (a gradient rule's)
becomes the one with swapped operands, with torch's numbers and a contiguous result;
nothing folds where the product is used again, and a script's own products never do."""

import torch

from gt.ir import Graph, Node, Value, interpret, verify
from gt.passes.eliminate_dead_code import eliminate_dead_code
from gt.passes.fold_transposes import fold_transposes


def transposed_product(left_shape, right_shape, dims=(0, 1), transpose_left=True,
                       keep_product=False) -> Graph:
    """`transpose(matmul(a^T or a, b), *dims)` from inputs a and b."""
    a = Value(left_shape, 'float32')
    b = Value(right_shape, 'float32')
    nodes = []
    left = a
    if transpose_left:
        left = Value(left_shape[:-2] + (left_shape[-1], left_shape[-2]), 'float32')
        nodes.append(Node('transpose', (a,), (left,), {'dim0': 0, 'dim1': 1}))
    product_shape = torch.broadcast_shapes(left.shape[:-2], right_shape[:-2]) + (
        left.shape[-2], right_shape[-1])
    product = Value(tuple(product_shape), 'float32')
    nodes.append(Node('matmul', (left, b), (product,)))
    shape = list(product.shape)
    shape[dims[0]], shape[dims[1]] = shape[dims[1]], shape[dims[0]]
    result = Value(tuple(shape), 'float32')
    nodes.append(Node('transpose', (product,), (result,), {'dim0': dims[0], 'dim1': dims[1]}))
    outputs = (result, product) if keep_product else (result,)
    return verify(Graph((a, b), tuple(nodes), outputs))


def folded(graph: Graph) -> Graph:
    return verify(eliminate_dead_code(verify(fold_transposes(graph))))


def test_a_scripts_own_transposed_product_is_left_alone():
    """`(x @ w.T).T` as the script wrote it: folded, its forward took other bits than
    torch's; a matrix product's gradient takes torch's layout in its own rule."""
    for graph in (transposed_product((64, 784), (64, 256)),
                  transposed_product((3, 4, 5), (5, 6), dims=(-1, -2), transpose_left=False)):
        assert fold_transposes(graph) is graph


def test_a_folded_mm_permuted_as_dot_T_swaps_its_operands_too():
    """A batch times `w.T` (a permute): the weight's gradient is torch's folded only."""
    x, g = Value((4, 8, 16), 'float32'), Value((4, 8, 64), 'float32')
    product, result = Value((16, 64), 'float32'), Value((64, 16), 'float32')
    graph = verify(Graph((x, g), (Node('folded_mm', (x, g), (product,)),
                                  Node('permute', (product,), (result,), {'dims': [1, 0]})),
                         (result,)))
    after = folded(graph)
    assert [(node.op, node.inputs) for node in after.nodes] == [('folded_mm', (g, x))]


def test_a_transposed_folded_mm_swaps_its_operands():
    """A batched linear weight's gradient is `folded_mm(x, g)^T` from the rules: folded it
    is `folded_mm(g, x)`, torch's g^T @ x over every row, contiguous."""
    x, g = Value((4, 8, 16), 'float32'), Value((4, 8, 64), 'float32')
    product, result = Value((16, 64), 'float32'), Value((64, 16), 'float32')
    graph = verify(Graph((x, g), (Node('folded_mm', (x, g), (product,)),
                                  Node('transpose', (product,), (result,),
                                       {'dim0': 0, 'dim1': 1})), (result,)))
    after = folded(graph)
    assert [(node.op, node.inputs) for node in after.nodes] == [('folded_mm', (g, x))]
    data = torch.randn(4, 8, 16), torch.randn(4, 8, 64)
    (got,) = interpret(after, list(data))
    assert got.is_contiguous()
    assert torch.equal(got, data[1].reshape(-1, 64).t() @ data[0].reshape(-1, 16))
    torch.testing.assert_close(got, interpret(graph, list(data))[0])
    kept = verify(Graph((x, g), graph.nodes, (result, product)))
    assert fold_transposes(kept) is kept
