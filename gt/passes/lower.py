"""lower: split a placed graph into one program per worker.

Requires every value to carry a placement. Ensures each worker's graph holds exactly the
nodes that worker runs, reads only values it holds, and returns the values it keeps.
Values keep their identity across the split, so the runtime can bind each worker's
inputs and outputs back to client ids.

    before:  graph(%a0<R@w0>) { %0<R@w0> = relu(%a0); return %0 }
    after:   {0: graph worker0(%a0<R@w0>) { %0<R@w0> = relu(%a0); return %0 }}
"""

from gt.ir import Graph, Node
from gt.passes.options import PipelineOptions


def _workers_of(node: Node, options: PipelineOptions) -> tuple[int, ...]:
    for value in node.outputs + node.inputs:
        return value.placement.workers
    return (options.home_worker,)


def lower(graph: Graph, options: PipelineOptions) -> dict[int, Graph]:
    nodes: dict[int, list[Node]] = {}
    for node in graph.nodes:
        for worker in _workers_of(node, options):
            nodes.setdefault(worker, []).append(node)
    programs = {}
    for worker, worker_nodes in nodes.items():
        defined = {id(v) for node in worker_nodes for v in node.outputs}
        read = {id(v) for node in worker_nodes for v in node.inputs}
        inputs = tuple(v for v in graph.inputs if id(v) in read and worker in v.placement.workers)
        outputs = tuple(v for v in graph.outputs if id(v) in defined)
        programs[worker] = Graph(inputs, tuple(worker_nodes), outputs, f'worker{worker}')
    return programs
