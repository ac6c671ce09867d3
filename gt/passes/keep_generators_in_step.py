"""keep_generators_in_step: random draws run only where their values go, yet equal torch's.

Requires placed nodes. Ensures every random draw runs on workers whose generator of the
session is in the *canonical* state (the state one generator drawing everything in
order would have), by inserting `sync_generator` (the state, copied from a worker that
has it) before a draw on workers that do not. `options.generator_holders` says which
workers have it when the fragment starts (None: no draw yet, so every worker, all being
seeded alike); `generator_holders_after` says which have it at the end. After a draw,
only its workers do; after `manual_seed` (run on every live worker), all of them.

    before:  %0: f32[4]<R@w0> = randn(...)          after:  %0: f32[4]<R@w0> = randn(...)
             %1: f32[8]<S0@w0,w1> = randn(...)              sync_generator(source=0, targets=[1])
                                                            %1: f32[8]<S0@w0,w1> = randn(...)
"""

from gt.ir import OPS, Graph, Node
from gt.passes.options import PipelineOptions

NOTE = 'inserted by keep_generators_in_step'


def _after(node: Node, holders: tuple[int, ...] | None,
           options: PipelineOptions) -> tuple[int, ...] | None:
    row = OPS[node.op]
    if row.random:
        return node.outputs[0].placement.workers
    if row.source and row.effects and not node.outputs:  # manual_seed, on every worker
        return options.workers
    return holders


def keep_generators_in_step(graph: Graph, options: PipelineOptions) -> Graph:
    holders = options.generator_holders
    nodes = []
    for node in graph.nodes:
        if OPS[node.op].random and holders is not None:
            workers = node.outputs[0].placement.workers
            stale = [w for w in workers if w not in holders]
            live = [w for w in holders if w in options.workers]
            if stale and live:
                nodes.append(Node('sync_generator', (), (), {'source': live[0],
                                                             'targets': stale},
                                  node.scope, NOTE, node.location))
        nodes.append(node)
        holders = _after(node, holders, options)
    if len(nodes) == len(graph.nodes):
        return graph
    return graph.replace(nodes=tuple(nodes))


def generator_holders_after(graph: Graph, options: PipelineOptions) -> tuple[int, ...] | None:
    holders = options.generator_holders
    for node in graph.nodes:
        holders = _after(node, holders, options)
    return holders
