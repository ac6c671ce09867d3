"""The text form of a graph, behind `str(graph)` and `gt.debug.dump_ir()`, and the summary
of its placements that `GT_DEBUG_DISPATCHER=1` prints.

Names are given here, at print time: arguments are `%a0, %a1, ...`, node results
`%0, %1, ...` in order, so the same graph always prints the same text.
"""

from collections import Counter

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


def format_placements(graph: Graph) -> str:
    """Where the graph's ops run, by signal: `signal fwd: 5 ops on S0@w0,w1 (3), R@w0,w1
    (2)`; outside signals, only values spread over several workers (the auto-shard rule,
    or moved to where they are used). The seeds' way to see sharding applied."""
    by_signal: dict[str, Counter] = {}
    for node in graph.nodes:
        for value in node.outputs[:1]:
            if value.placement is None:
                continue
            placement = str(value.placement)
            if node.scope or len(value.placement.workers) > 1:
                by_signal.setdefault(node.scope or '', Counter())[placement] += 1
    lines = []
    for scope, placements in by_signal.items():
        label = f'signal {scope}' if scope else 'outside signals'
        spread = ', '.join(f'{placement} ({count})' for placement, count in
                           placements.most_common())
        lines.append(f'{label}: {sum(placements.values())} ops on {spread}')
    return '; '.join(lines) or 'every op on one worker'
