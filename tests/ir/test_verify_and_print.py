"""The verifier catches malformed graphs, and the printer's text form (a golden dump)."""

import pytest
from expecttest import assert_expected_inline

from gt.ir import Graph, Node, Replicate, Shard, Value, VerifyError, format_graph, verify


def _layer() -> Graph:
    x, w, b = Value((4, 8), 'float32', Shard(0, (0, 1))), Value((8, 2), 'float32'), \
        Value((2,), 'float32')
    y, z, h, s = Value((4, 2), 'float32'), Value((4, 2), 'float32'), \
        Value((4, 2), 'float32'), Value((2,), 'float32', Replicate((0, 1)))
    nodes = (
        Node('matmul', (x, w), (y,), scope='forward_layer1'),
        Node('add', (y, b), (z,)),
        Node('relu', (z,), (h,), note='inserted by a test'),
        Node('sum', (h,), (s,), {'dim': [0], 'keepdim': False}),
    )
    return Graph((x, w, b), nodes, (s, h), name='step')


def test_a_sound_graph_verifies_and_is_returned():
    graph = _layer()
    assert verify(graph) is graph


def test_format_graph_golden():
    assert_expected_inline(format_graph(_layer()), """\
graph step(%a0: f32[4,8]<S0@w0,w1>, %a1: f32[8,2], %a2: f32[2]) {
  %0: f32[4,2] = matmul(%a0, %a1)                     # signal=forward_layer1
  %1: f32[4,2] = add(%0, %a2)
  %2: f32[4,2] = relu(%1)                             # inserted by a test
  %3: f32[2]<R@w0,w1> = sum(%2, dim=[0], keepdim=False)
  return %3, %2
}""")
    assert str(_layer()) == format_graph(_layer())


def test_format_graph_of_multiple_and_no_outputs():
    x = Value((3,), 'int64')
    values, indices = Value((), 'int64'), Value((), 'int64')
    graph = Graph((x,), (Node('manual_seed', (), (), {'seed': 1}),
                         Node('max_dim', (x,), (values, indices), {'dim': 0, 'keepdim': False})),
                  (values, indices))
    assert_expected_inline(format_graph(verify(graph)), """\
graph fragment(%a0: i64[3]) {
  manual_seed(seed=1)
  %0: i64[], %1: i64[] = max_dim(%a0, dim=0, keepdim=False)
  return %0, %1
}""")


def _single(op, inputs, outputs, attrs=None, graph_inputs=None):
    nodes = (Node(op, tuple(inputs), tuple(outputs), attrs or {}),)
    return Graph(tuple(inputs if graph_inputs is None else graph_inputs), nodes, tuple(outputs))


def test_verify_rejects_an_unknown_op():
    x = Value((2,), 'float32')
    with pytest.raises(VerifyError, match=r"node 0 \(frobnicate\): unknown op 'frobnicate'"):
        verify(_single('frobnicate', [x], [Value((2,), 'float32')]))


def test_verify_rejects_use_before_definition():
    x, y, z = Value((2,), 'float32'), Value((2,), 'float32'), Value((2,), 'float32')
    nodes = (Node('neg', (y,), (z,)), Node('neg', (x,), (y,)))
    with pytest.raises(VerifyError, match=r'node 0 \(neg\): uses a value before it is defined'):
        verify(Graph((x,), nodes, (z,)))


def test_verify_rejects_wrong_output_types():
    x = Value((2, 3), 'int64')
    with pytest.raises(VerifyError, match=r'node 0 \(sum\): outputs typed'):
        verify(_single('sum', [x], [Value((3,), 'int32')], {'dim': 0, 'keepdim': False}))
    with pytest.raises(VerifyError, match='outputs typed'):
        verify(_single('exp', [x], [Value((2, 3), 'int64')]))


def test_verify_reports_type_rule_errors_with_the_node():
    a, b = Value((2, 3), 'float32'), Value((4, 5), 'float32')
    with pytest.raises(VerifyError, match=r'node 0 \(matmul\): matmul: shapes \[2, 3\] and '
                                          r'\[4, 5\] cannot be multiplied \(3 != 4\)'):
        verify(_single('matmul', [a, b], [Value((2, 5), 'float32')]))


def test_verify_rejects_redefinition():
    x, y = Value((2,), 'float32'), Value((2,), 'float32')
    nodes = (Node('neg', (x,), (y,)), Node('neg', (x,), (y,)))
    with pytest.raises(VerifyError, match=r'node 1 \(neg\): redefines a value'):
        verify(Graph((x,), nodes, (y,)))
    with pytest.raises(VerifyError, match='redefines'):
        verify(_single('neg', [x], [x]))


def test_verify_rejects_bad_graph_inputs_and_outputs():
    x = Value((2,), 'float32')
    with pytest.raises(VerifyError, match='input listed twice'):
        verify(Graph((x, x), (), (x,)))
    with pytest.raises(VerifyError, match='returns a value it never defines'):
        verify(Graph((x,), (), (Value((2,), 'float32'),)))
