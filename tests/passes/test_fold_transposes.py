"""fold_transposes on hand-built graphs: a transposed product becomes the product of
transposes, with the same numbers (bit for bit where torch computes it so), a contiguous
result, and nothing folded where the product is used again or is not a matrix product."""

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


def test_a_linear_weight_gradient_becomes_torchs_product():
    """(x^T @ g)^T, as the rules give a linear weight's gradient, is g^T @ x: the very
    product torch's linear backward computes, so the bits are torch's, and contiguous."""
    graph = transposed_product((64, 784), (64, 256))
    after = folded(graph)
    assert [node.op for node in after.nodes] == ['transpose', 'matmul']
    x, g = torch.randn(64, 784), torch.randn(64, 256)
    (got,) = interpret(after, [x, g])
    assert got.is_contiguous()
    assert torch.equal(got, g.t() @ x)
    torch.testing.assert_close(got, interpret(graph, [x, g])[0])


def test_batched_products_are_left_alone():
    """torch's bmm backward never folds (its mm backward does): folded, attention's
    `q @ k.transpose(-2, -1)` took other gradient bits."""
    graph = transposed_product((3, 4, 5), (5, 6), dims=(-1, -2), transpose_left=False)
    assert fold_transposes(graph) is graph


def test_a_matrix_permuted_as_dot_T_folds_as_its_transpose():
    """`x @ w.T` records a permute; its weight gradient is torch's only folded."""
    a, b = Value((4, 5), 'float32'), Value((6, 5), 'float32')
    b_t, product, result = Value((5, 6), 'float32'), Value((4, 6), 'float32'), \
        Value((6, 4), 'float32')
    graph = verify(Graph((a, b), (Node('permute', (b,), (b_t,), {'dims': [1, 0]}),
                                  Node('matmul', (a, b_t), (product,)),
                                  Node('permute', (product,), (result,), {'dims': [1, 0]})),
                         (result,)))
    after = folded(graph)
    assert [node.op for node in after.nodes] == ['transpose', 'matmul']
    x, w = torch.randn(4, 5), torch.randn(6, 5)
    torch.testing.assert_close(interpret(after, [x, w])[0], (x @ w.T).T)


def test_nothing_folds_where_the_product_is_used_again_or_other_dims_swap():
    for graph in (transposed_product((4, 5), (4, 6), keep_product=True),
                  transposed_product((2, 3, 4), (4, 5), dims=(0, 1), transpose_left=False)):
        assert fold_transposes(graph) is graph


def test_a_vector_operand_is_left_alone():
    a, b = Value((4, 5), 'float32'), Value((5,), 'float32')
    product, result = Value((4,), 'float32'), Value((4,), 'float32')
    graph = verify(Graph((a, b), (Node('matmul', (a, b), (product,)),
                                  Node('neg', (product,), (result,))), (result,)))
    assert fold_transposes(graph) is graph


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
