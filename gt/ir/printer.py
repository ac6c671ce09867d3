"""The text form of a graph, behind `str(graph)` and `gt.debug.dump_ir()`.

Names are given here, at print time: arguments are `%a0, %a1, ...`, node results
`%0, %1, ...` in order, so the same graph always prints the same text.
"""

from gt.ir.dtypes import SHORT_NAMES
from gt.ir.graph import Graph, Value

COMMENT_COLUMN = 52


def format_type(value: Value) -> str:
    shape = ','.join(str(size) for size in value.shape)
    placement = f'<{value.placement}>' if value.placement is not None else ''
    return f'{SHORT_NAMES[value.dtype]}[{shape}]{placement}'


def format_attr(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return '[' + ','.join(format_attr(item) for item in value) + ']'
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_graph(graph: Graph) -> str:
    names: dict[int, str] = {}

    def name(value: Value) -> str:
        return names.get(id(value), '%?')

    for index, value in enumerate(graph.inputs):
        names[id(value)] = f'%a{index}'
    arguments = ', '.join(f'{name(v)}: {format_type(v)}' for v in graph.inputs)
    lines = [f'graph {graph.name}({arguments}) {{']
    counter = 0
    for node in graph.nodes:
        for value in node.outputs:
            names[id(value)] = f'%{counter}'
            counter += 1
        results = ', '.join(f'{name(v)}: {format_type(v)}' for v in node.outputs)
        operands = [name(v) for v in node.inputs]
        operands += [f'{key}={format_attr(value)}' for key, value in node.attrs.items()]
        statement = f'{results} = ' if results else ''
        statement = f'  {statement}{node.op}({", ".join(operands)})'
        comments = []
        if node.scope:
            comments.append(f'signal={node.scope}')
        if node.note:
            comments.append(node.note)
        if comments:
            statement = f'{statement.ljust(COMMENT_COLUMN)}  # {"; ".join(comments)}'
        lines.append(statement)
    lines.append('  return ' + ', '.join(name(v) for v in graph.outputs))
    lines.append('}')
    return '\n'.join(lines)
