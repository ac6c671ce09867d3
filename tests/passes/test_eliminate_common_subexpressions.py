"""eliminate_common_subexpressions merges repeated pure expressions, never random ones."""

import torch

from gt.ir import Graph, Node, Value, interpret, verify
from gt.passes.eliminate_common_subexpressions import eliminate_common_subexpressions


def test_repeated_expressions_are_computed_once_with_the_same_numbers():
    x = Value((3,), 'float32')
    e1, e2, out = Value((3,), 'float32'), Value((3,), 'float32'), Value((3,), 'float32')
    graph = Graph((x,), (Node('exp', (x,), (e1,)), Node('exp', (x,), (e2,)),
                         Node('mul', (e1, e2), (out,))), (out, e2))
    after = verify(eliminate_common_subexpressions(graph))
    assert [node.op for node in after.nodes] == ['exp', 'mul']
    assert after.nodes[1].inputs == (e1, e1)
    assert after.outputs[1] is e1  # a kept duplicate now names the surviving value
    inputs = [torch.randn(3)]
    torch.testing.assert_close(interpret(after, inputs), interpret(graph, inputs))


def test_attrs_distinguish_expressions():
    x = Value((2, 3), 'float32')
    a, b = Value((3,), 'float32'), Value((2,), 'float32')
    graph = Graph((x,), (Node('sum', (x,), (a,), {'dim': 0, 'keepdim': False}),
                         Node('sum', (x,), (b,), {'dim': 1, 'keepdim': False})), (a, b))
    assert eliminate_common_subexpressions(graph) is graph


def test_random_ops_are_never_merged():
    attrs = {'shape': [2], 'dtype': 'float32'}
    a, b = Value((2,), 'float32'), Value((2,), 'float32')
    graph = Graph((), (Node('randn', (), (a,), attrs), Node('randn', (), (b,), dict(attrs))),
                  (a, b))
    assert eliminate_common_subexpressions(graph) is graph
    zeros = Graph((), (Node('zeros', (), (a,), attrs), Node('zeros', (), (b,), dict(attrs))),
                  (a, b))
    assert len(eliminate_common_subexpressions(zeros).nodes) == 1
