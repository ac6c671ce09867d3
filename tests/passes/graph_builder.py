"""Build small graphs by hand for pass tests: each `emit` types its node with the op table."""

from gt.ir import OPS, Graph, Node, Value


class GraphBuilder:
    def __init__(self) -> None:
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.literals: list = []

    def input(self, shape, placement, dtype: str = 'float32') -> Value:
        value = Value(tuple(shape), dtype, placement)
        self.inputs.append(value)
        return value

    def emit(self, op: str, *inputs: Value, scope: str | None = None, **attrs) -> Value:
        types = OPS[op].infer(tuple(value.type for value in inputs), **attrs)
        outputs = tuple(Value(tuple(t.shape), t.dtype) for t in types)
        self.nodes.append(Node(op, tuple(inputs), outputs, attrs, scope,
                               location=len(self.nodes)))
        return outputs[0] if len(outputs) == 1 else outputs

    def number(self, value: float, dtype: str = 'float32') -> Value:
        self.literals.append(value)
        return self.emit('scalar', dtype=dtype, slot=len(self.literals) - 1)

    def graph(self, *outputs: Value) -> Graph:
        return Graph(tuple(self.inputs), tuple(self.nodes), tuple(outputs))
