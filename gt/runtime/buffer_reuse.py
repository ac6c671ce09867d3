"""Buffer reuse: an elementwise op may write its result over an operand that dies there.

Eager PyTorch allocates a new tensor for every result; a GT program knows every value's
type and last use, so `c = c + a` on a `c` nothing reads afterwards can run as
`c.add_(a)`: no allocation, and on a tiny tensor a quarter less time per op (measured:
`torch.add` 0.86 us, `Tensor.add_` 0.58 us). The dispatcher decides, from the typed
worker graph, which operand each op may overwrite (`reusable_operands`); the worker's
generated code calls the in-place twin of the op's function (`IN_PLACE`).

An operand is overwritten only when that cannot be seen:
- the op's result has the operand's exact shape and dtype (no broadcasting into a
  larger result, no promotion), so the in-place op computes what the op computes;
- the operand was made in this program by an op that returns new memory, and every op
  that reads it returns new memory too, so no view of it exists anywhere;
- this op reads it last, and the program neither keeps it nor got it as an input (the
  worker holds inputs and kept values for later programs).
Add and multiply may overwrite their second operand too (IEEE addition and
multiplication are commutative, bit for bit). The interpreter, compiled regions and the
numpy engine ignore the marks: they compute the same values.
"""

import torch

from gt.ir import OPS, Graph, Value
from gt.ir.ops.elementwise import number_pow, number_pow_

# An op whose function is a key here may run as the in-place method of its first operand
# (torch.add as Tensor.add_, and so on).
IN_PLACE = {getattr(torch, name): getattr(torch.Tensor, name + '_') for name in (
    'add', 'sub', 'mul', 'div', 'remainder', 'floor_divide', 'clamp', 'neg', 'abs',
    'sign', 'reciprocal', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'sqrt', 'rsqrt',
    'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'sigmoid', 'relu',
    'erf', 'erfc', 'floor', 'ceil', 'trunc', 'pow')}
IN_PLACE[number_pow] = number_pow_  # pow_number's: torch.pow with number exponents
# Functions whose results never share memory with their inputs.
NEW_MEMORY = frozenset(IN_PLACE) | {torch.matmul, OPS['folded_matmul'].torch}
COMMUTATIVE = frozenset({torch.add, torch.mul})


def reusable_operands(graph: Graph, kept: list[Value]) -> list[int | None]:
    """For each node, the position of the operand its result may overwrite, or None."""
    held = {id(value) for value in graph.inputs} | {id(value) for value in kept} \
        | {id(value) for value in graph.outputs}
    last_read: dict[int, int] = {}
    fresh: set[int] = set()  # values in new memory that no view can have reached
    for index, node in enumerate(graph.nodes):
        function = OPS[node.op].torch
        for value in node.inputs:
            last_read[id(value)] = index
            if function not in NEW_MEMORY:
                fresh.discard(id(value))
        if function in NEW_MEMORY:
            fresh.update(id(value) for value in node.outputs)
    marks: list[int | None] = []
    for index, node in enumerate(graph.nodes):
        function = OPS[node.op].torch
        mark = None
        if function in IN_PLACE and len(node.outputs) == 1:
            result = node.outputs[0]
            candidates = (0, 1) if function in COMMUTATIVE and not node.attrs else (0,)
            for position in candidates[:len(node.inputs)]:
                operand = node.inputs[position]
                if (id(operand) in fresh and id(operand) not in held
                        and last_read[id(operand)] == index
                        and (operand.shape, operand.dtype) == (result.shape, result.dtype)):
                    mark = position
                    break
        marks.append(mark)
    return marks
