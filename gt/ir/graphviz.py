"""The Graphviz form of a placed graph, behind `gt.debug.view_ir()`.

One cluster per worker, holding each node whose result that worker holds (a sharded op
appears in every worker of its placement, a move where it delivers); edges carry the
value's placement; the pieces a move sends between two workers are drawn bold and red,
so the traffic stands out.
"""

from gt.ir.exchange_plan import plan_exchange
from gt.ir.graph import Graph, Node, Value
from gt.ir.ops import OPS
from gt.ir.printer import format_type

PALETTE = ('#e8f0fe', '#e6f4ea', '#fef7e0', '#fce8e6', '#f3e8fd', '#e4f7fb')
NODE_STYLE = 'style=filled, fillcolor=white'
MOVE_STYLE = 'style="filled,bold", fillcolor="#fde0dc"'


def _workers(node: Node) -> tuple[int, ...]:
    """Where a node is drawn: where its result lands (a move's senders only send)."""
    return node.outputs[0].placement.workers if node.outputs else ()


def _quote(text: str) -> str:
    return '"' + text.replace('\\', '\\\\').replace('"', '\\"') + '"'


def graph_to_dot(graph: Graph) -> str:
    producer: dict[int, tuple[str, tuple[int, ...]]] = {}
    clusters: dict[int, list[str]] = {}
    edges: list[str] = []
    for index, value in enumerate(graph.inputs):
        name = f'a{index}'
        producer[id(value)] = (name, value.placement.workers)
        for worker in value.placement.workers:
            clusters.setdefault(worker, []).append(
                f'{name}_w{worker} [label={_quote(f"%a{index}: {format_type(value)}")}, '
                f'shape=box, style="rounded,dashed"];')
    for position, node in enumerate(graph.nodes):
        name = f'n{position}'
        workers = _workers(node)
        label = node.op + (f'\\n{format_type(node.outputs[0])}' if node.outputs else '')
        style = MOVE_STYLE if OPS[node.op].communication else NODE_STYLE
        for worker in workers:
            clusters.setdefault(worker, []).append(f'{name}_w{worker} [label="{label}", {style}];')
        for value in node.inputs:
            edges += _edges(producer.get(id(value)), value, name, node, workers)
        for value in node.outputs:
            producer[id(value)] = (name, workers)
    lines = ['digraph gt {', '  rankdir=TB; compound=true; newrank=true;',
             '  node [shape=box, fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8, color="#5f6368"];']
    for worker, members in sorted(clusters.items()):
        lines.append(f'  subgraph cluster_w{worker} {{')
        lines.append(f'    label="worker {worker}"; style=filled; '
                     f'fillcolor="{PALETTE[worker % len(PALETTE)]}"; color="#9aa0a6";')
        lines += [f'    {member}' for member in members]
        lines.append('  }')
    lines += [f'  {edge}' for edge in edges]
    lines.append('}')
    return '\n'.join(lines)


def _edges(source, value: Value, name: str, node: Node, workers: tuple[int, ...]) -> list[str]:
    if source is None:
        return []
    producer, holders = source
    label = _quote(str(value.placement))
    if not OPS[node.op].communication:
        return [f'{producer}_w{w} -> {name}_w{w} [label={label}];' for w in workers
                if w in holders]
    lines = []
    for assembly in plan_exchange(value.placement, node.outputs[0].placement, value.shape):
        for piece in assembly.pieces:
            edge = f'{producer}_w{piece.sender} -> {name}_w{assembly.receiver} [label={label}'
            if piece.sender != assembly.receiver:
                edge += ', color="#d93025", penwidth=2, fontcolor="#d93025"'
            lines.append(edge + '];')
    return lines
